// Leases under contention, against the emulator: two workers racing for one run, a duplicate
// message, a message for no run, a worker that dies holding a lease, and the fencing of late writes.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { executeRun } from '../../lambdas/app/execute-run';
import { logger } from '../../lambdas/core/logger';
import type { Scheduler, TargetServer } from './harness';
import { eventually, jobBody, startScheduler, startTarget } from './harness';

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
    const results = await Promise.all([
      executeRun(scheduler.workerDeps('worker-a'), runId),
      executeRun(scheduler.workerDeps('worker-b'), runId),
    ]);
    expect([...results].sort()).toEqual(['held', 'succeeded']);
    expect(target.calls.length - calls).toBe(1);
    const run = await scheduler.deps.runs.get(runId);
    expect(run?.status).toBe('SUCCEEDED');
    expect(run?.leaseOwner).toBe(results[0] === 'succeeded' ? 'worker-a' : 'worker-b');
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
      await eventually(() => scheduler.queueDepth(), (depth) => depth === 0);
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
      await eventually(() => runtime.queueDepth(), (depth) => depth === 0);
      expect(await runtime.countItems('runs')).toBe(0);
    } finally {
      await runtime.stop();
    }
  });

  it('hands a run whose worker died to the next worker once the lease expires, and fences the late worker', async () => {
    const { runId } = await createRun();
    // Worker A leases the run and "dies": it never records an outcome.
    const leasedByA = await scheduler.deps.runs.lease(runId, { owner: 'worker-a', now: Date.now() });
    expect(leasedByA.kind).toBe('leased');
    if (leasedByA.kind !== 'leased') return;
    const expiresAt = Date.parse(leasedByA.run.leaseExpiresAt ?? '');

    // Before expiry, nobody else may take it.
    expect((await executeRun(scheduler.workerDeps('worker-b'), runId))).toBe('held');

    // After expiry, worker B (whose clock is past the lease) takes it over and completes it.
    const later = () => expiresAt + 1_000;
    expect(await executeRun(scheduler.workerDeps('worker-b', later), runId)).toBe('succeeded');
    const run = await scheduler.deps.runs.get(runId);
    expect(run).toMatchObject({ status: 'SUCCEEDED', leaseOwner: 'worker-b', version: 2 });

    // Worker A comes back and tries to record its outcome under its old fencing version.
    const late = await scheduler.deps.runs.complete(runId, leasedByA.run.version, { status: 'FAILED', now: Date.now(), error: null });
    expect(late).toBe('fenced');
    expect((await scheduler.deps.runs.get(runId))?.status).toBe('SUCCEEDED');
  });
});
