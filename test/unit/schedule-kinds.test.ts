// Issue 19's schedules: seconds in cron, intervals, jitter, ends after N occurrences, excluded
// dates and skipped occurrences, each across daylight saving where the zone matters.
import { describe, expect, it, vi } from 'vitest';
import { ValidationError } from '../../lambdas/core/errors';
import type { Schedule } from '../../lambdas/domain/job';
import { decideStart, occurrenceOnResume } from '../../lambdas/domain/recurrence';
import type { Timetable } from '../../lambdas/domain/schedule';
import type { CronSchedule, EverySchedule } from '../../lambdas/domain/schedule-series';
import {
  fireTimes,
  firstFireTime,
  jitterMsOf,
  sameSchedule,
  settleLike,
  settleSchedule,
  startOf,
  upcomingOccurrences,
  validateSchedule,
} from '../../lambdas/domain/schedule';
import { intervalMs, lastOccurrenceOf, seriesFireTimes } from '../../lambdas/domain/schedule-series';

const iso = (ms: number): string => new Date(ms).toISOString();
const at = Date.parse;
const cron = (expression: string, timezone = 'UTC', extra: Partial<CronSchedule> = {}): CronSchedule => ({ kind: 'cron', expression, timezone, ...extra });
const every = (interval: string, anchor: string, extra: Partial<EverySchedule> = {}): EverySchedule => ({
  kind: 'every',
  interval,
  anchor,
  timezone: 'UTC',
  ...extra,
});
const fires = (timetable: Timetable | Schedule, from: string, count: number): string[] =>
  fireTimes('schedule' in timetable ? timetable : { schedule: timetable }, at(from), count).map(iso);
const refusal = (schedule: Schedule, now = at('2026-01-01T00:00:00Z')): string[] => {
  try {
    validateSchedule(schedule, now);
    return [];
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return error.errors.map((e) => `${e.path}: ${e.message}`);
  }
};

