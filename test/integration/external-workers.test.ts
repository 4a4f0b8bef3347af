// External workers over HTTP against the local runtime: the typed client (clients/worker-client.ts)
// and the example worker (examples/external-worker.ts) claim runs of `external` jobs, heartbeat with
// checkpoints and complete them; a stale token is a 409; a lease that ends without a heartbeat is
// recovered by the ticker and retried, and the retry's claim receives the last checkpoint; a
// cancellation is seen at the next heartbeat. Under at-most-once the claim consumes the attempt and a
// lapsed lease ends DEAD; under exactly-once complete records the occurrence's effect and a later
// attempt is skipped; a complete racing the recovery of its lease, or another complete, loses cleanly.
import { randomBytes } from 'node:crypto';
import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Claim, Problem } from '../../clients/worker-client';
import { LeaseLostError, RunCancelledError, WorkerClient, WorkFailure } from '../../clients/worker-client';
import type { ExportCheckpoint, ExportPayload } from '../../examples/external-worker';
import { processExport } from '../../examples/external-worker';
import type { SchedulerDeps } from '../../lambdas/app/deps';
import type { Delivery } from '../../lambdas/domain/delivery';
import { fencingTokenOf } from '../../lambdas/domain/delivery';
import type { Run } from '../../lambdas/domain/run';
import { isTerminal } from '../../lambdas/domain/run';
import { jobKey, runKey } from '../../lambdas/store/keys';
import { LEASE_CHECK_SLACK_MS } from '../../lambdas/store/run-leases';
import { claimRun } from '../../lambdas/app/external-workers';
import { deleteJob } from '../../lambdas/app/job-lifecycle';
import { JOB_NEVER_WRITTEN_REASON } from '../../lambdas/app/leased-run';
import { cancelWorkflowRun } from '../../lambdas/app/workflow-runs';
import type { Scheduler } from './harness';
import { eventually, executeRun, startScheduler, tick } from './harness';

type RunBody = Record<string, any>;

