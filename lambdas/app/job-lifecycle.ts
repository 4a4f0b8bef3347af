// Changes to a job's life by request: pause and resume, delete, PATCH and manual triggers. Every
// change of a job is a compare-and-swap on its version and pending occurrence, with the runs it
// creates in the same transaction. The chain's own moves are in occurrence-chain.ts.
import { traceIdOf } from '../domain/trace-context';
import { ConflictError, NotFoundError, PreconditionFailedError, TooManyRequestsError, ValidationError } from '../core/errors';
import { logger } from '../core/logger';
import { parseOrThrow } from '../core/validation';
import type { Job } from '../domain/job';
import type { HeaderValue } from '../domain/job';
import { MASKED_HEADER_VALUE, jobSpecSchema } from '../domain/job';
import type { JobPatchRequest, TriggerRequest } from '../api/schemas';
import { occurrenceOnResume } from '../domain/recurrence';
import type { Run } from '../domain/run';
import type { TenantLimits } from '../domain/tenant';
import { firstFireTime, validateSchedule } from '../domain/schedule';
import type { RunPlan } from './plan-run';
import { planRun } from './plan-run';
import { triggerDebounced } from './debounce';
import { sendPlannedRun } from './send-planned-run';
import type { SchedulerDeps } from './deps';
import { checkNotify, checkPoolTimeout, checkTarget, viewOf } from './jobs';
import type { JobView } from './jobs';
import { MAX_CAS_ATTEMPTS, attemptFor, pendingRun } from './occurrence-chain';

const iso = (ms: number): string => new Date(ms).toISOString();

interface Mutation {
  readonly next: Job;
  readonly plan?: RunPlan;
  readonly releaseName?: boolean;
  /** The tenant's active-jobs limit, checked when the change makes the job live again. */
  readonly maxActiveJobs?: number | null;
  /** Work after the job is committed: retire the old pending run, send the new one. */
  readonly afterCommit?: () => Promise<void>;
}

/** Reads the job a change applies to: the tenant's job by default, or a workflow's schedule job. */
export type JobReader = () => Promise<Job | null>;

/**
 * Reads the job, applies `mutate` and writes it back if nothing changed in between; retries on a
 * race with the scheduler's own writes. A stale `ifMatch` version is a 412.
 */
async function mutateJob(
  deps: SchedulerDeps,
  tenantId: string,
  jobId: string,
  mutate: (job: Job, now: number) => Mutation,
  ifMatch?: number,
  read: JobReader = () => deps.jobs.get(tenantId, jobId),
): Promise<Job> {
  for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
    const job = await read();
    if (!job) throw new NotFoundError(`No job ${jobId}`);
    if (ifMatch !== undefined && job.version !== ifMatch) {
      throw new PreconditionFailedError(`The job is at version ${job.version}, not ${ifMatch}`);
    }
    const now = deps.clock();
    const mutation = mutate(job, now);
    const result = await deps.jobs.replace(mutation.next, job, {
      newRuns: mutation.plan ? [mutation.plan] : [],
      releaseName: mutation.releaseName,
      maxActiveJobs: mutation.maxActiveJobs,
    });
    if (result === 'too-many-active-jobs') {
      throw new TooManyRequestsError(`This tenant has ${mutation.maxActiveJobs ?? 0} active or paused jobs, its limit; delete or complete some first`, 60);
    }
    if (result === 'replaced') {
      if (mutation.plan) deps.telemetry.runCreated(mutation.plan.run);
      await mutation.afterCommit?.();
      return mutation.next;
    }
    // A conflicting write (the worker moved the chain on, or another API call): read again.
  }
  throw new ConflictError('The job is changing too quickly; try again');
}

function touch(job: Job, now: number, changes: Partial<Job>): Job {
  return { ...job, ...changes, version: job.version + 1, updatedAt: iso(now) };
}

export async function pauseJob(deps: SchedulerDeps, tenantId: string, jobId: string): Promise<JobView> {
  return viewOf(await pauseJobOf(deps, tenantId, jobId));
}

