// Failures against the emulator: retries with growing delays, Retry-After, permanent failures and
// spent budgets ending DEAD, the dead-run list and replay (one and in bulk), timeouts, cancelling
// a run in each state, and poison messages that reach the DLQ and are moved back.
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDeps } from '../../lambdas/app/deps';
import { createAwsClients } from '../../lambdas/store/aws';
import { runKey } from '../../lambdas/store/keys';
import { redriveMessages } from '../../scripts/ops/redrive';
import { startLocalRuntime } from '../../scripts/local/runtime';
import { replayRun } from '../../lambdas/app/runs';
import type { Scheduler, TargetServer } from './harness';
import { eventually, jobBody, peekQueue, startScheduler, startTarget, tick } from './harness';
import { startFaultProxy } from './support/own-emulator';

type RunBody = Record<string, any>;

async function runsOf(scheduler: Scheduler, jobId: string): Promise<RunBody[]> {
  const { body } = await scheduler.api('GET', `/v1/jobs/${jobId}/runs?limit=100`);
  return (body.items as RunBody[]).sort((a, b) => a.attempt - b.attempt);
}

async function createJob(scheduler: Scheduler, body: Record<string, unknown>): Promise<{ jobId: string; runId: string }> {
  const created = await scheduler.api('POST', '/v1/jobs', body);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return { jobId: created.body.job.jobId, runId: created.body.job.nextRunId };
}