describe('cron with seconds (six fields, seconds first)', () => {
  it('fires every ten seconds, and on a second within a minute', () => {
    expect(fires(cron('*/10 * * * * *'), '2026-01-01T00:00:55Z', 3)).toEqual([
      '2026-01-01T00:01:00.000Z',
      '2026-01-01T00:01:10.000Z',
      '2026-01-01T00:01:20.000Z',
    ]);
    expect(fires(cron('30 0 9 * * MON-FRI', 'Europe/Paris'), '2026-01-02T09:00:00Z', 2)).toEqual(['2026-01-05T08:00:30.000Z', '2026-01-06T08:00:30.000Z']);
  });

  it('starts strictly after the instant, within a minute', () => {
    expect(fires(cron('15,45 * * * * *'), '2026-01-01T00:00:15Z', 2)).toEqual(['2026-01-01T00:00:45.000Z', '2026-01-01T00:01:15.000Z']);
    expect(fires(cron('15,45 * * * * *'), '2026-01-01T00:00:15.500Z', 1)).toEqual(['2026-01-01T00:00:45.000Z']);
  });

  it('New York spring forward: a wildcard minute skips the gap; a fixed time fires once when it ends', () => {
    // 2026-03-08 02:00 EST jumps to 03:00 EDT (07:00Z).
    expect(fires(cron('*/20 59 1 * * *', 'America/New_York'), '2026-03-08T06:58:00Z', 4)).toEqual([
      '2026-03-08T06:59:00.000Z',
      '2026-03-08T06:59:20.000Z',
      '2026-03-08T06:59:40.000Z',
      '2026-03-09T05:59:00.000Z',
    ]);
    expect(fires(cron('*/30 * 2 * * *', 'America/New_York'), '2026-03-08T06:59:00Z', 1)).toEqual(['2026-03-09T06:00:00.000Z']);
    expect(fires(cron('30 30 2 * * *', 'America/New_York'), '2026-03-07T12:00:00Z', 2)).toEqual(['2026-03-08T07:00:00.000Z', '2026-03-09T06:30:30.000Z']);
  });

  it('New York fall back: a wildcard second fires the repeated minute twice; a fixed time once', () => {
    // 2026-11-01 01:30 happens at 05:30Z (EDT) and 06:30Z (EST).
    expect(fires(cron('*/30 30 1 * * *', 'America/New_York'), '2026-11-01T05:00:00Z', 4)).toEqual([
      '2026-11-01T05:30:00.000Z',
      '2026-11-01T05:30:30.000Z',
      '2026-11-01T06:30:00.000Z',
      '2026-11-01T06:30:30.000Z',
    ]);
    expect(fires(cron('15 30 1 * * *', 'America/New_York'), '2026-11-01T05:00:00Z', 2)).toEqual(['2026-11-01T05:30:15.000Z', '2026-11-02T06:30:15.000Z']);
    expect(fires(cron('0,30 30 1 * * *', 'America/New_York'), '2026-11-01T05:00:00Z', 3)).toEqual([
      '2026-11-01T05:30:00.000Z',
      '2026-11-01T05:30:30.000Z',
      '2026-11-02T06:30:00.000Z',
    ]);
  });

  it('Lord Howe: the half-hour gap and the half-hour repeat', () => {
    // 2026-10-04 02:00 +10:30 jumps to 02:30 +11:00 (15:30Z on the 3rd): 02:15:10 does not exist.
    expect(fires(cron('10 15 * * * *', 'Australia/Lord_Howe'), '2026-10-03T15:00:00Z', 2)).toEqual(['2026-10-03T16:15:10.000Z', '2026-10-03T17:15:10.000Z']);
    expect(fires(cron('10 15 2 * * *', 'Australia/Lord_Howe'), '2026-10-03T12:00:00Z', 1)).toEqual(['2026-10-03T15:30:00.000Z']);
    // 2026-04-05 02:00 +11:00 falls back to 01:30 +10:30: 01:45:00 happens at 14:45Z and 15:15Z.
    expect(fires(cron('0 45 * * * *', 'Australia/Lord_Howe'), '2026-04-04T14:30:00Z', 2)).toEqual(['2026-04-04T14:45:00.000Z', '2026-04-04T15:15:00.000Z']);
  });

  it('Santiago (southern hemisphere): midnight skipped in September, repeated in April', () => {
    // 2026-09-06 00:00 -04 jumps to 01:00 -03 (04:00Z); 2026-04-05 00:00 -03 falls back to 23:00 -04 (03:00Z).
    expect(fires(cron('0 30 0 * * *', 'America/Santiago'), '2026-09-05T12:00:00Z', 2)).toEqual(['2026-09-06T04:00:00.000Z', '2026-09-07T03:30:00.000Z']);
    expect(fires(cron('0 */30 23 * * *', 'America/Santiago'), '2026-04-05T01:00:00Z', 4)).toEqual([
      '2026-04-05T02:00:00.000Z',
      '2026-04-05T02:30:00.000Z',
      '2026-04-05T03:00:00.000Z',
      '2026-04-05T03:30:00.000Z',
    ]);
  });

  it('refuses a seventh field, a second out of range, and H in the seconds field, naming it', () => {
    expect(refusal(cron('0 0 9 * * * *'))).toEqual([expect.stringMatching(/or six with seconds first, got 7/)]);
    expect(refusal(cron('60 * * * * *'))).toEqual([expect.stringMatching(/^schedule\.expression: second field "60"/)]);
    expect(refusal(cron('H * * * * *'))).toEqual([expect.stringMatching(/second field "H": `H`/)]);
  });
});

