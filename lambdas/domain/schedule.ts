// Fire times of schedules. Cron expressions are evaluated on the wall clock of the job's zone and
// mapped to instants with Vixie cron's daylight-saving rule (API.md; docs/api.md):
// - fixed-time expressions (no `*` in minute or hour) fire once for a wall time a spring-forward
//   gap skips, at the instant the gap ends, and once (the first time) for a repeated wall time;
// - other expressions follow the wall clock: skipped wall times never fire, repeated ones fire twice.
import { CronExpressionParser } from 'cron-parser';
import { ValidationError } from '../core/errors';
import { CRON_FIELDS, cronFieldRefusal, cronShapeRefusal } from './cron-syntax';
import { CronWallTimes } from './cron-wall-times';
import type { FieldError } from '../core/errors';
import type { Schedule } from './job';
import { isValidTimeZone, ZoneOffsets } from './time-zone';

/** An expression that yields no fire time within this many iterations is treated as never firing. */
const MAX_ITERATIONS = 20_000;

export type CronSchedule = Extract<Schedule, { kind: 'cron' }>;

/**
 * Fire times are computed between these instants (docs/api.md): zone rules before 1970 are
 * guesswork and JavaScript dates misread years before 100; ISO timestamps end with year 9999.
 */
export const FIRE_TIME_RANGE = { earliest: Date.parse('1970-01-01T00:00:00.000Z'), latest: Date.parse('9999-12-31T23:59:59.999Z') } as const;

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
  const refusals = CRON_FIELDS.flatMap((field, i) => {
    const raw = fields[i] ?? '';
    const refusal = cronFieldRefusal(field, raw);
    return refusal === null ? [] : [`${field} field "${raw}": ${refusal}`];
  });
  if (refusals.length > 0 && source === 'new') refuse(refusals);
  const key = fields.join(' ');
  const cached = parsedExpressions.get(key);
  if (cached !== undefined) {
    parsedExpressions.delete(key);
    parsedExpressions.set(key, cached);
    return cached;
  }
  try {
    // Evaluated on naive wall time (UTC has no daylight saving), then mapped to the job's zone.
    const parsed = CronExpressionParser.parse(key, { tz: 'UTC', currentDate: new Date(0), hashSeed: key });
    const [minute = '', hour = ''] = fields;
    const result = { wallTimes: new CronWallTimes(parsed), fixedTime: !minute.includes('*') && !hour.includes('*') };
    parsedExpressions.set(key, result);
    if (parsedExpressions.size > MAX_PARSED_EXPRESSIONS) {
      const oldest = parsedExpressions.keys().next();
      if (!oldest.done) parsedExpressions.delete(oldest.value);
    }
    return result;
  } catch (error) {
    return refuse([`${fieldOfParseError(fields)}${error instanceof Error ? error.message : 'cannot be parsed'}`]);
  }
}

/** The field cron-parser refused, tried one at a time with the others `*`, as a message prefix. */
function fieldOfParseError(fields: readonly string[]): string {
  for (const [i, field] of CRON_FIELDS.entries()) {
    const alone = CRON_FIELDS.map((_, j) => (j === i ? fields[j] : '*')).join(' ');
    try {
      CronExpressionParser.parse(alone, { tz: 'UTC', currentDate: new Date(0) });
    } catch {
      return `${field} field "${fields[i] ?? ''}": `;
    }
  }
  return '';
}

/** Checks what zod cannot: the cron expression, its zone, and that it fires at least once. */
export function validateSchedule(schedule: Schedule, now: number, path = 'schedule'): void {
  const errors: FieldError[] = [];
  if (schedule.kind === 'at' && Date.parse(schedule.at) < now - 60_000) {
    errors.push({ path: `${path}.at`, message: 'must not be more than a minute in the past' });
  }
  if (schedule.kind === 'cron') {
    if (!isValidTimeZone(schedule.timezone)) {
      errors.push({ path: `${path}.timezone`, message: `unknown IANA time zone "${schedule.timezone}"` });
    }
    if (schedule.startAt && schedule.endAt && Date.parse(schedule.endAt) <= Date.parse(schedule.startAt)) {
      errors.push({ path: `${path}.endAt`, message: 'must be after startAt' });
    }
    if (errors.length === 0) {
      parseCron(schedule.expression, `${path}.expression`, 'new');
      const [first] = cronFireTimes(schedule, now, 1, `${path}.expression`);
      // A schedule that never fires is refused (API.md), whether the expression cannot match or
      // its window closes before the first match: name whichever is the cause.
      if (first === undefined) {
        const { endAt, ...open } = schedule;
        const expressionFires = endAt !== undefined && cronFireTimes(open, now, 1, `${path}.expression`).length > 0;
        if (!expressionFires) errors.push({ path: `${path}.expression`, message: 'never fires' });
        else if (Date.parse(endAt) <= now) errors.push({ path: `${path}.endAt`, message: 'has passed, so the schedule would never fire' });
        else errors.push({ path: `${path}.endAt`, message: 'is before the first fire time, so the schedule would never fire' });
      }
    }
  }
  if (errors.length > 0) throw new ValidationError('Invalid schedule', errors);
}

/**
 * The next `count` fire times of a cron schedule strictly after `after` (epoch ms), within the
 * schedule's startAt/endAt window. The work is proportional to `count`: the wall times the
 * expression matches are walked in order (cron-wall-times.ts), mapped to instants with the zone's
 * offsets, and the walk stops at the first wall time no instant up to the last one needed shows.
 */
export function cronFireTimes(schedule: CronSchedule, after: number, count: number, path = 'schedule.expression'): number[] {
  const { wallTimes, fixedTime } = parseCron(schedule.expression, path, 'stored');
  const startAt = schedule.startAt ? Date.parse(schedule.startAt) : -Infinity;
  const endAt = Math.min(schedule.endAt ? Date.parse(schedule.endAt) : Infinity, FIRE_TIME_RANGE.latest);
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

/** The first occurrence of a new job's schedule, or null when it has none left. */
export function firstFireTime(schedule: Schedule, now: number): number | null {
  switch (schedule.kind) {
    case 'now':
      return now;
    case 'delay':
      return now + schedule.seconds * 1000;
    case 'at':
      return Math.max(Date.parse(schedule.at), now);
    case 'cron':
      return cronFireTimes(schedule, now, 1)[0] ?? null;
  }
}

/** The occurrence that follows `previous` for a recurring schedule; one-shot schedules have none. */
export function nextFireTimeAfter(schedule: Schedule, previous: number): number | null {
  return schedule.kind === 'cron' ? (cronFireTimes(schedule, previous, 1)[0] ?? null) : null;
}

/** The next `count` fire times, for previews and the job's `upcomingRuns`. */
export function upcomingFireTimes(schedule: Schedule, after: number, count: number): number[] {
  switch (schedule.kind) {
    case 'cron':
      return cronFireTimes(schedule, after, count);
    case 'at': {
      const at = Date.parse(schedule.at);
      return at > after ? [at] : [];
    }
    default:
      return [firstFireTime(schedule, after) ?? after];
  }
}
