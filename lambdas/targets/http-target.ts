// Calls an HTTP target: the payload as a JSON body, the occurrence's idempotency key and the run's
// identity as headers, aborted at the attempt's timeout. Redirects are not followed, so a target
// cannot bounce the scheduler to an address it would not call directly. A failed call is retryable
// for 408, 429 and 5xx unless the target answers `X-Retryable: false` (or `true` to retry a 4xx).
import type { HttpTarget } from '../domain/job';
import { occurrenceKey } from '../domain/run';
import { parseRetryAfter } from '../domain/retry';
import type { TargetInvocation, TargetResult } from './target';

export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** The header by which a target overrides the class of its failure (`false`: do not retry). */
export const RETRYABLE_HEADER = 'x-retryable';

/** The target's own word on retrying wins over the status code's class. */
export function classifyStatus(status: number, retryableHeader: string | null): boolean {
  const said = retryableHeader?.trim().toLowerCase();
  if (said === 'false') return false;
  if (said === 'true') return true;
  return isRetryableStatus(status);
}

export async function callHttpTarget(target: HttpTarget, invocation: TargetInvocation): Promise<TargetResult> {
  const { run, payload, timeoutMs } = invocation;
  const timeout = AbortSignal.timeout(timeoutMs);
  const hasBody = target.method !== 'GET';
  try {
    const response = await fetch(target.url, {
      method: target.method,
      redirect: 'manual',
      signal: invocation.signal ? AbortSignal.any([timeout, invocation.signal]) : timeout,
      headers: {
        ...target.headers,
        ...(hasBody ? { 'content-type': 'application/json' } : {}),
        'idempotency-key': occurrenceKey(run.jobId, run.scheduledFor),
        'x-job-id': run.jobId,
        'x-run-id': run.runId,
        'x-attempt': String(run.attempt),
        'user-agent': 'job-scheduler/1',
      },
      body: hasBody ? JSON.stringify(payload) : undefined,
    });
    // Drain the body so the connection is released; its content is not recorded.
    await response.arrayBuffer().catch(() => undefined);
    if (response.status >= 200 && response.status < 300) {
      return { ok: true, detail: `HTTP ${response.status}` };
    }
    const redirect = response.status >= 300 && response.status < 400;
    const retryAfterSeconds = parseRetryAfter(response.headers.get('retry-after'), Date.now());
    return {
      ok: false,
      timedOut: false,
      ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
      error: {
        code: `HTTP_${response.status}`,
        message: redirect ? `target answered ${response.status}; redirects are not followed` : `target answered ${response.status}`,
        retryable: classifyStatus(response.status, response.headers.get(RETRYABLE_HEADER)),
      },
    };
  } catch (error) {
    if (timeout.aborted) {
      return {
        ok: false,
        timedOut: true,
        error: { code: 'TIMEOUT', message: `no answer within ${timeoutMs} ms`, retryable: true },
      };
    }
    if (invocation.signal?.aborted) {
      return { ok: false, timedOut: false, error: { code: 'ABORTED', message: 'the run was cancelled or its lease lost', retryable: false } };
    }
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error);
    return { ok: false, timedOut: false, error: { code: 'NETWORK_ERROR', message: cause, retryable: true } };
  }
}
