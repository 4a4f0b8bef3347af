// Leases under contention, against the emulator: two workers racing for one run, a duplicate
// message, a message for no run, a worker that dies holding a lease, and the fencing of late writes.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { cancelRunOf } from '../../lambdas/app/runs';
import { logger } from '../../lambdas/core/logger';
import type { Scheduler, TargetServer } from './harness';
import { beforeFirstCall } from './support/before-first-call';
import { eventually, executeRun, jobBody, leaseRequest, startScheduler, startTarget } from './harness';

describe('leases', () => {
  let scheduler: Scheduler;
  let target: TargetServer;

  beforeAll(async () => {
    // No pollers: the tests drive the workers themselves.
    scheduler = await startScheduler({ workerConcurrency: 0 });
    target = await startTarget(() => new Promise((resolve) => setTimeout(() => resolve({ status: 200 }), 300)));
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  async function createRun(): Promise<{ jobId: string; runId: string }> {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url));
    expect(created.status).toBe(201);
    return { jobId: created.body.job.jobId, runId: created.body.job.nextRunId };
  }

  it('lets exactly one of two racing workers execute a run', async () => {
    const { runId } = await createRun();
    const calls = target.calls.length;
    const results = await Promise.all([executeRun(scheduler.workerDeps('worker-a'), runId), executeRun(scheduler.workerDeps('worker-b'), runId)]);
    expect([...results].sort()).toEqual(['held', 'succeeded']);
    expect(target.calls.length - calls).toBe(1);
    const run = await scheduler.deps.runs.get(runId);
    expect(run?.status).toBe('SUCCEEDED');
    expect(run?.leaseOwner).toBe(results[0] === 'succeeded' ? 'worker-a' : 'worker-b');
  });

  it('grants one lease when twenty workers race for the same run', async () => {
    for (let round = 0; round < 5; round++) {
      const { runId } = await createRun();
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => scheduler.deps.leases.lease(runId, leaseRequest(scheduler.config, `racer-${i}`))));
      expect(results.filter((result) => result.kind === 'leased')).toHaveLength(1);
      expect((await scheduler.deps.runs.get(runId))?.version).toBe(1);
    }
  });

  it('lets exactly one of two runtimes execute a run whose message was delivered twice', async () => {
    const { runId } = await createRun();
    await scheduler.sendDispatch(runId); // a duplicate beside the one the API sent
    const calls = target.calls.length;
    const { startLocalRuntime } = await import('../../scripts/local/runtime');
    const runtimes = await Promise.all(
      ['runtime-a', 'runtime-b'].map((id) =>
        startLocalRuntime({ deps: scheduler.workerDeps(id), clients: scheduler.clients, port: 0, workerConcurrency: 2, tickIntervalMs: 0, pollWaitSeconds: 1 }),
      ),
    );
    try {
      await eventually(
        () => scheduler.queueDepth(),
        (depth) => depth === 0,
      );
      expect((await scheduler.deps.runs.get(runId))?.status).toBe('SUCCEEDED');
      expect(target.calls.length - calls).toBe(1);
    } finally {
      await Promise.all(runtimes.map((runtime) => runtime.stop()));
    }
  });

  it('does nothing with a duplicate message for a finished run', async () => {
    const { runId } = await createRun();
    expect(await executeRun(scheduler.workerDeps('worker-a'), runId)).toBe('succeeded');
    const before = await scheduler.deps.runs.get(runId);
    const calls = target.calls.length;
    expect(await executeRun(scheduler.workerDeps('worker-b'), runId)).toBe('duplicate');
    expect(target.calls.length).toBe(calls);
    expect(await scheduler.deps.runs.get(runId)).toEqual(before);
  });

  it('drops a message for a run that does not exist, with a log line', async () => {
    const warn = vi.spyOn(logger, 'warn');
    try {
      expect(await executeRun(scheduler.workerDeps('worker-a'), 'job_nope.0.1')).toBe('missing');
      expect(warn).toHaveBeenCalledWith('dispatch message for a run that does not exist; dropped', { runId: 'job_nope.0.1' });
    } finally {
      warn.mockRestore();
    }
  });

  it('acknowledges such a message through the real poller, so it does not come back', async () => {
    const runtime = await startScheduler();
    try {
      await runtime.sendDispatch('job_nope.1.1');
      await eventually(
        () => runtime.queueDepth(),
        (depth) => depth === 0,
      );
      expect(await runtime.countItems('runs')).toBe(0);
    } finally {
      await runtime.stop();
    }
  });

  it('records the attempt of a worker that died as WORKER_LOST once its lease expires, retries it, and fences the late worker', async () => {
    const { runId } = await createRun();
    // Worker A leases the run and "dies": it never records an outcome.
    const leasedByA = await scheduler.deps.leases.lease(runId, leaseRequest(scheduler.config, 'worker-a'));
    expect(leasedByA.kind).toBe('leased');
    if (leasedByA.kind !== 'leased') return;
    const expiresAt = Date.parse(leasedByA.run.leaseExpiresAt ?? '');

    // Before expiry, its message is a copy of a run in progress.
    expect(await executeRun(scheduler.workerDeps('worker-b'), runId)).toBe('held');

    // After expiry, worker B (whose clock is past the lease) records the loss and plans attempt 2.
    const later = () => expiresAt + 1_000;
    expect(await executeRun(scheduler.workerDeps('worker-b', later), runId)).toBe('worker-lost');
    const lost = await scheduler.deps.runs.get(runId);
    expect(lost).toMatchObject({ status: 'FAILED', attempt: 1, error: { code: 'WORKER_LOST', retryable: true } });
    const retryId = runId.replace(/\.1$/, '.2');
    const retry = await scheduler.deps.runs.get(retryId);
    expect(retry).toMatchObject({ attempt: 2, trigger: 'retry', scheduledFor: lost?.scheduledFor });
    expect(
      await executeRun(
        scheduler.workerDeps('worker-c', () => Date.parse(retry?.availableAt ?? '') + 10),
        retryId,
      ),
    ).toBe('succeeded');

    // Worker A comes back and tries to record its outcome under its old fencing version.
    const late = await scheduler.deps.leases.complete(runId, leasedByA.run.version, { status: 'SUCCEEDED', now: Date.now(), error: null });
    expect(late).toBe('fenced');
    expect((await scheduler.deps.runs.get(runId))?.status).toBe('FAILED');
    // Two workers racing to record the same loss record it once.
    expect(await executeRun(scheduler.workerDeps('worker-d', later), runId)).toBe('duplicate');
  });

  it("cancels a waiting run that a worker leases between the cancel's read and its write: CANCELLED, not a 409", async () => {
    const { runId } = await createRun();
    let version = 0;
    const deps = beforeFirstCall(scheduler.deps, 'runs', 'retirePending', async () => {
      const leased = await scheduler.workerDeps('worker-a').leases.lease(runId, leaseRequest(scheduler.config, 'worker-a'));
      if (leased.kind !== 'leased') throw new Error(`the run should be leased, not ${leased.kind}`);
      version = leased.run.version;
    });
    const { run, cancelled, previousStatus } = await cancelRunOf(deps, scheduler.tenantId, runId);
    expect({ status: run.status, cancelled, previousStatus }).toEqual({ status: 'CANCELLED', cancelled: true, previousStatus: 'RUNNING' });
    expect((await scheduler.api('GET', `/v1/runs/${runId}`)).body.status).toBe('CANCELLED');
    // Cancelled as a running run is: its worker's next heartbeat fails, and aborts the call.
    expect(await scheduler.deps.leases.heartbeat(runId, version, Date.now())).toBe(false);
  });

  it("cancels a running run whose lease is given back between the cancel's read and its write: CANCELLED, not a 409", async () => {
    const { runId } = await createRun();
    const leased = await scheduler.workerDeps('worker-a').leases.lease(runId, leaseRequest(scheduler.config, 'worker-a'));
    if (leased.kind !== 'leased') throw new Error(`the run should be leased, not ${leased.kind}`);
    // The worker gives its lease back (a key's slot taken, buffer-one): the run waits QUEUED again.
    const deps = beforeFirstCall(scheduler.deps, 'leases', 'cancelRunning', async () => {
      const now = Date.now();
      expect(await scheduler.deps.leases.giveBack(runId, leased.run.version, now, now + 60_000, scheduler.config.timeIndexShards, 'waiting')).toBe(true);
    });
    const { run, cancelled, previousStatus } = await cancelRunOf(deps, scheduler.tenantId, runId);
    expect({ status: run.status, cancelled, previousStatus }).toEqual({ status: 'CANCELLED', cancelled: true, previousStatus: 'QUEUED' });
    // It never starts: a worker receiving its message finds it finished.
    const calls = target.calls.length;
    expect(await executeRun(scheduler.workerDeps('worker-b'), runId)).toBe('duplicate');
    expect(target.calls.length).toBe(calls);
  });

  it('refuses a heartbeat once the lease has lapsed: a lapsed lease is not revived', async () => {
    const { runId } = await createRun();
    const leased = await scheduler.deps.leases.lease(runId, leaseRequest(scheduler.config, 'worker-a'));
    if (leased.kind !== 'leased') throw new Error(`the run should be leased, not ${leased.kind}`);
    const { version } = leased.run;
    const expiresAt = Date.parse(leased.run.leaseExpiresAt!);
    // Within the lease, a heartbeat extends it from the worker's now.
    expect(await scheduler.deps.leases.heartbeat(runId, version, expiresAt - 1_000)).toBe(true);
    const extended = Date.parse((await scheduler.deps.runs.get(runId))!.leaseExpiresAt!);
    expect(extended).toBe(expiresAt - 1_000 + leased.run.leaseSeconds * 1000);
    // Past its end (the heartbeats in between never landed), the lease is another's to take over:
    // refused, and left as it was. Before, it was extended, the run alive again.
    expect(await scheduler.deps.leases.heartbeat(runId, version, extended + 1)).toBe(false);
    expect(await scheduler.deps.runs.get(runId)).toMatchObject({ status: 'RUNNING', version, leaseExpiresAt: new Date(extended).toISOString() });
    // And the ticker's recovery of it goes on: a worker past the lease records the lost attempt.
    expect(
      await executeRun(
        scheduler.workerDeps('worker-b', () => extended + 1_000),
        runId,
      ),
    ).toBe('worker-lost');
  });

  it('still answers a cancel of a finished run with a 409', async () => {
    const { runId } = await createRun();
    expect(await executeRun(scheduler.workerDeps('worker-a'), runId)).toBe('succeeded');
    const answer = await scheduler.api('POST', `/v1/runs/${runId}/cancel`);
    expect(answer.status).toBe(409);
    expect((await scheduler.deps.runs.get(runId))?.status).toBe('SUCCEEDED');
  });
});

