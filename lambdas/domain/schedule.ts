// Fire times of schedules. Cron expressions are evaluated on the wall clock of the job's zone and
// mapped to instants with Vixie cron's daylight-saving rule (docs/api.md):
// - fixed-time expressions (no `*` in second, minute or hour) fire once for a wall time a
//   spring-forward gap skips, at the instant the gap ends, and once (the first time) for a
//   repeated wall time;
// - other expressions follow the wall clock: skipped wall times never fire, repeated ones fire twice.
// Intervals (`every`) are instants, `anchor + k × interval`: daylight saving does not move them.
//
// Three layers (decision 0150): a schedule's *series* (its fire times within startAt/endAt and its
// first maxOccurrences), what *fires* of it (the series less its excluded dates and the
// occurrences skipped on request), and when each occurrence *starts* (its fire time plus its jitter).
import { createHash } from 'node:crypto';
import { CronExpressionParser } from 'cron-parser';
import { parse as parseDuration } from 'tinyduration';
import { ValidationError } from '../core/errors';
import { remember } from '../core/lru';
import { cronFieldRefusal, cronFieldsOf, cronShapeRefusal } from './cron-syntax';
import { CronWallTimes } from './cron-wall-times';
import type { FieldError } from '../core/errors';
import type { Schedule } from './job';
import { isValidTimeZone, toWallTime, ZoneOffsets } from './time-zone';

/** An expression that yields no fire time within this many iterations is treated as never firing. */
const MAX_ITERATIONS = 20_000;
const SECOND = 1000;
const DAY = 86_400_000;

export type CronSchedule = Extract<Schedule, { kind: 'cron' }>;
export type EverySchedule = Extract<Schedule, { kind: 'every' }>;
/** A schedule with more than one occurrence. */
export type RecurringSchedule = CronSchedule | EverySchedule;

export const isRecurring = (schedule: Schedule): schedule is RecurringSchedule => schedule.kind === 'cron' || schedule.kind === 'every';

/**
 * Fire times are computed between these instants (docs/api.md): zone rules before 1970 are
 * guesswork and JavaScript dates misread years before 100; ISO timestamps end with year 9999.
 */
export const FIRE_TIME_RANGE = { earliest: Date.parse('1970-01-01T00:00:00.000Z'), latest: Date.parse('9999-12-31T23:59:59.999Z') } as const;

/** An interval is at least a second and at most 366 days (docs/api.md). */
export const INTERVAL_RANGE_MS = { shortest: SECOND, longest: 366 * DAY } as const;

// ---- Cron expressions ------------------------------------------------------------------------

interface ParsedCron {
  readonly wallTimes: CronWallTimes;
  readonly fixedTime: boolean;
}

/**
 * Parsed expressions by text, least recently used out first: parsing costs more than evaluating
 * (docs/performance.md), and jobs share few expressions. What is cached is immutable.
 */
const MAX_PARSED_EXPRESSIONS = 512;
const parsedExpressions = new Map<string, ParsedCron>();

/**
 * `new` checks the syntax accepted (docs/api.md) as well; `stored` evaluates a job's expression
 * as it was accepted, so a job stored before a token was refused keeps running. Its `H` values,
 * if any, are seeded by the expression: the same at every evaluation.
 */
type CronSource = 'new' | 'stored';

function parseCron(expression: string, path: string, source: CronSource): ParsedCron {
  const fields = expression.trim().split(/\s+/);
  const refuse = (messages: string[]): never => {
    throw new ValidationError(
      'Invalid cron expression',
      messages.map((message) => ({ path, message })),
    );
  };
  const shape = cronShapeRefusal(fields);
  if (shape !== null) refuse([shape]);
  const names = cronFieldsOf(fields.length);
  const refusals = names.flatMap((field, i) => {
    const raw = fields[i] ?? '';
    const refusal = cronFieldRefusal(field, raw);
    return refusal === null ? [] : [`${field} field "${raw}": ${refusal}`];
  });
  if (refusals.length > 0 && source === 'new') refuse(refusals);
  const key = fields.join(' ');
  const cached = parsedExpressions.get(key);
  if (cached !== undefined) return remember(parsedExpressions, key, cached, MAX_PARSED_EXPRESSIONS);
  try {
    // Evaluated on naive wall time (UTC has no daylight saving), then mapped to the job's zone.
    const parsed = CronExpressionParser.parse(key, { tz: 'UTC', currentDate: new Date(0), hashSeed: key });
    // The time fields: a seconds field first when there are six.
    const timeFields = fields.slice(0, names.length - 3);
    const result = { wallTimes: new CronWallTimes(parsed), fixedTime: timeFields.every((field) => !field.includes('*')) };
    return remember(parsedExpressions, key, result, MAX_PARSED_EXPRESSIONS);
  } catch (error) {
    return refuse([`${fieldOfParseError(fields)}${error instanceof Error ? error.message : 'cannot be parsed'}`]);
  }
}