describe('intervals', () => {
  it('reads ISO 8601 durations from a second to 366 days', () => {
    expect(intervalMs('PT1S')).toBe(1000);
    expect(intervalMs('PT15M')).toBe(900_000);
    expect(intervalMs('P1DT12H')).toBe(36 * 3_600_000);
    expect(intervalMs('P1W')).toBe(7 * 86_400_000);
    expect(intervalMs('P366D')).toBe(366 * 86_400_000);
  });

  it('refuses months and years, fractions, negatives, nothing and out-of-range lengths, with the reason', () => {
    const message = (interval: string): string => refusal(every(interval, '2026-01-01T00:00:00Z')).join(' ');
    expect(message('P1M')).toMatch(/schedule\.interval: must not use years or months/);
    expect(message('P1Y')).toMatch(/years or months/);
    expect(message('PT1.5S')).toMatch(/whole number of seconds/);
    expect(message('-PT1M')).toMatch(/must not be negative/);
    expect(message('PT0S')).toMatch(/from 1 second/);
    expect(message('P367D')).toMatch(/to 366 days/);
    expect(message('15 minutes')).toMatch(/ISO 8601 duration/);
  });

  it('fires at anchor + k × interval: a future anchor first, then every interval, never before it', () => {
    expect(fires(every('PT15M', '2026-01-01T10:07:00Z'), '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-01-01T10:07:00.000Z',
      '2026-01-01T10:22:00.000Z',
      '2026-01-01T10:37:00.000Z',
    ]);
    // A past anchor: the next multiple after now, on the anchor's phase (it does not drift).
    expect(fires(every('PT15M', '2026-01-01T10:07:00Z'), '2026-01-02T00:00:00Z', 2)).toEqual(['2026-01-02T00:07:00.000Z', '2026-01-02T00:22:00.000Z']);
    expect(fires(every('PT15M', '2026-01-01T10:07:00Z'), '2026-01-02T00:07:00Z', 1)).toEqual(['2026-01-02T00:22:00.000Z']);
  });

  it('are instants: daylight saving neither skips nor repeats them (New York, Lord Howe, Sydney)', () => {
    // New York's fall-back day is 25 hours long: an hourly interval fires 25 times in it.
    const ny = fireTimes({ schedule: every('PT1H', '2026-11-01T04:00:00Z', { timezone: 'America/New_York' }) }, at('2026-11-01T03:59:59Z'), 30);
    expect(ny.filter((t) => t < at('2026-11-02T05:00:00Z'))).toHaveLength(25);
    for (let i = 1; i < ny.length; i++) expect((ny[i] ?? 0) - (ny[i - 1] ?? 0)).toBe(3_600_000);
    // Lord Howe's spring-forward day is 23.5 hours long: a 30-minute interval still fires every 30 minutes across 02:00.
    expect(fires(every('PT30M', '2026-10-03T14:30:00Z', { timezone: 'Australia/Lord_Howe' }), '2026-10-03T14:59:00Z', 3)).toEqual([
      '2026-10-03T15:00:00.000Z',
      '2026-10-03T15:30:00.000Z',
      '2026-10-03T16:00:00.000Z',
    ]);
    // Sydney: a daily interval is 24 hours, so its wall time moves by the shift (08:00 AEST becomes 09:00 AEDT).
    expect(fires(every('P1D', '2026-10-02T22:00:00Z', { timezone: 'Australia/Sydney' }), '2026-10-02T21:00:00Z', 3)).toEqual([
      '2026-10-02T22:00:00.000Z',
      '2026-10-03T22:00:00.000Z',
      '2026-10-04T22:00:00.000Z',
    ]);
  });

  it('keep to endAt', () => {
    expect(fires(every('PT1H', '2026-01-01T00:00:00Z', { endAt: '2026-01-01T02:00:00Z' }), '2025-12-31T00:00:00Z', 5)).toEqual([
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T01:00:00.000Z',
      '2026-01-01T02:00:00.000Z',
    ]);
  });
});

