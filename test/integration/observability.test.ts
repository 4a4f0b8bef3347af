// Observability against the emulator: the metrics and log lines a run's lifecycle writes, and what
// GET /v1/health reports after a scripted mix of successes, a retried failure, a dead run and a run
// still in flight, for its tenant only.
import { randomBytes } from 'node:crypto';
import { PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lambdas/core/metrics';
import type { Scheduler, TargetServer } from './harness';
import { eventually, jobBody, startScheduler, startTarget } from './harness';
import type { LogCapture } from './support/log-capture';
import { captureLogs } from './support/log-capture';

type Emf = Record<string, any>;
type RunBody = Record<string, any>;

/** Sums every metric value in the EMF lines, by job type then metric name. */
function metricTotals(lines: string[]): Map<string, Map<string, { sum: number; samples: number }>> {
  const totals = new Map<string, Map<string, { sum: number; samples: number }>>();
  for (const line of lines) {
    const doc = JSON.parse(line) as Emf;
    const jobType = String(doc.JobType);
    const byName = totals.get(jobType) ?? new Map<string, { sum: number; samples: number }>();
    totals.set(jobType, byName);
    for (const { Name: name } of doc._aws.CloudWatchMetrics[0].Metrics as { Name: string }[]) {
      const values = [doc[name]].flat() as number[];
      const total = byName.get(name) ?? { sum: 0, samples: 0 };
      byName.set(name, { sum: total.sum + values.reduce((a, b) => a + b, 0), samples: total.samples + values.length });
    }
  }
  return totals;
}

const countsOf = (totals: ReturnType<typeof metricTotals>, jobType: string): Record<string, number> =>
  Object.fromEntries([...(totals.get(jobType) ?? new Map<string, { sum: number }>()).entries()].map(([name, total]) => [name, total.sum]));

async function runsOf(scheduler: Scheduler, jobId: string): Promise<RunBody[]> {
  const { body } = await scheduler.api('GET', `/v1/jobs/${jobId}/runs?limit=100`);
  return (body.items as RunBody[]).sort((a, b) => a.attempt - b.attempt);
}

async function createJob(scheduler: Scheduler, body: Record<string, unknown>): Promise<string> {
  const created = await scheduler.api('POST', '/v1/jobs', body);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.job.jobId as string;
}

const finished = (runs: RunBody[]) => runs.some((run) => ['SUCCEEDED', 'DEAD'].includes(run.status));
const retryFast = { retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 } };

