// External workers: runs of `external` targets are offered (not called) by the worker, and a worker
// outside Lambda claims one over the API, heartbeats within its lease (with progress and a
// checkpoint), and completes or fails it, each call carrying the lease token the claim returned.
// A token that is no longer the run's (taken over, finished, cancelled) is a 409 naming the run's
// status. A lease that ends unrenewed is found by the ticker through the run's check-back entry and
// the attempt is recorded as a lost worker; its retry hands the last checkpoint to the next claim.
import { runFields } from './run-log';
import { randomBytes } from 'node:crypto';
import { NotFoundError, StaleLeaseError } from '../core/errors';
import { logger } from '../core/logger';
import { fencingTokenOf } from '../domain/delivery';
import type { ClaimRequest, CompleteRequest, FailRequest, HeartbeatRequest } from '../api/schemas';
import type { Run } from '../domain/run';
import { occurrenceKey } from '../domain/run';
import type { SchedulerDeps } from './deps';
import type { RecordedOutcome } from './record-outcome';
import { recordOutcome } from './record-outcome';

const CLAIM_POLL_MS = 500;
const CLAIM_CANDIDATES = 10;

/** What a claim hands an external worker. The lease token is its secret: the only place it appears. */
export interface ClaimedRun {
  readonly run: Run;
  readonly leaseToken: string;
  readonly leaseExpiresAt: string;
  readonly leaseSeconds: number;
  readonly attempt: number;
  readonly fencingToken: number;
  readonly idempotencyKey: string;
  readonly payload: unknown;
  /** The last checkpoint saved by a previous attempt of this occurrence, or null. */
  readonly checkpoint: unknown;
}

export async function claimRun(deps: SchedulerDeps, tenantId: string, body: ClaimRequest): Promise<ClaimedRun | null> {
  const deadline = deps.clock() + body.waitSeconds * 1000;
  for (;;) {
    for (const candidate of await deps.claims.claimable(tenantId, body.jobType, CLAIM_CANDIDATES)) {
      const token = randomBytes(24).toString('base64url');
      const claimed = await deps.claims.claim(candidate.runId, tenantId, {
        owner: `external:${body.workerId ?? 'worker'}`,
        leaseToken: token,
        now: deps.clock(),
        shards: deps.config.timeIndexShards,
        leaseMs: candidate.leaseMs,
      });
      // Claimed by another worker since the index was read: try the next one.
      if (!claimed) continue;
      let { run } = claimed;
      // At-most-once: the claim consumes the attempt; a worker that vanishes is not replaced. An
      // attempt that could not be consumed (cancelled, or recovered as lost while this call stalled)
      // is not handed out: the worker would call a target that a retry may call too.
      if (run.delivery === 'at-most-once') {
        const consumedAt = deps.clock();
        if (!(await deps.leases.consume(run.runId, run.version, consumedAt))) continue;
        const at = new Date(consumedAt).toISOString();
        run = { ...run, consumedAt: at, updatedAt: at };
      }
      const job = await deps.jobs.getAnyTenant(run.jobId);
      deps.telemetry.runClaimed(run, deps.clock());
      logger.info('run claimed by an external worker', {
        ...runFields(run),
        leaseOwner: run.leaseOwner,
        fencingToken: fencingTokenOf(run),
      });
      return {
        run,
        leaseToken: token,
        leaseExpiresAt: run.leaseExpiresAt ?? new Date(deps.clock() + run.leaseSeconds * 1000).toISOString(),
        leaseSeconds: run.leaseSeconds,
        attempt: run.attempt,
        fencingToken: fencingTokenOf(run),
        idempotencyKey: occurrenceKey(run.jobId, run.scheduledFor),
        payload: claimed.payloadOverride !== undefined ? claimed.payloadOverride : (job?.payload ?? null),
        checkpoint: claimed.checkpoint ?? null,
      };
    }
    if (deps.clock() + CLAIM_POLL_MS > deadline) return null;
    await new Promise((resolve) => setTimeout(resolve, CLAIM_POLL_MS));
  }
}

export async function heartbeatRun(
  deps: SchedulerDeps,
  tenantId: string,
  runId: string,
  body: HeartbeatRequest,
): Promise<{ run: Run; leaseExpiresAt: string | null }> {
  const beat = await deps.claims.beat(runId, tenantId, { ...body, now: deps.clock(), shards: deps.config.timeIndexShards });
  if (beat.kind === 'missing') throw new NotFoundError(`No run ${runId}`);
  if (beat.kind === 'stale') throw new StaleLeaseError(beat.status);
  return { run: beat.run, leaseExpiresAt: beat.run.leaseExpiresAt };
}

/** The run under this lease token, or the 404/409 that says why not. */
async function leasedRun(deps: SchedulerDeps, tenantId: string, runId: string, token: string) {
  const found = await deps.claims.getLeased(runId);
  if (!found || found.run.tenantId !== tenantId) throw new NotFoundError(`No run ${runId}`);
  if (found.run.status !== 'RUNNING' || found.leaseToken !== token) throw new StaleLeaseError(found.run.status);
  const job = await deps.jobs.getAnyTenant(found.run.jobId);
  if (!job) throw new StaleLeaseError('DEAD');
  return { ...found, job };
}

export async function completeRun(deps: SchedulerDeps, tenantId: string, runId: string, body: CompleteRequest): Promise<Run> {
  const { run, job, budgetFrom } = await leasedRun(deps, tenantId, runId, body.leaseToken);
  const now = deps.clock();
  const outcome = await recordOutcome(deps, job, run, budgetFrom, { ok: true, detail: 'completed by an external worker' }, now, null, { result: body.result });
  return finished(deps, run, outcome, now);
}

export async function failRun(deps: SchedulerDeps, tenantId: string, runId: string, body: FailRequest): Promise<Run> {
  const { run, job, budgetFrom, checkpoint } = await leasedRun(deps, tenantId, runId, body.leaseToken);
  const now = deps.clock();
  const outcome = await recordOutcome(deps, job, run, budgetFrom, { ok: false, timedOut: false, error: body.error }, now, null, { checkpoint });
  return finished(deps, run, outcome, now);
}

async function finished(deps: SchedulerDeps, run: Run, outcome: RecordedOutcome, now: number): Promise<Run> {
  if (outcome.recorded === 'fenced') {
    const current = await deps.runs.get(run.runId);
    throw new StaleLeaseError(current?.status ?? 'DEAD');
  }
  deps.telemetry.runFinished(run, outcome.status, now - Date.parse(run.startedAt ?? run.updatedAt), outcome.retry !== undefined);
  logger.info('run finished by an external worker', {
    ...runFields(run),
    status: outcome.status,
    retryRunId: outcome.retry?.runId,
  });
  return (await deps.runs.get(run.runId)) ?? run;
}
