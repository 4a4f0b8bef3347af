import { describe, expect, it } from 'vitest';
import { ConflictError, ValidationError } from '../../lambdas/core/errors';
import { earliestBackfillFrom, earliestReleasable } from '../../lambdas/domain/retention';
import { MAX_BACKFILL_OCCURRENCES, backfillIdOf, checkBackfillRange, countFireTimes, nextFireTimes, releaseShare } from '../../lambdas/domain/backfill';

const MINUTE = 60_000;
const t0 = Date.parse('2026-03-01T00:00:00Z');
const minutely = { kind: 'cron' as const, expression: '* * * * *', timezone: 'UTC' };
const fieldsOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    if (error instanceof ValidationError) return error.errors.map((e) => `${e.path}: ${e.message}`);
    throw error;
  }
  return [];
};

describe('a backfill range', () => {
  it('holds the fire times from `from` (included) to `to` (excluded)', () => {
    expect(checkBackfillRange(minutely, t0, t0 + 10 * MINUTE, t0 + 60 * MINUTE)).toEqual({ total: 10 });
    expect(nextFireTimes(minutely, t0 - 1, t0 + 3 * MINUTE, 10)).toEqual([t0, t0 + MINUTE, t0 + 2 * MINUTE]);
    expect(countFireTimes({ ...minutely, expression: '0 * * * *' }, t0 + 1, t0 + 3 * 60 * MINUTE, 100)).toBe(2);
  });

  it('follows the DST rule of the schedule: a fall-back hour fires once for a fixed time', () => {
    // 01:30 in New York on 2026-11-01 is shown twice; a fixed-time job fires at the first.
    const daily = { kind: 'cron' as const, expression: '30 1 * * *', timezone: 'America/New_York' };
    const from = Date.parse('2026-10-31T00:00:00Z');
    expect(nextFireTimes(daily, from, Date.parse('2026-11-03T00:00:00Z'), 10).map((at) => new Date(at).toISOString())).toEqual([
      '2026-10-31T05:30:00.000Z',
      '2026-11-01T05:30:00.000Z',
      '2026-11-02T06:30:00.000Z',
    ]);
  });

  it('must end after it begins, and no later than the chain’s frontier', () => {
    expect(fieldsOf(() => checkBackfillRange(minutely, t0, t0, t0 + MINUTE))).toEqual(['to: must be after `from`']);
    expect(fieldsOf(() => checkBackfillRange(minutely, t0, t0 + 2 * MINUTE, t0 + MINUTE))[0]).toMatch(/^to: must not be after 2026-03-01T00:01:00.000Z/);
  });

  it('starts no earlier than the runs kept (RUN_RETENTION_DAYS, less a day), and anywhere when runs are kept forever', () => {
    const now = t0 + 100 * 24 * 60 * MINUTE;
    const earliest = earliestBackfillFrom(now, 30)!;
    expect(earliest).toBe(now - 29 * 24 * 60 * MINUTE);
    expect(checkBackfillRange(minutely, earliest, earliest + MINUTE, now, earliest)).toEqual({ total: 1 });
    expect(fieldsOf(() => checkBackfillRange(minutely, earliest - MINUTE, earliest + MINUTE, now, earliest))).toEqual([
      `from: must not be before ${new Date(earliest).toISOString()}: older runs leave after RUN_RETENTION_DAYS, and a backfill would run their occurrences again`,
    ]);
    expect(earliestBackfillFrom(now, 0)).toBeUndefined();
  });

  it('releases what it accepted for a day after the request, less ten minutes: only a fire time at the edge of the retention is passed over', () => {
    const now = t0 + 100 * 24 * 60 * MINUTE;
    const accepted = earliestBackfillFrom(now, 30)!;
    // Released three minutes on, and a day on less the release's ten minutes of margin: still
    // releasable (its run, had it run, is still kept).
    expect(accepted).toBeGreaterThanOrEqual(earliestReleasable(now + 3 * MINUTE, 30)!);
    expect(accepted).toBeGreaterThanOrEqual(earliestReleasable(now + 24 * 60 * MINUTE - 10 * MINUTE, 30)!);
    expect(accepted).toBeLessThan(earliestReleasable(now + 24 * 60 * MINUTE - 9 * MINUTE, 30)!);
    // Past the retention itself (a backfill paused that long): passed over.
    expect(accepted).toBeLessThan(earliestReleasable(now + 25 * 60 * MINUTE, 30)!);
    expect(earliestReleasable(now, 0)).toBeUndefined();
  });

  it('is refused past the maximum, which a leap year of minutely fire times reaches exactly', () => {
    const yearOfMinutes = t0 + MAX_BACKFILL_OCCURRENCES * MINUTE;
    expect(checkBackfillRange(minutely, t0, yearOfMinutes, Infinity)).toEqual({ total: MAX_BACKFILL_OCCURRENCES });
    expect(fieldsOf(() => checkBackfillRange(minutely, t0, yearOfMinutes + MINUTE, Infinity))[0]).toMatch(/more than 527040 fire times/);
  });

  it('is only for recurring schedules: cron and intervals', () => {
    expect(() => checkBackfillRange({ kind: 'now' }, t0, t0 + MINUTE, Infinity)).toThrow(ConflictError);
    expect(() => checkBackfillRange({ kind: 'at', at: new Date(t0).toISOString() }, t0, t0 + MINUTE, Infinity)).toThrow(ConflictError);
    const everyFiveMinutes = { kind: 'every' as const, interval: 'PT5M', anchor: new Date(t0).toISOString(), timezone: 'UTC' };
    expect(checkBackfillRange(everyFiveMinutes, t0, t0 + 30 * MINUTE, Infinity)).toEqual({ total: 6 });
  });

  it('has an id of its job and range alone, so the same request finds the same backfill', () => {
    expect(backfillIdOf('job-1', t0, t0 + MINUTE)).toBe(backfillIdOf('job-1', t0, t0 + MINUTE));
    expect(backfillIdOf('job-1', t0, t0 + MINUTE)).not.toBe(backfillIdOf('job-1', t0, t0 + 2 * MINUTE));
    expect(backfillIdOf('job-1', t0, t0 + MINUTE)).not.toBe(backfillIdOf('job-2', t0, t0 + MINUTE));
  });
});

describe('the release budget of a tick', () => {
  it('is split evenly among the active backfills, at least one each', () => {
    expect(releaseShare(1200, 1)).toBe(1200);
    expect(releaseShare(1200, 7)).toBe(171);
    expect(releaseShare(5, 9)).toBe(1);
    expect(releaseShare(5, 0)).toBe(0);
  });
});
