// The series of a recurring schedule: its cron expression or interval parsed, and its fire times
// within startAt/endAt and its first maxOccurrences (the first of the three layers of decision 0150;
// schedule.ts has the other two). Cron expressions are evaluated on the wall clock of the job's zone
// and mapped to instants with Vixie cron's daylight-saving rule (docs/api.md):
// - fixed-time expressions (no `*` in second, minute or hour) fire once for a wall time a
//   spring-forward gap skips, at the instant the gap ends, and once (the first time) for a
//   repeated wall time;
// - other expressions follow the wall clock: skipped wall times never fire, repeated ones fire twice.
// Intervals (`every`) are instants, `anchor + k × interval`: daylight saving does not move them.
import { CronExpressionParser } from 'cron-parser';
import { parse as parseDuration } from 'tinyduration';
import { ValidationError } from '../core/errors';
import { remember } from '../core/lru';
import { cronFieldRefusal, cronFieldsOf, cronShapeRefusal } from './cron-syntax';
import { CronWallTimes } from './cron-wall-times';
import type { Schedule } from './job';
import { ZoneOffsets } from './time-zone';

/** An expression that yields no fire time within this many iterations is treated as never firing. */
const MAX_ITERATIONS = 20_000;
export const SECOND = 1000;
export const DAY = 86_400_000;

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

export function parseCron(expression: string, path: string, source: CronSource): ParsedCron {
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