describe('settling a schedule when it is set', () => {
  const now = at('2026-05-05T10:11:12.345Z');
  it("anchors an interval at its first fire time (one interval on), and starts a counted cron's count at the next whole second; leaves given ones alone", () => {
    expect(settleSchedule({ kind: 'every', interval: 'PT1H', timezone: 'UTC' }, now)).toMatchObject({ anchor: '2026-05-05T11:11:12.345Z' });
    expect(settleSchedule(every('PT1H', '2026-01-01T00:00:00Z'), now).anchor).toBe('2026-01-01T00:00:00Z');
    expect(settleSchedule(cron('0 9 * * *', 'UTC', { maxOccurrences: 3 }), now).startAt).toBe('2026-05-05T10:11:13.000Z');
    expect(settleSchedule(cron('0 9 * * *'), now).startAt).toBeUndefined();
  });

  it('fires maxOccurrences times when the count starts as the schedule is set, and takes maxOccurrences: 1', () => {
    const at = Date.parse('2026-05-05T10:00:00.000Z');
    const all = (schedule: Schedule): string[] => fireTimes({ schedule: settleSchedule(schedule, at) }, at, 10).map((t) => new Date(t).toISOString());
    expect(all({ kind: 'every', interval: 'PT1H', timezone: 'UTC', maxOccurrences: 3 })).toEqual([
      '2026-05-05T11:00:00.000Z',
      '2026-05-05T12:00:00.000Z',
      '2026-05-05T13:00:00.000Z',
    ]);
    // Set on a fire instant: the count starts at the first one that can still fire.
    expect(all(cron('0 * * * *', 'UTC', { maxOccurrences: 2 }))).toEqual(['2026-05-05T11:00:00.000Z', '2026-05-05T12:00:00.000Z']);
    expect(() => validateSchedule({ kind: 'every', interval: 'PT1H', timezone: 'UTC', maxOccurrences: 1 }, at)).not.toThrow();
    expect(all({ kind: 'every', interval: 'PT1H', timezone: 'UTC', maxOccurrences: 1 })).toEqual(['2026-05-05T11:00:00.000Z']);
  });

  it('sorts excluded dates and keeps each once; the same schedule in any field order is the same', () => {
    expect(settleSchedule(cron('0 9 * * *', 'UTC', { excludeDates: ['2026-12-25', '2026-01-01', '2026-12-25'] }), now).excludeDates).toEqual([
      '2026-01-01',
      '2026-12-25',
    ]);
    expect(
      sameSchedule({ kind: 'every', interval: 'PT1H', anchor: 'x', timezone: 'UTC' }, { timezone: 'UTC', anchor: 'x', interval: 'PT1H', kind: 'every' }),
    ).toBe(true);
    expect(sameSchedule(every('PT1H', 'x'), every('PT2H', 'x'))).toBe(false);
  });

  it('keeps the stored anchor (or counted start) for the same schedule sent again without it', () => {
    const stored = settleSchedule<EverySchedule>({ kind: 'every', interval: 'PT1H', timezone: 'UTC' }, now);
    const again = settleLike({ kind: 'every', interval: 'PT1H', timezone: 'UTC' }, stored);
    expect(sameSchedule(again, stored)).toBe(true);
    // A new interval sent without an anchor keeps the stored anchor's phase too.
    expect(settleLike({ kind: 'every', interval: 'PT2H', timezone: 'UTC' }, stored)).toMatchObject({ anchor: stored.anchor });
    const counted = settleSchedule(cron('0 9 * * *', 'UTC', { maxOccurrences: 3 }), now);
    expect(sameSchedule(settleLike(cron('0 9 * * *', 'UTC', { maxOccurrences: 3 }), counted), counted)).toBe(true);
    expect(settleLike(cron('0 9 * * *'), counted).startAt).toBeUndefined();
  });
});

describe('ends after N occurrences', () => {
  it('fires maxOccurrences times from startAt (cron) or the anchor (every), then never', () => {
    const counted = cron('0 9 * * *', 'America/New_York', { startAt: '2026-03-06T00:00:00Z', maxOccurrences: 3 });
    expect(fires(counted, '2026-01-01T00:00:00Z', 10)).toEqual(['2026-03-06T14:00:00.000Z', '2026-03-07T14:00:00.000Z', '2026-03-08T13:00:00.000Z']);
    expect(lastOccurrenceOf(counted)).toBe(at('2026-03-08T13:00:00Z'));
    expect(fires(every('PT10S', '2026-01-01T00:00:00Z', { maxOccurrences: 2 }), '2025-01-01T00:00:00Z', 5)).toEqual([
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:00:10.000Z',
    ]);
  });

  it('counts skipped and excluded occurrences (RFC 5545 counts COUNT before EXDATE)', () => {
    const schedule = cron('0 9 * * *', 'UTC', { startAt: '2026-01-01T00:00:00Z', maxOccurrences: 3, excludeDates: ['2026-01-02'] });
    expect(fires({ schedule, skippedOccurrences: ['2026-01-03T09:00:00.000Z'] }, '2025-12-31T00:00:00Z', 5)).toEqual(['2026-01-01T09:00:00.000Z']);
  });

  it('ends at whichever of endAt and the count comes first', () => {
    expect(fires(every('P1D', '2026-01-01T00:00:00Z', { maxOccurrences: 10, endAt: '2026-01-02T12:00:00Z' }), '2025-01-01T00:00:00Z', 20)).toHaveLength(2);
  });

  it('counts a hundred thousand fire times of a second-by-second cron (measured in bench:cron)', () => {
    const schedule = cron('* * * * * *', 'UTC', { startAt: '2026-01-01T00:00:00Z', maxOccurrences: 100_000 });
    expect(iso(lastOccurrenceOf(schedule))).toBe(iso(at('2026-01-01T00:00:00Z') + 99_999_000));
  });

  it('refuses a count whose occurrences are all past', () => {
    expect(refusal(cron('0 9 * * *', 'UTC', { startAt: '2025-01-01T00:00:00Z', maxOccurrences: 2 }))).toEqual([
      'schedule.maxOccurrences: all 2 occurrences are before now, so the schedule would never fire',
    ]);
  });
});

