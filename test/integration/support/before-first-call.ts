// Stages a race in an integration test: something lands between a use case's read and its write.
import type { SchedulerDeps } from '../../../lambdas/app/deps';

/** The stores whose methods a test may hold up. */
type Store = 'runs' | 'leases' | 'workflowRuns';

/** Deps whose `store.method` runs `before` ahead of its first call (something landing between a read and a write). */
export function beforeFirstCall(deps: SchedulerDeps, store: Store, method: string, before: () => Promise<void>): SchedulerDeps {
  let done = false;
  const proxy = new Proxy(deps[store], {
    get(object, property) {
      const value = Reflect.get(object, property) as unknown;
      if (typeof value !== 'function') return value;
      const bound = (value as (...args: unknown[]) => unknown).bind(object);
      if (property !== method) return bound;
      return async (...args: unknown[]) => {
        if (!done) {
          done = true;
          await before();
        }
        return bound(...args);
      };
    },
  });
  return { ...deps, [store]: proxy };
}
