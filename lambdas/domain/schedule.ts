// Schedules as a job holds them: accepted (settled and validated) when set, and evaluated in three
// layers (decision 0150): a schedule's *series* (its fire times within startAt/endAt and its first
// maxOccurrences: schedule-series.ts), what *fires* of it (the series less its excluded dates and the
// occurrences skipped on request), and when each occurrence *starts* (its fire time plus its jitter).
import { createHash } from 'node:crypto';
import { ValidationError } from '../core/errors';
import type { FieldError } from '../core/errors';
import type { Schedule } from './job';
import { isValidTimeZone, offsetAt, toWallTime, ZoneOffsets } from './time-zone';
import type { RecurringSchedule } from './schedule-series';
import { DAY, intervalMs, isRecurring, parseCron, SECOND, seriesFireTimes } from './schedule-series';

// ---- Accepting a schedule --------------------------------------------------------------------

/**
 * Fills in what a schedule is counted from, as of `now`: an interval's `anchor`, and a cron's
 * `startAt` when it has `maxOccurrences`. Each is the first instant that can still fire: an
 * interval's first fire time is one interval from now, a cron's the first whole second after now
 * (fire times after now are what fires, so a count starting at now itself counted a fire time that
 * never came, and `maxOccurrences: N` fired N - 1 times). Excluded dates are sorted and each kept
 * once. The stored schedule then evaluates the same forever.
 */
export function settleSchedule<S extends Schedule>(schedule: S, now: number): S {
  if (schedule.kind === 'every') {
    return { ...schedule, anchor: schedule.anchor ?? new Date(now + intervalMs(schedule.interval)).toISOString(), ...settledDates(schedule) };
  }
  if (schedule.kind === 'cron') {
    const startAt = new Date(Math.floor(now / SECOND) * SECOND + SECOND).toISOString();
    return { ...schedule, ...(schedule.maxOccurrences !== undefined && schedule.startAt === undefined ? { startAt } : {}), ...settledDates(schedule) };
  }
  return schedule;
}

const settledDates = (schedule: RecurringSchedule): { excludeDates?: string[] } =>
  schedule.excludeDates === undefined ? {} : { excludeDates: [...new Set(schedule.excludeDates)].sort() };

/**
 * A schedule as sent, settled as a stored one was: an interval without an anchor takes the stored
 * anchor, a counted cron without a start the stored start (when the stored one has them). A change
 * that repeats the schedule without them keeps what it counts from, rather than setting it anew.
 */
export function settleLike<S extends Schedule>(requested: S, stored: Schedule): S {
  if (requested.kind === 'every' && stored.kind === 'every' && requested.anchor === undefined && stored.anchor !== undefined) {
    return { ...requested, anchor: stored.anchor };
  }
  if (
    requested.kind === 'cron' &&
    stored.kind === 'cron' &&
    requested.maxOccurrences !== undefined &&
    requested.startAt === undefined &&
    stored.startAt !== undefined
  ) {
    return { ...requested, startAt: stored.startAt };
  }
  return requested;
}

/** Whether two schedules are the same, whatever the order of their fields. */
export function sameSchedule(a: Schedule, b: Schedule): boolean {
  const canonical = (schedule: Schedule): string =>
    JSON.stringify(Object.fromEntries(Object.entries(schedule).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))));
  return canonical(a) === canonical(b);
}

/** The most fire times looked at to find the shortest gap that jitter must stay below. */
const GAP_SAMPLE = 1000;