describe('retries and dead runs', () => {
  let scheduler: Scheduler;

  beforeAll(async () => {
    // Jitter pinned to the top of its range, so each delay is the whole backoff bound.
    scheduler = await startScheduler({ random: () => 1 });
  });
  afterAll(() => scheduler.stop());

  it('retries a target that fails twice, with growing delays, until it succeeds', async () => {
    const target = await startTarget((_call, index) => ({ status: index < 2 ? 503 : 200 }));
    try {
      const { jobId } = await createJob(scheduler, jobBody(target.url, { retryPolicy: { maxAttempts: 5, initialDelaySeconds: 1, maxDelaySeconds: 10 } }));
      const runs = await eventually(
        () => runsOf(scheduler, jobId),
        (items) => items.some((run) => run.status === 'SUCCEEDED'),
      );

      expect(runs.map((run) => [run.attempt, run.trigger, run.status])).toEqual([
        [1, 'schedule', 'FAILED'],
        [2, 'retry', 'FAILED'],
        [3, 'retry', 'SUCCEEDED'],
      ]);
      // One occurrence: every attempt keeps its record under the same time and idempotency key.
      expect(new Set(runs.map((run) => run.scheduledFor)).size).toBe(1);
      expect(new Set(runs.map((run) => run.idempotencyKey)).size).toBe(1);
      expect(runs[0]?.error).toEqual({ code: 'HTTP_503', message: 'target answered 503', retryable: true });
      expect(target.calls.map((call) => call.headers['x-attempt'])).toEqual(['1', '2', '3']);

      // Backoff bounds 1 s then 2 s (jitter pinned to the bound), applied through the time gate.
      const [first, second, third] = target.calls.map((call) => call.at) as [number, number, number];
      expect(second - first).toBeGreaterThanOrEqual(1_000);
      expect(third - second).toBeGreaterThanOrEqual(2_000);
      expect(third - second).toBeGreaterThan(second - first);
      expect(Date.parse(runs[1]!.availableAt) - Date.parse(runs[0]!.finishedAt)).toBe(1_000);
      expect(Date.parse(runs[2]!.availableAt) - Date.parse(runs[1]!.finishedAt)).toBe(2_000);
    } finally {
      await target.stop();
    }
  });

  it("waits at least a target's Retry-After, within the cap", async () => {
    const target = await startTarget((_call, index) => (index === 0 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200 }));
    try {
      // No backoff of its own (initial delay 0), so any wait is the target's.
      const { jobId } = await createJob(scheduler, jobBody(target.url, { retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 60 } }));
      const runs = await eventually(
        () => runsOf(scheduler, jobId),
        (items) => items.some((run) => run.status === 'SUCCEEDED'),
      );
      expect(runs.map((run) => run.status)).toEqual(['FAILED', 'SUCCEEDED']);
      expect(runs[0]?.error).toMatchObject({ code: 'HTTP_429', retryable: true });
      expect(Date.parse(runs[1]!.availableAt) - Date.parse(runs[0]!.finishedAt)).toBe(2_000);
      expect(target.calls[1]!.at - target.calls[0]!.at).toBeGreaterThanOrEqual(2_000);
    } finally {
      await target.stop();
    }
  });

  it('caps a Retry-After at the policy maximum', async () => {
    const target = await startTarget((_call, index) => (index === 0 ? { status: 503, headers: { 'retry-after': '3600' } } : { status: 200 }));
    try {
      const { jobId } = await createJob(scheduler, jobBody(target.url, { retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 } }));
      const runs = await eventually(
        () => runsOf(scheduler, jobId),
        (items) => items.some((run) => run.status === 'SUCCEEDED'),
      );
      expect(Date.parse(runs[1]!.availableAt) - Date.parse(runs[0]!.finishedAt)).toBe(1_000);
    } finally {
      await target.stop();
    }
  });

  it('ends a permanent failure DEAD after one attempt, lists it, and replays it once', async () => {
    let healthy = false;
    const target = await startTarget(() => (healthy ? { status: 200 } : { status: 400, body: '{"error":"bad payload"}' }));
    try {
      const { jobId, runId } = await createJob(scheduler, jobBody(target.url, { retryPolicy: { maxAttempts: 5, initialDelaySeconds: 0, maxDelaySeconds: 1 } }));
      const dead = await eventually(
        async () => (await scheduler.api('GET', `/v1/runs/${runId}`)).body,
        (run) => run.status === 'DEAD',
      );
      expect(dead).toMatchObject({ attempt: 1, error: { code: 'HTTP_400', retryable: false }, reason: 'the failure is permanent' });
      expect(target.calls).toHaveLength(1);
      expect(await runsOf(scheduler, jobId)).toHaveLength(1);

      const listed = await scheduler.api('GET', `/v1/dead-runs?jobId=${jobId}`);
      expect(listed.status).toBe(200);
      expect(listed.body.items.map((run: RunBody) => run.runId)).toEqual([runId]);

      healthy = true;
      const replayed = await scheduler.api('POST', `/v1/runs/${runId}/replay`);
      expect(replayed.status).toBe(202);
      expect(replayed.body.run).toMatchObject({ jobId, attempt: 2, trigger: 'replay', scheduledFor: dead.scheduledFor });
      await eventually(
        async () => (await scheduler.api('GET', `/v1/runs/${replayed.body.run.runId}`)).body,
        (run) => run.status === 'SUCCEEDED',
      );
      expect(target.calls.map((call) => call.headers['x-attempt'])).toEqual(['1', '2']);

      // The dead run keeps its record but leaves the list, and cannot be replayed twice.
      expect((await scheduler.api('GET', `/v1/runs/${runId}`)).body.status).toBe('DEAD');
      expect((await scheduler.api('GET', `/v1/dead-runs?jobId=${jobId}`)).body.items).toEqual([]);
      const again = await scheduler.api('POST', `/v1/runs/${runId}/replay`);
      expect(again.status).toBe(409);
      expect(again.body).toMatchObject({ status: 409, detail: 'The run was replayed already' });
      // Answered before the tenant's create rate is spent on it (before, each such call took a place).
      let counted = 0;
      const jobs = scheduler.deps.jobs;
      const counting = {
        ...scheduler.deps,
        jobs: Object.assign(Object.create(jobs) as typeof jobs, {
          countRunRequest: (...args: Parameters<typeof jobs.countRunRequest>) => {
            counted++;
            return jobs.countRunRequest(...args);
          },
        }),
      };
      await expect(replayRun(counting, scheduler.tenantId, runId)).rejects.toThrow(/replayed already/);
      expect(counted).toBe(0);
    } finally {
      await target.stop();
    }
  });

  it('ends the occurrence DEAD when the retry budget is spent', async () => {
    const target = await startTarget(() => ({ status: 500 }));
    try {
      const { jobId } = await createJob(scheduler, jobBody(target.url, { retryPolicy: { maxAttempts: 2, initialDelaySeconds: 0, maxDelaySeconds: 1 } }));
      const runs = await eventually(
        () => runsOf(scheduler, jobId),
        (items) => items.some((run) => run.status === 'DEAD'),
      );
      expect(runs.map((run) => [run.attempt, run.status])).toEqual([
        [1, 'FAILED'],
        [2, 'DEAD'],
      ]);
      expect(runs[1]?.reason).toBe('the retry budget of 2 attempts is spent');
      expect(target.calls).toHaveLength(2);
    } finally {
      await target.stop();
    }
  });

  it('treats a failure the target marks X-Retryable: false as permanent', async () => {
    const target = await startTarget(() => ({ status: 503, headers: { 'x-retryable': 'false' } }));
    try {
      const { runId } = await createJob(scheduler, jobBody(target.url, { retryPolicy: { maxAttempts: 5, initialDelaySeconds: 0, maxDelaySeconds: 1 } }));
      const run = await eventually(
        async () => (await scheduler.api('GET', `/v1/runs/${runId}`)).body,
        (r) => r.status === 'DEAD',
      );
      expect(run.error).toMatchObject({ code: 'HTTP_503', retryable: false });
      expect(target.calls).toHaveLength(1);
    } finally {
      await target.stop();
    }
  });

  it('replays the dead runs of one job in bulk and leaves the others', async () => {
    let healthy = false;
    const target = await startTarget(() => (healthy ? { status: 200 } : { status: 422 }));
    try {
      const policy = { retryPolicy: { maxAttempts: 1, initialDelaySeconds: 0, maxDelaySeconds: 1 } };
      const a = await createJob(scheduler, jobBody(target.url, policy));
      const a2 = await scheduler.api('POST', `/v1/jobs/${a.jobId}/trigger`);
      expect(a2.status).toBe(202);
      const b = await createJob(scheduler, jobBody(target.url, policy));
      const deadOf = async (jobId: string) => (await scheduler.api('GET', `/v1/dead-runs?jobId=${jobId}`)).body.items as RunBody[];
      await eventually(
        () => deadOf(a.jobId),
        (items) => items.length === 2,
      );
      await eventually(
        () => deadOf(b.jobId),
        (items) => items.length === 1,
      );

      // Paginated, newest first.
      const first = await scheduler.api('GET', `/v1/dead-runs?jobId=${a.jobId}&limit=1`);
      expect(first.body.items).toHaveLength(1);
      expect(first.body.nextCursor).toEqual(expect.any(String));
      const second = await scheduler.api('GET', `/v1/dead-runs?jobId=${a.jobId}&limit=1&cursor=${first.body.nextCursor}`);
      const both = [...first.body.items, ...second.body.items] as RunBody[];
      expect(new Set(both.map((run) => run.runId)).size).toBe(2);
      expect(both[0]!.finishedAt >= both[1]!.finishedAt).toBe(true);

      healthy = true;
      const bulk = await scheduler.api('POST', '/v1/dead-runs/replay', { jobId: a.jobId });
      expect(bulk.status).toBe(202);
      expect(bulk.body.replayed.map((run: RunBody) => [run.jobId, run.trigger])).toEqual([
        [a.jobId, 'replay'],
        [a.jobId, 'replay'],
      ]);
      expect(bulk.body.remaining).toBe(false);
      await eventually(
        () => runsOf(scheduler, a.jobId),
        (items) => items.filter((run) => run.status === 'SUCCEEDED').length === 2,
      );
      expect(await deadOf(a.jobId)).toEqual([]);
      expect((await deadOf(b.jobId)).map((run) => run.runId)).toEqual([b.runId]);

      const invalid = await scheduler.api('POST', '/v1/dead-runs/replay', { jobId: a.jobId, limit: 0 });
      expect(invalid.status).toBe(400);
      expect(invalid.body.errors.map((e: { path: string }) => e.path)).toEqual(['limit']);
    } finally {
      await target.stop();
    }
  });

  it('ends an attempt that outlives its timeout TIMED_OUT and retries it', async () => {
    const target = await startTarget((_call, index) =>
      index === 0 ? new Promise((resolve) => setTimeout(() => resolve({ status: 200 }), 4_000)) : { status: 200 },
    );
    try {
      const { jobId } = await createJob(
        scheduler,
        jobBody(target.url, { timeoutSeconds: 1, retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 } }),
      );
      const runs = await eventually(
        () => runsOf(scheduler, jobId),
        (items) => items.some((run) => run.status === 'SUCCEEDED'),
      );
      expect(runs.map((run) => [run.attempt, run.status])).toEqual([
        [1, 'TIMED_OUT'],
        [2, 'SUCCEEDED'],
      ]);
      expect(runs[0]?.error).toMatchObject({ code: 'TIMEOUT', retryable: true });
      // The call was aborted at the timeout, not left to finish.
      expect(target.calls[0]?.abortedAt).toBeDefined();
      expect(target.calls[0]!.abortedAt! - target.calls[0]!.at).toBeLessThan(2_500);
    } finally {
      await target.stop();
    }
  });
});

