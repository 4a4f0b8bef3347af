import { describe, expect, it } from 'vitest';
import { backoffBoundMs, decideRetry, parseRetryAfter } from '../../lambdas/domain/retry';

const policy = { maxAttempts: 5, initialDelaySeconds: 1, maxDelaySeconds: 10 };

describe('retry decisions', () => {
  it('doubles the backoff bound with each attempt up to the cap', () => {
    expect([1, 2, 3, 4, 5, 6].map((attempt) => backoffBoundMs(policy, attempt))).toEqual([1_000, 2_000, 4_000, 8_000, 10_000, 10_000]);
  });

  it('draws a delay uniformly up to the bound (full jitter)', () => {
    expect(decideRetry(policy, { retryable: true }, 3, () => 0).delayMs).toBe(0);
    expect(decideRetry(policy, { retryable: true }, 3, () => 0.5).delayMs).toBe(2_000);
    expect(decideRetry(policy, { retryable: true }, 3, () => 0.999_999).delayMs).toBe(3_999);
  });

  it('never retries a permanent failure, nor past the budget', () => {
    expect(decideRetry(policy, { retryable: false }, 1, () => 0.5)).toMatchObject({ retry: false, why: 'the failure is permanent' });
    expect(decideRetry(policy, { retryable: true }, 5, () => 0.5)).toMatchObject({ retry: false, why: expect.stringMatching(/budget/) });
    expect(decideRetry(policy, { retryable: true }, 4, () => 0.5).retry).toBe(true);
  });

  it('honours Retry-After within the cap', () => {
    expect(decideRetry(policy, { retryable: true, retryAfterSeconds: 7 }, 1, () => 0).delayMs).toBe(7_000);
    expect(decideRetry(policy, { retryable: true, retryAfterSeconds: 3600 }, 1, () => 0).delayMs).toBe(10_000);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});
