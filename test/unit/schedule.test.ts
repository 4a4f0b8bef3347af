import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../lambdas/core/errors';
import type { CronSchedule } from '../../lambdas/domain/schedule-series';
import { firstFireTime, upcomingFireTimes, validateSchedule } from '../../lambdas/domain/schedule';
import { cronFireTimes } from '../../lambdas/domain/schedule-series';

const cron = (expression: string, timezone: string, extra: Partial<CronSchedule> = {}): CronSchedule => ({
  kind: 'cron',
  expression,
  timezone,
  ...extra,
});
const fires = (schedule: CronSchedule, from: string, count: number): string[] =>
  cronFireTimes(schedule, Date.parse(from), count).map((ms) => new Date(ms).toISOString());

describe('cron fire times', () => {
  it('fires in the job zone and reports UTC', () => {
    expect(fires(cron('0 9 * * MON', 'Europe/Paris'), '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-05T08:00:00.000Z', '2026-01-12T08:00:00.000Z']);
  });

  it('is strictly after the starting instant', () => {
    expect(fires(cron('0 9 * * *', 'UTC'), '2026-01-01T09:00:00.000Z', 1)).toEqual(['2026-01-02T09:00:00.000Z']);
  });

  it('fires a fixed-time wall clock skipped by spring forward once, when the gap ends', () => {
    // New York, 2026-03-08: 02:00 EST jumps to 03:00 EDT (07:00Z).
    expect(fires(cron('30 2 * * *', 'America/New_York'), '2026-03-07T00:00:00Z', 3)).toEqual([
      '2026-03-07T07:30:00.000Z',
      '2026-03-08T07:00:00.000Z',
      '2026-03-09T06:30:00.000Z',
    ]);
  });

  it('fires a fixed-time wall clock repeated by fall back once, the first time', () => {
    // New York, 2026-11-01: 02:00 EDT falls back to 01:00 EST; 01:30 happens at 05:30Z and 06:30Z.
    expect(fires(cron('30 1 * * *', 'America/New_York'), '2026-10-31T12:00:00Z', 2)).toEqual(['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z']);
  });

  it('skips wall times in the gap for expressions with a wildcard hour', () => {
    const times = fires(cron('30 * * * *', 'America/New_York'), '2026-03-08T05:00:00Z', 3);
    // 00:30 EST (05:30Z), 01:30 EST (06:30Z), then 02:30 does not exist: 03:30 EDT (07:30Z).
    expect(times).toEqual(['2026-03-08T05:30:00.000Z', '2026-03-08T06:30:00.000Z', '2026-03-08T07:30:00.000Z']);
  });

  it('fires repeated wall times twice for expressions with a wildcard hour', () => {
    const times = fires(cron('30 * * * *', 'America/New_York'), '2026-11-01T04:00:00Z', 4);
    // 00:30 EDT (04:30Z), 01:30 EDT (05:30Z), 01:30 EST (06:30Z), 02:30 EST (07:30Z).
    expect(times).toEqual(['2026-11-01T04:30:00.000Z', '2026-11-01T05:30:00.000Z', '2026-11-01T06:30:00.000Z', '2026-11-01T07:30:00.000Z']);
  });

  it('follows the wall clock for step expressions across fall back', () => {
    // London, 2026-10-25: 02:00 BST falls back to 01:00 GMT; 01:00 and 01:30 each happen twice.
    expect(fires(cron('*/30 1 * * *', 'Europe/London'), '2026-10-24T23:59:00Z', 4)).toEqual([
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T01:00:00.000Z',
      '2026-10-25T01:30:00.000Z',
    ]);
  });

  it('handles a 30-minute daylight shift (Australia/Lord_Howe)', () => {
    // Lord Howe, 2026-10-04: 02:00 +10:30 jumps to 02:30 +11:00 (15:30Z on the 3rd).
    expect(fires(cron('15 2 * * *', 'Australia/Lord_Howe'), '2026-10-02T12:00:00Z', 2)).toEqual(['2026-10-02T15:45:00.000Z', '2026-10-03T15:30:00.000Z']);
    // The wall clock rule: 02:15 does not exist that day and does not fire.
    expect(fires(cron('15 * * * *', 'Australia/Lord_Howe'), '2026-10-03T14:00:00Z', 3)).toEqual([
      '2026-10-03T14:45:00.000Z', // 01:15 +10:30
      '2026-10-03T16:15:00.000Z', // 03:15 +11:00 (02:15 skipped)
      '2026-10-03T17:15:00.000Z', // 04:15 +11:00
    ]);
  });

  it('applies the southern hemisphere transitions (Australia/Sydney)', () => {
    // Sydney springs forward on 2026-10-04 at 02:00 AEST -> 03:00 AEDT (16:00Z on the 3rd).
    expect(fires(cron('30 2 * * *', 'Australia/Sydney'), '2026-10-02T12:00:00Z', 2)).toEqual(['2026-10-02T16:30:00.000Z', '2026-10-03T16:00:00.000Z']);
    // ... and falls back on 2026-04-05 at 03:00 AEDT -> 02:00 AEST: 02:30 fires once, the first time.
    expect(fires(cron('30 2 * * *', 'Australia/Sydney'), '2026-04-04T12:00:00Z', 1)).toEqual(['2026-04-04T15:30:00.000Z']);
  });

  it('matches either day field when both are restricted, as cron does', () => {
    expect(fires(cron('0 0 13 * FRI', 'UTC'), '2026-01-01T00:00:00Z', 4)).toEqual([
      '2026-01-02T00:00:00.000Z',
      '2026-01-09T00:00:00.000Z',
      '2026-01-13T00:00:00.000Z',
      '2026-01-16T00:00:00.000Z',
    ]);
  });

  it('treats day of week 7 as Sunday and accepts names', () => {
    expect(fires(cron('0 12 * JAN SUN', 'UTC'), '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-04T12:00:00.000Z']);
    expect(fires(cron('0 12 * * 7', 'UTC'), '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-04T12:00:00.000Z']);
  });

  it('keeps to startAt and endAt', () => {
    const schedule = cron('0 * * * *', 'UTC', { startAt: '2026-01-01T05:00:00.000Z', endAt: '2026-01-01T07:00:00.000Z' });
    expect(fires(schedule, '2026-01-01T00:00:00Z', 10)).toEqual(['2026-01-01T05:00:00.000Z', '2026-01-01T06:00:00.000Z', '2026-01-01T07:00:00.000Z']);
  });
});

