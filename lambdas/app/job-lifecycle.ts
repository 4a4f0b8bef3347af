// Changes to a job by request: delete, PATCH and manual triggers. Every change of a job is a
// compare-and-swap on its version and pending occurrence (job-mutation.ts), with the runs it
// creates in the same transaction. Pause and resume are in pause-resume.ts, skips in
// skip-occurrences.ts, and the chain's own moves in occurrence-chain.ts.
import { isDeepStrictEqual } from 'node:util';
import { traceIdOf } from '../domain/trace-context';
import { ConflictError, NotFoundError, ValidationError } from '../core/errors';
import { logger } from '../core/logger';
import { parseOrThrow } from '../core/validation';
import type { Job } from '../domain/job';
import type { HeaderValue } from '../domain/job';
import { MASKED_HEADER_VALUE, isUnnamed, jobSpecSchema } from '../domain/job';
import type { JobPatchRequest, TriggerRequest } from '../api/schemas';
import type { Run } from '../domain/run';
import type { TenantLimits } from '../domain/tenant';
import { firstFireTime, sameSchedule, settleLike, settleSchedule, skipsKept, validateSchedule } from '../domain/schedule';
import { planRun } from './plan-run';
import { triggerDebounced } from './debounce';
import { sendPlannedRun } from './send-planned-run';
import type { SchedulerDeps } from './deps';
import { admitRunRequest } from './create-rate';
import { checkNotify, checkPoolTimeout, checkTarget, presentJob } from './jobs';
import type { JobView } from './jobs';
import { attemptFor } from './occurrence-chain';
import { carriedBy, mutateJob, samePending, stillFiresAt, touch } from './job-mutation';
import { checkPayload, discardAfterFailure, discardPayload, releasePayload, runPayloadOf, withStoredPayload } from './payloads';
import type { PayloadRef } from '../domain/payload';
import { payloadRefusal } from '../domain/payload';

const iso = (ms: number): string => new Date(ms).toISOString();

export async function deleteJob(deps: SchedulerDeps, tenantId: string, jobId: string): Promise<JobView> {
  return presentJob(deps, await deleteJobOf(deps, tenantId, jobId));
}

/** Deletes a job; answers the job as stored after (the API shows it with `presentJob`). */
export async function deleteJobOf(deps: SchedulerDeps, tenantId: string, jobId: string): Promise<Job> {
  const existing = await deps.jobs.get(tenantId, jobId);
  if (existing?.status === 'CANCELLED') return existing;
  const job = await mutateJob(deps, tenantId, jobId, (current, now) => {
    // A delete that lost a race with another finds the job deleted: done, nothing written (writing
    // it again would release its name a second time, and fail).
    if (current.status === 'CANCELLED') return { next: current };
    // The deleted job names no stored payload: its object is released below, as a PATCH releases
    // the one it replaces.
    const { payloadRef: storedPayload, ...withoutPayload } = current;
    return {
      next: touch(withoutPayload, now, { status: 'CANCELLED', nextRunAt: null, nextRunId: null, pausedPending: null, pausedUntil: null }),
      releaseName: true,
      afterCommit: async () => {
        // Every run of the job that has not started ends CANCELLED. A run leased meanwhile (or one
        // this misses) sees the job CANCELLED when leased and ends the same way (admitRun).
        for (const run of await deps.runs.pendingOfJob(current)) {
          if (await deps.runs.retirePending(run.runId, 'CANCELLED', 'job deleted', now)) deps.telemetry.runEnded(run, 'CANCELLED', 'job deleted');
        }
        // Tagged for the lifecycle rule, not deleted: a worker that read the job just before may
        // still be fetching it.
        await releasePayload(deps, storedPayload, undefined);
      },
    };
  });
  logger.info('job deleted', { jobId, tenantId });
  return job;
}

/**
 * PATCH: fields of the definition, replaced whole at the top level (JSON merge of the first level).
 * A changed schedule re-plans the pending occurrence of an ACTIVE job, replaces the occurrence a
 * PAUSED job resumes from, and makes a COMPLETED job ACTIVE again with the new schedule's first
 * occurrence (counted against the tenant's active jobs; decision 0073).
 */
