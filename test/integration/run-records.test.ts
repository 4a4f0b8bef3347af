// The runs' store under a store client that tries a put again after its first try landed (its
// answer lost): a run's create meets its own item and is taken as made (decision 0180), and a run
// put by another creation, or leased by another owner, is still refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAwsClients } from '../../lambdas/store/aws';
import { RunRecords } from '../../lambdas/store/run-records';
import type { Run } from '../../lambdas/domain/run';
import type { Scheduler } from './harness';
import { awsClients, jobBody, startScheduler } from './harness';

type Handler = (args: { input: Record<string, unknown> }) => Promise<unknown>;
interface Stack {
  add(middleware: (next: Handler, context: { commandName?: string }) => Handler, options: { step: 'initialize'; name: string }): void;
}

describe("a run's create whose put is sent again after it landed", () => {
  let scheduler: Scheduler;
  let repeating: RunRecords;
  let plain: RunRecords;
  let stored: Run;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
    awsClients();
    const clients = createAwsClients();
    (clients.dynamo.middlewareStack as unknown as Stack).add(
      (next, context) => async (args) => {
        if (context.commandName !== 'PutItemCommand') return next(args);
        await next(args);
        return next(args);
      },
      { step: 'initialize', name: 'repeatedPut' },
    );
    repeating = new RunRecords(clients.dynamo, scheduler.config.runsTable);
    plain = new RunRecords(awsClients().dynamo, scheduler.config.runsTable);
    const created = await scheduler.api('POST', '/v1/jobs', jobBody('https://example.com/hook', { schedule: { kind: 'delay', seconds: 3600 } }));
    expect(created.status).toBe(201);
    stored = (await plain.get(created.body.job.nextRunId as string))!;
  });
  afterAll(async () => {
    await scheduler.stop();
  });

  const another = (attempt: number, changes: Partial<Run> = {}): Run => ({
    ...stored,
    runId: stored.runId.replace(/\.1$/, `.${attempt}`),
    attempt,
    ...changes,
  });

  it('is taken as made: the item there is its own', async () => {
    const run = another(5);
    expect(await repeating.create({ run, extras: {} })).toBe(true);
    expect((await plain.get(run.runId))?.createdAt).toBe(run.createdAt);
  });

  it('a run put leased, its retry met: made, for the same owner only', async () => {
    const run = another(6, { status: 'RUNNING', leaseOwner: 'worker-a', leaseExpiresAt: new Date(Date.now() + 60_000).toISOString() });
    expect(await repeating.create({ run, extras: {} })).toBe(true);
    expect(await plain.create({ run: { ...run, leaseOwner: 'worker-b' }, extras: {} })).toBe(false);
  });

  it('is refused when the run there is of another creation', async () => {
    const run = another(7);
    expect(await plain.create({ run, extras: {} })).toBe(true);
    expect(await plain.create({ run: { ...run, createdAt: new Date(Date.parse(run.createdAt) + 1).toISOString() }, extras: {} })).toBe(false);
  });
});