describe('a bulk replay past runs it cannot replay', () => {
  let own: Scheduler;
  beforeAll(async () => {
    own = await startScheduler();
  });
  afterAll(() => own.stop());

  it('a bulk replay reads on past the dead runs of a deleted job, newer than the ones it can replay', async () => {
    const target = await startTarget(() => ({ status: 422 }));
    try {
      const policy = { retryPolicy: { maxAttempts: 1, initialDelaySeconds: 0, maxDelaySeconds: 1 } };
      const deadOf = async (jobId: string) => (await own.api('GET', `/v1/dead-runs?jobId=${jobId}`)).body.items as RunBody[];
      const b = await createJob(own, jobBody(target.url, policy));
      await eventually(
        () => deadOf(b.jobId),
        (items) => items.length === 1,
      );
      const a = await createJob(own, jobBody(target.url, policy));
      for (let i = 0; i < 2; i++) expect((await own.api('POST', `/v1/jobs/${a.jobId}/trigger`)).status).toBe(202);
      await eventually(
        () => deadOf(a.jobId),
        (items) => items.length === 3,
      );
      expect((await own.api('DELETE', `/v1/jobs/${a.jobId}`)).status).toBe(200);
      // Before, every call read the three newest (the deleted job's), replayed none, and said more remained.
      const bulk = await own.api('POST', '/v1/dead-runs/replay', { limit: 3 });
      expect(bulk.status, JSON.stringify(bulk.body)).toBe(202);
      expect(bulk.body.replayed.map((run: RunBody) => run.jobId)).toEqual([b.jobId]);
      expect(bulk.body.remaining).toBe(false);
    } finally {
      await target.stop();
    }
  });

  it("a loop of bulk replays, each given the last one's until, reaches the oldest dead run while the replays die again, and ends", async () => {
    const target = await startTarget(() => ({ status: 422 }));
    try {
      const policy = { retryPolicy: { maxAttempts: 1, initialDelaySeconds: 0, maxDelaySeconds: 1 } };
      const jobIds: string[] = [];
      for (let i = 0; i < 3; i++) {
        const { jobId } = await createJob(own, jobBody(target.url, policy));
        jobIds.push(jobId);
        await eventually(
          async () => (await own.api('GET', `/v1/dead-runs?jobId=${jobId}`)).body.items as RunBody[],
          (items) => items.length === 1,
        );
      }
      const deadNow = async () => ((await own.api('GET', '/v1/dead-runs?limit=100')).body.items as RunBody[]).filter((run) => jobIds.includes(run.jobId));
      const replayed: string[] = [];
      let to: string | undefined;
      // (The earlier test's replay, dead again, is older than these: it comes last.)
      for (let call = 0; call < 5; call++) {
        const bulk = await own.api('POST', '/v1/dead-runs/replay', { limit: 2, ...(to ? { to } : {}) });
        expect(bulk.status, JSON.stringify(bulk.body)).toBe(202);
        replayed.push(...bulk.body.replayed.map((run: RunBody) => run.jobId));
        if (!bulk.body.remaining) break;
        to = bulk.body.until as string;
        // The replays die again before the next call.
        await eventually(deadNow, (items) => items.length === 3, 30_000);
      }
      // Before (no until to pass on), every call took the two newest again: the oldest was never replayed.
      expect(replayed.filter((jobId) => jobIds.includes(jobId)).sort()).toEqual([...jobIds].sort());
    } finally {
      await target.stop();
    }
  });
});