describe('excluded dates', () => {
  it("skip every fire time on those days in the schedule's zone, not in UTC", () => {
    // 2026-12-25 in New York runs from 05:00Z on the 25th to 05:00Z on the 26th.
    const schedule = cron('0 */6 * * *', 'America/New_York', { excludeDates: ['2026-12-25'] });
    expect(fires(schedule, '2026-12-24T22:00:00Z', 4)).toEqual([
      '2026-12-24T23:00:00.000Z', // 18:00 on the 24th
      '2026-12-26T05:00:00.000Z', // 00:00 on the 26th
      '2026-12-26T11:00:00.000Z',
      '2026-12-26T17:00:00.000Z',
    ]);
  });

  it('step over a run of excluded days, also for seconds and intervals', () => {
    const dates = Array.from({ length: 40 }, (_, i) => iso(at('2026-01-01T00:00:00Z') + i * 86_400_000).slice(0, 10));
    expect(fires(cron('* * * * * *', 'UTC', { excludeDates: dates }), '2025-12-31T23:59:58Z', 3)).toEqual([
      '2025-12-31T23:59:59.000Z',
      '2026-02-10T00:00:00.000Z',
      '2026-02-10T00:00:01.000Z',
    ]);
    // Lord Howe is at +11:00 in January: 14:00Z on the 1st is 01:00 on the 2nd.
    expect(fires(every('PT7H', '2026-01-01T00:00:00Z', { timezone: 'Australia/Lord_Howe', excludeDates: ['2026-01-02'] }), '2026-01-01T06:00:00Z', 3)).toEqual([
      '2026-01-01T07:00:00.000Z', // 18:00 on the 1st
      '2026-01-02T18:00:00.000Z', // 05:00 on the 3rd (four fire times on the 2nd passed over)
      '2026-01-03T01:00:00.000Z',
    ]);
  });

  it('refuse a schedule whose every fire time is excluded, naming excludeDates', () => {
    expect(refusal(cron('0 9 1 1 *', 'UTC', { startAt: '2026-01-01T00:00:00Z', endAt: '2026-06-01T00:00:00Z', excludeDates: ['2026-01-01'] }))).toEqual([
      'schedule.excludeDates: exclude every date the schedule fires on',
    ]);
  });
});

describe('skipped occurrences', () => {
  it('are passed over by the chain and by the misfire policies', () => {
    const timetable = { schedule: cron('0 9 * * *'), skippedOccurrences: ['2026-01-02T09:00:00.000Z'] };
    expect(fires(timetable, '2026-01-01T09:00:00Z', 2)).toEqual(['2026-01-03T09:00:00.000Z', '2026-01-04T09:00:00.000Z']);
    const job = { ...timetable, misfirePolicy: 'fire-once' as const, backfillLimit: 10 };
    expect(decideStart(job, { scheduledFor: at('2026-01-01T09:00:00Z'), startedAt: at('2026-01-01T09:00:01Z') }).successor).toEqual({
      scheduledFor: at('2026-01-03T09:00:00Z'),
    });
    expect(occurrenceOnResume(job, null, at('2026-01-01T12:00:00Z'))).toEqual({ scheduledFor: at('2026-01-03T09:00:00Z'), reason: null });
  });

  it('show in the preview, marked, beside the excluded ones', () => {
    const timetable = { schedule: cron('0 9 * * *', 'UTC', { excludeDates: ['2026-01-04'] }), skippedOccurrences: ['2026-01-02T09:00:00.000Z'] };
    expect(upcomingOccurrences(timetable, at('2026-01-01T10:00:00Z'), 4, null)).toEqual([
      { at: '2026-01-02T09:00:00.000Z', startsAt: null, skipped: 'skipped on request' },
      { at: '2026-01-03T09:00:00.000Z', startsAt: '2026-01-03T09:00:00.000Z', skipped: null },
      { at: '2026-01-04T09:00:00.000Z', startsAt: null, skipped: 'excluded date' },
      { at: '2026-01-05T09:00:00.000Z', startsAt: '2026-01-05T09:00:00.000Z', skipped: null },
    ]);
  });
});

