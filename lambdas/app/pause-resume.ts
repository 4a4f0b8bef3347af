// Pausing and resuming a job: by request (with a note, and a time to resume by itself), and the
// ticker's resume of a job whose pause has run out. A paused job's pending occurrence is retired;
// resume plans the occurrence its misfire policy picks (domain/recurrence.ts).
import { ConflictError, ValidationError } from '../core/errors';
import { logger } from '../core/logger';
import type { Job } from '../domain/job';
import type { Run } from '../domain/run';
import { nextFireTimeAfter, startOf } from '../domain/schedule';
import { occurrenceOnResume } from '../domain/recurrence';
import type { PauseRequest } from '../api/schemas';
import type { SchedulerDeps } from './deps';
import { mutateJob, touch } from './job-mutation';
import type { JobReader, Mutation } from './job-mutation';
import { presentJob } from './jobs';
import type { JobView } from './jobs';
import { attemptFor } from './occurrence-chain';
import { planRun } from './plan-run';
import { sendPlannedRun } from './send-planned-run';

const iso = (ms: number): string => new Date(ms).toISOString();

/** A pause may last up to a year before it resumes by itself. */
export const MAX_PAUSE_MS = 366 * 86_400_000;

/**
 * Pauses an ACTIVE job, or changes the note and end of a PAUSED one's pause. With `until`, the
 * ticker resumes the job by itself once that time has come (within its period, a minute).
 */
export async function pauseJob(deps: SchedulerDeps, tenantId: string, jobId: string, request: PauseRequest = {}): Promise<JobView> {
  return presentJob(deps, await pauseJobOf(deps, tenantId, jobId, request));
}

/**
 * Pause: the pending occurrence is retired and remembered for resume. `read`: the job (a
 * workflow's schedule job); `what` names it in answers and logs; `onPaused` is called when this
 * call's write paused it (not when it found it paused).
 */
export async function pauseJobOf(
  deps: SchedulerDeps,
  tenantId: string,
  jobId: string,
  request: PauseRequest = {},
  read?: JobReader,
  what = 'job',
  onPaused?: () => void,
): Promise<Job> {
  const job = await mutateJob(
    deps,
    tenantId,
    jobId,
    (current, now) => {
      const until = request.until === undefined ? null : Date.parse(request.until);
      if (until !== null && (until <= now || until > now + MAX_PAUSE_MS)) {
        throw new ValidationError('Invalid pause', [{ path: 'until', message: 'must be in the future, at most 366 days from now' }]);
      }
      const pause = { pauseNote: request.note ?? null, pausedUntil: until === null ? null : iso(until) };
      // Paused already: the pause's note and end are replaced, nothing else moves. The same note
      // and end again write nothing: the version stays, so another client's If-Match still holds.
      if (current.status === 'PAUSED') {
        const same = (current.pauseNote ?? null) === pause.pauseNote && (current.pausedUntil ?? null) === pause.pausedUntil;
        return { next: same ? current : touch(current, now, pause) };
      }
      if (current.status !== 'ACTIVE') throw new ConflictError(`The ${what} is ${current.status}; only an ACTIVE or PAUSED ${what} can be paused`);
      const pendingId = current.nextRunId;
      return {
        next: touch(current, now, {
          ...pause,
          status: 'PAUSED',
          pausedAt: iso(now),
          pausedPending: current.nextRunAt && pendingId ? { runId: pendingId, scheduledFor: current.nextRunAt } : null,
          nextRunAt: null,
          nextRunId: null,
        }),
        afterCommit: async () => {
          onPaused?.();
          if (pendingId && (await deps.runs.retirePending(pendingId, 'SKIPPED', `${what} paused`, now))) {
            deps.telemetry.runEnded({ runId: pendingId, tenantId, jobId, jobType: current.type }, 'SKIPPED', `${what} paused`);
          }
        },
      };
    },
    undefined,
    read,
  );
  logger.info(`${what} paused`, { jobId, tenantId, pausedUntil: job.pausedUntil ?? null });
  return job;
}

/** Resumes a PAUSED job by request. */
export async function resumeJob(deps: SchedulerDeps, tenantId: string, jobId: string): Promise<JobView> {
  return presentJob(deps, await resumeJobOf(deps, tenantId, jobId));
}

/** Resume: the next occurrence by the misfire policy. `read`: the job (a workflow's schedule job). */
export async function resumeJobOf(deps: SchedulerDeps, tenantId: string, jobId: string, read?: JobReader, what = 'job'): Promise<Job> {
  const job = await resume(deps, tenantId, jobId, () => true, read, what);
  logger.info(`${what} resumed`, { jobId, tenantId, nextRunAt: job.nextRunAt });
  return job;
}

