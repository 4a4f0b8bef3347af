// A worker process killed during a run. The local runtime (`scripts/dev.ts`, as `npm run dev` starts
// it) runs in a child process over this test's tables and queues; it is killed with SIGKILL while
// the target is answering, then started again. The emulator keeps running throughout.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { Scheduler, TargetServer } from './harness';
import { eventually, jobBody, leaseRequest, startScheduler, startTarget } from './harness';
import { killProcess as kill, startRuntimeProcess } from './worker-process';

describe('a worker process killed during a run', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    // This process only serves the API; the child processes are the workers. Lease margin 2 s.
    scheduler = await startScheduler({ workerConcurrency: 0, tuning: { leaseMarginSeconds: 2 } });
    // The first call never answers in time (its worker dies during it); later calls succeed.
    target = await startTarget((_call, index) => (index === 0 ? new Promise((resolve) => setTimeout(() => resolve({ status: 200 }), 30_000)) : { status: 200 }));
  });
  afterAll(async () => {
    await Promise.all(children.map(kill));
    await scheduler.stop();
    await target.stop();
  });

  it('finishes the run after the lease expires, records the lost attempt, and calls the target at most twice', async () => {
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { timeoutSeconds: 4, retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 } }),
    );
    expect(created.status).toBe(201);
    const { jobId, nextRunId: runId } = created.body.job;

    const first = startRuntimeProcess(scheduler);
    children.push(first);
    await eventually(() => Promise.resolve(target.calls.length), (n) => n === 1, 30_000);
    const leased = (await scheduler.api('GET', `/v1/runs/${runId}`)).body;
    expect(leased).toMatchObject({ status: 'RUNNING', leaseOwner: expect.stringMatching(/^local-\d+$/) });
    await kill(first);

    // Restart the runtime, as an operator (or Lambda) would.
    const second = startRuntimeProcess(scheduler);
    children.push(second);
    const runs = await eventually(
      async () => (await scheduler.api('GET', `/v1/jobs/${jobId}/runs`)).body.items as Record<string, any>[],
      (items) => items.some((run) => run.status === 'SUCCEEDED'),
      45_000,
    );
    const [retry, lost] = runs; // newest first
    expect(lost).toMatchObject({ runId, attempt: 1, status: 'FAILED', leaseOwner: leased.leaseOwner, error: { code: 'WORKER_LOST', retryable: true } });
    expect(retry).toMatchObject({ attempt: 2, trigger: 'retry', status: 'SUCCEEDED', leaseOwner: expect.stringMatching(/^local-\d+$/) });
    expect(retry!.leaseOwner).not.toBe(lost!.leaseOwner);
    // The new attempt was leased only after the dead worker's lease had expired.
    expect(Date.parse(retry!.startedAt)).toBeGreaterThan(Date.parse(lost!.leaseExpiresAt));
    expect(target.calls.length).toBeLessThanOrEqual(2);
    expect(target.calls.map((call) => call.headers['x-attempt'])).toEqual(['1', '2']);
    expect(target.calls[0]?.abortedAt).toBeDefined(); // the killed process's connection dropped
  });

  it('keeps a message that arrives while a lease is about to end, and recovers the run with it', async () => {
    // Its own queue: a killed process's last long poll may still take a message from the old one.
    const scheduler = await startScheduler({ workerConcurrency: 0, tuning: { leaseMarginSeconds: 2 } });
    onTestFinished(() => scheduler.stop());
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { timeoutSeconds: 1, retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 } }),
    );
    const { jobId, nextRunId: runId } = created.body.job;
    // A worker takes the lease (3 s) and dies at once, before it could touch the message.
    const ghost = await scheduler.workerDeps('ghost').runs.lease(runId, leaseRequest(scheduler.config, 'ghost'));
    expect(ghost.kind).toBe('leased');
    const calls = target.calls.length;

    // The message reaches a live worker while the lease still holds: it must not be dropped.
    await scheduler.startWorkers(1);
    const runs = await eventually(
      async () => (await scheduler.api('GET', `/v1/jobs/${jobId}/runs`)).body.items as Record<string, any>[],
      (items) => items.some((run) => run.status === 'SUCCEEDED'),
      20_000,
    );
    expect(runs.map((run) => [run.attempt, run.status, run.error?.code ?? null])).toEqual([
      [2, 'SUCCEEDED', null],
      [1, 'FAILED', 'WORKER_LOST'],
    ]);
    expect(runs[1]).toMatchObject({ runId, leaseOwner: 'ghost' });
    expect(target.calls.length - calls).toBe(1);
  });
});
