// Which of the stack's functions the local runtime is running code for at the moment. In AWS each
// function has a role of its own; locally one process runs them all, so the runtime marks each
// handler invocation, and the integration suite records every AWS request with the function it
// came from to check it against the grants the stack gives that function (test/grants).
import { AsyncLocalStorage } from 'node:async_hooks';

/** A function of the stack: `worker:<pool>` is the worker of that pool (`worker:default` the default one). */
export type FunctionRole = 'api' | 'authorizer' | 'ticker' | `worker:${string}`;

const current = new AsyncLocalStorage<FunctionRole>();

/** Runs `invoke` as the function `role`: every request it makes, however deferred, is that function's. */
export function asFunction<T>(role: FunctionRole, invoke: () => Promise<T>): Promise<T> {
  return current.run(role, invoke);
}

/** The function whose invocation is running, if any (test code and the runtime's own polling: none). */
export function currentFunction(): FunctionRole | undefined {
  return current.getStore();
}