/** Pause: the pending occurrence is retired and remembered for resume. `read`: the job (a workflow's schedule job). */
export async function pauseJobOf(deps: SchedulerDeps, tenantId: string, jobId: string, read?: JobReader, what = 'job'): Promise<Job> {
  const job = await mutateJob(
    deps,
    tenantId,
    jobId,
    (current, now) => {
      if (current.status !== 'ACTIVE') throw new ConflictError(`The ${what} is ${current.status}; only an ACTIVE ${what} can be paused`);
      const pendingId = current.nextRunId;
      return {
        next: touch(current, now, {
          status: 'PAUSED',
          pausedAt: iso(now),
          pausedPending: current.nextRunAt && pendingId ? { runId: pendingId, scheduledFor: current.nextRunAt } : null,
          nextRunAt: null,
          nextRunId: null,
        }),
        afterCommit: async () => {
          if (pendingId && (await deps.runs.retirePending(pendingId, 'SKIPPED', `${what} paused`, now))) {
            deps.telemetry.runEnded({ runId: pendingId, tenantId, jobId, jobType: current.type }, 'SKIPPED', `${what} paused`);
          }
        },
      };
    },
    undefined,
    read,
  );
  logger.info(`${what} paused`, { jobId, tenantId });
  return job;
}

export async function resumeJob(deps: SchedulerDeps, tenantId: string, jobId: string): Promise<JobView> {
  return viewOf(await resumeJobOf(deps, tenantId, jobId));
}

/** Resume: the next occurrence by the misfire policy. `read`: the job (a workflow's schedule job). */
export async function resumeJobOf(
  deps: SchedulerDeps,
  tenantId: string,
  jobId: string,
  read: JobReader = () => deps.jobs.get(tenantId, jobId),
  what = 'job',
): Promise<Job> {
  // The run that stood for the pending occurrence decides the attempt of its replacement.
  const before = await read();
  const pausedRun = before?.pausedPending?.runId ? await deps.runs.get(before.pausedPending.runId) : null;
  const job = await mutateJob(
    deps,
    tenantId,
    jobId,
    (current, now) => {
      if (current.status !== 'PAUSED') throw new ConflictError(`The ${what} is ${current.status}; only a PAUSED ${what} can be resumed`);
      const pendingAt = current.pausedPending ? Date.parse(current.pausedPending.scheduledFor) : null;
      const occurrence = occurrenceOnResume(current, pendingAt, now);
      const cleared = { pausedAt: null, pausedPending: null };
      if (!occurrence) {
        return { next: touch(current, now, { ...cleared, status: 'COMPLETED', nextRunAt: null, nextRunId: null }) };
      }
      const plan = planRun(
        deps.config,
        current,
        {
          scheduledFor: occurrence.scheduledFor,
          attempt: attemptFor(occurrence.scheduledFor, pausedRun),
          trigger: 'schedule',
          reason: occurrence.reason,
        },
        now,
      );
      return {
        next: touch(current, now, { ...cleared, status: 'ACTIVE', nextRunAt: plan.run.scheduledFor, nextRunId: plan.run.runId }),
        plan,
        afterCommit: () => sendPlannedRun(deps, plan, now),
      };
    },
    undefined,
    read,
  );
  logger.info(`${what} resumed`, { jobId, tenantId, nextRunAt: job.nextRunAt });
  return job;
}