describe('schedule validation', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  const pathsOf = (fn: () => void): string[] => {
    try {
      fn();
    } catch (error) {
      if (error instanceof ValidationError) return error.errors.map((e) => e.path);
      throw error;
    }
    return [];
  };

  it('names the expression of a cron that never fires', () => {
    expect(pathsOf(() => validateSchedule(cron('0 0 30 2 *', 'UTC'), now))).toEqual(['schedule.expression']);
  });

  it('names the expression when it does not parse or has the wrong number of fields', () => {
    expect(pathsOf(() => validateSchedule(cron('61 * * * *', 'UTC'), now))).toEqual(['schedule.expression']);
    expect(pathsOf(() => validateSchedule(cron('* * * * * * *', 'UTC'), now))).toEqual(['schedule.expression']);
  });

  it('names an unknown zone', () => {
    expect(pathsOf(() => validateSchedule(cron('0 9 * * *', 'Europe/Atlantis'), now))).toEqual(['schedule.timezone']);
  });

  it('names endAt when it has passed or comes before the first fire time, and the expression when it can never fire', () => {
    expect(pathsOf(() => validateSchedule(cron('0 9 * * *', 'UTC', { endAt: '2025-12-31T00:00:00.000Z' }), now))).toEqual(['schedule.endAt']);
    expect(pathsOf(() => validateSchedule(cron('0 9 1 JUN *', 'UTC', { endAt: '2026-03-01T00:00:00.000Z' }), now))).toEqual(['schedule.endAt']);
    expect(pathsOf(() => validateSchedule(cron('0 0 30 2 *', 'UTC', { endAt: '2027-01-01T00:00:00.000Z' }), now))).toEqual(['schedule.expression']);
    expect(pathsOf(() => validateSchedule(cron('0 9 * * *', 'UTC', { endAt: '2026-01-01T09:00:00.000Z' }), now))).toEqual([]);
  });

  it('refuses an instant in the past', () => {
    expect(pathsOf(() => validateSchedule({ kind: 'at', at: '2025-12-31T23:00:00.000Z' }, now))).toEqual(['schedule.at']);
  });
});

