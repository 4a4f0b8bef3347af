// Recovery of a lost worker that does not depend on its message (issue 24, item 4). A worker that
// dies between its lease and the visibility change leaves its message invisible for the queue's
// timeout (90 minutes); every lease therefore keeps a check-back in the time index, and the ticker
// recovers a lease it finds expired there, whatever became of the message. The ticker is driven
// explicitly: these tests wait for leases of a few seconds, not for a minute's tick.
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { SchedulerDeps } from '../../lambdas/app/deps';
import type { Run } from '../../lambdas/domain/run';
import { firstCheckAt, leaseCheckAt } from '../../lambdas/domain/time-gate';
import type { Scheduler, TargetServer } from './harness';
import { eventually, jobBody, leaseRequest, startScheduler, startTarget, tick, timeIndexEntryOf } from './harness';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a lost worker is recovered from the time index, whatever became of its message', () => {
  let scheduler: Scheduler;
  let target: TargetServer;

  beforeAll(async () => {
    // No pollers until a test starts them; leases of timeout + 1 s.
    scheduler = await startScheduler({ workerConcurrency: 0, tuning: { leaseMarginSeconds: 1 } });
    target = await startTarget();
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  /** Creates run-now jobs and returns their ids and first runs' ids. */
  async function createJobs(count: number, timeoutSeconds: number): Promise<{ jobId: string; runId: string }[]> {
    const created: { jobId: string; runId: string }[] = [];
    for (let i = 0; i < count; i++) {
      const response = await scheduler.api(
        'POST',
        '/v1/jobs',
        jobBody(target.url, { timeoutSeconds, retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 } }),
      );
      expect(response.status).toBe(201);
      created.push({ jobId: response.body.job.jobId, runId: response.body.job.nextRunId });
    }
    return created;
  }

  /**
   * Workers that die right after their leases, before they tied the messages to them: `owner`
   * leases each run through the repository (the messages were taken by `takeMessages`).
   */
  async function strandAll(runIds: readonly string[], owner: string): Promise<Map<string, SchedulerDeps>> {
    const ghosts = new Map<string, SchedulerDeps>();
    for (const runId of runIds) {
      const ghost = scheduler.workerDeps(owner);
      const lease = await ghost.leases.lease(runId, leaseRequest(scheduler.config, owner));
      expect(lease.kind).toBe('leased');
      ghosts.set(runId, ghost);
    }
    return ghosts;
  }

  const indexEntryOf = (runId: string) => timeIndexEntryOf(scheduler, runId);

  async function runsOf(jobId: string): Promise<Record<string, any>[]> {
    return (await scheduler.api('GET', `/v1/jobs/${jobId}/runs`)).body.items as Record<string, any>[];
  }

  const recovered = (runs: Record<string, any>[]) =>
    runs.length === 2 && runs[0]?.status === 'SUCCEEDED' && runs[1]?.status === 'FAILED' && runs[1]?.error?.code === 'WORKER_LOST';

  it('recovers a run leased by a worker that died before any visibility change, once the ticker passes its lease end', async () => {
    const [job] = await createJobs(1, 1);
    const { jobId, runId } = job!;
    await takeMessages(1);
    await strandAll([runId], 'ghost-a');
    await startWorkers();
    const leased = await scheduler.deps.runs.get(runId);
    expect(leased?.status).toBe('RUNNING');
    expect((await indexEntryOf(runId)).gateAt).toBeDefined();

    // Past the lease's end and its check-back: nothing but the ticker can find the run now.
    await sleep(Date.parse(leased!.leaseExpiresAt!) + 2_500 - Date.now());
    expect((await scheduler.deps.runs.get(runId))?.status).toBe('RUNNING');
    const report = await tick(scheduler.deps);
    expect(report.lapsedLeases).toBe(1);

    const runs = await eventually(() => runsOf(jobId), recovered, 20_000);
    expect(runs[1]).toMatchObject({ runId, attempt: 1, leaseOwner: 'ghost-a', error: { retryable: true } });
    expect(runs[0]).toMatchObject({ attempt: 2, trigger: 'retry' });
    // Finished runs leave the time index.
    expect(await indexEntryOf(runId)).toEqual({ gateKey: undefined, gateAt: undefined });
    expect(await indexEntryOf(runs[0]!.runId)).toEqual({ gateKey: undefined, gateAt: undefined });
  });

  it('does not recover a lease its heartbeats keep alive past its first check-back, and recovers it once they stop', async () => {
    // Lease 4 s; the lease's first check-back is 3 s after it (the shortest lease, 2 s, + 1 s).
    const [job] = await createJobs(1, 3);
    const { jobId, runId } = job!;
    await takeMessages(1);
    const ghost = (await strandAll([runId], 'ghost-b')).get(runId)!;
    await startWorkers();
    const leased = (await scheduler.deps.runs.get(runId))!;
    const firstCheck = (await indexEntryOf(runId)).gateAt!;

    // Heartbeats for 8 s, with a tick every second: the ticker finds the check-back early and
    // moves it to the lease's end, but sends nothing and records nothing.
    const beatUntil = Date.now() + 8_000;
    let ticks = 0;
    while (Date.now() < beatUntil) {
      expect(await ghost.leases.heartbeat(runId, leased.version, Date.now())).toBe(true);
      const report = await tick(scheduler.deps);
      expect(report.lapsedLeases).toBe(0);
      ticks++;
      await sleep(1_000);
    }
    expect(ticks).toBeGreaterThanOrEqual(3);
    const alive = (await scheduler.deps.runs.get(runId))!;
    expect(alive).toMatchObject({ status: 'RUNNING', leaseOwner: 'ghost-b', version: leased.version });
    const moved = (await indexEntryOf(runId)).gateAt!;
    expect(Date.parse(moved)).toBeGreaterThan(Date.parse(firstCheck));
    expect((await runsOf(jobId)).length).toBe(1);

    // The heartbeats stop (the worker died): the lease ends and the next tick past it recovers the run.
    await sleep(Date.parse(alive.leaseExpiresAt!) + 1_500 - Date.now());
    expect((await tick(scheduler.deps)).lapsedLeases).toBe(1);
    const runs = await eventually(() => runsOf(jobId), recovered, 20_000);
    expect(runs[1]).toMatchObject({ runId, leaseOwner: 'ghost-b' });
  });

  it('recovers each run once when two tickers find its lapsed lease at the same time', async () => {
    const jobs = await createJobs(4, 1);
    await takeMessages(4);
    // The messages taken stay in flight for an hour (with the earlier tests'): what remains besides them is counted below.
    const stuck = await scheduler.queueDepth();
    await strandAll(
      jobs.map((job) => job.runId),
      'ghost-c',
    );
    await startWorkers();
    const calls = target.calls.length;
    const leaseEnd = Math.max(...(await scheduler.deps.runs.getMany(jobs.map((job) => job.runId))).map((run) => Date.parse(run.leaseExpiresAt!)));
    await sleep(leaseEnd + 2_500 - Date.now());

    const reports = await Promise.all([tick(scheduler.deps), tick(scheduler.workerDeps('ticker-2'))]);
    expect(reports.reduce((sum, report) => sum + report.lapsedLeases, 0)).toBe(4);
    for (const { jobId } of jobs) await eventually(() => runsOf(jobId), recovered, 20_000);
    // One recovery message each: the four retries called the target once each, and nothing else is left.
    await eventually(
      () => scheduler.queueDepth(),
      (depth) => depth === stuck,
      15_000,
    );
    expect(target.calls.length - calls).toBe(4);
    expect((await tick(scheduler.deps)).lapsedLeases).toBe(0);
  });

  it('lets a late outcome that lands before the recovery stand: the recovery message finds the run finished', async () => {
    const [job] = await createJobs(1, 1);
    const { jobId, runId } = job!;
    await takeMessages(1);
    const ghost = (await strandAll([runId], 'ghost-d')).get(runId)!;
    const leased = (await scheduler.deps.runs.get(runId))!;
    await sleep(Date.parse(leased.leaseExpiresAt!) + 2_500 - Date.now());
    expect((await tick(scheduler.deps)).lapsedLeases).toBe(1);
    // The worker was slow, not dead: its outcome, fenced by the version it leased, lands first.
    expect(await ghost.leases.finishAttempt(leased, { status: 'SUCCEEDED', now: Date.now(), error: null }, null)).toBe('recorded');
    expect(await indexEntryOf(runId)).toEqual({ gateKey: undefined, gateAt: undefined });
    await startWorkers();
    const before = await scheduler.queueDepth();
    // The recovery message is dropped as a duplicate: no lost attempt, no retry.
    await eventually(
      () => scheduler.queueDepth(),
      (depth) => depth < before,
      15_000,
    );
    const runs = await runsOf(jobId);
    expect(runs.map((run) => [run.attempt, run.status, run.leaseOwner])).toEqual([[1, 'SUCCEEDED', 'ghost-d']]);
    expect((await tick(scheduler.deps)).lapsedLeases).toBe(0);
  });

  /**
   * Takes the dispatch messages of new runs (no poller runs yet) and keeps them invisible for an
   * hour, as a worker that died before its visibility change leaves them.
   */
  async function takeMessages(count: number): Promise<void> {
    let taken = 0;
    while (taken < count) {
      const { Messages: messages = [] } = await scheduler.clients.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: scheduler.config.dispatchQueueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 3_600, WaitTimeSeconds: 1 }),
      );
      taken += messages.length;
    }
  }

  /** Live workers for the recovery and the retries, stopped when the test ends. */
  async function startWorkers(): Promise<void> {
    const workers = await scheduler.startWorkers(2);
    onTestFinished(() => workers.stop());
  }
});

