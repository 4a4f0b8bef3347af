// The ticker against the emulator: far runs pass through the time index and are released with
// their remaining delay; a queued run whose message was lost is sent again; two tickers at once
// release each run once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scheduler, TargetServer } from './harness';
import { eventually, executeRun, jobBody, leaseRequest, setTickerCursor, startScheduler, startTarget, tick, timeIndexEntryOf } from './harness';
import { firstCheckAt, leaseCheckAt, shardOf } from '../../lambdas/domain/time-gate';

describe('the ticker', () => {
  let target: TargetServer;
  beforeAll(async () => {
    target = await startTarget();
  });
  afterAll(async () => target.stop());

  describe('with a short near horizon', () => {
    let scheduler: Scheduler;
    beforeAll(async () => {
      // Runs more than 2 s away wait in the time index; the ticker looks 5 s ahead.
      scheduler = await startScheduler({ tuning: { nearHorizonSeconds: 2, tickerHorizonSeconds: 5 } });
    });
    afterAll(async () => scheduler.stop());

    /** Creates `count` jobs due at `due` and returns their first runs' ids. */
    async function createAtJobs(count: number, due: number): Promise<string[]> {
      const runIds: string[] = [];
      for (let i = 0; i < count; i++) {
        const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: { kind: 'at', at: new Date(due).toISOString() } }));
        expect(created.status).toBe(201);
        runIds.push(created.body.job.nextRunId);
      }
      return runIds;
    }

    it('keeps a far run SCHEDULED in the time index, releases it on a tick, and runs it on time', async () => {
      const due = Date.now() + 4_000;
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: { kind: 'at', at: new Date(due).toISOString() } }));
      expect(created.status).toBe(201);
      const runId: string = created.body.job.nextRunId;
      expect((await scheduler.deps.runs.get(runId))?.status).toBe('SCHEDULED');
      expect(await scheduler.queueDepth()).toBe(0);

      const report = await tick(scheduler.deps);
      expect(report.released).toBe(1);
      expect((await scheduler.deps.runs.get(runId))?.status).toBe('QUEUED');

      const run = await eventually(
        () => scheduler.deps.runs.get(runId),
        (r) => r?.status === 'SUCCEEDED',
        15_000,
      );
      const startedAt = Date.parse(run?.startedAt ?? '');
      expect(startedAt).toBeGreaterThanOrEqual(due);
      expect(startedAt - due).toBeLessThan(2_000);
    });

    it('a release sent late in its tick is delayed from when it is sent, not from when the tick began', async () => {
      const due = Date.now() + 4_800;
      const [runId] = await createAtJobs(1, due);
      // The tick's read of the runs takes 4 s (a busy store, or pages before this one).
      const runs = scheduler.deps.runs;
      const slowRuns = Object.assign(Object.create(runs) as typeof runs, {
        getMany: async (ids: readonly string[]) => {
          await new Promise((resolve) => setTimeout(resolve, 4_000));
          return runs.getMany(ids);
        },
      });
      expect((await tick({ ...scheduler.deps, runs: slowRuns })).released).toBe(1);
      const run = await eventually(
        () => runs.get(runId!),
        (r) => r?.status === 'SUCCEEDED',
        20_000,
      );
      // Before, its delay was counted from the tick's start: it came about 4 s late.
      const startedAt = Date.parse(run?.startedAt ?? '');
      expect(startedAt).toBeGreaterThanOrEqual(due);
      expect(startedAt - due).toBeLessThan(2_000);
    });

    it('stops a tick that runs out of budget with its cursor kept, and the next ticks release the rest, each run once', async () => {
      const due = Date.now() + 4_000;
      const runIds = await createAtJobs(12, due);
      const calls = target.calls.length;
      // The tick begins at the due minute: with no budget it works only the partitions it begins at
      // once, and a cursor a minute behind (the last tick ran before a minute turned, on a slow
      // machine) would have it begin with an earlier, empty minute.
      const dueMinute = Math.floor(due / 60_000) * 60_000;
      await setTickerCursor(scheduler, dueMinute);

      // No budget and one entry a page: a tick works one page per partition it has begun, then stops.
      const first = await tick(scheduler.deps, undefined, { budgetMs: 0, pageSize: 1 });
      expect(first.complete).toBe(false);
      expect(first.released).toBeGreaterThanOrEqual(1);
      expect(first.released).toBeLessThan(12);
      // The cursor does not pass the minute it left unfinished (it is the current minute's when
      // the due one is the next).
      expect((await scheduler.deps.state.ticker()).cursor).toBeLessThanOrEqual(dueMinute);
      const statuses = await Promise.all(runIds.map(async (runId) => (await scheduler.deps.runs.get(runId))?.status));
      expect(statuses.filter((status) => status === 'QUEUED')).toHaveLength(first.released);
      expect(statuses.filter((status) => status === 'SCHEDULED')).toHaveLength(12 - first.released);

      let released = first.released;
      for (let ticks = 0; released < 12 && ticks < 20; ticks++) released += (await tick(scheduler.deps, undefined, { budgetMs: 0, pageSize: 1 })).released;
      expect(released).toBe(12);
      expect((await tick(scheduler.deps)).complete).toBe(true);
      for (const runId of runIds)
        await eventually(
          () => scheduler.deps.runs.get(runId),
          (r) => r?.status === 'SUCCEEDED',
          15_000,
        );
      await eventually(
        () => scheduler.queueDepth(),
        (depth) => depth === 0,
      );
      expect(target.calls.length - calls).toBe(12);
    });

    it('releases each run once when two tickers run at the same time', async () => {
      const due = Date.now() + 4_000;
      const runIds = await createAtJobs(5, due);
      const calls = target.calls.length;
      const [a, b] = await Promise.all([tick(scheduler.workerDeps('ticker-a')), tick(scheduler.workerDeps('ticker-b'))]);
      expect((a?.released ?? 0) + (b?.released ?? 0)).toBe(5);
      for (const runId of runIds) {
        await eventually(
          () => scheduler.deps.runs.get(runId),
          (r) => r?.status === 'SUCCEEDED',
          15_000,
        );
      }
      await eventually(
        () => scheduler.queueDepth(),
        (depth) => depth === 0,
      );
      expect(target.calls.length - calls).toBe(5);
    });
  });

  describe('a lowered TIME_INDEX_SHARDS', () => {
    let scheduler: Scheduler;
    beforeAll(async () => {
      scheduler = await startScheduler({ workerConcurrency: 0, tuning: { nearHorizonSeconds: 2, tickerHorizonSeconds: 5 } });
    });
    afterAll(async () => scheduler.stop());

    it('the ticker still reads the shards a higher count wrote entries in', async () => {
      expect(scheduler.config.timeIndexShards).toBe(8);
      await tick(scheduler.deps); // the ticker has seen 8 shards
      // A run whose entry sits in a shard above the lowered count (2).
      let runId: string | undefined;
      for (let tries = 0; tries < 20 && (runId === undefined || shardOf(runId, 8) < 2); tries++) {
        const created = await scheduler.api(
          'POST',
          '/v1/jobs',
          jobBody(target.url, { schedule: { kind: 'at', at: new Date(Date.now() + 4_000).toISOString() } }),
        );
        runId = created.body.job.nextRunId as string;
      }
      expect(shardOf(runId!, 8)).toBeGreaterThanOrEqual(2);
      const lowered = { ...scheduler.deps, config: { ...scheduler.config, timeIndexShards: 2 } };
      // Before, the ticker read shards 0 and 1 only: the run waited SCHEDULED for good.
      await tick(lowered);
      expect((await scheduler.deps.runs.get(runId!))?.status).toBe('QUEUED');
    });
  });

  describe('after hours without a tick', () => {
    let scheduler: Scheduler;
    beforeAll(async () => {
      scheduler = await startScheduler({ workerConcurrency: 0 });
    });
    afterAll(async () => scheduler.stop());

    it('a tick out of budget stops at the empty partitions too, and each tick moves the cursor on from where it stopped', async () => {
      const minute = (at: number) => Math.floor(at / 60_000) * 60_000;
      const from = minute(Date.now() - 3 * 3_600_000);
      await setTickerCursor(scheduler, from);
      // 180 minutes of empty partitions, and a budget of 50 ms. Before, the budget was looked at only
      // after a page, so the tick read them all; and a tick out of budget kept its cursor where it
      // began, so a backlog longer than one tick could read was never passed.
      const first = await tick(scheduler.deps, undefined, { budgetMs: 50 });
      expect(first.complete).toBe(false);
      const afterFirst = (await scheduler.deps.state.ticker()).cursor!;
      expect(afterFirst).toBeGreaterThan(from);
      let cursor = afterFirst;
      for (let ticks = 0; ticks < 200 && cursor < minute(Date.now()); ticks++) {
        await tick(scheduler.deps, undefined, { budgetMs: 50 });
        const next = (await scheduler.deps.state.ticker()).cursor!;
        expect(next).toBeGreaterThanOrEqual(cursor);
        cursor = next;
      }
      expect(cursor).toBeGreaterThanOrEqual(minute(Date.now()) - 60_000);
    });
  });

  describe('repairs', () => {
    let scheduler: Scheduler;
    beforeAll(async () => {
      scheduler = await startScheduler({ workerConcurrency: 0, tuning: { redeliveryGraceSeconds: 60 } });
    });
    afterAll(async () => scheduler.stop());

    it('sends again a queued run whose message was lost, once the grace has passed', async () => {
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url));
      const runId: string = created.body.job.nextRunId;
      // Lose the message the API sent.
      await scheduler.clients.sqs.send(new (await import('@aws-sdk/client-sqs')).PurgeQueueCommand({ QueueUrl: scheduler.config.dispatchQueueUrl }));
      expect(await scheduler.queueDepth()).toBe(0);

      // Within the grace the ticker leaves it alone.
      expect((await tick(scheduler.deps)).redelivered).toBe(0);
      expect(await scheduler.queueDepth()).toBe(0);

      // Past the grace (a ticker whose clock is 2 minutes ahead), it is sent again, by one ticker only.
      const later = () => Date.now() + 120_000;
      const reports = await Promise.all([tick(scheduler.workerDeps('ticker-a', later)), tick(scheduler.workerDeps('ticker-b', later))]);
      expect(reports.reduce((sum, r) => sum + r.redelivered, 0)).toBe(1);
      expect(await scheduler.queueDepth()).toBe(1);
      expect(await executeRun(scheduler.workerDeps('worker'), runId)).toBe('succeeded');
    });

    it('records its completion for the health endpoint', async () => {
      await tick(scheduler.deps);
      const health = await scheduler.api('GET', '/v1/health');
      expect(health.status).toBe(200);
      expect(health.body.ticker.lastCompletedAt).not.toBeNull();
      expect(health.body.queues.dispatchDlq).toEqual({ visible: 0, inFlight: 0, delayed: 0, oldestMessageAgeSeconds: null });
    });
  });
});

