// Worker pools and priorities against the emulator: a job type in a pool of its own does not hold
// up other job types, high runs of a pool are taken before the normal ones waiting in it, and a
// backlog of low runs neither holds up normal runs nor takes more than the low lane's workers.
// Assertions are on order and counts, not on timings.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scheduler, TargetServer } from './harness';
import { eventually, jobBody, startScheduler, startTarget } from './harness';

const SLOW_CALL_MS = 2_500;

describe('worker pools and priorities', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  /** Low runs of the bulk pool being called right now, and the most at once. */
  const lowRunning = { now: 0, most: 0 };

  beforeAll(async () => {
    scheduler = await startScheduler({
      workerConcurrency: 2,
      pools: [
        // One run at a time: a backlog of exports queues up behind the one running.
        { name: 'slow', jobTypes: ['export'], maxConcurrency: 1, timeoutSeconds: 60, batchSize: 1 },
        { name: 'reports', jobTypes: ['report'], maxConcurrency: 1, timeoutSeconds: 60, batchSize: 1 },
        // Two normal runs at a time, one low run.
        { name: 'bulk', jobTypes: ['bulk'], maxConcurrency: 2, lowMaxConcurrency: 1, timeoutSeconds: 60, batchSize: 1 },
      ],
    });
    target = await startTarget(async (call) => {
      const running = call.path.startsWith('/hook/slow/bulk-low') ? lowRunning : null;
      if (running) {
        running.now += 1;
        running.most = Math.max(running.most, running.now);
      }
      if (call.path.startsWith('/hook/slow')) await new Promise((resolve) => setTimeout(resolve, SLOW_CALL_MS));
      if (running) running.now -= 1;
      // Flaky targets fail their first call.
      if (call.path.startsWith('/hook/flaky') && calls(call.path).length === 1) return { status: 503 };
      return { status: 200 };
    });
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  const calls = (prefix: string) => target.calls.filter((call) => call.path.startsWith(prefix));
  const create = async (type: string, path: string, extra: Record<string, unknown> = {}) => {
    const response = await scheduler.api('POST', '/v1/jobs', jobBody(`${target.url}/${path}`, { type, timeoutSeconds: 30, ...extra }));
    expect(response.status).toBe(201);
    return response.body.job as { jobId: string };
  };

  it('runs a default-pool job while a slow pool works through its backlog', async () => {
    for (let i = 0; i < 4; i++) await create('export', `slow/export-${i}`);
    await eventually(
      () => Promise.resolve(calls('/hook/slow/export').length),
      (n) => n >= 1,
    );

    const billing = await create('billing', 'fast/billing');
    await eventually(
      () => Promise.resolve(calls('/hook/fast/billing').length),
      (n) => n === 1,
    );
    // The billing run did not wait for the export backlog: at most the running export and one more
    // had started when it ran (a single shared queue would have put it fifth).
    expect(calls('/hook/slow/export').length).toBeLessThanOrEqual(2);
    const runs = await eventually(
      () => scheduler.api('GET', `/v1/jobs/${billing.jobId}/runs`),
      (response) => response.body.items?.[0]?.status === 'SUCCEEDED',
    );
    expect(runs.body.items[0]).toMatchObject({ jobType: 'billing', priority: 'normal' });

    // Every pool and lane is in the health report; the defaults keep their old keys.
    const health = await scheduler.api('GET', '/v1/health');
    expect(Object.keys(health.body.queues.pools).sort()).toEqual(['bulk', 'default', 'reports', 'slow']);
    expect(health.body.queues.pools.slow).toMatchObject({
      jobTypes: ['export'],
      standard: { oldestMessageAgeSeconds: null },
      high: { visible: 0 },
      low: { visible: 0 },
      dlq: { visible: 0 },
    });
    expect(health.body.queues.pools.default.standard).toEqual(health.body.queues.dispatch);
    // The rest of the backlog still runs, one at a time.
    await eventually(
      () => Promise.resolve(calls('/hook/slow/export').length),
      (n) => n === 4,
      30_000,
    );
  });

  it("takes a pool's high runs before the normal ones waiting in it", async () => {
    for (let i = 0; i < 4; i++) await create('report', `slow/report-normal-${i}`);
    await eventually(
      () => Promise.resolve(calls('/hook/slow/report').length),
      (n) => n >= 1,
    );

    const urgent = await create('report', 'slow/report-high', { priority: 'high' });
    await eventually(
      () => Promise.resolve(calls('/hook/slow/report').length),
      (n) => n === 5,
      30_000,
    );
    const order = calls('/hook/slow/report').map((call) => call.path.replace('/hook/slow/', ''));
    // Four normal runs were waiting before it; the high run came before at least two of them.
    expect(order.indexOf('report-high')).toBeLessThanOrEqual(2);
    expect(order.slice(-2).every((name) => name.startsWith('report-normal'))).toBe(true);
    const run = await eventually(
      () => scheduler.api('GET', `/v1/jobs/${urgent.jobId}/runs`),
      (response) => response.body.items?.[0]?.status === 'SUCCEEDED',
    );
    expect(run.body.items[0]).toMatchObject({ priority: 'high' });
  });

  it('runs a normal run before a backlog of low runs, and never more low runs at once than the low lane allows', async () => {
    for (let i = 0; i < 4; i++) await create('bulk', `slow/bulk-low-${i}`, { priority: 'low' });
    await eventually(
      () => Promise.resolve(calls('/hook/slow/bulk-low').length),
      (n) => n >= 1,
    );

    const normal = await create('bulk', 'slow/bulk-normal');
    await eventually(
      () => Promise.resolve(calls('/hook/slow/bulk-normal').length),
      (n) => n === 1,
      30_000,
    );
    // The normal run did not wait for the low backlog: at most the running low run and the next had
    // started when it ran (one shared lane would have put it fifth).
    expect(calls('/hook/slow/bulk-low').length).toBeLessThanOrEqual(2);
    await eventually(
      () => Promise.resolve(calls('/hook/slow/bulk-low').length),
      (n) => n === 4,
      30_000,
    );
    // The pool runs two at a time; its low lane, one.
    expect(lowRunning.most).toBe(1);
    const runs = await eventually(
      () => scheduler.api('GET', `/v1/jobs/${normal.jobId}/runs`),
      (response) => response.body.items?.[0]?.status === 'SUCCEEDED',
    );
    expect(runs.body.items[0]).toMatchObject({ jobType: 'bulk', priority: 'normal' });
  });

  it('runs high and low jobs of the default pool from its own lanes, their retries too', async () => {
    const jobs = await Promise.all(
      (['high', 'low'] as const).map((priority) =>
        create('billing', `flaky/${priority}`, { priority, retryPolicy: { maxAttempts: 2, initialDelaySeconds: 0, maxDelaySeconds: 0 } }),
      ),
    );
    for (const job of jobs) {
      const runs = await eventually(
        () => scheduler.api('GET', `/v1/jobs/${job.jobId}/runs`),
        (response) => response.body.items?.length === 2 && response.body.items[0].status === 'SUCCEEDED',
        30_000,
      );
      // The failed first attempt and its retry, both in the job's lane.
      expect(runs.body.items.map((run: { attempt: number; status: string }) => [run.attempt, run.status])).toEqual([
        [2, 'SUCCEEDED'],
        [1, 'FAILED'],
      ]);
    }
    const lanes = (await scheduler.api('GET', '/v1/health')).body.queues.pools.default;
    for (const lane of ['standard', 'high', 'low']) expect(lanes[lane], lane).toMatchObject({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it("refuses a job whose timeout does not fit in its pool's worker, on create and on PATCH", async () => {
    const tooLong = await scheduler.api('POST', '/v1/jobs', jobBody(`${target.url}/fast/x`, { type: 'export', timeoutSeconds: 55 }));
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.errors).toEqual([{ path: 'timeoutSeconds', message: 'must be at most 50 for job type export: its worker pool slow stops after 60 s' }]);

    const job = await scheduler.api('POST', '/v1/jobs', jobBody(`${target.url}/fast/x`, { type: 'billing', schedule: { kind: 'delay', seconds: 3600 } }));
    expect(job.status).toBe(201);
    const moved = await scheduler.api('PATCH', `/v1/jobs/${job.body.job.jobId}`, { type: 'export' }, { 'if-match': String(job.body.job.version) });
    expect(moved.status).toBe(400);
    expect(moved.body.errors).toEqual([expect.objectContaining({ path: 'timeoutSeconds' })]);
    const fits = await scheduler.api(
      'PATCH',
      `/v1/jobs/${job.body.job.jobId}`,
      { type: 'export', timeoutSeconds: 50, priority: 'high' },
      { 'if-match': String(job.body.job.version) },
    );
    expect(fits.status).toBe(200);
    expect(fits.body.job ?? fits.body).toMatchObject({ type: 'export', priority: 'high' });
  });

  it("refuses a workflow step whose timeout does not fit in its type's pool, by the step's type or the workflow's, and writes nothing", async () => {
    const step = (id: string, fields: Record<string, unknown> = {}) => ({ id, target: { kind: 'http', url: `${target.url}/fast/x` }, ...fields });
    const byStepType = await scheduler.api('POST', '/v1/workflows', {
      name: 'slow-step',
      steps: [step('a'), step('b', { type: 'export', timeoutSeconds: 55, dependsOn: ['a'] })],
    });
    expect(byStepType.status).toBe(400);
    expect(byStepType.body.errors).toEqual([
      { path: 'steps.1.timeoutSeconds', message: 'must be at most 50 for job type export: its worker pool slow stops after 60 s' },
    ]);
    const byWorkflowType = await scheduler.api('POST', '/v1/workflows', { name: 'slow-steps', type: 'export', steps: [step('a')] });
    expect(byWorkflowType.status).toBe(400);
    expect(byWorkflowType.body.errors).toEqual([expect.objectContaining({ path: 'steps.0.timeoutSeconds' })]);
    const listed = await scheduler.api('GET', '/v1/workflows');
    expect(listed.body.items.map((workflow: { name: string }) => workflow.name)).not.toContain('slow-step');

    const fits = await scheduler.api('POST', '/v1/workflows', { name: 'fitting-steps', type: 'export', steps: [step('a', { timeoutSeconds: 50 })] });
    expect(fits.status).toBe(201);
    const version = await scheduler.api('POST', `/v1/workflows/${fits.body.workflowId}/versions`, {
      name: 'fitting-steps',
      type: 'export',
      steps: [step('a', { timeoutSeconds: 51 })],
    });
    expect(version.status).toBe(400);
    expect(version.body.errors).toEqual([expect.objectContaining({ path: 'steps.0.timeoutSeconds' })]);
  });
});

describe('the ticker and pools', () => {
  let scheduler: Scheduler;

  beforeAll(async () => {
    // Everything not due now waits in the time index; no pollers, so the queues can be read.
    scheduler = await startScheduler({
      workerConcurrency: 0,
      tuning: { nearHorizonSeconds: 0 },
      pools: [{ name: 'reports', jobTypes: ['report'], maxConcurrency: 1, timeoutSeconds: 60 }],
    });
  });
  afterAll(async () => {
    await scheduler.stop();
  });

  it('releases a run to its pool and lane: it reads the priority the time index does not carry', async () => {
    const later = { schedule: { kind: 'delay', seconds: 30 }, timeoutSeconds: 30 };
    for (const [type, priority] of [
      ['report', 'high'],
      ['report', 'normal'],
      ['report', 'low'],
      ['billing', 'high'],
      ['billing', 'normal'],
      ['billing', 'low'],
    ] as const) {
      expect((await scheduler.api('POST', '/v1/jobs', jobBody('http://127.0.0.1:9/hook', { type, priority, ...later }))).status).toBe(201);
    }
    const depths = async () => {
      const waiting = async (url: string | undefined) => {
        const depth = await scheduler.deps.dispatch.queue(url!).depth();
        return depth.visible + depth.delayed + depth.inFlight;
      };
      const reports = scheduler.config.pools.find((pool) => pool.name === 'reports')!;
      return {
        defaultStandard: await waiting(scheduler.config.dispatchQueueUrl),
        defaultHigh: await waiting(scheduler.config.dispatchHighQueueUrl),
        defaultLow: await waiting(scheduler.config.dispatchLowQueueUrl),
        reportsStandard: await waiting(reports.queueUrl),
        reportsHigh: await waiting(reports.highQueueUrl),
        reportsLow: await waiting(reports.lowQueueUrl),
      };
    };
    const none = { defaultStandard: 0, defaultHigh: 0, defaultLow: 0, reportsStandard: 0, reportsHigh: 0, reportsLow: 0 };
    expect(await depths()).toEqual(none);
    await scheduler.runtime.tickNow();
    expect(await depths()).toEqual({ defaultStandard: 1, defaultHigh: 1, defaultLow: 1, reportsStandard: 1, reportsHigh: 1, reportsLow: 1 });
  });
});