describe('a replay whose message cannot be sent', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler();
  });
  afterAll(() => scheduler.stop());

  it('answers 202 as a create does: the replay is stored, and the ticker sends it once its check-back has passed', async () => {
    let healthy = false;
    const target = await startTarget(() => (healthy ? { status: 200 } : { status: 400 }));
    // An API function whose SQS sends are cut on the way (its DynamoDB requests go through).
    const proxy = await startFaultProxy(inject('awsEndpoint'));
    const apiDeps = createDeps(scheduler.config, createAwsClients(proxy.endpoint), { workerId: `${scheduler.prefix}-api`, metricSink: () => undefined });
    const api = await startLocalRuntime({ deps: apiDeps, clients: scheduler.clients, port: 0, workerConcurrency: 0, tickIntervalMs: 0 });
    try {
      const { jobId, runId } = await createJob(scheduler, jobBody(target.url, { retryPolicy: { maxAttempts: 1, initialDelaySeconds: 0, maxDelaySeconds: 1 } }));
      await eventually(
        async () => (await scheduler.api('GET', `/v1/runs/${runId}`)).body,
        (run) => run.status === 'DEAD',
      );

      healthy = true;
      proxy.cutAction = 'SendMessageBatch';
      const response = await fetch(`${api.url}/v1/runs/${runId}/replay`, { method: 'POST', headers: { authorization: `Bearer ${scheduler.apiKey}` } });
      const replayed = (await response.json()) as RunBody;
      expect(proxy.cuts).toBeGreaterThan(0);
      expect(response.status, JSON.stringify(replayed)).toBe(202);
      expect(replayed.run).toMatchObject({ jobId, attempt: 2, trigger: 'replay', status: 'QUEUED' });
      proxy.cutAction = null;
      // The replay was written once: the client has nothing to retry, and a retry would be refused.
      expect((await scheduler.api('POST', `/v1/runs/${runId}/replay`)).status).toBe(409);

      // No message went out; past the redelivery grace the ticker sends one, and the run succeeds.
      expect(await scheduler.queueDepth()).toBe(0);
      const pastGrace = () => Date.now() + (scheduler.config.redeliveryGraceSeconds + 60) * 1000;
      expect((await tick(scheduler.workerDeps('late-ticker', pastGrace))).redelivered).toBe(1);
      await eventually(
        async () => (await scheduler.api('GET', `/v1/runs/${replayed.run.runId}`)).body,
        (run) => run.status === 'SUCCEEDED',
      );
      expect(target.calls.map((call) => call.headers['x-attempt'])).toEqual(['1', '2']);
    } finally {
      await api.stop();
      await proxy.stop();
      await target.stop();
    }
  });
});

