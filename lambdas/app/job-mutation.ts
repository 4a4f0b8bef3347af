// One change of a job by request: read it, decide the change, and write it back on condition that
// nobody changed it in between (its version and pending occurrence), with the runs the change
// creates in the same transaction. Retried on a race with the scheduler's own writes.
import { NotFoundError, PreconditionFailedError, TooManyRequestsError } from '../core/errors';
import type { Job } from '../domain/job';
import type { Run } from '../domain/run';
import { isTerminal, runIdFor } from '../domain/run';
import { fireTimes } from '../domain/schedule';
import { isRecurring } from '../domain/schedule-series';
import type { PendingOccurrence } from '../store/run-records';
import type { SchedulerDeps } from './deps';
import { MAX_CAS_ATTEMPTS } from './occurrence-chain';
import type { RunPlan } from './plan-run';

export interface Mutation {
  /** The job as changed; the job as read (the same object) when there is nothing to write. */
  readonly next: Job;
  readonly plan?: RunPlan;
  readonly releaseName?: boolean;
  /** The tenant's active-jobs limit, checked when the change makes the job live again. */
  readonly maxActiveJobs?: number | null;
  /** Work after the job is committed: retire the old pending run, send the new one. */
  readonly afterCommit?: () => Promise<void>;
  /** Work just before the write, once the change is known to write something (a count that may refuse it). */
  readonly beforeWrite?: () => Promise<void>;
}

/**
 * The runs a change met ended under the id its plan wanted (a skip's or a retire's record of the
 * same occurrence): `attemptPast` gives the first attempt number at or after `attempt` whose id
 * holds none, so that the change plans the occurrence anew rather than failing on the record.
 */
export interface EndedRuns {
  attemptPast(jobId: string, scheduledFor: number, attempt: number): number;
}

/** An `EndedRuns` that learns the ended runs a change's plans met, one by one. */
export function endedRuns(): EndedRuns & { noteIfEnded(deps: Pick<SchedulerDeps, 'runs'>, runId: string): Promise<void> } {
  const endedIds = new Set<string>();
  return {
    attemptPast(id, scheduledFor, attempt) {
      let free = attempt;
      while (endedIds.has(runIdFor(id, new Date(scheduledFor).toISOString(), free))) free++;
      return free;
    },
    async noteIfEnded(deps, runId) {
      const existing = await deps.runs.get(runId);
      if (existing !== null && isTerminal(existing.status)) endedIds.add(existing.runId);
    },
  };
}

/** Reads the job a change applies to: the tenant's job by default, or a workflow's schedule job. */
export type JobReader = () => Promise<Job | null>;

/**
 * Reads the job, applies `mutate` and writes it back if nothing changed in between; retries on a
 * race with the scheduler's own writes. A stale `ifMatch` version is a 412. `mutate` may throw to
 * refuse the change; it runs again on every try, on the job as it is then.
 */
export async function mutateJob(
  deps: SchedulerDeps,
  tenantId: string,
  jobId: string,
  mutate: (job: Job, now: number, ended: EndedRuns) => Mutation,
  ifMatch?: number,
  read: JobReader = () => deps.jobs.get(tenantId, jobId),
): Promise<Job> {
  const ended = endedRuns();
  for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
    const job = await read();
    if (!job) throw new NotFoundError(`No job ${jobId}`);
    if (ifMatch !== undefined && job.version !== ifMatch) {
      throw new PreconditionFailedError(`The job is at version ${job.version}, not ${ifMatch}`);
    }
    const now = deps.clock();
    const mutation = mutate(job, now, ended);
    // Nothing to change (a delete that finds the job deleted already): nothing is written.
    if (mutation.next === job) return job;
    await mutation.beforeWrite?.();
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
    // The planned run's id holds a run: one ended is passed over by the next try's attempt number;
    // one live is the chain's successor, written ahead of the job's write (read again).
    if (result === 'run-exists' && mutation.plan) await ended.noteIfEnded(deps, mutation.plan.run.runId);
    // A conflicting write (the worker moved the chain on, or another API call): read again.
  }
  // Contention, not a state the caller must change: a 429 the client retries after a second.
  throw new TooManyRequestsError('The job is changing too quickly; try again', 1);
}

/** The job with `changes`, its version moved on. */
export function touch(job: Job, now: number, changes: Partial<Job>): Job {
  return { ...job, ...changes, version: job.version + 1, updatedAt: new Date(now).toISOString() };
}

/** Whether a new recurring schedule fires at this due occurrence (skips and exclusions counted). */
export function stillFiresAt(job: Job, run: Run, now: number): boolean {
  const at = Date.parse(run.scheduledFor);
  return isRecurring(job.schedule) && at <= now && fireTimes(job, at - 1, 1)[0] === at;
}

/** The job's pending occurrence as read before a PATCH, when it is still the job's and has not started. */
export function samePending(job: Job, read: PendingOccurrence | null): PendingOccurrence | null {
  if (!read || read.run.runId !== job.nextRunId) return null;
  return read.run.status === 'SCHEDULED' || read.run.status === 'QUEUED' ? read : null;
}

/**
 * What a due occurrence planned again carries over from its pending run (`samePending`): its
 * reason, its backfill budget, and its wait behind the one before it (buffer-one), which its
 * admission must not take for a misfire.
 */
export function carriedBy(same: PendingOccurrence | null): { reason?: string | null; backfillRemaining?: number; bufferedSince?: number } {
  if (!same) return {};
  return {
    reason: same.run.reason,
    ...(same.backfillRemaining !== undefined ? { backfillRemaining: same.backfillRemaining } : {}),
    ...(same.bufferedSince !== undefined ? { bufferedSince: same.bufferedSince } : {}),
  };
}