describe("a queued run's first check-back (decision 0170)", () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0, tuning: { redeliveryGraceSeconds: 60 } });
    target = await startTarget();
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  it("looks at a queued run first where its lease's check-back would be, and only moves it to the grace's end (decision 0170)", async () => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url));
    const runId: string = created.body.job.nextRunId;
    // Its message is on its way, late (taken and held out of sight, as a backlog would).
    const { ReceiveMessageCommand } = await import('@aws-sdk/client-sqs');
    const receive = (visibility: number) =>
      scheduler.clients.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: scheduler.config.dispatchQueueUrl,
          MaxNumberOfMessages: 10,
          VisibilityTimeout: visibility,
          WaitTimeSeconds: 1,
        }),
      );
    const ours = (messages: { Body?: string }[] = []) => messages.filter((message) => message.Body?.includes(runId));
    expect(ours((await receive(3_600)).Messages)).toHaveLength(1);
    const queued = (await scheduler.deps.runs.get(runId))!;
    const firstCheck = firstCheckAt(Date.parse(queued.availableAt), Date.parse(queued.enqueuedAt!), scheduler.config);
    const gateOf = (id: string) => timeIndexEntryOf(scheduler, id);
    expect((await gateOf(runId)).gateAt).toBe(new Date(firstCheck).toISOString());

    // Past its first check-back, within the grace (60 s here): nothing sent, the check-back moved to the grace's end.
    const report = await tick(scheduler.workerDeps('ticker-early', () => firstCheck + 1_000));
    expect(report.redelivered).toBe(0);
    expect(ours((await receive(0)).Messages)).toHaveLength(0);
    expect((await gateOf(runId)).gateAt).toBe(new Date(Date.parse(queued.enqueuedAt!) + 60_000).toISOString());

    // A lease taken when that check-back is near cannot keep it (a tick may be acting on it): it moves it to its own.
    const leasedAt = Date.parse(queued.enqueuedAt!) + 60_000 - 1_000;
    const lease = await scheduler.deps.leases.lease(runId, leaseRequest(scheduler.config, 'late-worker', leasedAt));
    expect(lease.kind).toBe('leased');
    expect((await gateOf(runId)).gateAt).toBe(new Date(leaseCheckAt(leasedAt, scheduler.config)).toISOString());
  });

  it("a tick and a lease at a queued run's first check-back together leave its entry ahead of both, by the lease's end", async () => {
    const runIds = await Promise.all(
      Array.from({ length: 5 }, async () => (await scheduler.api('POST', '/v1/jobs', jobBody(target.url))).body.job.nextRunId as string),
    );
    const runs = await scheduler.deps.runs.getMany(runIds);
    const at = Math.max(...runs.map((run) => firstCheckAt(Date.parse(run.availableAt), Date.parse(run.enqueuedAt!), scheduler.config))) + 1_000;
    const [, ...leases] = await Promise.all([
      tick(scheduler.workerDeps('ticker-race', () => at)),
      ...runIds.map((runId) => scheduler.deps.leases.lease(runId, leaseRequest(scheduler.config, 'racing-worker', at))),
    ]);
    expect(leases.map((lease) => lease.kind)).toEqual(runIds.map(() => 'leased'));
    for (const runId of runIds) {
      // Whichever wrote first, the running run's entry is still ahead (a later tick finds it) and
      // no later than the lease's own check-back (a lost worker is found in time).
      const gateAt = Date.parse((await timeIndexEntryOf(scheduler, runId)).gateAt!);
      expect(gateAt).toBeGreaterThanOrEqual(at + 2_000);
      expect(gateAt).toBeLessThanOrEqual(leaseCheckAt(at, scheduler.config));
    }
  });
});