/** Checks what zod cannot: the expression or interval, its zone, its jitter, and that it fires at least once. */
export function validateSchedule(schedule: Schedule, now: number, path = 'schedule'): void {
  const errors: FieldError[] = [];
  if (schedule.kind === 'at' && Date.parse(schedule.at) < now - 60_000) {
    errors.push({ path: `${path}.at`, message: 'must not be more than a minute in the past' });
  }
  if (!isRecurring(schedule)) {
    if (errors.length > 0) throw new ValidationError('Invalid schedule', errors);
    return;
  }
  if (!isValidTimeZone(schedule.timezone)) {
    errors.push({ path: `${path}.timezone`, message: `unknown IANA time zone "${schedule.timezone}"` });
  }
  const start = schedule.kind === 'cron' ? schedule.startAt : schedule.anchor;
  if (start && schedule.endAt && Date.parse(schedule.endAt) <= Date.parse(start)) {
    errors.push({ path: `${path}.endAt`, message: `must be after ${schedule.kind === 'cron' ? 'startAt' : 'anchor'}` });
  }
  if (errors.length > 0) throw new ValidationError('Invalid schedule', errors);

  const seriesPath = schedule.kind === 'cron' ? `${path}.expression` : `${path}.interval`;
  if (schedule.kind === 'cron') parseCron(schedule.expression, seriesPath, 'new');
  else intervalMs(schedule.interval, seriesPath);
  const settled = settleSchedule(schedule, now);
  const [first] = fireTimes({ schedule: settled }, now, 1);
  // A schedule that never fires is refused, whether the series cannot match, its window closes
  // before the first match, its count ran out, or every fire time left is on an excluded date.
  if (first === undefined) {
    const { endAt, maxOccurrences, excludeDates, ...open } = settled;
    const seriesFires = seriesFireTimes(open, now, 1).length > 0;
    if (!seriesFires) errors.push({ path: seriesPath, message: 'never fires' });
    else if (endAt !== undefined && Date.parse(endAt) <= now) errors.push({ path: `${path}.endAt`, message: 'has passed, so the schedule would never fire' });
    else if (endAt !== undefined && seriesFireTimes({ ...open, endAt }, now, 1).length === 0) {
      errors.push({ path: `${path}.endAt`, message: 'is before the first fire time, so the schedule would never fire' });
    } else if (maxOccurrences !== undefined && seriesFireTimes({ ...open, ...(endAt ? { endAt } : {}), maxOccurrences }, now, 1).length === 0) {
      errors.push({ path: `${path}.maxOccurrences`, message: `all ${maxOccurrences} occurrences are before now, so the schedule would never fire` });
    } else errors.push({ path: `${path}.excludeDates`, message: 'exclude every date the schedule fires on' });
  }
  if (schedule.jitterSeconds !== undefined && errors.length === 0) {
    const gap = shortestGap(settled, now);
    if (gap !== null && schedule.jitterSeconds * SECOND >= gap) {
      errors.push({
        path: `${path}.jitterSeconds`,
        message: `must be less than the shortest time between fire times (${gap / SECOND} s), or an occurrence could start after the next one`,
      });
    }
  }
  if (errors.length > 0) throw new ValidationError('Invalid schedule', errors);
}

/** How far ahead the offset changes of a cron's zone are looked for (a year: every rule repeats within it). */
const GAP_YEAR = 366 * DAY;

/**
 * The shortest time between consecutive fire times of the series, or null with fewer than two. A
 * cron's is sampled: its next fire times, and those on each side of every change of its zone's
 * offset in the coming year, where a daylight-saving change shortens a gap (23:00 to 01:00 is an
 * hour on a night that skips midnight) that the next 1,000 fire times may not reach.
 */
function shortestGap(schedule: RecurringSchedule, now: number): number | null {
  if (schedule.kind === 'every') return intervalMs(schedule.interval);
  // Around each change, from far enough back for a sparse expression's fire time before it (two
  // days) and near enough for a dense one's (3 hours, 2 minutes): 1,000 fire times every two
  // minutes from two days back stop before the change.
  // The near starts need a few fire times only: those on each side of the change.
  const starts: [number, number][] = [
    [now, GAP_SAMPLE],
    ...offsetChanges(schedule.timezone, now, now + GAP_YEAR).flatMap((change): [number, number][] => [
      [Math.max(now, change - 2 * DAY), GAP_SAMPLE],
      [Math.max(now, change - 3 * HOUR_MS), NEAR_CHANGE_SAMPLE],
      [Math.max(now, change - 2 * MINUTE_MS), NEAR_CHANGE_SAMPLE],
    ]),
  ];
  let gap: number | null = null;
  for (const [start, count] of starts) {
    const times = seriesFireTimes(schedule, start, count);
    for (let i = 1; i < times.length; i++) gap = Math.min(gap ?? Infinity, (times[i] ?? 0) - (times[i - 1] ?? 0));
  }
  return gap;
}

const MINUTE_MS = 60 * SECOND;
/** Fire times sampled from just before an offset change. */
const NEAR_CHANGE_SAMPLE = 200;
const HOUR_MS = 60 * MINUTE_MS;