export async function patchJob(
  deps: SchedulerDeps,
  tenantId: string,
  jobId: string,
  patch: JobPatchRequest,
  ifMatch?: number,
  limits: TenantLimits = deps.config.tenantDefaults,
): Promise<JobView> {
  return presentJob(deps, await patchJobOf(deps, tenantId, jobId, patch, ifMatch, limits));
}

/** The PATCH; answers the job as stored after (the API shows it with `presentJob`). */
export async function patchJobOf(
  deps: SchedulerDeps,
  tenantId: string,
  jobId: string,
  patch: JobPatchRequest,
  ifMatch?: number,
  limits: TenantLimits = deps.config.tenantDefaults,
): Promise<Job> {
  const before = await deps.jobs.get(tenantId, jobId);
  // A new schedule makes a COMPLETED job ACTIVE again with a first occurrence: a create, counted
  // against the tenant's creates per second (decision 0074) just before it is written, once
  // whatever the retries of the write; a PATCH that reactivates nothing is not counted.
  let admitted = false;
  const admitReactivation = async (): Promise<void> => {
    if (admitted) return;
    await admitRunRequest(deps, tenantId, limits, deps.clock());
    admitted = true;
  };
  // A new target or destination is checked against the tenant's grants too (decision 0194): read
  // whenever either is given, as a header kept by its mask may name a stored secret.
  const grants = patch.target !== undefined || patch.notify ? await deps.tenantLimits.grantsOf(tenantId) : null;
  const pendingRead = before?.nextRunId ? await deps.runs.withOccurrenceState(before.nextRunId) : null;
  const pending = pendingRead?.run ?? null;
  // A new payload is stored before the job that names it (decision 0162); the one it replaces is
  // released once the job no longer names it.
  if (before && patch.payload !== undefined) checkPayload(deps, patch.payload, (patch.target ?? before.target).kind);
  const newPayload = before && patch.payload !== undefined ? await withStoredPayload(deps, { ...before, payload: patch.payload }) : undefined;
  let replacedPayload: PayloadRef | undefined;
  const job = await mutateJob(
    deps,
    tenantId,
    jobId,
    (current, now, ended) => {
      if (current.status === 'CANCELLED') throw new ConflictError('The job is CANCELLED');
      const changes = withStoredHeaders(patch, current);
      if (changes.name !== undefined && changes.name !== current.name) {
        throw new ValidationError('Invalid job', [{ path: 'name', message: 'cannot be changed; create a new job instead' }]);
      }
      const {
        jobId: _j,
        tenantId: _t,
        status: _s,
        createdAt: _c,
        updatedAt: _u,
        version: _v,
        nextRunAt: _n,
        nextRunId: _r,
        lastStartedRunId: _l,
        pausedAt: _p,
        pausedPending: _pp,
        pauseNote: _pn,
        pausedUntil: _pu,
        skippedOccurrences: _so,
        payloadRef: _pr,
        ...spec
      } = current;
      // An unnamed job's name is its id, which no spec may give (decision 0154): checked without it.
      const merged = parseOrThrow(jobSpecSchema, { ...spec, ...changes, name: isUnnamed(current) ? undefined : current.name }, 'Invalid job');
      if (changes.target !== undefined) checkTarget(deps, merged.target, grants);
      if (changes.notify !== undefined) checkNotify(deps, merged.notify, grants);
      checkPoolTimeout(deps, merged);
      // A schedule repeated without its anchor (or a counted cron's start) keeps the stored one.
      const requested = settleLike(merged.schedule, current.schedule);
      const scheduleChanged = !sameSchedule(requested, current.schedule);
      const schedulingChanged =
        scheduleChanged || merged.timeoutSeconds !== current.timeoutSeconds || JSON.stringify(merged.target) !== JSON.stringify(current.target);
      if (scheduleChanged) validateSchedule(requested, now);
      // A new schedule counts from now (an interval's anchor, a counted cron's start). The
      // occurrences skipped on request stay skipped where it still fires: the chain plans over
      // them, as their SKIPPED runs hold their ids.
      const schedule = scheduleChanged ? settleSchedule(requested, now) : current.schedule;
      const { payloadRef: storedPayload, ...withoutPayload } = touch(current, now, {
        ...merged,
        name: current.name,
        schedule,
        ...(scheduleChanged ? { skippedOccurrences: skipsKept(current.skippedOccurrences, schedule, now) } : {}),
      });
      // The payload a PATCH sets, inline or stored apart; otherwise the one the job has, which a new
      // target must be able to carry too.
      replacedPayload = newPayload ? storedPayload : undefined;
      const payloadRef = newPayload ? newPayload.payloadRef : storedPayload;
      if (!newPayload && storedPayload) {
        const refusal = payloadRefusal(storedPayload.bytes, merged.target.kind, true);
        if (refusal) throw new ValidationError('Invalid job', [{ path: 'payload', message: `the stored payload ${refusal}` }]);
      }
      const updated: Job = { ...withoutPayload, ...(newPayload ? { payload: newPayload.payload } : {}), ...(payloadRef ? { payloadRef } : {}) };
      // A PATCH that changes nothing (`{}`, or the fields as they are) writes nothing: the version
      // stays, so another client's If-Match still holds.
      if (sameDefinition(updated, current)) return { next: current };

      if (current.status === 'PAUSED' && scheduleChanged) {
        // The occurrence remembered at pause belongs to the old schedule (or zone): resume must
        // start from the new one's first occurrence after now. The paused run is kept only when it
        // stands for that same occurrence, so that its replacement takes the next attempt number.
        // The skips carried over count: resume must not start from an occurrence skipped on request.
        const first = firstFireTime(updated, now);
        const paused = current.pausedPending ?? null;
        return {
          next: {
            ...updated,
            pausedPending:
              first === null ? null : { runId: paused && Date.parse(paused.scheduledFor) === first ? paused.runId : null, scheduledFor: iso(first) },
          },
        };
      }
      const reactivates = current.status === 'COMPLETED' && scheduleChanged;
      if (!(current.status === 'ACTIVE' && schedulingChanged) && !reactivates) return { next: updated };

      // The pending occurrence is retired and planned again from the new definition (its lease
      // length follows the timeout, and its time the schedule). A COMPLETED job given a new
      // schedule is ACTIVE again from its first occurrence. With the schedule as it was, the same
      // occurrence is planned again, with what it carried: one due and not yet started (waiting
      // for its jitter, behind a running one, or a backfill's) is not dropped for the next.
      // A new schedule keeps a due occurrence that has not started (waiting for its jitter, or not
      // yet leased) when it still fires at it: a jitter or an end changed at 09:10 must not drop
      // 09:00's run for tomorrow's. Its start is planned again under the new schedule.
      const pendingSame = samePending(current, pendingRead);
      const same = !scheduleChanged || (pendingSame && stillFiresAt(updated, pendingSame.run, now)) ? pendingSame : null;
      const first = same ? Date.parse(same.run.scheduledFor) : firstFireTime(updated, now);
      if (first === null) {
        if (reactivates) {
          throw new ValidationError('Invalid job', [{ path: 'schedule', message: 'has no occurrence after now; the job stays COMPLETED' }]);
        }
        return { next: { ...updated, status: 'COMPLETED', nextRunAt: null, nextRunId: null }, afterCommit: () => retire(current.nextRunId, current.type) };
      }
      const plan = planRun(
        deps.config,
        updated,
        {
          scheduledFor: first,
          attempt: ended.attemptPast(jobId, first, attemptFor(first, pending)),
          trigger: 'schedule',
          chainedFrom: current.nextRunId ?? null,
          ...carriedBy(same),
        },
        now,
      );
      return {
        next: { ...updated, status: 'ACTIVE', nextRunAt: plan.run.scheduledFor, nextRunId: plan.run.runId },
        maxActiveJobs: limits.maxActiveJobs,
        ...(reactivates ? { beforeWrite: admitReactivation } : {}),
        plan,
        afterCommit: async () => {
          await retire(current.nextRunId, current.type);
          await sendPlannedRun(deps, plan, now);
        },
      };
    },
    ifMatch,
  ).catch(async (error: unknown) => {
    await discardAfterFailure(deps, newPayload?.payloadRef, error);
    throw error;
  });
  await releasePayload(deps, replacedPayload, job.payloadRef);
  async function retire(runId: string | null, jobType: string): Promise<void> {
    if (runId && (await deps.runs.retirePending(runId, 'SKIPPED', 'job definition changed', deps.clock()))) {
      deps.telemetry.runEnded({ runId, tenantId, jobId, jobType }, 'SKIPPED', 'job definition changed');
    }
  }
  logger.info('job updated', { jobId, tenantId, version: job.version });
  return job;
}

