// How the store clients retry. The SDK's standard strategy retries a request that timed out, but a
// request that timed out may have been applied: the retry of a conditional write then fails against
// its own first attempt (a lease that looks held by another worker, a create that looks like a name
// conflict) and a run is dropped or a client misled. So a store request is tried again only when it
// certainly was not applied (it never connected, the store refused it as throttled) or the store
// answered with a server error, and never after its request timeout; the caller sees that as the
// store not answering (503 in the API, a message back in 10 s in the worker).

/** The shapes of the SDK's retry strategy interface (RetryStrategyV2 of @smithy/types), as the clients call it. */
export interface StoreRetryToken {
  getRetryCount(): number;
  getRetryDelay(): number;
}
export interface StoreRetryErrorInfo {
  readonly error?: { readonly name?: string; readonly message?: string; readonly code?: string };
  readonly errorType: 'TRANSIENT' | 'THROTTLING' | 'SERVER_ERROR' | 'CLIENT_ERROR';
}

const token = (retries: number, delay: number): StoreRetryToken => ({ getRetryCount: () => retries, getRetryDelay: () => delay });

/** Whether an error is the request timeout (sent, maybe applied), not the connection timeout (never sent). */
export function timedOutAfterSending(error: StoreRetryErrorInfo['error']): boolean {
  if (!error) return false;
  const timedOut = error.name === 'TimeoutError' || error.code === 'ETIMEDOUT';
  return timedOut && !/without establishing a connection/i.test(error.message ?? '');
}

export class StoreRetryStrategy {
  readonly mode = 'standard';

  constructor(
    private readonly maxAttempts: number,
    private readonly random: () => number = Math.random,
  ) {}

  acquireInitialRetryToken(): Promise<StoreRetryToken> {
    return Promise.resolve(token(0, 0));
  }

  refreshRetryTokenForRetry(previous: StoreRetryToken, info: StoreRetryErrorInfo): Promise<StoreRetryToken> {
    const retries = previous.getRetryCount() + 1;
    if (retries >= this.maxAttempts || info.errorType === 'CLIENT_ERROR' || timedOutAfterSending(info.error)) {
      return Promise.reject(info.error instanceof Error ? info.error : new Error('store request failed'));
    }
    // Full jitter under 100 ms doubling, as the SDK's standard strategy (longer after throttling).
    const base = info.errorType === 'THROTTLING' ? 500 : 100;
    return Promise.resolve(token(retries, Math.floor(this.random() * base * 2 ** (retries - 1))));
  }

  recordSuccess(): void {}
}
