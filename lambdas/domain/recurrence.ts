// What happens when an occurrence starts: whether it executes (misfire and overlap policies) and
// which occurrence follows it. Pure functions; the worker applies their decisions with
// conditional writes.
import type { Job, JobSpec } from './job';
import { fireTimes, nextFireTimeAfter } from './schedule';
import { isRecurring } from './schedule-series';

/** An occurrence that starts later than this after its time was missed (the scheduler was down, or the job paused). */
export const MISFIRE_THRESHOLD_MS = 60_000;

export interface Successor {
  readonly scheduledFor: number;
  /** Set while catching up under `backfill`: how many more missed occurrences may still run. */
  readonly backfillRemaining?: number;
}

export interface StartDecision {
  readonly execute: boolean;
  /** Why the occurrence is skipped, or what the policy did; recorded on the run. */
  readonly reason: string | null;
  readonly successor: Successor | null;
}

export interface StartContext {
  readonly scheduledFor: number;
  /** When the occurrence was due to start: its fire time plus its jitter (the run's availableAt). */
  readonly dueAt?: number;
  readonly startedAt: number;
  /** Carried on runs created while catching up under `backfill`. */
  readonly backfillRemaining?: number;
}

type Policies = Pick<JobSpec, 'schedule' | 'misfirePolicy' | 'backfillLimit'> & Pick<Job, 'skippedOccurrences'>;

/** The misfire policy applied to an occurrence as it starts. */
export function decideStart(job: Policies, occurrence: StartContext): StartDecision {
  // Late is measured from when the occurrence was due to start: a jittered occurrence is not late
  // for its jitter.
  const lateMs = occurrence.startedAt - Math.max(occurrence.scheduledFor, occurrence.dueAt ?? occurrence.scheduledFor);
  const next = (after: number): number | null => nextFireTimeAfter(job, after);
  const following = next(occurrence.scheduledFor);
  if (lateMs <= MISFIRE_THRESHOLD_MS) {
    // On time (or a backfilled occurrence that has caught up): the chain goes on.
    return {
      execute: true,
      reason: null,
      successor: following === null ? null : continueBackfill(following, occurrence, occurrence.startedAt),
    };
  }

  const lateSeconds = Math.round(lateMs / 1000);
  const missed = countMissed(job, occurrence.scheduledFor, occurrence.startedAt);
  const afterNow = next(occurrence.startedAt);
  switch (job.misfirePolicy) {
    case 'skip':
      return {
        execute: false,
        reason: `misfired: due ${lateSeconds} s ago; misfirePolicy skip`,
        successor: afterNow === null ? null : { scheduledFor: afterNow },
      };
    case 'fire-once':
      return {
        execute: true,
        reason: `misfired: started ${lateSeconds} s late; runs once${missed > 0 ? `, ${missed}${missed >= MISSED_COUNT_LIMIT ? '+' : ''} later missed occurrences skipped` : ''} (misfirePolicy fire-once)`,
        successor: afterNow === null ? null : { scheduledFor: afterNow },
      };
    case 'backfill': {
      // The oldest `backfillLimit` missed occurrences run, in order; the rest are skipped.
      const remaining = occurrence.backfillRemaining ?? job.backfillLimit - 1;
      const canContinue = following !== null && following <= occurrence.startedAt && remaining > 0;
      return {
        execute: true,
        reason: `misfired: started ${lateSeconds} s late; backfilling (misfirePolicy backfill, ${Math.max(0, remaining)} more may run)`,
        successor: canContinue ? { scheduledFor: following, backfillRemaining: remaining - 1 } : afterNow === null ? null : { scheduledFor: afterNow },
      };
    }
  }
}

function continueBackfill(following: number, occurrence: StartContext, now: number): Successor {
  // A backfilled occurrence that starts on time still passes on the remaining budget while the
  // next occurrence is also in the past.
  if (occurrence.backfillRemaining !== undefined && following <= now && occurrence.backfillRemaining > 0) {
    return { scheduledFor: following, backfillRemaining: occurrence.backfillRemaining - 1 };
  }
  return { scheduledFor: following };
}

const MISSED_COUNT_LIMIT = 1000;

/** Occurrences after `scheduledFor` that were due by `now` (counted up to a limit). */
function countMissed(job: Policies, scheduledFor: number, now: number): number {
  if (!isRecurring(job.schedule)) return 0;
  return fireTimes(job, scheduledFor, MISSED_COUNT_LIMIT).filter((t) => t <= now).length;
}

export type OverlapDecision =
  | { readonly action: 'proceed' }
  | { readonly action: 'skip'; readonly reason: string }
  | { readonly action: 'wait'; readonly reason: string }
  | { readonly action: 'cancel-previous'; readonly reason: string };

