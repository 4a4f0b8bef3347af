import { describe, expect, it } from 'vitest';
import {
  checkBackAt,
  checkLease,
  firstCheckAt,
  LEASE_CHECK_SLACK_MS,
  leaseCheckAt,
  minuteBuckets,
  placeRun,
  queuedCheck,
  shardOf,
} from '../../lambdas/domain/time-gate';
import { delaySecondsUntil } from '../../lambdas/store/dispatch-queue';
import { gateKeyOf } from '../../lambdas/store/keys';

const settings = { nearHorizonSeconds: 840, redeliveryGraceSeconds: 300, timeIndexShards: 8, leaseMarginSeconds: 30 };
const now = Date.parse('2026-01-01T00:00:00Z');

describe('time gate', () => {
  it('queues a run due within the near horizon, its first check-back where a lease taken when it came due would put its own (decision 0170)', () => {
    expect(placeRun(now + 60_000, now, settings)).toEqual({ status: 'QUEUED', gateAt: leaseCheckAt(now + 60_000, settings) });
    expect(placeRun(now + 60_000, now, settings)).toEqual({ status: 'QUEUED', gateAt: now + 60_000 + 31_000 + LEASE_CHECK_SLACK_MS });
    expect(placeRun(now + 840_000, now, settings).status).toBe('QUEUED');
    expect(firstCheckAt(now - 10_000, now, settings)).toBe(leaseCheckAt(now, settings));
  });

  it("at a queued run's check-back, waits out the grace from when it was queued or came due, then takes its message as lost", () => {
    const queued = { availableAt: new Date(now).toISOString(), enqueuedAt: new Date(now).toISOString() };
    expect(queuedCheck(queued, now + 32_000, settings)).toEqual({ kind: 'early', checkAt: now + 300_000 });
    expect(queuedCheck(queued, now + 300_000, settings)).toEqual({ kind: 'lost' });
    // Released by the ticker later than it came due: the grace runs from the release.
    const releasedLate = { availableAt: new Date(now).toISOString(), enqueuedAt: new Date(now + 120_000).toISOString() };
    expect(queuedCheck(releasedLate, now + 300_000, settings)).toEqual({ kind: 'early', checkAt: now + 420_000 });
    // Delayed: the grace runs from its time.
    expect(queuedCheck({ availableAt: new Date(now + 60_000).toISOString(), enqueuedAt: new Date(now).toISOString() }, now + 92_000, settings)).toEqual({
      kind: 'early',
      checkAt: now + 360_000,
    });
    expect(queuedCheck({ availableAt: new Date(now).toISOString(), enqueuedAt: null }, now + 300_001, settings)).toEqual({ kind: 'lost' });
  });

  it('keeps a run due later in the time index at its due time', () => {
    expect(placeRun(now + 841_000, now, settings)).toEqual({ status: 'SCHEDULED', gateAt: now + 841_000 });
  });

  it('checks back after the grace from now for a run already overdue (a run given back, a message sent again)', () => {
    expect(checkBackAt(now - 10_000, now, settings)).toBe(now + 300_000);
  });

  it('releases a message at most a second early (the worker waits out the rest), within SQS limits', () => {
    expect(delaySecondsUntil(now + 1_500, now)).toBe(1);
    expect(delaySecondsUntil(now + 999, now)).toBe(0);
    expect(delaySecondsUntil(now - 5_000, now)).toBe(0);
    expect(delaySecondsUntil(now + 2_000_000, now)).toBe(900);
  });

  it('spreads runs over shards and names the minute bucket', () => {
    const counts = new Array<number>(8).fill(0);
    for (let i = 0; i < 8000; i++) counts[shardOf(`job_x.${i.toString(36)}.1`, 8)]! += 1;
    for (const count of counts) expect(count).toBeGreaterThan(800);
    expect(gateKeyOf('2026-01-01T10:42:31.123Z', 3)).toBe('2026-01-01T10:42#003');
  });

  it('lists every minute bucket between two instants', () => {
    expect(minuteBuckets(now + 30_000, now + 150_000)).toEqual([now, now + 60_000, now + 120_000]);
  });
});

describe('lease check-backs', () => {
  const leasedAt = Date.parse('2026-01-01T00:00:00Z');
  const running = (leaseExpiresAt: string | null) => ({ status: 'RUNNING', leaseExpiresAt });

  it("puts a fresh lease's check-back at the end of the shortest lease, never after its own end", () => {
    // The shortest lease: a 1 s timeout plus the margin; then the slack.
    expect(leaseCheckAt(leasedAt, { leaseMarginSeconds: 30 })).toBe(leasedAt + 31_000 + LEASE_CHECK_SLACK_MS);
    expect(leaseCheckAt(leasedAt, { leaseMarginSeconds: 0 })).toBe(leasedAt + 1_000 + LEASE_CHECK_SLACK_MS);
  });

  it('moves the check-back of a live lease (heartbeats extended it) to just after its end', () => {
    const end = leasedAt + 90_000;
    expect(checkLease(running(new Date(end).toISOString()), leasedAt + 31_000)).toEqual({ kind: 'live', checkAt: end + LEASE_CHECK_SLACK_MS });
    // Within the slack after the end the lease still counts as live: a beat just in time is not raced.
    expect(checkLease(running(new Date(end).toISOString()), end + LEASE_CHECK_SLACK_MS - 1)).toEqual({ kind: 'live', checkAt: end + LEASE_CHECK_SLACK_MS });
  });

  it('finds a lease lapsed once its end and the slack have passed', () => {
    const end = leasedAt + 35_000;
    expect(checkLease(running(new Date(end).toISOString()), end + LEASE_CHECK_SLACK_MS)).toEqual({ kind: 'lapsed' });
    expect(checkLease(running(null), leasedAt)).toEqual({ kind: 'lapsed' });
  });

  it('leaves alone a run that is no longer running (finished, cancelled, given back) or gone', () => {
    for (const status of ['SUCCEEDED', 'FAILED', 'DEAD', 'CANCELLED', 'SKIPPED', 'QUEUED']) {
      expect(checkLease({ status, leaseExpiresAt: null }, leasedAt)).toEqual({ kind: 'gone' });
    }
    expect(checkLease(undefined, leasedAt)).toEqual({ kind: 'gone' });
  });
});