describe("a run's lifecycle in metrics and logs", () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  let logs: LogCapture;

  beforeAll(async () => {
    scheduler = await startScheduler();
    // Answers by path: /ok succeeds, /flaky fails once then succeeds, /bad is refused for good.
    let flakyCalls = 0;
    target = await startTarget((call) => {
      if (call.path.endsWith('/bad')) return { status: 400 };
      if (call.path.endsWith('/flaky')) return { status: flakyCalls++ === 0 ? 503 : 200 };
      return { status: 200 };
    });
  });
  afterAll(async () => {
    await target.stop();
    await scheduler.stop();
  });
  beforeEach(() => {
    // The structured lines, at INFO (this suite runs at WARN otherwise), kept off the test output.
    logs = captureLogs('INFO');
  });
  afterEach(() => logs.stop());

  it('counts each transition by job type, with start lag, scheduling lag and duration, and never a run id', async () => {
    const marker = `secret-${randomBytes(6).toString('hex')}`;
    const ok = await createJob(scheduler, jobBody(`${target.url}/ok`, { type: 'obs-ok', payload: { marker } }));
    const flaky = await createJob(scheduler, jobBody(`${target.url}/flaky`, { type: 'obs-flaky', payload: { marker }, ...retryFast }));
    const bad = await createJob(scheduler, jobBody(`${target.url}/bad`, { type: 'obs-bad', payload: { marker }, ...retryFast }));
    const runs = await Promise.all([ok, flaky, bad].map((jobId) => eventually(() => runsOf(scheduler, jobId), finished)));
    await scheduler.runtime.tickNow();

    const totals = metricTotals(
      await eventually(
        () => Promise.resolve([...scheduler.metricLines]),
        (lines) => countsOf(metricTotals(lines), 'obs-bad').RunsDead === 1,
      ),
    );
    expect(countsOf(totals, 'obs-ok')).toEqual({
      RunsCreated: 1,
      RunsQueued: 1,
      RunsStarted: 1,
      RunsSucceeded: 1,
      StartLag: expect.any(Number),
      SchedulingLag: expect.any(Number),
      RunDuration: expect.any(Number),
    });
    // The failed first attempt writes a retry run (created, queued), which then succeeds.
    expect(countsOf(totals, 'obs-flaky')).toMatchObject({ RunsCreated: 2, RunsQueued: 2, RunsStarted: 2, RunsFailed: 1, RunsRetried: 1, RunsSucceeded: 1 });
    expect(countsOf(totals, 'obs-bad')).toMatchObject({ RunsCreated: 1, RunsQueued: 1, RunsStarted: 1, RunsDead: 1 });
    expect(countsOf(totals, 'obs-bad')).not.toHaveProperty('RunsFailed');
    for (const jobType of ['obs-ok', 'obs-flaky', 'obs-bad']) {
      const started = totals.get(jobType)!.get('RunsStarted')!.samples;
      expect(totals.get(jobType)!.get('StartLag')!.samples).toBe(started);
      expect(totals.get(jobType)!.get('RunDuration')!.samples).toBe(started);
    }
    expect(countsOf(totals, '-')).toMatchObject({ TickerRuns: 1, TickerReleased: 0, TickerRedelivered: 0 });
    expect(totals.get('-')!.get('TickerLag')!.samples).toBe(1);

    for (const line of scheduler.metricLines) {
      const doc = JSON.parse(line) as Emf;
      expect(doc._aws.CloudWatchMetrics[0]).toMatchObject({ Namespace: METRICS_NAMESPACE, Dimensions: [['Service'], ['Service', 'JobType']] });
      expect(doc.Service).toBe(SERVICE_NAME);
      // Only the two dimensions and the metric values: no run, job or tenant ids.
      const names = (doc._aws.CloudWatchMetrics[0].Metrics as { Name: string }[]).map((m) => m.Name);
      expect(Object.keys(doc).sort()).toEqual(['JobType', 'Service', '_aws', ...names].sort());
    }

    // One log line per transition of the flaky job's two runs, each naming the run.
    const [first, second] = runs[1]!;
    const transitions = (runId: string) =>
      logs
        .records()
        .filter((line) => line.runId === runId && typeof line.status === 'string')
        .map((line) => [line.message, line.status]);
    expect(transitions(first!.runId)).toEqual([
      ['run created', 'QUEUED'],
      ['run queued', 'QUEUED'],
      ['run started', 'RUNNING'],
      ['run finished', 'FAILED'],
    ]);
    expect(transitions(second!.runId)).toEqual([
      ['run created', 'QUEUED'],
      ['run queued', 'QUEUED'],
      ['run started', 'RUNNING'],
      ['run finished', 'SUCCEEDED'],
    ]);
    const finishedLine = logs.records().find((line) => line.runId === first!.runId && line.message === 'run finished')!;
    expect(finishedLine).toMatchObject({
      jobId: flaky,
      tenantId: scheduler.tenantId,
      jobType: 'obs-flaky',
      attempt: 1,
      errorCode: 'HTTP_503',
      durationMs: expect.any(Number),
    });
    const startedLine = logs.records().find((line) => line.runId === second!.runId && line.message === 'run started')!;
    expect(startedLine).toMatchObject({ attempt: 2, startLagMs: expect.any(Number), leaseOwner: expect.any(String) });
    // Payloads are never logged.
    expect(JSON.stringify(logs.records())).not.toContain(marker);
  });
});

