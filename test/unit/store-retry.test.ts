// The store clients' retries: never after a request timeout (the request may have been applied),
// once after a connection that never opened, throttling or a server error.
import { describe, expect, it } from 'vitest';
import { StoreRetryStrategy, timedOutAfterSending } from '../../lambdas/store/store-retry';

const requestTimeout = Object.assign(new Error('@smithy/node-http-handler - [ERROR] a request has exceeded the configured 3000 ms requestTimeout.'), {
  name: 'TimeoutError',
  code: 'ETIMEDOUT',
});
const connectTimeout = Object.assign(new Error('@smithy/node-http-handler - Socket timed out without establishing a connection within 1000 ms'), {
  name: 'TimeoutError',
});
const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:4566'), { code: 'ECONNREFUSED' });

describe('store retries', () => {
  const strategy = new StoreRetryStrategy(2, () => 0.5);

  it('does not retry a request that timed out after it was sent', async () => {
    expect(timedOutAfterSending(requestTimeout)).toBe(true);
    const first = await strategy.acquireInitialRetryToken();
    await expect(strategy.refreshRetryTokenForRetry(first, { error: requestTimeout, errorType: 'TRANSIENT' })).rejects.toBe(requestTimeout);
  });

  it('retries once a connection that never opened, throttling and server errors, with a jittered pause', async () => {
    expect(timedOutAfterSending(connectTimeout)).toBe(false);
    for (const [error, errorType] of [
      [connectTimeout, 'TRANSIENT'],
      [refused, 'TRANSIENT'],
      [new Error('Rate exceeded'), 'THROTTLING'],
      [new Error('Internal server error'), 'SERVER_ERROR'],
    ] as const) {
      const retry = await strategy.refreshRetryTokenForRetry(await strategy.acquireInitialRetryToken(), { error, errorType });
      expect(retry.getRetryCount()).toBe(1);
      expect(retry.getRetryDelay()).toBe(errorType === 'THROTTLING' ? 250 : 50);
      // Two attempts in all.
      await expect(strategy.refreshRetryTokenForRetry(retry, { error, errorType })).rejects.toBe(error);
    }
  });

  it('never retries a client error (a failed condition, a validation error)', async () => {
    const conditional = Object.assign(new Error('The conditional request failed'), { name: 'ConditionalCheckFailedException' });
    await expect(strategy.refreshRetryTokenForRetry(await strategy.acquireInitialRetryToken(), { error: conditional, errorType: 'CLIENT_ERROR' })).rejects.toBe(
      conditional,
    );
  });
});