describe('jitter', () => {
  const schedule = cron('*/10 * * * *', 'UTC', { jitterSeconds: 120 });
  const fireTime = at('2026-01-01T00:10:00Z');

  it('delays each occurrence by [0, jitter), the same at every evaluation, and never starts early', () => {
    const delays = fireTimes({ schedule }, at('2026-01-01T00:00:00Z'), 500).map((t) => jitterMsOf('job_a', schedule, t));
    for (const delay of delays) expect(delay >= 0 && delay < 120_000).toBe(true);
    expect(new Set(delays).size).toBeGreaterThan(400);
    expect(jitterMsOf('job_a', schedule, fireTime)).toBe(jitterMsOf('job_a', schedule, fireTime));
    expect(startOf('job_a', schedule, fireTime)).toBeGreaterThanOrEqual(fireTime);
  });

  it('differs between jobs and occurrences, and spreads over the whole window', () => {
    const delays = Array.from({ length: 1000 }, (_, i) => jitterMsOf(`job_${i}`, schedule, fireTime));
    expect(Math.min(...delays)).toBeLessThan(12_000);
    expect(Math.max(...delays)).toBeGreaterThan(108_000);
  });

  it('is none without jitterSeconds and for one-shot schedules', () => {
    expect(jitterMsOf('job_a', cron('*/10 * * * *'), fireTime)).toBe(0);
    expect(jitterMsOf('job_a', { kind: 'at', at: iso(fireTime) }, fireTime)).toBe(0);
  });

  it("shows in the preview as the nominal and the jittered start, given the job's id", () => {
    const [first] = upcomingOccurrences({ schedule }, at('2026-01-01T00:05:00Z'), 1, 'job_a');
    expect(first).toEqual({ at: '2026-01-01T00:10:00.000Z', startsAt: iso(startOf('job_a', schedule, fireTime)), skipped: null });
    expect(upcomingOccurrences({ schedule }, at('2026-01-01T00:05:00Z'), 1, null)[0]?.startsAt).toBeNull();
  });

  it('is measured from the jittered start by the misfire policy: a jittered start is not late', () => {
    const job = { schedule: every('PT1H', '2026-01-01T00:00:00Z', { jitterSeconds: 3000 }), misfirePolicy: 'skip' as const, backfillLimit: 10 };
    const start = at('2026-01-01T01:00:00Z');
    expect(decideStart(job, { scheduledFor: start, dueAt: start + 2_900_000, startedAt: start + 2_900_500 }).execute).toBe(true);
    expect(decideStart(job, { scheduledFor: start, dueAt: start + 2_900_000, startedAt: start + 2_900_000 + 61_000 }).execute).toBe(false);
  });

  it('must be less than the shortest time between fire times', () => {
    expect(refusal(cron('*/10 * * * * *', 'UTC', { jitterSeconds: 10 }))).toEqual([
      'schedule.jitterSeconds: must be less than the shortest time between fire times (10 s), or an occurrence could start after the next one',
    ]);
    expect(refusal(cron('*/10 * * * * *', 'UTC', { jitterSeconds: 9 }))).toEqual([]);
    expect(refusal(every('PT1M', '2026-01-01T00:00:00Z', { jitterSeconds: 60 }))).toEqual([expect.stringMatching(/jitterSeconds: .*\(60 s\)/)]);
    // 0 9,10 * * *: the shortest gap is one hour, not a day.
    expect(refusal(cron('0 9,10 * * *', 'UTC', { jitterSeconds: 3600 }))).toEqual([expect.stringMatching(/\(3600 s\)/)]);
  });

  it('is checked against the gaps a daylight-saving change shortens, however far in the coming year', () => {
    // Santiago skips midnight in September: 23:00 to 01:00 is an hour that night, two otherwise.
    // Seven fire times a day: the next 1,000 end before it. Before, this was accepted in April.
    const santiago = cron('0 1,5,9,13,17,21,23 * * *', 'America/Santiago', { jitterSeconds: 5400 });
    expect(refusal(santiago, at('2026-04-10T00:00:00Z'))).toEqual([expect.stringMatching(/^schedule\.jitterSeconds: .*\(3600 s\)/)]);
    expect(refusal({ ...santiago, jitterSeconds: 3000 }, at('2026-04-10T00:00:00Z'))).toEqual([]);
  });

  it('is refused or taken the same whatever the time of day it is set: a dense expression is sampled at the change itself', () => {
    // Every two minutes: New York's spring change makes 01:59 to 03:01 one minute. 1,000 fire times
    // from two days before the change stop before it.
    const dense = cron('1-59/2 0-23 * * *', 'America/New_York', { jitterSeconds: 90 });
    for (const when of ['2026-01-10T20:00:00Z', '2026-01-10T03:00:00Z', '2026-03-07T20:00:00Z']) {
      expect(refusal(dense, at(when)), when).toEqual([expect.stringMatching(/^schedule\.jitterSeconds: .*\(60 s\)/)]);
    }
    expect(refusal({ ...dense, jitterSeconds: 59 }, at('2026-01-10T20:00:00Z'))).toEqual([]);
  });
});