/** The instants in [from, to) at which the zone's offset changes (found day by day, then to the minute). */
function offsetChanges(timeZone: string, from: number, to: number): number[] {
  const changes: number[] = [];
  let previous = offsetAt(from, timeZone);
  for (let at = from + DAY; at < to; at += DAY) {
    const offset = offsetAt(at, timeZone);
    if (offset !== previous) {
      // The day held one change (no zone has had two within a day since 1970): bisect to it.
      let [before, after] = [at - DAY, at];
      while (after - before > MINUTE_MS) {
        const mid = before + Math.floor((after - before) / 2);
        if (offsetAt(mid, timeZone) === previous) before = mid;
        else after = mid;
      }
      changes.push(after);
    }
    previous = offset;
  }
  return changes;
}

// ---- What fires: the series less excluded dates and skips ------------------------------------

/** A job's schedule with the occurrences skipped on request (POST /v1/jobs/{jobId}/skip). */
export interface Timetable {
  readonly schedule: Schedule;
  readonly skippedOccurrences?: readonly string[] | null;
}

export type SkipReason = 'excluded date' | 'skipped on request';

/** Skipped fire times the chain has not reached: those at or after `from` (epoch ms). */
export function skipsFrom(skipped: readonly string[] | undefined, from: number): string[] {
  return (skipped ?? []).filter((at) => Date.parse(at) >= from);
}

/**
 * The skips a job keeps when its schedule changes (to `schedule`): those not passed (at or after
 * `from`) at which the new schedule still fires. A skip is of an instant: a PATCH of the schedule's
 * end or jitter keeps it, a new zone or expression drops the instants it no longer fires at.
 */
export function skipsKept(skipped: readonly string[] | undefined, schedule: Schedule, from: number): string[] {
  if (!isRecurring(schedule)) return [];
  return skipsFrom(skipped, from).filter((text) => {
    const at = Date.parse(text);
    return seriesFireTimes(schedule, at - 1, 1)[0] === at && skipReasonOf({ schedule }, at) === null;
  });
}

/** Why an occurrence of the series does not fire, or null when it does. */
export function skipReasonOf(timetable: Timetable, at: number): SkipReason | null {
  const { schedule } = timetable;
  if (!isRecurring(schedule)) return null;
  if (schedule.excludeDates?.length && schedule.excludeDates.includes(dateIn(schedule.timezone, at))) return 'excluded date';
  if (timetable.skippedOccurrences?.some((skipped) => Date.parse(skipped) === at)) return 'skipped on request';
  return null;
}

/** The calendar date (YYYY-MM-DD) in `timeZone` at `instant`. */
export function dateIn(timeZone: string, instant: number): string {
  return new Date(toWallTime(instant, timeZone)).toISOString().slice(0, 10);
}

/** The last instant of the calendar day in the zone that holds `instant`. */
function endOfDayIn(offsets: ZoneOffsets, timeZone: string, instant: number): number {
  const nextMidnight = Math.floor(toWallTime(instant, timeZone) / DAY) * DAY + DAY;
  const { instants, endOfGap } = offsets.instantsOf(nextMidnight);
  return (instants[0] ?? endOfGap ?? instant + DAY) - 1;
}

/** Excluded days in a row that are stepped over before giving up (more than the 366 dates allowed). */
const MAX_DAYS_STEPPED = 400;

/**
 * The next `count` fire times that fire, strictly after `after`: the series less the excluded
 * dates and the occurrences skipped on request. Fire times on an excluded day are passed over in
 * the page at hand; past the page's end, the series is asked again from the day's end, so a dense
 * expression does not walk a whole excluded day. One-shot schedules have none here (firstFireTime).
 */