/** The field cron-parser refused, tried one at a time with the others `*`, as a message prefix. */
function fieldOfParseError(fields: readonly string[]): string {
  const names = cronFieldsOf(fields.length);
  for (const [i, field] of names.entries()) {
    const alone = names.map((_, j) => (j === i ? fields[j] : '*')).join(' ');
    try {
      CronExpressionParser.parse(alone, { tz: 'UTC', currentDate: new Date(0) });
    } catch {
      return `${field} field "${fields[i] ?? ''}": `;
    }
  }
  return '';
}

// ---- Intervals -------------------------------------------------------------------------------

const MAX_PARSED_INTERVALS = 256;
const parsedIntervals = new Map<string, number>();

/**
 * The length of an ISO 8601 duration in milliseconds: weeks, days, hours, minutes and whole
 * seconds, which have one length each (a day is 24 hours: intervals are instants, not wall time).
 * Months and years vary in length and are refused, as are negative, fractional and out-of-range
 * durations. The text is parsed by tinyduration (decision 0150).
 */
export function intervalMs(interval: string, path = 'schedule.interval'): number {
  const cached = parsedIntervals.get(interval);
  if (cached !== undefined) return remember(parsedIntervals, interval, cached, MAX_PARSED_INTERVALS);
  const refuse = (message: string): never => {
    throw new ValidationError('Invalid schedule', [{ path, message }]);
  };
  let duration: ReturnType<typeof parseDuration>;
  try {
    duration = parseDuration(interval);
  } catch {
    return refuse('must be an ISO 8601 duration such as PT30S, PT15M, PT6H, P1D or P1W');
  }
  if (duration.negative) refuse('must not be negative');
  if (duration.years || duration.months) refuse('must not use years or months, whose length varies; use days or weeks, or a cron expression');
  const { weeks = 0, days = 0, hours = 0, minutes = 0, seconds = 0 } = duration;
  if (![weeks, days, hours, minutes, seconds].every(Number.isInteger)) refuse('must be a whole number of seconds (no fractions)');
  const ms = ((((weeks * 7 + days) * 24 + hours) * 60 + minutes) * 60 + seconds) * SECOND;
  if (ms < INTERVAL_RANGE_MS.shortest || ms > INTERVAL_RANGE_MS.longest) refuse('must be from 1 second (PT1S) to 366 days (P366D)');
  return remember(parsedIntervals, interval, ms, MAX_PARSED_INTERVALS);
}

// ---- Accepting a schedule --------------------------------------------------------------------

/**
 * Fills in what a schedule is counted from, as of `now`: an interval's `anchor`, and a cron's
 * `startAt` when it has `maxOccurrences` (the count starts when the schedule is set). Excluded
 * dates are sorted and each kept once. The stored schedule then evaluates the same forever.
 */