/**
 * The ticker's resume of a job paused until a time that has come. False when there was nothing to
 * do: the job was resumed, deleted or paused again with a later end in the meantime.
 */
export async function resumeWhenDue(deps: SchedulerDeps, jobId: string, now: number): Promise<boolean> {
  const job = await deps.jobs.getAnyTenant(jobId);
  if (!isDue(job, now) || !job) return false;
  try {
    // Missed while paused: the fire times before the pause's end. One at or after it (the tick came
    // a little after the end) is due, not missed: the misfire policy must not drop it or fold it.
    const resumed = await resume(
      deps,
      job.tenantId,
      jobId,
      (current) => isDue(current, now),
      undefined,
      'job',
      (current) => Date.parse(current.pausedUntil!) - 1,
    );
    logger.info('job resumed: its pause ended', { jobId, tenantId: job.tenantId, pausedUntil: job.pausedUntil ?? null, nextRunAt: resumed.nextRunAt });
    return true;
  } catch (error) {
    // Resumed or changed by someone else meanwhile: nothing left to do.
    if (error instanceof ConflictError) return false;
    throw error;
  }
}

/**
 * The occurrence a paused job resumes from: the one its pause retired. One a worker leased before
 * the pause's retire landed has started (it ran, or runs): the job resumes from the fire time after
 * it, or the misfire policy would plan it again and it would run twice. A lease alone is not a
 * start: a run given back to wait (overlap buffer-one, a key) keeps its `startedAt` though its target
 * was never called, and one its pause retired, or whose admission found the job paused, ended
 * SKIPPED; its occurrence is still to run. Null when it has none.
 */
function resumesFrom(job: Job, pausedRun: Run | null): number | null {
  if (!job.pausedPending) return null;
  const pendingAt = Date.parse(job.pausedPending.scheduledFor);
  const started = pausedRun !== null && pausedRun.runId === job.pausedPending.runId && pausedRun.startedAt !== null && !NOT_STARTED.has(pausedRun.status);
  return started ? nextFireTimeAfter(job, pendingAt) : pendingAt;
}

/** The statuses of a run whose target was not called, whatever its `startedAt` says. */
const NOT_STARTED: ReadonlySet<Run['status']> = new Set(['SCHEDULED', 'QUEUED', 'SKIPPED']);

const isDue = (job: Job | null, now: number): boolean => job?.status === 'PAUSED' && !!job.pausedUntil && Date.parse(job.pausedUntil) <= now;

async function resume(
  deps: SchedulerDeps,
  tenantId: string,
  jobId: string,
  stillWanted: (job: Job) => boolean,
  read: JobReader = () => deps.jobs.get(tenantId, jobId),
  what = 'job',
  missedUntil?: (job: Job) => number,
): Promise<Job> {
  // The run that stood for the pending occurrence decides the attempt of its replacement.
  const before = await read();
  const pausedRun = before?.pausedPending?.runId ? await deps.runs.get(before.pausedPending.runId) : null;
  return mutateJob(
    deps,
    tenantId,
    jobId,
    (current, now, ended): Mutation => {
      if (current.status !== 'PAUSED') throw new ConflictError(`The ${what} is ${current.status}; only a PAUSED ${what} can be resumed`);
      if (!stillWanted(current)) throw new ConflictError('The job was paused again meanwhile');
      const missedBefore = missedUntil ? Math.min(now, missedUntil(current)) : now;
      const occurrence = occurrenceOnResume(current, resumesFrom(current, pausedRun), missedBefore);
      const cleared = { pausedAt: null, pausedPending: null, pauseNote: null, pausedUntil: null };
      if (!occurrence) {
        return { next: touch(current, now, { ...cleared, status: 'COMPLETED', nextRunAt: null, nextRunId: null }) };
      }
      const plan = planRun(
        deps.config,
        current,
        {
          scheduledFor: occurrence.scheduledFor,
          attempt: ended.attemptPast(jobId, occurrence.scheduledFor, attemptFor(occurrence.scheduledFor, pausedRun)),
          trigger: 'schedule',
          reason: occurrence.reason,
          chainedFrom: current.nextRunId ?? null,
          // Due since the pause's end, not missed: its lateness counts from this resume, or its
          // admission would take the tick's delay for a misfire and skip it (misfirePolicy skip).
          // (A jittered start still later than now keeps its time.)
          ...(occurrence.scheduledFor > missedBefore && occurrence.scheduledFor <= now
            ? { availableAt: Math.max(now, startOf(current.jobId, current.schedule, occurrence.scheduledFor)) }
            : {}),
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
}
