// An API runtime over a test scheduler's tables and queues whose job item writes fail before they
// reach the store, as a lost connection would: for creates that die between their own writes
// (a run or a name's guard written ahead of the job; decisions 0167, 0173).
import { createDeps } from '../../../lambdas/app/deps';
import { createAwsClients } from '../../../lambdas/store/aws';
import { startLocalRuntime } from '../../../scripts/local/runtime';
import type { Scheduler } from '../harness';

type Handler = (args: { input: Record<string, unknown> }) => Promise<unknown>;
interface Stack {
  add(middleware: (next: Handler, context: { commandName?: string }) => Handler, options: { step: 'initialize'; name: string }): void;
}

export interface FailingApi {
  /** POSTs a job create to this API, with the scheduler's key. */
  create(body: unknown): Promise<Response>;
  /** How many job writes failed so far. */
  failedJobWrites(): number;
  stop(): Promise<void>;
}

/** Starts an API (no workers, no ticker) whose `PutItem` of a job item (`JOB#…`) fails. */
export async function startApiFailingJobWrites(scheduler: Scheduler): Promise<FailingApi> {
  const clients = createAwsClients();
  let failed = 0;
  (clients.dynamo.middlewareStack as unknown as Stack).add(
    (next, context) => async (args) => {
      const item = args.input.Item as Record<string, unknown> | undefined;
      if (context.commandName === 'PutItemCommand' && typeof item?.pk === 'string' && item.pk.startsWith('JOB#')) {
        failed++;
        throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError', code: 'ECONNRESET', $metadata: {} });
      }
      return next(args);
    },
    { step: 'initialize', name: 'failJobWrite' },
  );
  const deps = createDeps(scheduler.config, clients, { workerId: `${scheduler.prefix}-api`, metricSink: () => undefined });
  const api = await startLocalRuntime({ deps, clients: scheduler.clients, port: 0, workerConcurrency: 0, tickIntervalMs: 0 });
  return {
    create: (body) =>
      fetch(`${api.url}/v1/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${scheduler.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
    failedJobWrites: () => failed,
    stop: () => api.stop(),
  };
}
