// External workers: runs of `external` targets are offered (not called) by the worker, and a worker
// outside Lambda claims one over the API, heartbeats within its lease (with progress and a
// checkpoint), and completes or fails it, each call carrying the lease token the claim returned.
// A token that is no longer the run's (taken over, finished, cancelled) is a 409 naming the run's
// status. A lease that ends unrenewed is found by the ticker through the run's check-back entry and
// the attempt is recorded as a lost worker; its retry hands the last checkpoint to the next claim.
import { runFields } from './run-log';
import { randomBytes } from 'node:crypto';
import { NotFoundError, StaleLeaseError, ValidationError } from '../core/errors';
import { logger } from '../core/logger';
import { fencingTokenOf } from '../domain/delivery';
import type { ClaimRequest, CompleteRequest, FailRequest, HeartbeatRequest } from '../api/schemas';
import type { Run, RunError } from '../domain/run';
import { occurrenceKey } from '../domain/run';
import type { SchedulerDeps } from './deps';
import { endUndeliverable, JOB_NEVER_WRITTEN_REASON, payloadOrEnd, stepContextOrEnd } from './leased-run';
import { resultLimitOf, withResult } from './step-results';
import { parseStepJobId, workflowRunIdOf } from '../domain/workflow-jobs';
import { cancelStepRun, stepRunSuperseded } from './workflow-step-runs';
import { stepFieldsOf } from '../targets/envelope';
import type { RecordedOutcome } from './record-outcome';
import { recordOutcome } from './record-outcome';
import { wakeBuffered } from './occurrence-chain';
import type { Job } from '../domain/job';

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
  /** A workflow step's run: its workflow run and step (as in the envelope other targets receive). */
  readonly workflow?: { readonly workflowId: string; readonly workflowRunId: string; readonly stepId: string; readonly version: number };
  /** A workflow step's run: its dependencies' results, by step id, as stored with the run (the same for every attempt and replay). */
  readonly results?: Readonly<Record<string, unknown>>;
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
      const job = await claimableJob(deps, run);
      // Its job deleted (or never written), or a step its workflow run no longer runs: the run was
      // ended instead of handed out. Try the next one.
      if (!job) continue;
      // A run whose stored payload is gone (decision 0162) ends DEAD: offer the next one.
      const read = await payloadOrEnd(deps, job, run, claimed.payloadOverride, deps.clock());
      if (!read.ok) continue;
      const { payload } = read;
      // A step's inputs travel with its claim (its parents' stored results read), as in the envelope of the other targets.
      const context = await stepContextOrEnd(deps, job, run, claimed.inputs, payload, deps.clock());
      if (!context.ok) continue;
      // At-most-once: the claim consumes the attempt; a worker that vanishes is not replaced. An
      // attempt that could not be consumed (cancelled, or recovered as lost while this call stalled)
      // is not handed out: the worker would call a target that a retry may call too. Consumed only
      // once what the claim hands out is read: a read that fails (the bucket, the store) leaves an
      // attempt that was never handed out, which its lease's end retries, not one ended DEAD as
      // perhaps called.
      if (run.delivery === 'at-most-once') {
        const consumedAt = deps.clock();
        if (!(await deps.leases.consume(run.runId, run.version, consumedAt))) continue;
        const at = new Date(consumedAt).toISOString();
        run = { ...run, consumedAt: at, updatedAt: at };
      }
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
        payload,
        checkpoint: claimed.checkpoint ?? null,
        ...(context.step ? stepFieldsOf(context.step) : {}),
      };
    }
    if (deps.clock() + CLAIM_POLL_MS > deadline) return null;
    await new Promise((resolve) => setTimeout(resolve, CLAIM_POLL_MS));
  }
}

/**
 * The job of a run just claimed, checked as a leased run's is before its target is called: the
 * offered run waited in the claimable index, unread, for as long as no worker came, and what was
 * true when it was offered may not be now. Null when the run was ended instead (under the claim's
 * lease, fenced by its version): its job deleted (a delete's retire of its pending runs may miss one:
 * stopped after its commit, or raced by the offer) ends it CANCELLED as `admitRun` does; no job at all
 * ends it as `endWithoutJob` does (CANCELLED; a step's, its workflow version gone, DEAD); a step run
 * whose workflow run was cancelled, or retried past it, since it was offered (a cancel that stopped
 * before it cancelled the steps' runs) is cancelled as one leased from its queue is (decision 0190).
 */
