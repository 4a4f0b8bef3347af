import { describe, expect, it } from 'vitest';
import { checkBackAt, minuteBuckets, placeRun, shardOf } from '../../lambdas/domain/time-gate';
import { delaySecondsUntil } from '../../lambdas/store/dispatch-queue';
import { gateKeyOf } from '../../lambdas/store/keys';

const settings = { nearHorizonSeconds: 840, redeliveryGraceSeconds: 300, timeIndexShards: 8 };
const now = Date.parse('2026-01-01T00:00:00Z');

describe('time gate', () => {
  it('queues a run due within the near horizon, with a check-back after the grace', () => {
    expect(placeRun(now + 60_000, now, settings)).toEqual({ status: 'QUEUED', gateAt: now + 60_000 + 300_000 });
    expect(placeRun(now + 840_000, now, settings).status).toBe('QUEUED');
  });

  it('keeps a run due later in the time index at its due time', () => {
    expect(placeRun(now + 841_000, now, settings)).toEqual({ status: 'SCHEDULED', gateAt: now + 841_000 });
  });

  it('checks back from now for a run already overdue', () => {
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