describe('GET /v1/health', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  let releaseHanging: () => void = () => undefined;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 3 });
    let flakyCalls = 0;
    const hanging = new Promise<void>((resolve) => {
      releaseHanging = resolve;
    });
    target = await startTarget(async (call) => {
      if (call.path.endsWith('/bad')) return { status: 400 };
      if (call.path.endsWith('/flaky')) return { status: flakyCalls++ === 0 ? 500 : 200 };
      if (call.path.endsWith('/hang')) {
        await hanging;
        return { status: 200 };
      }
      return { status: 200 };
    });
  });
  afterAll(async () => {
    releaseHanging();
    await target.stop();
    await scheduler.stop();
  });

  it('reports runs by status, lag, success rate, dead runs and the run in flight with its lease, for the caller only', async () => {
    const jobs = await Promise.all([
      ...[1, 2, 3].map(() => createJob(scheduler, jobBody(`${target.url}/ok`, { type: 'health-ok' }))),
      createJob(scheduler, jobBody(`${target.url}/flaky`, { type: 'health-flaky', ...retryFast })),
      createJob(scheduler, jobBody(`${target.url}/bad`, { type: 'health-bad', ...retryFast })),
    ]);
    for (const jobId of jobs) await eventually(() => runsOf(scheduler, jobId), finished);
    const hangingJob = await createJob(scheduler, jobBody(`${target.url}/hang`, { type: 'health-hang', timeoutSeconds: 60 }));
    const [hangingRun] = await eventually(
      () => runsOf(scheduler, hangingJob),
      (runs) => runs[0]?.status === 'RUNNING',
    );
    await scheduler.runtime.tickNow();

    // Roll-ups are written when each worker batch ends; the registry about a second into a run.
    const health = await eventually(
      () => scheduler.api('GET', '/v1/health?minutes=5'),
      (response) => response.body?.runs?.byStatus?.SUCCEEDED === 4 && response.body.inFlight.length === 1,
    );
    expect(health.status).toBe(200);
    const { runs, inFlight, queues, ticker, problems } = health.body;
    expect(runs.windowMinutes).toBe(5);
    expect(runs.byStatus).toEqual({ RUNNING: 1, SUCCEEDED: 4, FAILED: 1, TIMED_OUT: 0, DEAD: 1, SKIPPED: 0, CANCELLED: 0 });
    // Started: 3 ok, 2 attempts of flaky, 1 bad, 1 hanging.
    expect(runs.started).toBe(7);
    expect(runs.retried).toBe(1);
    expect(runs.workerLost).toBe(0);
    expect(runs.successRate).toBe(66.67);
    expect(runs.startLagMs.samples).toBe(7);
    expect(runs.startLagMs.p50).toEqual(expect.any(Number));
    expect(runs.startLagMs.p50).toBeLessThanOrEqual(runs.startLagMs.p95);
    expect(runs.startLagMs.p95).toBeLessThanOrEqual(runs.startLagMs.p99);
    expect(runs.perMinute).toHaveLength(5);
    expect(runs.perMinute.reduce((sum: number, minute: { started: number }) => sum + minute.started, 0)).toBe(7);
    expect(runs.perMinute.reduce((sum: number, minute: { errors: number }) => sum + minute.errors, 0)).toBe(2);
    // Each minute's own start lag percentiles (the console's chart): null in a minute without leases.
    for (const minute of runs.perMinute) {
      if (minute.started === 0) expect([minute.startLagP50Ms, minute.startLagP99Ms]).toEqual([null, null]);
      else expect(minute.startLagP50Ms).toBeLessThanOrEqual(minute.startLagP99Ms);
    }
    expect(
      runs.perMinute.some((minute: { startLagP99Ms: number | null }) => minute.startLagP99Ms !== null && minute.startLagP99Ms <= runs.startLagMs.p99),
    ).toBe(true);
    expect(runs.deadAwaitingReplay).toEqual({ count: 1, capped: false });

    expect(inFlight).toEqual([
      {
        runId: hangingRun!.runId,
        jobId: hangingJob,
        jobType: 'health-hang',
        attempt: 1,
        startedAt: hangingRun!.startedAt,
        leaseOwner: expect.stringContaining(scheduler.prefix),
        leaseExpiresAt: expect.any(String),
        leaseExpired: false,
      },
    ]);
    expect(Date.parse(inFlight[0].leaseExpiresAt)).toBeGreaterThan(Date.parse(health.body.checkedAt));

    expect(queues.dispatch).toMatchObject({ visible: 0, delayed: 0, oldestMessageAgeSeconds: null });
    expect(queues.dispatch.inFlight).toBeGreaterThanOrEqual(1);
    expect(queues.dispatchDlq).toEqual({ visible: 0, inFlight: 0, delayed: 0, oldestMessageAgeSeconds: null });
    expect(ticker.lastCompletedAt).not.toBeNull();
    expect(ticker.sinceLastCompletionSeconds).toBeLessThan(60);
    expect(problems.filter((p: string) => !p.startsWith('start lag'))).toEqual([]);

    // Another tenant sees the shared queues and ticker, and none of these runs.
    const otherKey = `key_${randomBytes(18).toString('base64url')}`;
    await scheduler.deps.apiKeys.issue(otherKey, `${scheduler.tenantId}-other`, Date.now());
    const other = await scheduler.api('GET', '/v1/health?minutes=5', undefined, { authorization: `Bearer ${otherKey}` });
    expect(other.status).toBe(200);
    expect(other.body.runs.byStatus).toEqual({ RUNNING: 0, SUCCEEDED: 0, FAILED: 0, TIMED_OUT: 0, DEAD: 0, SKIPPED: 0, CANCELLED: 0 });
    expect(other.body.runs).toMatchObject({
      started: 0,
      successRate: null,
      startLagMs: { p50: null, p95: null, p99: null, samples: 0 },
      deadAwaitingReplay: { count: 0, capped: false },
    });
    expect(other.body.inFlight).toEqual([]);
    expect(other.body.ticker.lastCompletedAt).toBe(ticker.lastCompletedAt);

    // The run ends: it leaves the in-flight list and counts as a success.
    releaseHanging();
    const after = await eventually(
      () => scheduler.api('GET', '/v1/health?minutes=5'),
      (response) => response.body.inFlight.length === 0 && response.body.runs.byStatus.SUCCEEDED === 5,
    );
    expect(after.body.runs.byStatus.RUNNING).toBe(0);
  });

  it("names a lane whose oldest message is past the alarms' default age: its workers do not keep up or do not consume", async () => {
    // What CloudWatch holds for SQS queues in AWS (moto publishes no SQS metrics itself).
    const age = async (queueUrl: string, seconds: number): Promise<void> => {
      await scheduler.clients.cloudwatch.send(
        new PutMetricDataCommand({
          Namespace: 'AWS/SQS',
          MetricData: [
            {
              MetricName: 'ApproximateAgeOfOldestMessage',
              Dimensions: [{ Name: 'QueueName', Value: queueUrl.split('/').pop()! }],
              // A minute and a half ago: SQS's points come in late, and a point of the current minute is in no whole period yet.
              Timestamp: new Date(Date.now() - 90_000),
              Value: seconds,
              Unit: 'Seconds',
            },
          ],
        }),
      );
    };
    const { dispatchQueueUrl, dispatchLowQueueUrl } = scheduler.config;
    // Under its limit (a delayed message waits 15 minutes at most) on the standard lane; past the low lane's hour.
    await age(dispatchQueueUrl, 1_000);
    await age(dispatchLowQueueUrl!, 4_000);
    const health = await scheduler.api('GET', '/v1/health?minutes=1');
    expect(health.status).toBe(200);
    expect(health.body.queues.dispatch.oldestMessageAgeSeconds).toBe(1_000);
    expect(health.body.status).toBe('degraded');
    const lanes = health.body.problems.filter((problem: string) => problem.includes(' lane '));
    expect(lanes).toEqual(['the low lane of the default pool has a message 4000 s old (over 3600 s): its workers do not keep up, or do not consume it']);
  });

  it('refuses a window outside 1 to 60 minutes', async () => {
    for (const minutes of ['0', '61', 'soon']) {
      const response = await scheduler.api('GET', `/v1/health?minutes=${minutes}`);
      expect(response.status).toBe(400);
      expect(response.body.errors.map((e: { path: string }) => e.path)).toEqual(['minutes']);
    }
  });
});