describe("every way out of RUNNING leaves the lease's check-back behind (or, given back, turns it into a queued one)", () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
  });
  afterAll(async () => scheduler.stop());

  async function leased(): Promise<Run> {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody('http://127.0.0.1:9/hook'));
    expect(created.status).toBe(201);
    const lease = await scheduler.deps.leases.lease(created.body.job.nextRunId, leaseRequest(scheduler.config, 'w'));
    if (lease.kind !== 'leased') throw new Error(`not leased: ${lease.kind}`);
    // Leased in time, it keeps the check-back it was queued with (decision 0170), no later than its own.
    const kept = Date.parse((await gateOf(lease.run.runId)).gateAt!);
    expect(kept).toBe(firstCheckAt(Date.parse(lease.run.availableAt), Date.parse(lease.run.enqueuedAt!), scheduler.config));
    expect(kept).toBeLessThanOrEqual(leaseCheckAt(Date.parse(lease.run.startedAt!), scheduler.config));
    return lease.run;
  }

  const gateOf = (runId: string) => timeIndexEntryOf(scheduler, runId);
  const none = { gateKey: undefined, gateAt: undefined };
  const now = () => Date.now();

  it('a lease asked for less than the margin before the queued check-back moves it rather than keep it (decision 0170)', async () => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody('http://127.0.0.1:9/hook'));
    const runId = created.body.job.nextRunId as string;
    const queuedCheck = Date.parse((await gateOf(runId)).gateAt!);
    // Asked 4 s before the check-back: a write that takes its connect, retry and request time lands
    // after a tick may have read the entry. Before (a 2 s margin), the entry was kept there.
    const askedAt = queuedCheck - 4_000;
    const lease = await scheduler.deps.leases.lease(runId, leaseRequest(scheduler.config, 'w', askedAt));
    expect(lease.kind).toBe('leased');
    expect(Date.parse((await gateOf(runId)).gateAt!)).toBe(leaseCheckAt(askedAt, scheduler.config));
  });

  it('succeeded, failed, dead', async () => {
    for (const status of ['SUCCEEDED', 'FAILED', 'TIMED_OUT', 'DEAD'] as const) {
      const run = await leased();
      expect(await scheduler.deps.leases.finishAttempt(run, { status, now: now(), error: null }, null)).toBe('recorded');
      expect(await gateOf(run.runId)).toEqual(none);
    }
  });

  it('a tick that read a lease check-back, and an outcome that lands before its move: the move is refused', async () => {
    const run = await leased();
    const entry = await gateOf(run.runId);
    expect(await scheduler.deps.leases.finishAttempt(run, { status: 'SUCCEEDED', now: now(), error: null }, null)).toBe('recorded');
    // The move a tick decided on from the RUNNING run it read: fenced by the status, the version and the entry.
    expect(await scheduler.deps.timeIndex.moveLeaseCheck(run.runId, run.version, entry.gateAt!, now() + 300_000, scheduler.config.timeIndexShards)).toBe(false);
    expect(await gateOf(run.runId)).toEqual(none);
  });

  it('skipped or cancelled by admission, cancelled while running', async () => {
    for (const status of ['SKIPPED', 'CANCELLED'] as const) {
      const run = await leased();
      expect(await scheduler.deps.leases.complete(run.runId, run.version, { status, now: now(), error: null, reason: 'test' })).toBe('recorded');
      expect(await gateOf(run.runId)).toEqual(none);
    }
    const run = await leased();
    expect(await scheduler.deps.leases.cancelRunning(run.runId, now(), 'test')).toBe(true);
    expect(await gateOf(run.runId)).toEqual(none);
  });

  it('offered to external workers: no entry (a queued one would be sent and leased again)', async () => {
    const run = await leased();
    expect(await scheduler.deps.claims.offer(run, now())).toBe(true);
    expect(await gateOf(run.runId)).toEqual(none);
  });

  it("given back (buffer-one): the entry becomes the queued run's check-back", async () => {
    const run = await leased();
    const checkBack = now() + 300_000;
    expect(await scheduler.deps.leases.giveBack(run.runId, run.version, now(), checkBack, scheduler.config.timeIndexShards, 'test')).toBe(true);
    expect((await gateOf(run.runId)).gateAt).toBe(new Date(checkBack).toISOString());
  });

  it("moves a lease's check-back only under the version it was read for", async () => {
    const run = await leased();
    const { gateAt } = await gateOf(run.runId);
    const shards = scheduler.config.timeIndexShards;
    expect(await scheduler.deps.timeIndex.moveLeaseCheck(run.runId, run.version + 1, gateAt!, now() + 60_000, shards)).toBe(false);
    expect(await scheduler.deps.timeIndex.moveLeaseCheck(run.runId, run.version, gateAt!, now() + 60_000, shards)).toBe(true);
    // Moved once: a second ticker holding the old position moves nothing.
    expect(await scheduler.deps.timeIndex.moveLeaseCheck(run.runId, run.version, gateAt!, now() + 90_000, shards)).toBe(false);
  });
});
