// An API runtime over a test scheduler's tables and queues whose job item writes fail before they
// reach the store, as a lost connection would: for creates that die between their own writes
// (a run or a name's guard written ahead of the job; decisions 0167, 0173). Or whose writes land
// twice, or whose reads of a name's guard wait: for creates that meet their own or another's writes.
import { createDeps } from '../../../lambdas/app/deps';
import { createAwsClients } from '../../../lambdas/store/aws';
import { startLocalRuntime } from '../../../scripts/local/runtime';
import type { Scheduler } from '../harness';

type Handler = (args: { input: Record<string, unknown> }) => Promise<unknown>;
interface Stack {
  add(middleware: (next: Handler, context: { commandName?: string }) => Handler, options: { step: 'initialize'; name: string }): void;
}

export interface FailingApi {
  /** POSTs a job create to this API, with the scheduler's key (and the headers given). */
  create(body: unknown, headers?: Record<string, string>): Promise<Response>;
  /** How many writes the fault touched so far (failed, or sent twice). */
  failedJobWrites(): number;
  stop(): Promise<void>;
}

/** Starts an API (no workers, no ticker) whose `PutItem` of a job item (`JOB#…`) fails. */
export async function startApiFailingJobWrites(scheduler: Scheduler): Promise<FailingApi> {
  let failed = 0;
  return startApiWith(
    scheduler,
    (next, context) => async (args) => {
      const item = args.input.Item as Record<string, unknown> | undefined;
      if (context.commandName === 'PutItemCommand' && typeof item?.pk === 'string' && item.pk.startsWith('JOB#')) {
        failed++;
        throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError', code: 'ECONNRESET', $metadata: {} });
      }
      return next(args);
    },
    () => failed,
  );
}

/**
 * Starts an API whose `PutItem`s of items under the given key prefixes land and are then sent once
 * more, the second answer being the one the caller sees: as the store client's retry of a write
 * whose first answer was lost (a connection reset after the write, a 500) meets its own item.
 */
export async function startApiRepeatingPuts(scheduler: Scheduler, prefixes: readonly string[]): Promise<FailingApi> {
  let repeated = 0;
  return startApiWith(
    scheduler,
    (next, context) => async (args) => {
      const item = args.input.Item as Record<string, unknown> | undefined;
      if (context.commandName !== 'PutItemCommand' || typeof item?.pk !== 'string' || !prefixes.some((prefix) => String(item.pk).startsWith(prefix)))
        return next(args);
      await next(args);
      repeated++;
      return next(args);
    },
    () => repeated,
  );
}

/** An API whose reads of a name's guard wait until released. */
export interface GuardReadHoldingApi extends FailingApi {
  /** Resolves when a read of a name's guard (`JOBNAMES#…`) first waits. */
  readonly guardReadHeld: Promise<void>;
  /** Lets the reads waiting, and any later, through. */
  release(): void;
}

/**
 * Starts an API whose `GetItem`s of a name's guard wait until `release`: a create that read the
 * guard in its way only after another request's write.
 */
export async function startApiHoldingGuardReads(scheduler: Scheduler): Promise<GuardReadHoldingApi> {
  let held = 0;
  let reached!: () => void;
  const guardReadHeld = new Promise<void>((resolve) => (reached = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const api = await startApiWith(
    scheduler,
    (next, context) => async (args) => {
      const key = args.input.Key as Record<string, unknown> | undefined;
      if (context.commandName === 'GetItemCommand' && typeof key?.pk === 'string' && key.pk.startsWith('JOBNAMES#')) {
        held++;
        reached();
        await released;
      }
      return next(args);
    },
    () => held,
  );
  return { ...api, guardReadHeld, release };
}

async function startApiWith(
  scheduler: Scheduler,
  middleware: (next: Handler, context: { commandName?: string }) => Handler,
  affected: () => number,
): Promise<FailingApi> {
  const clients = createAwsClients();
  (clients.dynamo.middlewareStack as unknown as Stack).add(middleware, { step: 'initialize', name: 'faultyWrite' });
  const deps = createDeps(scheduler.config, clients, { workerId: `${scheduler.prefix}-api`, metricSink: () => undefined });
  const api = await startLocalRuntime({ deps, clients: scheduler.clients, port: 0, workerConcurrency: 0, tickIntervalMs: 0 });
  return {
    create: (body, headers = {}) =>
      fetch(`${api.url}/v1/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${scheduler.apiKey}`, 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      }),
    failedJobWrites: affected,
    stop: () => api.stop(),
  };
}