describe('an external run waiting for a claim', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler();
  });
  afterAll(() => scheduler.stop());

  it('counts its wait for a claim as ClaimWait, apart from start lag, which stays what the scheduler controls', async () => {
    const waitMs = 3_000;
    const created = await scheduler.api('POST', '/v1/jobs', {
      name: 'slow-poller',
      type: 'claim-wait',
      schedule: { kind: 'now' },
      target: { kind: 'external', leaseSeconds: 30 },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const runId = created.body.job.nextRunId as string;
    const offered = await eventually(
      () => scheduler.api('GET', `/v1/runs/${runId}`),
      (response) => response.body.status === 'QUEUED' && response.body.startedAt !== null,
    );
    // A slow external poller: the run waits offered, claimable, for a few seconds.
    await new Promise((resolve) => setTimeout(resolve, waitMs));
    const claimed = await scheduler.api('POST', '/v1/workers/claim', { jobType: 'claim-wait', workerId: 'slow' });
    expect(claimed.status, JSON.stringify(claimed.body)).toBe(200);
    const due = Date.parse(offered.body.availableAt as string);
    const offeredLag = Date.parse(offered.body.startedAt as string) - due;

    const totals = await eventually(
      () => Promise.resolve(metricTotals([...scheduler.metricLines])),
      (found) => (found.get('claim-wait')?.get('ClaimWait')?.samples ?? 0) >= 1,
    );
    const ofType = totals.get('claim-wait')!;
    // Start lag once, at the offer (the scheduler's part); the claim adds a ClaimWait, not a second StartLag.
    expect(ofType.get('StartLag')).toEqual({ sum: Math.max(0, offeredLag), samples: 1 });
    expect(ofType.get('ClaimWait')!.samples).toBe(1);
    expect(ofType.get('ClaimWait')!.sum).toBeGreaterThanOrEqual(waitMs);
    expect(ofType.get('RunsStarted')).toEqual({ sum: 1, samples: 1 });

    const health = await eventually(
      () => scheduler.api('GET', '/v1/health?minutes=5'),
      (response) => response.body?.runs?.claimWaitMs?.samples === 1,
    );
    expect(health.body.runs.startLagMs.samples).toBe(1);
    expect(health.body.runs.startLagMs.p99).toBeLessThan(waitMs);
    expect(health.body.runs.claimWaitMs.p99).toBeGreaterThanOrEqual(waitMs);
  });
});