async function claimableJob(deps: SchedulerDeps, run: Run): Promise<Job | null> {
  const step = parseStepJobId(run.jobId);
  const [job, workflowRun] = await Promise.all([
    deps.jobs.getAnyTenant(run.jobId),
    step ? deps.workflowRuns.getRun(step.workflowId, workflowRunIdOf(step.workflowId, run.scheduledFor)) : null,
  ]);
  if (step && workflowRun && stepRunSuperseded(workflowRun, step.stepId, run)) {
    const cancelled = await cancelStepRun(deps, run, deps.clock());
    logger.info('a step run its workflow run no longer runs (cancelled, or retried past it) was claimed; cancelled, not handed out', {
      ...runFields(run),
      cancelled,
    });
    return null;
  }
  if (!job) {
    const error: RunError = { code: 'JOB_NOT_FOUND', message: `job ${run.jobId} does not exist`, retryable: false };
    const claimedAt = Date.parse(run.startedAt ?? run.updatedAt);
    if (step) await endUndeliverable(deps, run, claimedAt, error, 'the workflow version of this step no longer exists');
    else await endClaimed(deps, run, error, JOB_NEVER_WRITTEN_REASON);
    return null;
  }
  if (job.status === 'CANCELLED') {
    await endClaimed(deps, run, null, 'job deleted');
    return null;
  }
  return job;
}

/** Ends a run just claimed CANCELLED, under the claim's lease (fenced by its version): it is not handed out. */
async function endClaimed(deps: SchedulerDeps, run: Run, error: RunError | null, reason: string): Promise<void> {
  if ((await deps.leases.complete(run.runId, run.version, { status: 'CANCELLED', now: deps.clock(), error, reason })) === 'fenced') return;
  deps.telemetry.runEnded(run, 'CANCELLED', reason);
  logger.info('a claimed run was ended instead of handed out', { ...runFields(run), status: 'CANCELLED', reason });
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
  deps.telemetry.runHeartbeat(beat.run);
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
  // A workflow step's result is its dependants' input: bounded as every target's answer is (decisions
  // 0141, 0163). Another run's result is bounded by where it is kept.
  if (body.result !== undefined) {
    const bytes = Buffer.byteLength(JSON.stringify(body.result), 'utf8');
    const step = parseStepJobId(run.jobId) !== null;
    const limit = resultLimitOf(deps, step);
    if (bytes > limit) {
      throw new ValidationError('Invalid request', [
        {
          path: 'result',
          message: `${step ? "a workflow step's" : "a run's"} result must be at most ${limit} bytes of JSON (got ${bytes}); the run is still yours to complete or fail`,
        },
      ]);
    }
  }
  const now = deps.clock();
  const outcome = await recordOutcome(deps, job, run, budgetFrom, { ok: true, detail: 'completed by an external worker' }, now, null, { result: body.result });
  return finished(deps, job, run, outcome, now);
}

export async function failRun(deps: SchedulerDeps, tenantId: string, runId: string, body: FailRequest): Promise<Run> {
  const { run, job, budgetFrom, checkpoint, inputs, payloadOverride } = await leasedRun(deps, tenantId, runId, body.leaseToken);
  const now = deps.clock();
  // The retry carries the checkpoint, and a step's inputs: every attempt sees what the first saw.
  const outcome = await recordOutcome(deps, job, run, budgetFrom, { ok: false, timedOut: false, error: body.error }, now, null, {
    checkpoint,
    ...(inputs !== undefined ? { inputs } : {}),
    ...(payloadOverride !== undefined ? { payload: payloadOverride } : {}),
  });
  return finished(deps, job, run, outcome, now);
}

async function finished(deps: SchedulerDeps, job: Job, run: Run, outcome: RecordedOutcome, now: number): Promise<Run> {
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
  // An occurrence buffered behind this one starts now, not at its next look (as a worker's run wakes it).
  if (job.overlapPolicy === 'buffer-one' && run.trigger === 'schedule') await wakeBuffered(deps, job.jobId, now);
  const current = await deps.runs.get(run.runId);
  return current ? withResult(deps, current) : run;
}
