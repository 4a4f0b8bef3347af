// External workers over HTTP against the local runtime: the typed client (clients/worker-client.ts)
// and the example worker (examples/external-worker.ts) claim runs of `external` jobs, heartbeat with
// checkpoints and complete them; a stale token is a 409; a lease that ends without a heartbeat is
// recovered by the ticker and retried, and the retry's claim receives the last checkpoint; a
// cancellation is seen at the next heartbeat.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Claim } from '../../clients/worker-client';
import { LeaseLostError, RunCancelledError, WorkerClient } from '../../clients/worker-client';
import type { ExportCheckpoint, ExportPayload } from '../../examples/external-worker';
import { processExport } from '../../examples/external-worker';
import { tick } from '../../lambdas/app/tick';
import { fencingTokenOf } from '../../lambdas/domain/delivery';
import type { Scheduler } from './harness';
import { eventually, startScheduler } from './harness';

type RunBody = Record<string, any>;

describe('external workers', () => {
  let scheduler: Scheduler;
  let client: WorkerClient;

  beforeAll(async () => {
    scheduler = await startScheduler();
    client = new WorkerClient({ baseUrl: scheduler.runtime.url, apiKey: scheduler.apiKey, workerId: 'test-worker' });
  });
  afterAll(() => scheduler.stop());

  async function externalJob(type: string, payload: ExportPayload, leaseSeconds: number, extra: Record<string, unknown> = {}): Promise<{ jobId: string; runId: string }> {
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
  const getRun = async (runId: string): Promise<RunBody> => (await scheduler.api('GET', `/v1/runs/${runId}`)).body as RunBody;

  it('the example worker claims a run, heartbeats checkpoints and completes it', async () => {
    const { runId } = await externalJob('export-ok', { items: 3 }, 10);
    // Offered by the dispatch worker, the run waits QUEUED for a claim.
    await eventually(() => getRun(runId), (run) => run.status === 'QUEUED' && run.startedAt !== null);
    const claim = (await claimOf('export-ok')) as Claim<ExportPayload, ExportCheckpoint>;
    expect(claim).toMatchObject({ run: { runId, status: 'RUNNING', leaseOwner: 'external:test-worker' }, attempt: 1, leaseSeconds: 10, payload: { items: 3 }, checkpoint: null });
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

  it('a failure the worker reports is retried by the job policy with the checkpoint, or ends DEAD when permanent', async () => {
    const { runId } = await externalJob('export-fail', { items: 1 }, 10);
    const claim = (await claimOf('export-fail'))!;
    await client.heartbeat(runId, claim.leaseToken, { checkpoint: { done: 1 } });
    expect(await client.fail(runId, claim.leaseToken, { code: 'UPSTREAM_DOWN', message: 'the warehouse is down', retryable: true })).toMatchObject({ status: 'FAILED' });
    const retry = (await claimOf('export-fail'))!;
    expect(retry).toMatchObject({ attempt: 2, checkpoint: { done: 1 } });
    expect(await client.fail(retry.run.runId, retry.leaseToken, { code: 'BAD_EXPORT', message: 'no such export', retryable: false })).toMatchObject({
      status: 'DEAD',
      error: { code: 'BAD_EXPORT', retryable: false },
    });
  });

  it('one run, eight workers claiming at once: exactly one gets it', async () => {
    const { runId } = await externalJob('export-race', { items: 1 }, 10);
    await eventually(() => getRun(runId), (run) => run.status === 'QUEUED' && run.startedAt !== null);
    const workers = Array.from({ length: 8 }, (_, index) => new WorkerClient({ baseUrl: scheduler.runtime.url, apiKey: scheduler.apiKey, workerId: `racer-${index}` }));
    const claims = await Promise.all(workers.map((worker) => worker.claim({ jobType: 'export-race' })));
    const winners = claims.filter((claim) => claim !== null);
    expect(winners).toHaveLength(1);
    expect((await getRun(runId)).leaseOwner).toBe(winners[0]!.run.leaseOwner);
  });

  it("another tenant's worker neither sees nor touches this tenant's runs", async () => {
    const otherKey = `key_${randomBytes(18).toString('base64url')}`;
    await scheduler.deps.apiKeys.issue(otherKey, `other-${scheduler.prefix}`, Date.now());
    const other = new WorkerClient({ baseUrl: scheduler.runtime.url, apiKey: otherKey });
    const { runId } = await externalJob('export-tenant', { items: 1 }, 10);
    await eventually(() => getRun(runId), (run) => run.status === 'QUEUED' && run.startedAt !== null);
    expect(await other.claim({ jobType: 'export-tenant', waitSeconds: 1 })).toBeNull();
    const claim = (await claimOf('export-tenant'))!;
    await expect(other.heartbeat(runId, claim.leaseToken)).rejects.toMatchObject({ name: 'WorkerApiError', status: 404 });
    await expect(other.complete(runId, claim.leaseToken)).rejects.toMatchObject({ status: 404 });
    expect((await getRun(runId)).status).toBe('RUNNING');
    await client.complete(runId, claim.leaseToken);
  });
});