/** Whether two versions of a job differ in nothing but their version and update time. */
function sameDefinition(a: Job, b: Job): boolean {
  const { version: _va, updatedAt: _ua, ...restA } = a;
  const { version: _vb, updatedAt: _ub, ...restB } = b;
  // As stored: a field set to undefined and one absent are the same.
  const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value)) as unknown;
  return isDeepStrictEqual(plain(restA), plain(restB));
}

/**
 * A PATCH's target with each header sent as the masked value given back its stored value (header
 * values are write-only, so a client that read the job sends the mask for the ones it keeps). A
 * masked header the job does not have is left masked, and refused by checkTarget.
 */
function withStoredHeaders(patch: JobPatchRequest, current: Job): JobPatchRequest {
  const target = patch.target;
  const storedTarget = current.target;
  if (target?.kind !== 'http' || storedTarget.kind !== 'http') return patch;
  const stored = storedTarget.headers;
  const storedValue = (name: string): HeaderValue | undefined => Object.entries(stored).find(([key]) => key.toLowerCase() === name.toLowerCase())?.[1];
  // A stored value goes only where it went: a key that cannot read it must not be able to send it
  // to a host of its choosing.
  if (originOf(target.url) !== originOf(storedTarget.url)) {
    const kept = Object.keys(target.headers).filter((name) => target.headers[name] === MASKED_HEADER_VALUE);
    if (kept.length > 0) {
      throw new ValidationError(
        'Invalid job',
        kept.map((name) => ({
          path: `target.headers.${name}`,
          message: `keeps its stored value only at the same origin (${originOf(storedTarget.url)}); send the value to send it to ${originOf(target.url)}`,
        })),
      );
    }
  }
  const headers = Object.fromEntries(
    Object.entries(target.headers).map(([name, value]) => [name, value === MASKED_HEADER_VALUE ? (storedValue(name) ?? value) : value]),
  );
  return { ...patch, target: { ...target, headers } };
}