export function settleSchedule<S extends Schedule>(schedule: S, now: number): S {
  const iso = new Date(now).toISOString();
  if (schedule.kind === 'every') {
    return { ...schedule, anchor: schedule.anchor ?? iso, ...settledDates(schedule) };
  }
  if (schedule.kind === 'cron') {
    return { ...schedule, ...(schedule.maxOccurrences !== undefined && schedule.startAt === undefined ? { startAt: iso } : {}), ...settledDates(schedule) };
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

/** The shortest time between consecutive fire times of the series (sampled for cron), or null with fewer than two. */
function shortestGap(schedule: RecurringSchedule, now: number): number | null {
  if (schedule.kind === 'every') return intervalMs(schedule.interval);
  const times = seriesFireTimes(schedule, now, GAP_SAMPLE);
  let gap: number | null = null;
  for (let i = 1; i < times.length; i++) gap = Math.min(gap ?? Infinity, (times[i] ?? 0) - (times[i - 1] ?? 0));
  return gap;
}

// ---- The series: fire times within the window and the count -----------------------------------

/**
 * The next `count` fire times of a cron expression strictly after `after` (epoch ms), within
 * `from`/`until` (inclusive). The work is proportional to `count`: the wall times the expression
 * matches are walked in order (cron-wall-times.ts), mapped to instants with the zone's offsets, and
 * the walk stops at the first wall time no instant up to the last one needed shows.
 */
function cronMatches(schedule: CronSchedule, after: number, count: number, until: number): number[] {
  const { wallTimes, fixedTime } = parseCron(schedule.expression, 'schedule.expression', 'stored');
  const startAt = schedule.startAt ? Date.parse(schedule.startAt) : -Infinity;
  const endAt = Math.min(until, FIRE_TIME_RANGE.latest);
  const from = Math.max(after, startAt - 1, FIRE_TIME_RANGE.earliest - 1);
  if (count < 1 || from >= endAt) return [];
  const offsets = new ZoneOffsets(schedule.timezone);

  // A fall-back shows wall times again after later ones, so start at the earliest wall time any
  // instant after `from` shows, and stop past the latest one shown up to the last fire time needed.
  const matches = wallTimes.from(offsets.earliestWallFrom(from));
  let lastWall = offsets.latestWallBy(endAt);
  const found: number[] = [];
  for (let i = 0; i < MAX_ITERATIONS; i++) {
    const wallTime = matches.next();
    if (wallTime === null || wallTime > lastWall) break;
    for (const instant of instantsForWallTime(offsets, wallTime, fixedTime)) {
      if (instant > from && instant <= endAt) insertSorted(found, instant);
    }
    const enough = found[count - 1];
    if (enough !== undefined) lastWall = Math.min(lastWall, offsets.latestWallBy(enough));
  }
  return found.slice(0, count);
}

function instantsForWallTime(offsets: ZoneOffsets, wallTime: number, fixedTime: boolean): number[] {
  const { instants, endOfGap } = offsets.instantsOf(wallTime);
  if (instants.length === 0) return fixedTime && endOfGap !== null ? [endOfGap] : [];
  return fixedTime ? instants.slice(0, 1) : instants;
}

/** Adds `value` to an ascending list of distinct numbers; values arrive nearly in order. */
function insertSorted(list: number[], value: number): void {
  let i = list.length;
  while (i > 0 && (list[i - 1] ?? -Infinity) > value) i--;
  if (list[i - 1] !== value) list.splice(i, 0, value);
}

/** Interval fire times strictly after `after`, up to `until`: `anchor + k × interval`, k >= 0. */
function intervalMatches(schedule: EverySchedule, after: number, count: number, until: number): number[] {
  const step = intervalMs(schedule.interval);
  const anchor = Date.parse(schedule.anchor ?? '');
  if (Number.isNaN(anchor)) throw new Error('an interval schedule is evaluated after settleSchedule gave it an anchor');
  const end = Math.min(until, FIRE_TIME_RANGE.latest);
  const firstK = Math.max(0, Math.floor((Math.max(after, FIRE_TIME_RANGE.earliest - 1) - anchor) / step) + 1);
  const times: number[] = [];
  for (let k = firstK; times.length < count; k++) {
    const at = anchor + k * step;
    if (at > end) break;
    times.push(at);
  }
  return times;
}

/** The last fire time of a schedule with `maxOccurrences`, by schedule; the same for its life. */
const MAX_LAST_OCCURRENCES = 512;
const lastOccurrences = new Map<string, number>();

/**
 * The last fire time the schedule's `maxOccurrences` allows (Infinity without one, or when the
 * window closes first). Counted from `startAt` (cron) or `anchor` (every), which settleSchedule
 * fills in; excluded and skipped occurrences count, as RFC 5545 counts COUNT before EXDATE.
 */
export function lastOccurrenceOf(schedule: RecurringSchedule): number {
  const max = schedule.maxOccurrences;
  if (max === undefined) return Infinity;
  if (schedule.kind === 'every') return Date.parse(schedule.anchor ?? '') + (max - 1) * intervalMs(schedule.interval);
  const key = JSON.stringify([schedule.expression, schedule.timezone, schedule.startAt, max]);
  const cached = lastOccurrences.get(key);
  if (cached !== undefined) return remember(lastOccurrences, key, cached, MAX_LAST_OCCURRENCES);
  const from = schedule.startAt ? Date.parse(schedule.startAt) - 1 : FIRE_TIME_RANGE.earliest - 1;
  let last = Infinity;
  let counted = 0;
  let after = from;
  // In pages: a count of 100,000 is a few hundred milliseconds once per process and schedule.
  while (counted < max) {
    const page = cronMatches(schedule, after, Math.min(10_000, max - counted), FIRE_TIME_RANGE.latest);
    if (page.length === 0) break;
    counted += page.length;
    after = page[page.length - 1] ?? after;
    if (counted === max) last = after;
  }
  return remember(lastOccurrences, key, last, MAX_LAST_OCCURRENCES);
}

/**
 * The series: the next `count` fire times strictly after `after` within the schedule's window
 * (startAt or anchor, endAt) and its first `maxOccurrences`, before excluded dates and skips.
 */
export function seriesFireTimes(schedule: RecurringSchedule, after: number, count: number): number[] {
  const until = Math.min(schedule.endAt ? Date.parse(schedule.endAt) : Infinity, lastOccurrenceOf(schedule));
  return schedule.kind === 'cron' ? cronMatches(schedule, after, count, until) : intervalMatches(schedule, after, count, until);
}

/** Kept for callers that need a cron's series: the same as seriesFireTimes. */
export const cronFireTimes = (schedule: CronSchedule, after: number, count: number): number[] => seriesFireTimes(schedule, after, count);

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