export function fireTimes(timetable: Timetable, after: number, count: number): number[] {
  const { schedule } = timetable;
  if (!isRecurring(schedule)) return [];
  const excluded = new Set(schedule.excludeDates ?? []);
  const skipped = new Set((timetable.skippedOccurrences ?? []).map((at) => Date.parse(at)));
  if (excluded.size === 0 && skipped.size === 0) return seriesFireTimes(schedule, after, count);
  const offsets = excluded.size > 0 ? new ZoneOffsets(schedule.timezone) : null;
  const found: number[] = [];
  let cursor = after;
  let daysStepped = 0;
  /** The end of the excluded day being passed over, or null. */
  let excludedUntil: number | null = null;
  // Pages grow while fire times keep being passed over, so a long excluded stretch takes few asks.
  for (let pages = 0; found.length < count; pages++) {
    const page = seriesFireTimes(schedule, cursor, (count - found.length + skipped.size) * 2 ** Math.min(pages, 10));
    if (page.length === 0) break;
    for (const at of page) {
      if (excludedUntil !== null && at <= excludedUntil) continue;
      excludedUntil = null;
      if (offsets !== null && excluded.has(dateIn(schedule.timezone, at))) {
        if (++daysStepped > MAX_DAYS_STEPPED) return found;
        excludedUntil = endOfDayIn(offsets, schedule.timezone, at);
        continue;
      }
      if (!skipped.has(at)) found.push(at);
      if (found.length === count) break;
    }
    cursor = Math.max(page[page.length - 1] ?? cursor, excludedUntil ?? -Infinity);
  }
  return found;
}

/** The occurrence that follows `previous` for a recurring schedule; one-shot schedules have none. */
export function nextFireTimeAfter(timetable: Timetable, previous: number): number | null {
  return fireTimes(timetable, previous, 1)[0] ?? null;
}

/** The first occurrence of a new (settled) schedule, or null when it has none left. */
export function firstFireTime(timetable: Timetable, now: number): number | null {
  const { schedule } = timetable;
  switch (schedule.kind) {
    case 'now':
      return now;
    case 'delay':
      return now + schedule.seconds * 1000;
    case 'at':
      return Math.max(Date.parse(schedule.at), now);
    case 'cron':
    case 'every':
      return nextFireTimeAfter(timetable, now);
  }
}

/** The next `count` fire times, for the job's `upcomingRuns`. */
export function upcomingFireTimes(timetable: Timetable, after: number, count: number): number[] {
  const { schedule } = timetable;
  if (isRecurring(schedule)) return fireTimes(timetable, after, count);
  if (schedule.kind === 'at') {
    const at = Date.parse(schedule.at);
    return at > after ? [at] : [];
  }
  return [firstFireTime(timetable, after) ?? after];
}

// ---- When an occurrence starts: jitter ---------------------------------------------------------

/**
 * The delay in [0, jitterSeconds) of an occurrence: a hash of the seed (the job id) and the
 * occurrence's fire time, so that every evaluation, retry, restart and replay agrees (decision 0150).
 */
export function jitterMsOf(seed: string, schedule: Schedule, scheduledFor: number): number {
  if (!isRecurring(schedule) || !schedule.jitterSeconds) return 0;
  const digest = createHash('sha256')
    .update(`${seed}#${new Date(scheduledFor).toISOString()}`)
    .digest();
  // 48 bits of the hash as a fraction of one.
  return Math.floor((digest.readUIntBE(0, 6) / 2 ** 48) * schedule.jitterSeconds * SECOND);
}

/** When an occurrence of the schedule starts: its fire time plus its jitter, never earlier. */
export function startOf(seed: string, schedule: Schedule, scheduledFor: number): number {
  return scheduledFor + jitterMsOf(seed, schedule, scheduledFor);
}

export interface Occurrence {
  /** The fire time: the occurrence's identity. */
  readonly at: string;
  /** When it starts (the fire time plus its jitter); null when it is skipped, or its jitter needs a job id that was not given. */
  readonly startsAt: string | null;
  /** Why it does not fire, or null. */
  readonly skipped: SkipReason | null;
}

/**
 * The next `count` occurrences of the series after `after`, skipped ones included and marked, each
 * with its start. `seed` is the job's id; without one a jittered start cannot be told.
 */
export function upcomingOccurrences(timetable: Timetable, after: number, count: number, seed: string | null): Occurrence[] {
  const { schedule } = timetable;
  const times = isRecurring(schedule) ? seriesFireTimes(schedule, after, count) : upcomingFireTimes(timetable, after, 1);
  const jittered = isRecurring(schedule) && schedule.jitterSeconds !== undefined;
  return times.map((at) => {
    const skipped = skipReasonOf(timetable, at);
    const startsAt = skipped !== null || (jittered && seed === null) ? null : new Date(seed === null ? at : startOf(seed, schedule, at)).toISOString();
    return { at: new Date(at).toISOString(), startsAt, skipped };
  });
}
