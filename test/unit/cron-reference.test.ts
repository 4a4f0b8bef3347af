// cronFireTimes checked against a reference that knows nothing of its shortcuts: walk the instants
// minute by minute, read the zone's wall clock at each, and apply Vixie cron's rule (API.md) as
// stated. Around every 2026 transition of zones with unusual shifts, for fixed-time and wildcard
// expressions, from several starting points.
import { CronExpressionParser } from 'cron-parser';
import { describe, expect, it } from 'vitest';
import { cronFireTimes } from '../../lambdas/domain/schedule-series';
import { offsetAt, toWallTime } from '../../lambdas/domain/time-zone';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

const ZONES = [
  'America/New_York',
  'Europe/London',
  'Australia/Lord_Howe', // 30-minute shift
  'Australia/Sydney', // southern hemisphere
  'Pacific/Chatham', // +12:45 / +13:45
  'America/St_Johns', // -03:30 / -02:30
  'Antarctica/Troll', // two-hour shift
  'America/Santiago', // changes at midnight
  'Asia/Kolkata', // none
];
const EXPRESSIONS = [
  '30 2 * * *',
  '0 2 * * *',
  '0,30 1-3 * * *',
  '*/15 * * * *',
  '30 * * * *',
  '*/7 0-3 * * *',
  '0 0 * * *',
  '59 23 * * *',
  '45 1 * * SUN',
  '15 0-4/2 * * *',
];

/** The instants in [from, to) at which the zone's clocks change offset, to the minute. */
function transitions(zone: string, from: number, to: number): number[] {
  const found: number[] = [];
  for (let t = from; t < to; t += HOUR) {
    if (offsetAt(t, zone) !== offsetAt(t + HOUR, zone)) {
      let at = t;
      while (offsetAt(at, zone) === offsetAt(t, zone)) at += MINUTE;
      found.push(at);
    }
  }
  return found;
}

/** Whether a naive wall time (epoch ms read as UTC) matches a plain five-field expression. */
function matcherOf(expression: string): (wall: number) => boolean {
  const { fields } = CronExpressionParser.parse(expression, { tz: 'UTC' });
  const set = (values: readonly (number | string)[]): Set<number> => new Set(values.map(Number));
  const [minutes, hours, days, months, weekdays] = [fields.minute, fields.hour, fields.dayOfMonth, fields.month, fields.dayOfWeek].map((f) => set(f.values));
  const [, , rawDay = '*', , rawWeekday = '*'] = expression.split(' ');
  return (wall) => {
    const d = new Date(wall);
    const dayOk = days?.has(d.getUTCDate()) ?? false;
    const weekdayOk = weekdays?.has(d.getUTCDay()) ?? false;
    // Cron's rule: with both day fields restricted, either may match.
    const dayMatches = rawDay !== '*' && rawWeekday !== '*' ? dayOk || weekdayOk : dayOk && weekdayOk;
    return (minutes?.has(d.getUTCMinutes()) ?? false) && (hours?.has(d.getUTCHours()) ?? false) && (months?.has(d.getUTCMonth() + 1) ?? false) && dayMatches;
  };
}

/** The zone's wall clock at each minute from `start` (a whole minute) to `end`. */
function wallClock(zone: string, start: number, end: number): number[] {
  const walls: number[] = [];
  for (let instant = start; instant <= end; instant += MINUTE) walls.push(toWallTime(instant, zone));
  return walls;
}

/**
 * Fire times in (from, to] by the rule, found minute by minute; `walls` starts at `start`, a day
 * before `from`, so that a wall time repeated after `from` is known to have been seen.
 */
function reference(expression: string, walls: readonly number[], start: number, from: number, to: number): number[] {
  const matches = matcherOf(expression);
  const [minute = '', hour = ''] = expression.split(' ');
  const fixedTime = !minute.includes('*') && !hour.includes('*');
  const fires = new Set<number>();
  let previousWall = walls[0] ?? 0;
  let latestWall = previousWall;
  for (let i = 1; i < walls.length; i++) {
    const instant = start + i * MINUTE;
    const wall = walls[i] ?? 0;
    // Wall minutes the clocks jumped over fire at the jump, for fixed-time expressions only.
    if (fixedTime) {
      for (let skipped = previousWall + MINUTE; skipped < wall; skipped += MINUTE) {
        if (matches(skipped)) fires.add(instant);
      }
    }
    // A repeated wall minute fires again only for wildcard expressions.
    if (matches(wall) && (!fixedTime || wall > latestWall)) fires.add(instant);
    latestWall = Math.max(latestWall, wall);
    previousWall = wall;
  }
  return [...fires].filter((t) => t > from && t <= to).sort((a, b) => a - b);
}

describe('cron fire times agree with a minute-by-minute walk of the wall clock', () => {
  const year = [Date.parse('2026-01-01T00:00:00Z'), Date.parse('2027-01-01T00:00:00Z')] as const;
  for (const zone of ZONES) {
    it(`in ${zone}`, () => {
      const around = transitions(zone, ...year);
      const windows = around.length > 0 ? around : [Date.parse('2026-03-29T01:00:00Z')];
      for (const transition of windows) {
        // Starting points before the change, just before it, and inside a repeated hour.
        for (const from of [transition - 30 * HOUR + 17_000, transition - 45 * MINUTE, transition + 20 * MINUTE]) {
          const to = transition + 30 * HOUR;
          const start = Math.floor(from / MINUTE) * MINUTE - 26 * HOUR;
          const walls = wallClock(zone, start, to + 2 * HOUR);
          for (const expression of EXPRESSIONS) {
            const expected = reference(expression, walls, start, from, to);
            const got = cronFireTimes({ kind: 'cron', expression, timezone: zone }, from, expected.length + 1);
            const iso = (times: number[]): string[] => times.map((t) => new Date(t).toISOString());
            expect({ zone, expression, from: new Date(from).toISOString(), fires: iso(got.filter((t) => t <= to)) }).toEqual({
              zone,
              expression,
              from: new Date(from).toISOString(),
              fires: iso(expected),
            });
          }
        }
      }
    });
  }
});
