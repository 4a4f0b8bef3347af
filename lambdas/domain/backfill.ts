// A backfill over a range (issue 19 item 6): one run per fire time of a recurring schedule in
// [from, to) that has no run yet, released oldest first at a bounded rate by the ticker. The fire
// times and their run ids are the chain's own (runIdFor, attempt 1), so "has no run yet" is one
// conditional put, and a backfilled occurrence never duplicates a chained one.
import { createHash } from 'node:crypto';
import { ConflictError, ValidationError } from '../core/errors';
import type { Schedule } from './job';
import type { RecurringSchedule } from './schedule-series';
import { fireTimes } from './schedule';
import { isRecurring } from './schedule-series';

/** At most this many occurrences in one backfill: a leap year of minutely fire times. */
export const MAX_BACKFILL_OCCURRENCES = 366 * 24 * 60;
/** Fire times are counted in pages of this many. */
const COUNT_PAGE = 10_000;

export type BackfillStatus = 'ACTIVE' | 'DONE';

export interface Backfill {
  readonly backfillId: string;
  readonly jobId: string;
  readonly tenantId: string;
  /** The range, ISO instants: fire times `from` <= t < `to`. */
  readonly from: string;
  readonly to: string;
  /** The job's schedule when the backfill was asked for: its fire times are the ones released. */
  readonly schedule: RecurringSchedule;
  /** Fire times in the range. */
  readonly total: number;
  /** Fire times released so far (a run written, or found written already), oldest first. */
  readonly released: number;
  /** Epoch ms: the next fire times to release are strictly after it. */
  readonly cursor: number;
  readonly status: BackfillStatus;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** Bumped by every release: the ticker's compare-and-swap. */
  readonly version: number;
  /** The W3C trace context of the request that asked for it: every run it releases joins that trace (decision 0118). */
  readonly traceparent?: string;
}

/** A backfill as the API shows it: its range and progress, not its bookkeeping. */
export type BackfillView = Pick<Backfill, 'backfillId' | 'jobId' | 'from' | 'to' | 'total' | 'released' | 'status' | 'createdAt' | 'updatedAt'>;

/** The same range of the same job is the same backfill: a repeated request finds it. */
export function backfillIdOf(jobId: string, from: number, to: number): string {
  return `bf_${createHash('sha256').update(`${jobId}|${from}|${to}`).digest('base64url').slice(0, 22)}`;
}

/**
 * Checks a backfill's range against its job and counts its fire times. `frontier` is the earliest
 * occurrence the job's chain may still write (its pending or paused occurrence, or now): a backfill
 * ends before it, so the chain never meets a run it did not write. `earliest`: where the runs kept
 * begin (decision 0156); a backfill starts no earlier.
 */
export function checkBackfillRange(schedule: Schedule, from: number, to: number, frontier: number, earliest?: number): { readonly total: number } {
  if (!isRecurring(schedule)) {
    throw new ConflictError('Only a job with a cron or interval schedule has fire times to backfill');
  }
  if (to <= from) throw new ValidationError('Invalid backfill', [{ path: 'to', message: 'must be after `from`' }]);
  if (earliest !== undefined && from < earliest) {
    throw new ValidationError('Invalid backfill', [
      {
        path: 'from',
        message: `must not be before ${new Date(earliest).toISOString()}: older runs leave after RUN_RETENTION_DAYS, and a backfill would run their occurrences again`,
      },
    ]);
  }
  if (to > frontier) {
    throw new ValidationError('Invalid backfill', [
      { path: 'to', message: `must not be after ${new Date(frontier).toISOString()}, the job's next occurrence or now, whichever is earlier` },
    ]);
  }
  const total = countFireTimes(schedule, from, to, MAX_BACKFILL_OCCURRENCES + 1);
  if (total > MAX_BACKFILL_OCCURRENCES) {
    throw new ValidationError('Invalid backfill', [
      { path: 'to', message: `the range holds more than ${MAX_BACKFILL_OCCURRENCES} fire times (the most one backfill may release); split it` },
    ]);
  }
  return { total };
}

/** Fire times in [from, to), counted up to `cap`. */
export function countFireTimes(schedule: RecurringSchedule, from: number, to: number, cap: number): number {
  let count = 0;
  let after = from - 1;
  while (count < cap) {
    const page = nextFireTimes(schedule, after, to, Math.min(COUNT_PAGE, cap - count));
    count += page.length;
    if (page.length < Math.min(COUNT_PAGE, cap - count + page.length)) break;
    after = page[page.length - 1]!;
  }
  return count;
}

/** Up to `count` fire times strictly after `after` and before `to`, oldest first (excluded dates are not fire times). */
export function nextFireTimes(schedule: RecurringSchedule, after: number, to: number, count: number): number[] {
  return fireTimes({ schedule }, after, count).filter((at) => at < to);
}

/**
 * Each active backfill's share of a tick's release budget: the budget split evenly (at least one
 * each), so that one tenant's year of fire times cannot hold up another's backfill.
 */
export function releaseShare(budget: number, active: number): number {
  return active === 0 ? 0 : Math.max(1, Math.floor(budget / active));
}