describe('the first occurrence of a new schedule', () => {
  it('is the first fire time after now that fires', () => {
    const now = at('2026-01-01T09:00:00Z');
    expect(firstFireTime({ schedule: every('PT1H', '2026-01-01T09:00:00Z') }, now)).toBe(at('2026-01-01T10:00:00Z'));
    expect(firstFireTime({ schedule: every('PT1H', '2026-01-01T09:00:00.001Z') }, now)).toBe(at('2026-01-01T09:00:00.001Z'));
    expect(seriesFireTimes(cron('0 0 9 * * *', 'UTC', { excludeDates: ['2026-01-02'] }), now, 1)).toEqual([at('2026-01-02T09:00:00Z')]);
    expect(firstFireTime({ schedule: cron('0 0 9 * * *', 'UTC', { excludeDates: ['2026-01-02'] }) }, now)).toBe(at('2026-01-03T09:00:00Z'));
  });
});

describe('the work of an evaluation (issue 24 item 5)', () => {
  /** Intl reads one evaluation makes: the cost that made dense cron 100-400 ms before decision 0071. */
  const intlReads = (schedule: Schedule, from: string, count: number): number => {
    const reads = vi.spyOn(Intl.DateTimeFormat.prototype, 'formatToParts');
    try {
      fireTimes({ schedule }, at(from), count);
      return reads.mock.calls.length;
    } finally {
      reads.mockRestore();
    }
  };

  it('reads the zone a few times per day spanned and per transition, not per wall time', () => {
    // The walk of 26 hours of wall time made thousands of reads for the first of these.
    expect(intlReads(cron('* * * * *', 'America/New_York'), '2026-01-01T00:00:00Z', 5)).toBeLessThanOrEqual(20);
    expect(intlReads(cron('* * * * *', 'America/New_York'), '2026-01-01T00:00:00Z', 100)).toBeLessThanOrEqual(20);
    expect(intlReads(cron('*/10 * * * * *', 'Europe/Paris'), '2026-01-01T00:00:00Z', 100)).toBeLessThanOrEqual(20);
    // Sparse and daylight-saving-crossing ones: a few reads per match and about 26 per transition.
    expect(intlReads(cron('0 9 * * MON', 'Europe/Paris'), '2026-01-01T00:00:00Z', 5)).toBeLessThanOrEqual(60);
    expect(intlReads(cron('30 2 * * *', 'America/New_York'), '2026-03-07T00:00:00Z', 5)).toBeLessThanOrEqual(60);
    expect(intlReads(cron('0 0 1 1 *', 'Australia/Lord_Howe'), '2026-01-01T00:00:00Z', 5)).toBeLessThanOrEqual(60);
  });
});