describe('cancelling a run', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  let answerAfterMs = 0;

  beforeAll(async () => {
    // A short lease margin, so a running run heartbeats every few seconds.
    scheduler = await startScheduler({ tuning: { leaseMarginSeconds: 2 } });
    target = await startTarget(() => new Promise((resolve) => setTimeout(() => resolve({ status: 200 }), answerAfterMs)));
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  it('never starts a SCHEDULED run that was cancelled', async () => {
    const at = Date.now() + 2 * 3600_000;
    const { runId } = await createJob(scheduler, jobBody(target.url, { schedule: { kind: 'at', at: new Date(at).toISOString() } }));
    expect((await scheduler.api('GET', `/v1/runs/${runId}`)).body.status).toBe('SCHEDULED');

    const cancelled = await scheduler.api('POST', `/v1/runs/${runId}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ runId, status: 'CANCELLED', reason: 'cancelled by request' });

    // Two hours later the ticker finds nothing to release.
    const calls = target.calls.length;
    const later = scheduler.workerDeps('ticker-later', () => Date.now() + 2 * 3600_000 + 60_000);
    await tick(later);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(target.calls.length).toBe(calls);
    expect((await scheduler.api('GET', `/v1/runs/${runId}`)).body.status).toBe('CANCELLED');
  });

  it('never starts a QUEUED run that was cancelled, even when its message arrives', async () => {
    const { runId } = await createJob(scheduler, jobBody(target.url, { schedule: { kind: 'delay', seconds: 120 } }));
    expect((await scheduler.api('GET', `/v1/runs/${runId}`)).body.status).toBe('QUEUED');
    expect((await scheduler.api('POST', `/v1/runs/${runId}/cancel`)).body.status).toBe('CANCELLED');

    const calls = target.calls.length;
    await scheduler.sendDispatch(runId);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(target.calls.length).toBe(calls);
    expect((await scheduler.api('GET', `/v1/runs/${runId}`)).body.status).toBe('CANCELLED');
  });

  it('cancels a RUNNING run at its next heartbeat and aborts its call', async () => {
    answerAfterMs = 20_000;
    try {
      // Lease = timeout 9 s + margin 2 s; heartbeats every 11/3 s.
      const { jobId, runId } = await createJob(scheduler, jobBody(target.url, { timeoutSeconds: 9 }));
      const calls = target.calls.length;
      await eventually(
        () => Promise.resolve(target.calls.length),
        (n) => n > calls,
      );
      const call = target.calls[calls]!;
      expect((await scheduler.api('GET', `/v1/runs/${runId}`)).body.status).toBe('RUNNING');

      const cancelledAt = Date.now();
      const cancelled = await scheduler.api('POST', `/v1/runs/${runId}/cancel`);
      expect(cancelled.status).toBe(200);
      expect(cancelled.body.status).toBe('CANCELLED');

      await eventually(
        () => Promise.resolve(call.abortedAt),
        (abortedAt) => abortedAt !== undefined,
        8_000,
      );
      expect(call.abortedAt! - cancelledAt).toBeLessThan(5_000);
      expect(call.abortedAt! - call.at).toBeLessThan(9_000); // before the timeout would have
      // The worker's outcome is fenced off: the run stays CANCELLED and nothing retries it.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const runs = await runsOf(scheduler, jobId);
      expect(runs.map((run) => run.status)).toEqual(['CANCELLED']);
      expect(target.calls.length).toBe(calls + 1);
    } finally {
      answerAfterMs = 0;
    }
  });

  it('refuses to cancel a finished run with 409 and an unknown one with 404', async () => {
    const { runId } = await createJob(scheduler, jobBody(target.url));
    await eventually(
      async () => (await scheduler.api('GET', `/v1/runs/${runId}`)).body.status,
      (status) => status === 'SUCCEEDED',
    );
    const refused = await scheduler.api('POST', `/v1/runs/${runId}/cancel`);
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toMatch(/SUCCEEDED/);
    expect((await scheduler.api('GET', `/v1/runs/${runId}`)).body.status).toBe('SUCCEEDED');
    expect((await scheduler.api('POST', '/v1/runs/job_nope.0.1/cancel')).status).toBe(404);
  });
});

describe('poison messages', () => {
  let scheduler: Scheduler;
  let target: TargetServer;

  beforeAll(async () => {
    // A failed message comes straight back, so it spends its receives (5) quickly.
    scheduler = await startScheduler({ tuning: { failedMessageRetrySeconds: 0 } });
    target = await startTarget();
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  it('parks messages that keep failing in the DLQ, and the redrive moves them back', async () => {
    const { clients, config } = scheduler;
    // A run whose item a bug left broken (no lease length): every delivery fails before the lease.
    const { runId } = await createJob(scheduler, jobBody(target.url, { schedule: { kind: 'at', at: new Date(Date.now() + 3600_000).toISOString() } }));
    await clients.dynamo.send(
      new UpdateCommand({
        TableName: config.runsTable,
        Key: runKey(runId),
        UpdateExpression: 'SET availableAt = :now REMOVE leaseMs',
        ExpressionAttributeValues: { ':now': new Date().toISOString() },
      }),
    );
    await scheduler.sendDispatch(runId);
    await scheduler.sendRawMessage('this is not a dispatch message');

    await eventually(
      () => peekQueue(clients, config.dispatchDlqUrl),
      (n) => n === 2,
      30_000,
    );
    expect(await scheduler.queueDepth()).toBe(0);
    expect((await scheduler.api('GET', `/v1/runs/${runId}`)).body.status).toBe('SCHEDULED');

    // The bug is fixed; the operator moves the DLQ back. The run executes; garbage returns to the DLQ.
    await clients.dynamo.send(
      new UpdateCommand({
        TableName: config.runsTable,
        Key: runKey(runId),
        UpdateExpression: 'SET leaseMs = :ms',
        ExpressionAttributeValues: { ':ms': 5_000 },
      }),
    );
    await eventually(
      () => peekQueue(clients, config.dispatchDlqUrl),
      (n) => n === 2,
    ); // visible again after the peek
    expect(await redriveMessages(clients.sqs, config.dispatchDlqUrl, config.dispatchQueueUrl)).toBe(2);
    await eventually(
      async () => (await scheduler.api('GET', `/v1/runs/${runId}`)).body.status,
      (status) => status === 'SUCCEEDED',
    );
    expect(target.calls.filter((call) => call.headers['x-run-id'] === runId)).toHaveLength(1);
    await eventually(
      () => peekQueue(clients, config.dispatchDlqUrl),
      (n) => n === 1,
      30_000,
    );
  });
});
