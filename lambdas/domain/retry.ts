// Retries: which failures are worth another attempt, and when it should start. Exponential backoff
// with full jitter (a uniformly random delay up to the exponential bound), capped; a target's
// Retry-After is honoured up to the cap.
import type { RetryPolicy } from './job';

export interface RetryDecision {
  readonly retry: boolean;
  /** Milliseconds from now until the next attempt may start (when `retry`). */
  readonly delayMs: number;
  readonly why: string;
}

/** The largest delay attempt `attempt` (1-based) may wait after failing: initial * 2^(attempt-1), capped. */
export function backoffBoundMs(policy: RetryPolicy, attempt: number): number {
  const exponential = policy.initialDelaySeconds * 1000 * 2 ** Math.max(0, attempt - 1);
  return Math.min(policy.maxDelaySeconds * 1000, exponential);
}

export function decideRetry(
  policy: RetryPolicy,
  failure: { retryable: boolean; retryAfterSeconds?: number },
  attemptsUsed: number,
  random: () => number,
): RetryDecision {
  if (!failure.retryable) return { retry: false, delayMs: 0, why: 'the failure is permanent' };
  if (attemptsUsed >= policy.maxAttempts) {
    return { retry: false, delayMs: 0, why: `the retry budget of ${policy.maxAttempts} attempts is spent` };
  }
  const jittered = Math.floor(random() * backoffBoundMs(policy, attemptsUsed));
  const capMs = policy.maxDelaySeconds * 1000;
  const asked = failure.retryAfterSeconds === undefined ? 0 : Math.min(capMs, failure.retryAfterSeconds * 1000);
  return { retry: true, delayMs: Math.max(jittered, asked), why: 'retryable failure' };
}

/** Parses a Retry-After header: delay-seconds or an HTTP date. */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}