/** Scheme, host and port of a URL the schema has already accepted. */
const originOf = (url: string): string => new URL(url).origin;

/** A manual occurrence now, outside the schedule's chain. */
export async function triggerJob(
  deps: SchedulerDeps,
  tenantId: string,
  jobId: string,
  request: TriggerRequest,
  limits: TenantLimits = deps.config.tenantDefaults,
  traceparent?: string,
): Promise<Run> {
  const job = await deps.jobs.get(tenantId, jobId);
  if (!job) throw new NotFoundError(`No job ${jobId}`);
  if (job.status === 'CANCELLED') throw new ConflictError('The job is CANCELLED');
  if (request.payload !== undefined) checkPayload(deps, request.payload, job.target.kind, 'Invalid trigger');
  const now = deps.clock();
  await admitRunRequest(deps, tenantId, limits, now);
  // Stored before the run that names it (decision 0162); a run not written leaves it to be deleted.
  const payload = request.payload !== undefined ? await runPayloadOf(deps, job, request.payload) : undefined;
  const stored = payload && 'ref' in payload ? payload.ref : undefined;
  try {
    if (request.debounceSeconds !== undefined) return (await triggerDebounced(deps, job, payload, request.debounceSeconds, traceparent)).run;
  } catch (error) {
    await discardAfterFailure(deps, stored, error);
    throw error;
  }
  const plan = planRun(deps.config, job, { scheduledFor: now, attempt: 1, trigger: 'manual', traceparent, ...(payload ? { payload } : {}) }, now);
  if (!(await deps.runs.create(plan))) {
    await discardPayload(deps, stored);
    throw new ConflictError('A manual run was triggered at this same instant; try again');
  }
  deps.telemetry.runCreated(plan.run);
  await sendPlannedRun(deps, plan, now);
  logger.info('job triggered', { jobId, tenantId, runId: plan.run.runId, traceId: traceIdOf(plan.run.traceparent) });
  return plan.run;
}