describe('workflow runs in metrics', () => {
  let workflowScheduler: Scheduler;
  let workflowTarget: TargetServer;

  beforeAll(async () => {
    workflowScheduler = await startScheduler();
    workflowTarget = await startTarget(async (call) => {
      if (call.path.endsWith('/slow')) await new Promise((resolve) => setTimeout(resolve, 3_000));
      return { status: call.path.endsWith('/bad') ? 400 : 200 };
    });
  });
  afterAll(async () => {
    await workflowTarget.stop();
    await workflowScheduler.stop();
  });

  it('counts workflow runs per workflow (started, succeeded, failed, cancelled, step failures) with their duration, in the workflow:<name> dimension', async () => {
    const step = (id: string, path: string, dependsOn: string[] = []) => ({
      id,
      target: { kind: 'http', url: `${workflowTarget.url}/${path}` },
      retryPolicy: { maxAttempts: 1 },
      dependsOn,
    });
    const create = async (name: string, steps: unknown[]): Promise<string> => {
      const created = await workflowScheduler.api('POST', '/v1/workflows', { name, steps });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      return created.body.workflowId as string;
    };
    const good = await create('obs-wf-good', [step('a', 'ok'), step('b', 'ok', ['a'])]);
    const failing = await create('obs-wf-failing', [step('a', 'ok'), step('b', 'bad', ['a']), step('c', 'bad', ['a']), step('d', 'ok', ['b', 'c'])]);
    const startedAt = Date.now();
    const run = async (workflowId: string) => {
      const started = await workflowScheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
      return eventually(
        () => workflowScheduler.api('GET', `/v1/workflows/${workflowId}/runs/${started.body.workflowRunId}`),
        (answer) => answer.body.status !== 'RUNNING',
        30_000,
      );
    };
    const [first, second] = await Promise.all([run(good), run(failing)]);
    const wallMs = Date.now() - startedAt;
    expect(first.body.status).toBe('SUCCEEDED');
    expect(second.body).toMatchObject({ status: 'FAILED', failedSteps: ['b', 'c'] });
    // A cancelled one too, while its step runs: counted once, its step as a step failure.
    const slow = await create('obs-wf-cancelled', [step('a', 'slow')]);
    const third = await workflowScheduler.api('POST', `/v1/workflows/${slow}/runs`);
    await eventually(
      () => workflowScheduler.api('GET', `/v1/runs/${third.body.steps.a.runId}`),
      (answer) => answer.body.status === 'RUNNING',
    );
    expect((await workflowScheduler.api('POST', `/v1/workflows/${slow}/runs/${third.body.workflowRunId}/cancel`)).body.status).toBe('CANCELLED');

    const totals = metricTotals(
      await eventually(
        () => Promise.resolve([...workflowScheduler.metricLines]),
        (lines) => countsOf(metricTotals(lines), 'workflow:obs-wf-failing').WorkflowRunsFailed === 1,
      ),
    );
    expect(countsOf(totals, 'workflow:obs-wf-good')).toEqual({ WorkflowRunsStarted: 1, WorkflowRunsSucceeded: 1, WorkflowRunDuration: expect.any(Number) });
    expect(countsOf(totals, 'workflow:obs-wf-cancelled')).toEqual({
      WorkflowRunsStarted: 1,
      WorkflowRunsCancelled: 1,
      WorkflowStepFailures: 1,
      WorkflowRunDuration: expect.any(Number),
    });
    expect(countsOf(totals, 'workflow:obs-wf-failing')).toEqual({
      WorkflowRunsStarted: 1,
      WorkflowRunsFailed: 1,
      // b and c ended DEAD; d, which never started, is not a step failure of its own.
      WorkflowStepFailures: 2,
      WorkflowRunDuration: expect.any(Number),
    });
    const duration = totals.get('workflow:obs-wf-failing')!.get('WorkflowRunDuration')!;
    expect(duration.samples).toBe(1);
    expect(duration.sum).toBeGreaterThan(0);
    expect(duration.sum).toBeLessThanOrEqual(wallMs);
    expect(totals.get('workflow:obs-wf-good')!.get('WorkflowRunDuration')!.samples).toBe(1);
    // The steps' runs are counted as runs of the workflow's type, as every run is.
    expect(countsOf(totals, 'workflow')).toMatchObject({ RunsSucceeded: expect.any(Number), RunsDead: 2 });
    for (const line of workflowScheduler.metricLines.filter((text) => text.includes('"JobType":"workflow:'))) {
      const doc = JSON.parse(line) as Emf;
      expect(doc._aws.CloudWatchMetrics[0]).toMatchObject({ Namespace: METRICS_NAMESPACE, Dimensions: [['Service'], ['Service', 'JobType']] });
      expect(doc.Service).toBe(SERVICE_NAME);
      const units = Object.fromEntries((doc._aws.CloudWatchMetrics[0].Metrics as { Name: string; Unit: string }[]).map((m) => [m.Name, m.Unit]));
      for (const [name, unit] of Object.entries(units)) expect(unit).toBe(name === 'WorkflowRunDuration' ? 'Milliseconds' : 'Count');
    }
  });
});