describe('external workers', () => {
  let scheduler: Scheduler;
  let client: WorkerClient;

  beforeAll(async () => {
    scheduler = await startScheduler();
    client = new WorkerClient({ baseUrl: scheduler.runtime.url, apiKey: scheduler.apiKey, workerId: 'test-worker' });
  });
  afterAll(() => scheduler.stop());

  async function externalJob(
    type: string,
    payload: ExportPayload,
    leaseSeconds: number,
    extra: Record<string, unknown> = {},
  ): Promise<{ jobId: string; runId: string }> {
    const created = await scheduler.api('POST', '/v1/jobs', {
      name: `external-${type}`,
      type,
      schedule: { kind: 'now' },
      target: { kind: 'external', leaseSeconds },
      payload,
      retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 },
      ...extra,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return { jobId: created.body.job.jobId, runId: created.body.job.nextRunId };
  }

  const claimOf = (jobType: string) => client.claim<ExportPayload, ExportCheckpoint>({ jobType, waitSeconds: 10 });
  const runItem = async (runId: string) =>
    (await scheduler.clients.dynamo.send(new GetCommand({ TableName: scheduler.config.runsTable, Key: runKey(runId), ConsistentRead: true }))).Item;
  const getRun = async (runId: string): Promise<RunBody> => (await scheduler.api('GET', `/v1/runs/${runId}`)).body as RunBody;

  it('the example worker claims a run, heartbeats checkpoints and completes it', async () => {
    const { runId } = await externalJob('export-ok', { items: 3 }, 10);
    // Offered by the dispatch worker, the run waits QUEUED for a claim.
    await eventually(
      () => getRun(runId),
      (run) => run.status === 'QUEUED' && run.startedAt !== null,
    );
    const claim = (await claimOf('export-ok')) as Claim<ExportPayload, ExportCheckpoint>;
    expect(claim).toMatchObject({
      run: { runId, status: 'RUNNING', leaseOwner: 'external:test-worker' },
      attempt: 1,
      leaseSeconds: 10,
      payload: { items: 3 },
      checkpoint: null,
    });
    expect(claim.fencingToken).toBe(fencingTokenOf({ attempt: 1, version: (await getRun(runId)).version }));
    expect(JSON.stringify(await getRun(runId))).not.toContain(claim.leaseToken); // the token is the worker's secret

    expect(await processExport(client, claim, { stepMs: 50 })).toBe('completed');
    const run = await getRun(runId);
    expect(run).toMatchObject({ status: 'SUCCEEDED', progress: { done: 3, of: 3 }, result: { processed: 3, resumedFrom: 0 } });
    // No other run of this type waits.
    expect(await client.claim({ jobType: 'export-ok' })).toBeNull();
  });

  it('answers 409 to a stale lease token, naming the run status', async () => {
    const { runId } = await externalJob('export-stale', { items: 1 }, 10);
    const claim = (await claimOf('export-stale'))!;
    const wrong = await scheduler.api('POST', `/v1/runs/${runId}/heartbeat`, { leaseToken: randomBytes(24).toString('base64url') });
    expect(wrong.status).toBe(409);
    expect(wrong.body).toMatchObject({ status: 409, runStatus: 'RUNNING' });
    await client.complete(runId, claim.leaseToken, { ok: true });
    // The same token once the run has finished.
    await expect(client.heartbeat(runId, claim.leaseToken)).rejects.toMatchObject({ name: 'LeaseLostError', runStatus: 'SUCCEEDED' });
    const again = await scheduler.api('POST', `/v1/runs/${runId}/complete`, { leaseToken: claim.leaseToken });
    expect(again.status).toBe(409);
    // A token of the right shape for a run of another tenant's is a 404, as every other route.
    expect((await scheduler.api('POST', '/v1/runs/job_nope.1.1/heartbeat', { leaseToken: claim.leaseToken })).status).toBe(404);
  });

  it('retries a run whose lease ended without a heartbeat, and hands the retry the last checkpoint', async () => {
    const { jobId, runId } = await externalJob('export-lapse', { items: 4 }, 2);
    const first = (await claimOf('export-lapse'))!;
    await client.heartbeat(runId, first.leaseToken, { checkpoint: { done: 2 }, progress: { done: 2, of: 4 } });
    // The worker dies here. Once its lease (2 s) has ended, the ticker finds the check-back.
    const failed = await eventually(
      async () => {
        await tick(scheduler.deps);
        return getRun(runId);
      },
      (run) => run.status !== 'RUNNING',
      20_000,
    );
    expect(failed).toMatchObject({ status: 'FAILED', error: { code: 'WORKER_LOST', retryable: true }, leaseOwner: 'external:test-worker' });
    await expect(client.heartbeat(runId, first.leaseToken)).rejects.toBeInstanceOf(LeaseLostError);

    const second = (await claimOf('export-lapse'))!;
    expect(second).toMatchObject({ attempt: 2, checkpoint: { done: 2 }, idempotencyKey: first.idempotencyKey, run: { trigger: 'retry' } });
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    const items: number[] = [];
    expect(await processExport(client, second, { stepMs: 20, onItem: (index) => items.push(index) })).toBe('completed');
    expect(items).toEqual([2, 3]); // resumed, not restarted
    const runs = ((await scheduler.api('GET', `/v1/jobs/${jobId}/runs`)).body.items as RunBody[]).map((run) => [run.attempt, run.status]);
    expect(runs).toEqual([
      [2, 'SUCCEEDED'],
      [1, 'FAILED'],
    ]);
    expect((await getRun(second.run.runId)).result).toEqual({ processed: 2, resumedFrom: 2 });
  });

  it('a cancelled run is seen at the next heartbeat, and the worker stops', async () => {
    const { runId } = await externalJob('export-cancel', { items: 50 }, 3);
    const claim = (await claimOf('export-cancel'))!;
    const outcome = processExport(client, claim, {
      stepMs: 50,
      onItem: (index) => {
        if (index === 2) void scheduler.api('POST', `/v1/runs/${runId}/cancel`);
      },
    });
    expect(await outcome).toBe('cancelled');
    const run = await getRun(runId);
    expect(run.status).toBe('CANCELLED');
    expect(run.progress.done).toBeLessThan(50);
    await expect(client.heartbeat(runId, claim.leaseToken)).rejects.toBeInstanceOf(RunCancelledError);
  });

  it('a run cancelled while offered leaves the claimable index: ten of them do not hide the run waiting behind them', async () => {
    const offered = async (runId: string) =>
      eventually(
        () => getRun(runId),
        (run) => run.status === 'QUEUED' && run.startedAt !== null,
      );
    const cancelled: string[] = [];
    for (let i = 0; i < 10; i++) {
      const { runId } = await externalJob('stale', { items: 1 }, 10, { name: `external-stale-${i}` });
      await offered(runId);
      expect((await scheduler.api('POST', `/v1/runs/${runId}/cancel`)).status).toBe(200);
      cancelled.push(runId);
    }
    const claimEntry = async (runId: string) => (await runItem(runId))?.claimTenant;
    // Before, a cancel left the claim entry: the claim met these ten first, every time, and found nothing.
    for (const runId of cancelled) expect(await claimEntry(runId)).toBeUndefined();
    const { runId: waiting } = await externalJob('stale', { items: 1 }, 10, { name: 'external-stale-waiting' });
    await offered(waiting);
    const claim = await client.claim<ExportPayload, ExportCheckpoint>({ jobType: 'stale', waitSeconds: 5 });
    expect(claim?.run.runId).toBe(waiting);
    expect(await processExport(client, claim!, { stepMs: 1 })).toBe('completed');
  });

  it('a claim entry a finished run kept (a stack before every end removed it) is removed by the claim that meets it', async () => {
    const { runId: ended } = await externalJob('kept-entry', { items: 1 }, 10, { name: 'external-kept-entry-ended' });
    await eventually(
      () => getRun(ended),
      (run) => run.status === 'QUEUED' && run.startedAt !== null,
    );
    const entry = await runItem(ended);
    expect((await scheduler.api('POST', `/v1/runs/${ended}/cancel`)).status).toBe(200);
    await scheduler.clients.dynamo.send(
      new UpdateCommand({
        TableName: scheduler.config.runsTable,
        Key: runKey(ended),
        UpdateExpression: 'SET claimTenant = :tenant, claimSort = :sort',
        ExpressionAttributeValues: { ':tenant': entry!.claimTenant, ':sort': entry!.claimSort },
      }),
    );
    expect(await client.claim({ jobType: 'kept-entry', waitSeconds: 1 })).toBeNull();
    expect((await runItem(ended))?.claimTenant).toBeUndefined();
  });

  it('answers 409 to a heartbeat after the lease has lapsed, and leaves the lease as it was for the recovery', async () => {
    const { runId } = await externalJob('export-lapsed-beat', { items: 1 }, 1);
    const claim = (await claimOf('export-lapsed-beat'))!;
    // The worker's heartbeats were held up until its lease (1 s) had ended.
    await new Promise((resolve) => setTimeout(resolve, Date.parse(claim.leaseExpiresAt) + 200 - Date.now()));
    const late = await scheduler.api('POST', `/v1/runs/${runId}/heartbeat`, { leaseToken: claim.leaseToken, progress: { late: true } });
    // Before, the lease was extended (200): the run alive again while its recovery may be under way.
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ status: 409, runStatus: 'RUNNING' });
    await expect(client.heartbeat(runId, claim.leaseToken)).rejects.toBeInstanceOf(LeaseLostError);
    expect(await getRun(runId)).toMatchObject({ status: 'RUNNING', leaseExpiresAt: claim.leaseExpiresAt, progress: null });
    const failed = await eventually(
      async () => {
        await tick(scheduler.deps);
        return getRun(runId);
      },
      (run) => run.status !== 'RUNNING',
      20_000,
    );
    expect(failed).toMatchObject({ status: 'FAILED', error: { code: 'WORKER_LOST' } });
  });

  it('a run of a deleted job (or of none) is not handed out: the claim ends it and hands out the next one', async () => {
    const offered = (runId: string) =>
      eventually(
        () => getRun(runId),
        (run) => run.status === 'QUEUED' && run.startedAt !== null,
      );
    const deleted = await externalJob('deleted-job', { items: 1 }, 10, { name: 'external-deleted-job' });
    const missing = await externalJob('deleted-job', { items: 1 }, 10, { name: 'external-missing-job' });
    const live = await externalJob('deleted-job', { items: 1 }, 10, { name: 'external-live-job' });
    for (const { runId } of [deleted, missing, live]) await offered(runId);
    // The delete's retire of its pending runs misses the offered one (it stopped after its commit,
    // or the offer raced it): the job is CANCELLED, its run still offered.
    const missingRetire = {
      ...scheduler.deps,
      runs: Object.assign(Object.create(scheduler.deps.runs) as SchedulerDeps['runs'], { retirePending: () => Promise.resolve(false) }),
    };
    await deleteJob(missingRetire, scheduler.tenantId, deleted.jobId);
    expect(await getRun(deleted.runId)).toMatchObject({ status: 'QUEUED' });
    // A run whose job was never written (its create failed after the run's write; decision 0167).
    await scheduler.clients.dynamo.send(new DeleteCommand({ TableName: scheduler.config.jobsTable, Key: jobKey(missing.jobId) }));

    const claim = await client.claim<ExportPayload, ExportCheckpoint>({ jobType: 'deleted-job', waitSeconds: 5 });
    // Before, the deleted job's run was handed out (and the next claim the one with no job, payload null).
    expect(claim?.run.runId).toBe(live.runId);
    expect(await getRun(deleted.runId)).toMatchObject({ status: 'CANCELLED', reason: 'job deleted' });
    expect(await getRun(missing.runId)).toMatchObject({ status: 'CANCELLED', reason: JOB_NEVER_WRITTEN_REASON, error: { code: 'JOB_NOT_FOUND' } });
    for (const { runId } of [deleted, missing]) expect((await runItem(runId))?.claimTenant).toBeUndefined();
    expect(await processExport(client, claim!, { stepMs: 1 })).toBe('completed');
    expect(await client.claim({ jobType: 'deleted-job', waitSeconds: 1 })).toBeNull();
  });

  it('a step run whose workflow run was cancelled while it was offered is not handed out: the claim cancels it (decision 0190)', async () => {
    const created = await scheduler.api('POST', '/v1/workflows', {
      name: 'external-cancelled-step',
      steps: [{ id: 'ext', type: 'cancelled-step', target: { kind: 'external' } }],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const workflowId = created.body.workflowId as string;
    const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const workflowRunId = started.body.workflowRunId as string;
    const stepRun = await eventually(
      async () => (await scheduler.api('GET', `/v1/workflows/${workflowId}/runs/${workflowRunId}`)).body.steps.ext.runId as string | null,
      (runId) => typeof runId === 'string',
    );
    await eventually(
      () => getRun(stepRun!),
      (run) => run.status === 'QUEUED' && run.startedAt !== null,
    );
    // The cancel writes the workflow run CANCELLED, then fails (a store error) where it ends its
    // steps' runs: the offered run is left QUEUED, in the claimable index.
    const failing = {
      ...scheduler.deps,
      runs: Object.assign(Object.create(scheduler.deps.runs) as SchedulerDeps['runs'], {
        retirePending: () => Promise.reject(new Error('store unavailable')),
      }),
    };
    await expect(cancelWorkflowRun(failing, scheduler.tenantId, workflowId, workflowRunId)).rejects.toThrow('store unavailable');
    expect(await getRun(stepRun!)).toMatchObject({ status: 'QUEUED' });

    // Before, the claim handed it out: the worker worked on a step of a cancelled workflow run.
    expect(await client.claim({ jobType: 'cancelled-step', waitSeconds: 1 })).toBeNull();
    expect(await getRun(stepRun!)).toMatchObject({ status: 'CANCELLED', reason: 'the workflow run was cancelled' });
    expect((await runItem(stepRun!))?.claimTenant).toBeUndefined();
  });

  it('a failure the worker reports is retried by the job policy with the checkpoint, or ends DEAD when permanent', async () => {
    const { runId } = await externalJob('export-fail', { items: 1 }, 10);
    const claim = (await claimOf('export-fail'))!;
    await client.heartbeat(runId, claim.leaseToken, { checkpoint: { done: 1 } });
    expect(await client.fail(runId, claim.leaseToken, { code: 'UPSTREAM_DOWN', message: 'the warehouse is down', retryable: true })).toMatchObject({
      status: 'FAILED',
    });
    const retry = (await claimOf('export-fail'))!;
    expect(retry).toMatchObject({ attempt: 2, checkpoint: { done: 1 } });
    expect(await client.fail(retry.run.runId, retry.leaseToken, { code: 'BAD_EXPORT', message: 'no such export', retryable: false })).toMatchObject({
      status: 'DEAD',
      error: { code: 'BAD_EXPORT', retryable: false },
    });
  });

  it('process fails the run with a work error the fail route would refuse as thrown: a long message is cut, an odd code fitted', async () => {
    const { runId } = await externalJob('export-long-error', { items: 1 }, 10);
    const claim = (await claimOf('export-long-error'))!;
    expect(await client.process(claim, () => Promise.reject(new Error(`upstream said: ${'x'.repeat(5000)}`)))).toBe('failed');
    const failed = await getRun(runId);
    expect(failed).toMatchObject({ status: 'FAILED', error: { code: 'WORKER_ERROR', retryable: true } });
    expect(failed.error.message).toHaveLength(1024);
    expect(failed.error.message.startsWith('upstream said: xxx')).toBe(true);

    const retry = (await claimOf('export-long-error'))!;
    expect(await client.process(retry, () => Promise.reject(new WorkFailure('no such export!', 'e'.repeat(2000), false)))).toBe('failed');
    expect(retry.attempt).toBe(2);
    expect(await getRun(retry.run.runId)).toMatchObject({ status: 'DEAD', error: { code: 'no_such_export_', retryable: false } });
  });

  it('one run, eight workers claiming at once: exactly one gets it', async () => {
    const { runId } = await externalJob('export-race', { items: 1 }, 10);
    await eventually(
      () => getRun(runId),
      (run) => run.status === 'QUEUED' && run.startedAt !== null,
    );
    const workers = Array.from(
      { length: 8 },
      (_, index) => new WorkerClient({ baseUrl: scheduler.runtime.url, apiKey: scheduler.apiKey, workerId: `racer-${index}` }),
    );
    const claims = await Promise.all(workers.map((worker) => worker.claim({ jobType: 'export-race' })));
    const winners = claims.filter((claim) => claim !== null);
    expect(winners).toHaveLength(1);
    expect((await getRun(runId)).leaseOwner).toBe(winners[0]!.run.leaseOwner);
  });

  it("another tenant's worker neither sees nor touches this tenant's runs", async () => {
    const otherKey = `key_${randomBytes(18).toString('base64url')}`;
    await scheduler.deps.apiKeys.issue(otherKey, `other-${scheduler.prefix}`, Date.now());
    const other = new WorkerClient({ baseUrl: scheduler.runtime.url, apiKey: otherKey });
    const { jobId, runId } = await externalJob('export-tenant', { items: 1 }, 10);
    await eventually(
      () => getRun(runId),
      (run) => run.status === 'QUEUED' && run.startedAt !== null,
    );
    expect(await other.claim({ jobType: 'export-tenant', waitSeconds: 1 })).toBeNull();
    const claim = (await claimOf('export-tenant'))!;
    const before = await getRun(runId);
    await expect(other.heartbeat(runId, claim.leaseToken)).rejects.toMatchObject({ name: 'WorkerApiError', status: 404 });
    await expect(other.complete(runId, claim.leaseToken)).rejects.toMatchObject({ status: 404 });
    await expect(other.fail(runId, claim.leaseToken, { code: 'NOT_YOURS', message: 'another tenant', retryable: false })).rejects.toMatchObject({
      status: 404,
    });
    // Nothing changed: the run is as the claim left it, and no retry was planned.
    expect(await getRun(runId)).toEqual(before);
    expect(before.status).toBe('RUNNING');
    expect((await scheduler.api('GET', `/v1/jobs/${jobId}/runs`)).body.items).toHaveLength(1);
    await client.complete(runId, claim.leaseToken);
  });
});

// External workers under each delivery semantics (decision 0062), and the races of an external
// worker's calls with each other and with the recovery of a lapsed lease. A lease "lapses" by
// waiting it out (1 s, plus the check-back slack) without a heartbeat; the ticker then finds the
// check-back and sends the run to the dispatch queue, where a worker records the lost attempt.
/** An answer of heartbeat, complete or fail: a Run (or the heartbeat's view) when 200, a problem otherwise. */
interface Answer {
  readonly status: number;
  readonly body: unknown;
}
const runOf = (answer: Answer): Run => answer.body as Run;
const problemOf = (answer: Answer): Problem => answer.body as Problem;

describe('external workers under delivery semantics', () => {
  let scheduler: Scheduler;
  let client: WorkerClient;
  /** A worker receiving the ticker's recovery message runs this; tests call it directly to race it. */
  let recoverer: SchedulerDeps;

  beforeAll(async () => {
    scheduler = await startScheduler();
    client = new WorkerClient({ baseUrl: scheduler.runtime.url, apiKey: scheduler.apiKey, workerId: 'semantics-worker' });
    recoverer = scheduler.workerDeps('recoverer');
  });
  afterAll(() => scheduler.stop());

  async function externalJob(type: string, delivery: Delivery): Promise<{ jobId: string; runId: string }> {
    const created = await scheduler.api('POST', '/v1/jobs', {
      name: `semantics-${type}`,
      type,
      delivery,
      schedule: { kind: 'now' },
      target: { kind: 'external', leaseSeconds: 1 },
      payload: { type },
      retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return { jobId: created.body.job.jobId as string, runId: created.body.job.nextRunId as string };
  }

  async function claimOf(jobType: string): Promise<Claim> {
    const claim = await client.claim({ jobType, waitSeconds: 10 });
    if (!claim) throw new Error(`no run of ${jobType} was offered`);
    return claim;
  }

  const getRun = async (runId: string): Promise<Run> => (await scheduler.api('GET', `/v1/runs/${runId}`)).body as Run;
  const runsOf = async (jobId: string): Promise<[number, string][]> =>
    ((await scheduler.api('GET', `/v1/jobs/${jobId}/runs?limit=100`)).body.items as Run[])
      .sort((a, b) => a.attempt - b.attempt)
      .map((run) => [run.attempt, run.status]);
  const call = (runId: string, action: 'heartbeat' | 'complete' | 'fail', body: Record<string, unknown>) =>
    scheduler.api('POST', `/v1/runs/${runId}/${action}`, body) as Promise<Answer>;

  /** Until the claim's lease has ended and its check-back is due: the worker stopped beating. */
  const lapse = (...claims: Claim[]) =>
    new Promise((resolve) =>
      setTimeout(resolve, Math.max(...claims.map((claim) => Date.parse(claim.leaseExpiresAt))) + LEASE_CHECK_SLACK_MS + 100 - Date.now()),
    );
  /** Ticks until the lapsed run has been recovered (the poller handles the tick's message). */
  const recovered = (runId: string) =>
    eventually(
      async () => {
        await tick(scheduler.deps);
        return getRun(runId);
      },
      (run) => run.status !== 'RUNNING',
      20_000,
    );
  /** Until every dispatch message has been handled: recoveries done, retries offered. */
  const drained = () =>
    eventually(
      () => scheduler.queueDepth(),
      (depth) => depth === 0,
      20_000,
    );

  it('at-most-once: the claim consumes the attempt; a lease that lapses ends DEAD with OUTCOME_UNKNOWN, and nothing is offered again', async () => {
    const { jobId, runId } = await externalJob('amo-lapse', 'at-most-once');
    const claim = await claimOf('amo-lapse');
    // Consumed by the claim itself, before the worker was handed the run, as the claim's run says.
    const claimed = await getRun(runId);
    expect(claimed).toMatchObject({ status: 'RUNNING', delivery: 'at-most-once', consumedAt: expect.any(String) });
    expect(claim.run).toMatchObject({ runId, consumedAt: claimed.consumedAt });

    // The worker dies without a heartbeat; the ticker finds the lapsed lease.
    await lapse(claim);
    const dead = await recovered(runId);
    expect(dead).toMatchObject({
      status: 'DEAD',
      attempt: 1,
      leaseOwner: 'external:semantics-worker',
      error: { code: 'OUTCOME_UNKNOWN', retryable: false },
      reason: expect.stringContaining('at-most-once: the attempt was consumed'),
    });
    // No retry run, and nothing of this job waits for a worker.
    await drained();
    expect(await runsOf(jobId)).toEqual([[1, 'DEAD']]);
    expect(await client.claim({ jobType: 'amo-lapse', waitSeconds: 1 })).toBeNull();
    // The old token is refused for every call, naming the run's status.
    for (const [action, body] of [
      ['heartbeat', {}],
      ['complete', { result: { late: true } }],
      ['fail', { error: { code: 'LATE', message: 'too late', retryable: true } }],
    ] as const) {
      const answer = await call(runId, action, { leaseToken: claim.leaseToken, ...body });
      expect(answer, action).toMatchObject({ status: 409, body: { status: 409, runStatus: 'DEAD' } });
    }
    expect(await getRun(runId)).toMatchObject({ status: 'DEAD', error: { code: 'OUTCOME_UNKNOWN' } });
    expect(((await scheduler.api('GET', `/v1/dead-runs?jobId=${jobId}`)).body.items as Run[]).map((run) => run.runId)).toEqual([runId]);
  });

  it('at-most-once: a claim whose reads fail consumes nothing, and the lapsed lease is retried rather than ended DEAD', async () => {
    const { jobId, runId } = await externalJob('amo-read-fails', 'at-most-once');
    await eventually(
      () => getRun(runId),
      (run) => run.status === 'QUEUED' && run.startedAt !== null,
    );
    // The claim's read of the job (or of a stored payload) fails: the API answers 500.
    const failing = {
      ...scheduler.deps,
      jobs: Object.assign(Object.create(scheduler.deps.jobs) as SchedulerDeps['jobs'], { getAnyTenant: () => Promise.reject(new Error('the store failed')) }),
    };
    await expect(claimRun(failing, scheduler.tenantId, { jobType: 'amo-read-fails', waitSeconds: 0 })).rejects.toThrow(/the store failed/);
    // Before, the attempt was consumed first: at the lease's end it ended DEAD, OUTCOME_UNKNOWN, never handed out.
    const claimed = await getRun(runId);
    expect(claimed.status).toBe('RUNNING');
    expect(claimed.consumedAt ?? null).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, Date.parse(claimed.leaseExpiresAt!) + LEASE_CHECK_SLACK_MS + 100 - Date.now()));
    expect(await recovered(runId)).toMatchObject({ status: 'FAILED', error: { code: 'WORKER_LOST' } });
    await drained();
    expect(await runsOf(jobId)).toEqual([
      [1, 'FAILED'],
      [2, 'QUEUED'],
    ]);
    const retry = await claimOf('amo-read-fails');
    expect(retry.attempt).toBe(2);
  });

  it('at-most-once: a failure the worker reports ends the run DEAD, even a retryable one', async () => {
    const { jobId, runId } = await externalJob('amo-fail', 'at-most-once');
    const claim = await claimOf('amo-fail');
    const failed = await client.fail(runId, claim.leaseToken, { code: 'UPSTREAM_DOWN', message: 'the warehouse is down', retryable: true });
    expect(failed).toMatchObject({ status: 'DEAD', error: { code: 'UPSTREAM_DOWN', retryable: true } });
    expect((await getRun(runId)).reason).toBe('at-most-once: a failed attempt is not retried');
    expect(await runsOf(jobId)).toEqual([[1, 'DEAD']]);
    expect(await client.claim({ jobType: 'amo-fail', waitSeconds: 1 })).toBeNull();
  });

  it("at-most-once: a PATCH of the job's delivery after the claim does not let the consumed attempt's failure be retried", async () => {
    const { jobId, runId } = await externalJob('amo-patched', 'at-most-once');
    const claim = await claimOf('amo-patched');
    expect((await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { delivery: 'at-least-once' })).status).toBe(200);
    const failed = await client.fail(runId, claim.leaseToken, { code: 'UPSTREAM_DOWN', message: 'the warehouse is down', retryable: true });
    // Before, the job's new delivery decided: the consumed attempt was retried, and claimed again.
    expect(failed).toMatchObject({ status: 'DEAD' });
    expect(await runsOf(jobId)).toEqual([[1, 'DEAD']]);
    expect(await client.claim({ jobType: 'amo-patched', waitSeconds: 1 })).toBeNull();
  });

  it('exactly-once: complete records the one effect of the occurrence; another attempt of it is SKIPPED and never offered', async () => {
    const { jobId, runId } = await externalJob('eo-ledger', 'exactly-once');
    const first = await claimOf('eo-ledger');
    const occurrence = first.idempotencyKey;
    // Attempt 1's worker is lost: its attempt records no effect.
    await lapse(first);
    expect(await recovered(runId)).toMatchObject({ status: 'FAILED', error: { code: 'WORKER_LOST' } });
    expect(await scheduler.deps.leases.effectOf(occurrence)).toBeNull();

    const second = await claimOf('eo-ledger');
    expect(second).toMatchObject({ attempt: 2, idempotencyKey: occurrence });
    expect(await scheduler.deps.leases.effectOf(occurrence)).toBeNull(); // not at the claim
    expect(await client.complete(second.run.runId, second.leaseToken, { exported: true })).toMatchObject({ status: 'SUCCEEDED' });
    const effect = await scheduler.deps.leases.effectOf(occurrence);
    expect(effect).toMatchObject({ occurrence, runId: second.run.runId, attempt: 2, fencingToken: second.fencingToken });
    // The lost attempt's token is refused.
    expect(await call(runId, 'complete', { leaseToken: first.leaseToken })).toMatchObject({ status: 409, body: { runStatus: 'FAILED' } });

    // A replay is another attempt of the same occurrence: the ledger answers before it is offered.
    const replayed = await scheduler.api('POST', `/v1/runs/${second.run.runId}/replay`);
    expect(replayed.status).toBe(202);
    const replayRunId = replayed.body.run.runId as string;
    const skipped = await eventually(
      () => getRun(replayRunId),
      (run) => isTerminal(run.status),
    );
    expect(skipped).toMatchObject({ status: 'SKIPPED', attempt: 3, trigger: 'replay', reason: expect.stringContaining(`recorded by run ${second.run.runId}`) });
    await drained();
    expect(await client.claim({ jobType: 'eo-ledger', waitSeconds: 1 })).toBeNull();
    expect(await runsOf(jobId)).toEqual([
      [1, 'FAILED'],
      [2, 'SUCCEEDED'],
      [3, 'SKIPPED'],
    ]);
    expect(await scheduler.deps.leases.effectOf(occurrence)).toEqual(effect);
  });

  it('a complete racing the recovery of its lapsed lease: exactly one of them wins', async () => {
    type Order = 'complete-first' | 'recovery-first' | 'together';
    interface Race {
      readonly order: Order;
      readonly delivery: Delivery;
      readonly jobId: string;
      readonly runId: string;
      readonly claim: Claim;
    }
    const prepare = async (order: Order, delivery: Delivery, index: number): Promise<Race> => {
      const type = `race-${index}`;
      const { jobId, runId } = await externalJob(type, delivery);
      return { order, delivery, jobId, runId, claim: await claimOf(type) };
    };
    /** The recovery: the ticker sends the lapsed run for recovery, and a worker handles that message. */
    const recover = (race: Race) => Promise.all([tick(scheduler.deps), executeRun(recoverer, race.runId)]);
    const complete = (race: Race) => call(race.runId, 'complete', { leaseToken: race.claim.leaseToken, result: { by: 'worker' } });
    const run = async (race: Race): Promise<Awaited<ReturnType<typeof complete>>> => {
      switch (race.order) {
        case 'complete-first': {
          const answer = await complete(race);
          await recover(race);
          return answer;
        }
        case 'recovery-first':
          // Recovered before the tick sends anything, so no other worker races this one.
          expect(await executeRun(recoverer, race.runId)).toBe('worker-lost');
          return complete(race);
        case 'together':
          return (await Promise.all([complete(race), recover(race)]))[0];
      }
    };
    /** What one race left behind, compared whole with the only two outcomes allowed. */
    const outcomeOf = async (race: Race, answer: Awaited<ReturnType<typeof complete>>) => {
      const finished = await getRun(race.runId);
      const effect = await scheduler.deps.leases.effectOf(race.claim.idempotencyKey);
      return {
        run: [finished.status, finished.error?.code ?? null, finished.result ?? null],
        complete: [answer.status, answer.status === 200 ? runOf(answer).status : problemOf(answer).runStatus],
        runs: await runsOf(race.jobId),
        effect: effect?.runId ?? null,
      };
    };
    const wonByComplete = (race: Race) => ({
      run: ['SUCCEEDED', null, { by: 'worker' }],
      complete: [200, 'SUCCEEDED'],
      runs: [[1, 'SUCCEEDED']],
      effect: race.delivery === 'exactly-once' ? race.runId : null,
    });
    const wonByRecovery = () => ({
      run: ['FAILED', 'WORKER_LOST', null],
      complete: [409, 'FAILED'],
      runs: [
        [1, 'FAILED'],
        [2, 'QUEUED'], // the retry, offered to external workers
      ],
      effect: null,
    });

    // Each order alone first (each winner is known), then several races at once.
    const orders: [Order, Delivery][] = [
      ['complete-first', 'at-least-once'],
      ['recovery-first', 'at-least-once'],
      ['complete-first', 'exactly-once'],
      ['recovery-first', 'exactly-once'],
    ];
    const outcomes: { race: Race; outcome: Awaited<ReturnType<typeof outcomeOf>> }[] = [];
    for (const [index, [order, delivery]] of orders.entries()) {
      const race = await prepare(order, delivery, index);
      await lapse(race.claim);
      const answer = await run(race);
      await drained();
      outcomes.push({ race, outcome: await outcomeOf(race, answer) });
    }
    const together = await Promise.all(
      Array.from({ length: 6 }, (_, index) => prepare('together', index % 2 === 0 ? 'at-least-once' : 'exactly-once', orders.length + index)),
    );
    await lapse(...together.map((race) => race.claim));
    const answers = await Promise.all(together.map(run));
    await drained();
    for (const [index, race] of together.entries()) outcomes.push({ race, outcome: await outcomeOf(race, answers[index]!) });

    for (const { race, outcome } of outcomes) {
      const label = `${race.order} ${race.delivery} ${race.runId}`;
      expect([wonByComplete(race), wonByRecovery()], label).toContainEqual(outcome);
      if (race.order === 'complete-first') expect(outcome, label).toEqual(wonByComplete(race));
      if (race.order === 'recovery-first') expect(outcome, label).toEqual(wonByRecovery());
    }
  }, 120_000); // five lease lapses of 2 s each, waited out one after another

  it('two completes with one lease token at once: one records the outcome (200), the other is refused (409)', async () => {
    const pairs = await Promise.all(
      Array.from({ length: 6 }, async (_, index) => {
        const delivery: Delivery = index % 2 === 0 ? 'at-least-once' : 'exactly-once';
        const type = `double-complete-${index}`;
        const { jobId, runId } = await externalJob(type, delivery);
        const claim = await claimOf(type);
        const answers = await Promise.all(['a', 'b'].map((by) => call(runId, 'complete', { leaseToken: claim.leaseToken, result: { by } })));
        return { delivery, jobId, runId, claim, answers };
      }),
    );
    for (const { delivery, jobId, runId, claim, answers } of pairs) {
      const label = `${delivery} ${runId}`;
      expect(answers.map((answer) => answer.status).sort(), label).toEqual([200, 409]);
      const winner = answers.find((answer) => answer.status === 200)!;
      const loser = answers.find((answer) => answer.status === 409)!;
      expect(problemOf(loser), label).toMatchObject({ status: 409, runStatus: 'SUCCEEDED' });
      // The winner's result is the one recorded; the loser wrote nothing.
      const finished = await getRun(runId);
      expect(finished, label).toMatchObject({ status: 'SUCCEEDED', result: runOf(winner).result, version: runOf(winner).version });
      expect(await runsOf(jobId), label).toEqual([[1, 'SUCCEEDED']]);
      const effect = await scheduler.deps.leases.effectOf(claim.idempotencyKey);
      expect(effect?.runId ?? null, label).toBe(delivery === 'exactly-once' ? runId : null);
    }
  });
});
