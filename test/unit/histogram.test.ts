import { describe, expect, it } from 'vitest';
import { bucketOf, bucketUpperBound, merge, percentile, record } from '../../lambdas/domain/histogram';
import type { Histogram } from '../../lambdas/domain/histogram';

describe('latency histogram', () => {
  it('puts a value in a bucket whose upper bound is within 5 % above it', () => {
    for (const value of [2, 3, 17, 250, 1_999, 2_000, 2_001, 60_000, 3_600_000]) {
      const upper = bucketUpperBound(bucketOf(value));
      expect(upper).toBeGreaterThanOrEqual(value - 0.5);
      expect(upper).toBeLessThanOrEqual(value * 1.05 + 1);
    }
    expect(bucketOf(0)).toBe(0);
    expect(bucketOf(-40)).toBe(0);
  });

  it('reads percentiles from merged histograms', () => {
    const a: Histogram = {};
    const b: Histogram = {};
    for (let i = 1; i <= 90; i++) record(a, 100);
    for (let i = 1; i <= 10; i++) record(b, 3_000);
    const all: Histogram = {};
    merge(all, a);
    merge(all, b);
    expect(percentile(all, 50)).toBeCloseTo(100, -1);
    expect(percentile(all, 90)).toBeLessThanOrEqual(105);
    expect(percentile(all, 95)).toBeGreaterThanOrEqual(3_000);
    expect(percentile(all, 99)).toBeLessThanOrEqual(3_150);
    expect(percentile({}, 99)).toBeNull();
  });
});
