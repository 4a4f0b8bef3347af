// A runtime process killed with messages fetched ahead of its workers: those messages are hidden
// only briefly (the runtime receives them with a short visibility and keeps them hidden while they
// wait), so another runtime runs them within seconds, not after the queue's visibility timeout or
// the ticker's check-back (no ticker runs here at all).
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scheduler, TargetServer } from './harness';
import { eventually, jobBody, startScheduler, startTarget } from './harness';
import { killProcess, startRuntimeProcess } from './worker-process';

describe('a runtime process killed with prefetched messages', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    // This process serves the API only; the child process and then startWorkers are the workers.
    scheduler = await startScheduler({ workerConcurrency: 0, tuning: { leaseMarginSeconds: 2 } });
    // The first call holds the child's only worker; the rest answer at once.
    target = await startTarget((_call, index) =>
      index === 0 ? new Promise((resolve) => setTimeout(() => resolve({ status: 200 }), 60_000)) : { status: 200 },
    );
  });
  afterAll(async () => {
    await Promise.all(children.map(killProcess));
    await scheduler.stop();
    await target.stop();
  });

  it('has the fetched-ahead runs run by another process within seconds', async () => {
    const blocker = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { timeoutSeconds: 5 }));
    expect(blocker.status).toBe(201);
    const child = startRuntimeProcess(scheduler, { WORKER_CONCURRENCY: '1' });
    children.push(child);
    await eventually(
      () => Promise.resolve(target.calls.length),
      (n) => n === 1,
      30_000,
    );

    // The child's one worker is busy: these wait in its fetch-ahead buffer, received and hidden.
    const runIds: string[] = [];
    for (let i = 0; i < 20; i++) {
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: `prefetched-${i}` }));
      expect(created.status).toBe(201);
      runIds.push(created.body.job.nextRunId);
    }
    await eventually(
      () => scheduler.deps.dispatch.depth(),
      (depth) => depth.visible === 0 && depth.delayed === 0 && depth.inFlight >= 21,
      30_000,
    );
    expect(target.calls).toHaveLength(1);
    for (const runId of runIds) expect((await scheduler.deps.runs.get(runId))?.status).toBe('QUEUED');

    await killProcess(child);
    await scheduler.startWorkers(2);
    // Back after the short prefetch visibility (20 s), not the queue's 5,400 s: each runs once.
    await eventually(
      async () =>
        (await Promise.all(runIds.map(async (runId) => (await scheduler.deps.runs.get(runId))?.status))).filter((status) => status === 'SUCCEEDED').length,
      (succeeded) => succeeded === runIds.length,
      45_000,
    );
    for (const runId of runIds) expect((await scheduler.deps.runs.get(runId))?.attempt).toBe(1);
    expect(target.calls.length).toBeLessThanOrEqual(1 + runIds.length + 1);
  });
});