/** The overlap policy applied when an occurrence starts while the previous one may still run. */
export function decideOverlap(
  policy: JobSpec['overlapPolicy'],
  previousRunId: string | null,
  previousRunning: boolean,
  /** What the previous occurrence is: a run, or (a scheduled workflow's) a workflow run. */
  what: 'run' | 'workflow run' = 'run',
): OverlapDecision {
  if (!previousRunning || previousRunId === null || policy === 'allow') return { action: 'proceed' };
  switch (policy) {
    case 'skip':
      return { action: 'skip', reason: `overlap: ${what} ${previousRunId} is still running (overlapPolicy skip)` };
    case 'buffer-one':
      return { action: 'wait', reason: `overlap: waiting for ${what} ${previousRunId} to finish (overlapPolicy buffer-one)` };
    case 'cancel-running':
      return { action: 'cancel-previous', reason: `overlap: cancelled by the next occurrence (overlapPolicy cancel-running)` };
  }
}

/**
 * The occurrence a paused job picks up when it is resumed, by its misfire policy. `pendingAt` is
 * the occurrence that was pending when it was paused. The ticker's repair of a stopped chain picks
 * up the same way (`how`: what the reason says was done).
 */
export function occurrenceOnResume(
  job: Policies,
  pendingAt: number | null,
  now: number,
  how: 'resumed' | 'repaired' = 'resumed',
): { scheduledFor: number; reason: string | null } | null {
  const firstAfterNow = isRecurring(job.schedule) ? nextFireTimeAfter(job, now) : null;
  if (pendingAt === null) return firstAfterNow === null ? null : { scheduledFor: firstAfterNow, reason: null };
  if (pendingAt > now) return { scheduledFor: pendingAt, reason: null };
  // The pending occurrence was missed while paused.
  switch (job.misfirePolicy) {
    case 'skip':
      return firstAfterNow === null ? null : { scheduledFor: firstAfterNow, reason: null };
    case 'fire-once':
      // One run now stands for everything missed: the latest missed occurrence.
      return { scheduledFor: latestMissed(job, pendingAt, now), reason: `${how}: missed occurrences fire once (misfirePolicy fire-once)` };
    case 'backfill':
      return { scheduledFor: pendingAt, reason: `${how}: backfilling missed occurrences (misfirePolicy backfill)` };
  }
}

/**
 * What an occurrence is when its job points at another as its pending one, from the run the job
 * pointed at when the occurrence was planned (`chainedFrom`, decision 0175):
 * - `unadopted`: the job still points there, and is ACTIVE with its pending occurrence before this
 *   one: this is the chain's successor of that occurrence, written ahead of the job's write that
 *   would have pointed at it, which did not land (its writer stopped). The job is pointed at it.
 * - `replaced`: the job points elsewhere since, so an edit of the job (a PATCH, a resume, a skip)
 *   re-planned the pending occurrence, and its retire of this one did not land (it raced the lease,
 *   or its writer stopped first). It must not run on the schedule it replaced.
 * - `other`: planned before this rule or by no job's write (a backfill's): it runs as it is.
 */
export type UnpointedOccurrence = 'replaced' | 'unadopted' | 'other';

export function classifyUnpointed(
  job: Pick<Job, 'status' | 'nextRunId' | 'nextRunAt'>,
  occurrence: { readonly scheduledFor: string },
  chainedFrom: string | null | undefined,
): UnpointedOccurrence {
  if (chainedFrom === undefined) return 'other';
  if (chainedFrom !== null && job.nextRunId === chainedFrom) {
    const after = job.status === 'ACTIVE' && job.nextRunAt !== null && Date.parse(job.nextRunAt) < Date.parse(occurrence.scheduledFor);
    return after ? 'unadopted' : 'replaced';
  }
  return 'replaced';
}

/** Windows looked back over for the latest missed fire time, shortest first. */
const LOOKBACK_WINDOWS_MS = [60_000, 3_600_000, 86_400_000, 31 * 86_400_000, 366 * 86_400_000, Number.POSITIVE_INFINITY];

/**
 * The latest fire time at or before `now` from `pendingAt` on (`pendingAt` itself when none
 * follows it). The fire times are listed a bounded number at a time, so they are looked for in the
 * last minute, hour, day, month, year, then since `pendingAt`: a pause longer than that many fire
 * times found the one that many after `pendingAt`, not the latest.
 */
function latestMissed(job: Policies, pendingAt: number, now: number): number {
  if (!isRecurring(job.schedule)) return pendingAt;
  let truncated: number | undefined;
  for (const window of LOOKBACK_WINDOWS_MS) {
    const from = Math.max(pendingAt, now - window);
    const times = fireTimes(job, from, MISSED_COUNT_LIMIT);
    const missed = times.filter((t) => t <= now);
    // The list passed now, or the series ended: its last missed one is the latest.
    if (missed.length > 0 && missed.length < times.length) return missed.at(-1)!;
    if (missed.length > 0 && times.length < MISSED_COUNT_LIMIT) return missed.at(-1)!;
    if (missed.length > 0) truncated ??= missed.at(-1);
    if (from === pendingAt) break;
  }
  return truncated ?? pendingAt;
}
