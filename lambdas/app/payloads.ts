// Payloads stored apart (decision 0162): what a create, a PATCH or a trigger stores before its
// write, what a worker reads back, and what the API shows. Inline payloads pass through untouched,
// so a deployment without a payload bucket works as before with payloads of up to 64 KiB.
import { ProblemError, ServiceUnavailableError, ValidationError } from '../core/errors';
import { logger } from '../core/logger';
import type { Job } from '../domain/job';
import type { PayloadRef, RunPayload } from '../domain/payload';
import { INLINE_PAYLOAD_MAX_BYTES, LIST_PAYLOAD_BUDGET_BYTES, LIST_PAYLOAD_MAX_BYTES, payloadBytes, payloadRefusal } from '../domain/payload';
import type { SchedulerDeps } from './deps';
import { PayloadMissingError } from '../store/payload-store';

/** Refuses (400) a payload the deployment or the job's target cannot take. */
export function checkPayload(deps: Pick<SchedulerDeps, 'payloads'>, payload: unknown, kind: Job['target']['kind'], title = 'Invalid job'): void {
  const refusal = payloadRefusal(payloadBytes(payload), kind, deps.payloads !== null);
  if (refusal) throw new ValidationError(title, [{ path: 'payload', message: refusal }]);
}

/** The job as written: its payload stored apart when it is over the inline bound. */
export async function withStoredPayload(deps: Pick<SchedulerDeps, 'payloads'>, job: Job): Promise<Job> {
  if (!deps.payloads || payloadBytes(job.payload) <= INLINE_PAYLOAD_MAX_BYTES) {
    const { payloadRef: _ref, ...inline } = job;
    return inline;
  }
  const payloadRef = await deps.payloads.putForJob(job.tenantId, job.jobId, job.payload);
  return { ...job, payload: null, payloadRef };
}

/** A trigger's payload as its run keeps it: inline up to the bound, stored apart above it. */
export async function runPayloadOf(deps: Pick<SchedulerDeps, 'payloads'>, job: Pick<Job, 'tenantId' | 'jobId'>, payload: unknown): Promise<RunPayload> {
  if (!deps.payloads || payloadBytes(payload) <= INLINE_PAYLOAD_MAX_BYTES) return { inline: payload };
  return { ref: await deps.payloads.putForRun(job.tenantId, job.jobId, payload) };
}

/**
 * A replay's own copy of the run's stored payload: the runs' objects leave with the bucket's
 * lifecycle (twice the runs' retention, decision 0162), counted from when each was stored, and a
 * chain of replays, each kept the retention from its own end, outlived one object shared by all.
 * An object that cannot be read (gone, which S3 answers as access denied without a list grant, or
 * not what its reference says) stays named as it is: the replay is made as before, and its delivery
 * ends it PAYLOAD_MISSING if the object is gone for good.
 */
export async function ownCopyOf(
  deps: Pick<SchedulerDeps, 'payloads'>,
  job: Pick<Job, 'tenantId' | 'jobId'>,
  payload: RunPayload | undefined,
): Promise<RunPayload | undefined> {
  if (!payload || !('ref' in payload) || !deps.payloads) return payload;
  try {
    return { ref: await deps.payloads.putForRun(job.tenantId, job.jobId, await deps.payloads.get(payload.ref)) };
  } catch (error) {
    logger.warn("a replay could not copy its run's stored payload; it names the run's own", {
      key: payload.ref.key,
      error: error instanceof PayloadMissingError ? 'missing' : error instanceof Error ? error.message : String(error),
    });
    return payload;
  }
}

/** The payload a run delivers: its own (a trigger's) when it has one, its job's otherwise. */
export async function deliveredPayload(deps: Pick<SchedulerDeps, 'payloads'>, job: Job, own: RunPayload | undefined): Promise<unknown> {
  if (own) return 'inline' in own ? own.inline : await read(deps, own.ref);
  return job.payloadRef ? await read(deps, job.payloadRef) : job.payload;
}

/**
 * The job with its payload in place (the API's answers). One whose object is gone (deleted by hand)
 * is shown with `payload: null` beside its `payloadStored`, not refused: its runs end DEAD with
 * PAYLOAD_MISSING, and a PATCH may give it a new payload.
 */
export async function withPayload(deps: Pick<SchedulerDeps, 'payloads'>, job: Job): Promise<Job> {
  if (!job.payloadRef) return job;
  try {
    return { ...job, payload: await read(deps, job.payloadRef) };
  } catch (error) {
    if (!(error instanceof PayloadMissingError)) throw error;
    logger.warn("a job's stored payload is gone", { jobId: job.jobId, tenantId: job.tenantId, key: job.payloadRef.key });
    return job;
  }
}

/**
 * A page of jobs with their payloads in place, as long as each is within the old inline limit and
 * the page within its budget (LIST_PAYLOAD_BUDGET_BYTES); the others show `payload: null` with
 * `payloadStored`, and GET /v1/jobs/{jobId} shows them.
 */
export async function withListedPayloads(deps: Pick<SchedulerDeps, 'payloads'>, jobs: readonly Job[]): Promise<Job[]> {
  let budget = LIST_PAYLOAD_BUDGET_BYTES;
  const shown = new Set<Job>();
  for (const job of jobs) {
    if (!job.payloadRef || job.payloadRef.bytes > LIST_PAYLOAD_MAX_BYTES || job.payloadRef.bytes > budget) continue;
    budget -= job.payloadRef.bytes;
    shown.add(job);
  }
  return Promise.all(jobs.map(async (job) => (shown.has(job) ? withPayload(deps, job) : job)));
}

async function read(deps: Pick<SchedulerDeps, 'payloads'>, ref: PayloadRef): Promise<unknown> {
  if (!deps.payloads) throw new Error(`the payload ${ref.key} is stored apart, and this deployment has no payload bucket`);
  return deps.payloads.get(ref);
}

/**
 * After a write that replaced `before` by `after` (or failed to write `after`): the object no item
 * names any more is tagged for the lifecycle rule, never deleted at once, as a worker that read the
 * job a moment ago may still be fetching it. Best effort: an untagged object only costs its storage.
 */
export async function releasePayload(deps: Pick<SchedulerDeps, 'payloads'>, unused: PayloadRef | undefined, kept: PayloadRef | undefined): Promise<void> {
  if (!deps.payloads || !unused || unused.key === kept?.key) return;
  try {
    await deps.payloads.supersede(unused);
  } catch (error) {
    logger.warn('a payload no job names was not tagged for deletion', { key: unused.key, error: error instanceof Error ? error.message : String(error) });
  }
}

/** A payload stored for a write that did not happen and that nothing can have read: deleted now (best effort). */
export async function discardPayload(deps: Pick<SchedulerDeps, 'payloads'>, unused: PayloadRef | undefined): Promise<void> {
  if (!deps.payloads || !unused) return;
  try {
    await deps.payloads.delete(unused);
  } catch (error) {
    logger.warn('a payload stored for a write that failed was not deleted', { key: unused.key, error: error instanceof Error ? error.message : String(error) });
  }
}

/**
 * After a write that threw: its object is deleted when the error is a refusal (nothing was written);
 * after a store failure the write may have been applied (a timed-out request), so the object stays,
 * and the sweep (payload-sweep.ts) finds it if no item names it.
 */
export async function discardAfterFailure(deps: Pick<SchedulerDeps, 'payloads'>, unused: PayloadRef | undefined, error: unknown): Promise<void> {
  if (error instanceof ProblemError && !(error instanceof ServiceUnavailableError)) await discardPayload(deps, unused);
}