describe('a lease that lapses during the call', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  /** How far the worker's clock is ahead of the real one. */
  let ahead = 0;
  let leaseMs = 0;

  beforeAll(async () => {
    // A short lease margin: a 10 s timeout leases 12 s, and the worker beats every 4 s.
    scheduler = await startScheduler({ workerConcurrency: 0, tuning: { leaseMarginSeconds: 2 } });
    // As the call arrives, the worker's clock passes the lease's end: its heartbeats were held up (a
    // store in trouble) until the lease had lapsed. The call lasts until the worker aborts it (its
    // next beat refused), however slow the machine, well within its 10 s timeout.
    target = await startTarget(async (call) => {
      ahead = leaseMs + 1_000;
      for (let waited = 0; call.abortedAt === undefined && waited < 20_000; waited += 50) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return { status: 200 };
    });
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  it('stops the worker at its next heartbeat, recording nothing; the recovery records the lost worker', async () => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { timeoutSeconds: 10 }));
    expect(created.status).toBe(201);
    const runId = created.body.job.nextRunId as string;
    leaseMs = (await scheduler.deps.runs.get(runId))!.leaseSeconds * 1000;
    const result = await executeRun(
      scheduler.workerDeps('worker-a', () => Date.now() + ahead),
      runId,
    );
    // Before, the late heartbeat revived the lease and the call ran to its end: 'succeeded'.
    expect(result).toBe('fenced');
    const call = target.calls.at(-1)!;
    await eventually(
      () => Promise.resolve(call.abortedAt),
      (abortedAt) => abortedAt !== undefined,
    );
    const lapsed = (await scheduler.deps.runs.get(runId))!;
    expect(lapsed).toMatchObject({ status: 'RUNNING', leaseOwner: 'worker-a' });
    expect(Date.parse(lapsed.leaseExpiresAt!)).toBeLessThan(Date.now() + ahead);
    expect(
      await executeRun(
        scheduler.workerDeps('worker-b', () => Date.now() + ahead),
        runId,
      ),
    ).toBe('worker-lost');
    expect(await scheduler.deps.runs.get(runId)).toMatchObject({ status: 'FAILED', error: { code: 'WORKER_LOST' } });
  });
});