export async function deleteJob(deps: SchedulerDeps, tenantId: string, jobId: string): Promise<JobView> {
  const existing = await deps.jobs.get(tenantId, jobId);
  if (existing?.status === 'CANCELLED') return viewOf(existing);
  const job = await mutateJob(deps, tenantId, jobId, (current, now) => ({
    next: touch(current, now, { status: 'CANCELLED', nextRunAt: null, nextRunId: null, pausedPending: null }),
    releaseName: true,
    afterCommit: async () => {
      // Every run of the job that has not started ends CANCELLED. A run leased meanwhile sees the
      // job CANCELLED and ends the same way.
      for (const run of await deps.runs.pendingOfJob(jobId)) {
        if (await deps.runs.retirePending(run.runId, 'CANCELLED', 'job deleted', now)) deps.telemetry.runEnded(run, 'CANCELLED', 'job deleted');
      }
    },
  }));
  logger.info('job deleted', { jobId, tenantId });
  return viewOf(job);
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
  const before = await deps.jobs.get(tenantId, jobId);
  const pending = before ? await pendingRun(deps, before) : null;
  const job = await mutateJob(
    deps,
    tenantId,
    jobId,
    (current, now) => {
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
        ...spec
      } = current;
      const merged = parseOrThrow(jobSpecSchema, { ...spec, ...changes }, 'Invalid job');
      if (changes.target !== undefined) checkTarget(deps, merged.target);
      if (changes.notify !== undefined) checkNotify(deps, merged.notify);
      checkPoolTimeout(deps, merged);
      const scheduleChanged = JSON.stringify(merged.schedule) !== JSON.stringify(current.schedule);
      const schedulingChanged =
        scheduleChanged || merged.timeoutSeconds !== current.timeoutSeconds || JSON.stringify(merged.target) !== JSON.stringify(current.target);
      if (scheduleChanged) validateSchedule(merged.schedule, now);
      const updated = touch(current, now, merged);

      if (current.status === 'PAUSED' && scheduleChanged) {
        // The occurrence remembered at pause belongs to the old schedule (or zone): resume must
        // start from the new one's first occurrence after now. The paused run is kept only when it
        // stands for that same occurrence, so that its replacement takes the next attempt number.
        const first = firstFireTime(merged.schedule, now);
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
      // schedule is ACTIVE again from its first occurrence.
      const first = firstFireTime(merged.schedule, now);
      if (first === null) {
        if (reactivates) {
          throw new ValidationError('Invalid job', [{ path: 'schedule', message: 'has no occurrence after now; the job stays COMPLETED' }]);
        }
        return { next: { ...updated, status: 'COMPLETED', nextRunAt: null, nextRunId: null }, afterCommit: () => retire(current.nextRunId, current.type) };
      }
      const plan = planRun(deps.config, updated, { scheduledFor: first, attempt: attemptFor(first, pending), trigger: 'schedule' }, now);
      return {
        next: { ...updated, status: 'ACTIVE', nextRunAt: plan.run.scheduledFor, nextRunId: plan.run.runId },
        maxActiveJobs: limits.maxActiveJobs,
        plan,
        afterCommit: async () => {
          await retire(current.nextRunId, current.type);
          await sendPlannedRun(deps, plan, now);
        },
      };
    },
    ifMatch,
  );
  async function retire(runId: string | null, jobType: string): Promise<void> {
    if (runId && (await deps.runs.retirePending(runId, 'SKIPPED', 'job definition changed', deps.clock()))) {
      deps.telemetry.runEnded({ runId, tenantId, jobId, jobType }, 'SKIPPED', 'job definition changed');
    }
  }
  logger.info('job updated', { jobId, tenantId, version: job.version });
  return viewOf(job);
}

/**
 * Counts a manual trigger or a replay against the tenant's per-second create rate (decision 0074):
 * over it, a 429 with Retry-After, and nothing is written.
 */
export async function admitRunRequest(deps: SchedulerDeps, tenantId: string, limits: TenantLimits, now: number): Promise<void> {
  const counted = await deps.jobs.countRunRequest(tenantId, limits.createsPerSecond, now);
  if (!counted.allowed) {
    throw new TooManyRequestsError(
      `Over this tenant's limit of ${limits.createsPerSecond ?? 0} job creates, manual triggers and replays per second`,
      counted.retryAfterMs / 1000,
    );
  }
}

/**
 * A PATCH's target with each header sent as the masked value given back its stored value (header
 * values are write-only, so a client that read the job sends the mask for the ones it keeps). A
 * masked header the job does not have is left masked, and refused by checkTarget.
 */
function withStoredHeaders(patch: JobPatchRequest, current: Job): JobPatchRequest {
  const target = patch.target;
  if (target?.kind !== 'http' || current.target.kind !== 'http') return patch;
  const stored = current.target.headers;
  const storedValue = (name: string): HeaderValue | undefined => Object.entries(stored).find(([key]) => key.toLowerCase() === name.toLowerCase())?.[1];
  const headers = Object.fromEntries(
    Object.entries(target.headers).map(([name, value]) => [name, value === MASKED_HEADER_VALUE ? (storedValue(name) ?? value) : value]),
  );
  return { ...patch, target: { ...target, headers } };
}

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
  const now = deps.clock();
  await admitRunRequest(deps, tenantId, limits, now);
  if (request.debounceSeconds !== undefined) return (await triggerDebounced(deps, job, request.payload, request.debounceSeconds)).run;
  const plan = planRun(
    deps.config,
    job,
    {
      scheduledFor: now,
      attempt: 1,
      trigger: 'manual',
      traceparent,
      ...(request.payload !== undefined ? { payloadOverride: request.payload } : {}),
    },
    now,
  );
  if (!(await deps.runs.create(plan))) throw new ConflictError('A manual run was triggered at this same instant; try again');
  deps.telemetry.runCreated(plan.run);
  await sendPlannedRun(deps, plan, now);
  logger.info('job triggered', { jobId, tenantId, runId: plan.run.runId, traceId: traceIdOf(plan.run.traceparent) });
  return plan.run;
}