describe('first and upcoming fire times', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  it('gives now, a delay and an instant', () => {
    expect(firstFireTime({ schedule: { kind: 'now' } }, now)).toBe(now);
    expect(firstFireTime({ schedule: { kind: 'delay', seconds: 90 } }, now)).toBe(now + 90_000);
    expect(firstFireTime({ schedule: { kind: 'at', at: '2026-01-02T00:00:00.000Z' } }, now)).toBe(Date.parse('2026-01-02T00:00:00Z'));
  });

  it('gives the first fire times after a starting point in 1970, and none after 9999', () => {
    expect(fires(cron('0 9 * * *', 'America/New_York'), '1970-01-01T00:00:00Z', 2)).toEqual(['1970-01-01T14:00:00.000Z', '1970-01-02T14:00:00.000Z']);
    expect(fires(cron('0 9 * * *', 'UTC'), '9999-12-30T12:00:00Z', 3)).toEqual(['9999-12-31T09:00:00.000Z']);
  });

  it('has no upcoming time for an instant already past', () => {
    expect(upcomingFireTimes({ schedule: { kind: 'at', at: '2025-01-02T00:00:00.000Z' } }, now, 5)).toEqual([]);
  });
});

describe('cron syntax (docs/api.md)', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  const refusal = (expression: string): string[] => {
    try {
      validateSchedule(cron(expression, 'UTC'), now);
    } catch (error) {
      if (error instanceof ValidationError) return error.errors.map((e) => `${e.path}: ${e.message}`);
      throw error;
    }
    return [];
  };

  it('refuses the hash extension, which picked a different time at each evaluation, naming the field', () => {
    expect(refusal('H H * * *')).toEqual([
      expect.stringMatching(/^schedule\.expression: minute field "H": `H` \(a hashed value\) is not supported/),
      expect.stringMatching(/^schedule\.expression: hour field "H": `H`/),
    ]);
    expect(refusal('0 H(0-5)/2 * * *')).toEqual([expect.stringMatching(/hour field "H\(0-5\)\/2": `H`/)]);
    expect(refusal('0 9 * * H')).toEqual([expect.stringMatching(/day-of-week field "H": `H`/)]);
  });

  it('evaluates a job stored with `H` before it was refused the same way each time', () => {
    const stored = cron('H H * * *', 'UTC');
    const first = fires(stored, '2026-01-01T00:00:00Z', 3);
    for (let i = 0; i < 5; i++) expect(fires(stored, '2026-01-01T00:00:00Z', 3)).toEqual(first);
  });

  it('refuses `?`, `W`, nicknames, seven fields and `L` or `#` where cron-parser would misread them', () => {
    expect(refusal('0 9 ? * MON')).toEqual([expect.stringMatching(/day-of-month field "\?": `\?` is not supported; use `\*`/)]);
    expect(refusal('0 9 15W * *')).toEqual([expect.stringMatching(/day-of-month field "15W": `W`/)]);
    expect(refusal('@daily')).toEqual([expect.stringMatching(/nicknames like @daily are not supported/)]);
    expect(refusal('0 0 9 * * * *')).toEqual([expect.stringMatching(/must have five fields .*, or six with seconds first, got 7/)]);
    // cron-parser drops the last Friday from this list and fires on Mondays only.
    expect(refusal('0 9 * * 5L,1')).toEqual([expect.stringMatching(/day-of-week field "5L,1": `<day>L`/)]);
    expect(refusal('0 9 * * 1#2,3#2')).toEqual([expect.stringMatching(/day-of-week field "1#2,3#2"/)]);
    expect(refusal('L 9 * * *')).toEqual([expect.stringMatching(/minute field "L": `L` is allowed only in the day-of-month and day-of-week fields/)]);
  });

  it('names the field of a value out of range', () => {
    expect(refusal('0 24 * * *')).toEqual([expect.stringMatching(/^schedule\.expression: hour field "24": /)]);
    expect(refusal('0 9 * FOO *')).toEqual([expect.stringMatching(/^schedule\.expression: month field "FOO": /)]);
  });

  it('accepts names, ranges, lists and steps, and evaluates them the same each time', () => {
    for (const expression of [
      '*/15 9-17 * * MON-FRI',
      '5/20 0 1 JAN,JUL *',
      '0 0 1-15/7 * *',
      '0 12 * * 0-7/2',
      '0 9 L * *',
      '0 9 1,L * *',
      '0 9 * * 5L',
      '0 9 * * MON#2',
    ]) {
      expect(refusal(expression)).toEqual([]);
      expect(fires(cron(expression, 'Europe/Paris'), '2026-01-01T00:00:00Z', 5)).toEqual(fires(cron(expression, 'Europe/Paris'), '2026-01-01T00:00:00Z', 5));
    }
    expect(fires(cron('5/20 0 1 JAN *', 'UTC'), '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-01-01T00:05:00.000Z',
      '2026-01-01T00:25:00.000Z',
      '2026-01-01T00:45:00.000Z',
    ]);
  });

  it('takes `L` as the last day of the month', () => {
    expect(fires(cron('0 9 L * *', 'UTC'), '2028-01-31T12:00:00Z', 2)).toEqual(['2028-02-29T09:00:00.000Z', '2028-03-31T09:00:00.000Z']);
    expect(fires(cron('0 9 1,L * *', 'UTC'), '2026-02-01T12:00:00Z', 2)).toEqual(['2026-02-28T09:00:00.000Z', '2026-03-01T09:00:00.000Z']);
  });

  it('applies the daylight-saving rule to the `L` day of the month: 31 March 2024 in London is the spring-forward day', () => {
    // 01:00 GMT jumps to 02:00 BST (01:00Z): 01:30 does not exist that day; a fixed time fires when the gap ends.
    expect(fires(cron('30 1 L 3 *', 'Europe/London'), '2024-03-01T00:00:00Z', 2)).toEqual(['2024-03-31T01:00:00.000Z', '2025-03-31T00:30:00.000Z']);
    // A wildcard hour follows the wall clock: nothing at 01:30 that day.
    expect(fires(cron('30 * L 3 *', 'Europe/London'), '2024-03-31T00:00:00Z', 2)).toEqual(['2024-03-31T00:30:00.000Z', '2024-03-31T01:30:00.000Z']);
  });

  it('applies the daylight-saving rule to `#` days: the second Sunday of March in New York is the spring-forward day', () => {
    // 2026-03-08 is the second Sunday; 02:30 does not exist that day and fires when the gap ends.
    expect(fires(cron('30 2 * 3 SUN#2', 'America/New_York'), '2026-01-01T00:00:00Z', 2)).toEqual(['2026-03-08T07:00:00.000Z', '2027-03-14T07:00:00.000Z']);
  });

  it('applies the daylight-saving rule to `L` days: the last Sunday of October in London is the fall-back day', () => {
    // 2026-10-25: 01:30 happens at 00:30Z (BST) and 01:30Z (GMT); a fixed time fires the first time only.
    expect(fires(cron('30 1 * OCT 0L', 'Europe/London'), '2026-10-01T00:00:00Z', 2)).toEqual([
      '2026-10-25T00:30:00.000Z',
      '2027-10-31T00:30:00.000Z', // also a fall-back day
    ]);
    // A wildcard hour follows the wall clock and fires 01:30 twice.
    expect(fires(cron('30 * * OCT 7L', 'Europe/London'), '2026-10-24T23:00:00Z', 4)).toEqual([
      '2026-10-24T23:30:00.000Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T01:30:00.000Z',
      '2026-10-25T02:30:00.000Z',
    ]);
  });
});
