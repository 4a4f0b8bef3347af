// How an AWS SDK error from a target call becomes the attempt's failure: throttling, server faults
// and network errors are retryable; client faults (no such queue, function or bus; access denied;
// a malformed request) are permanent, as calling again would be refused again.
import { logger } from '../core/logger';
import type { TargetResult } from './target';

/**
 * The ARN of an IAM role or STS session (the scheduler's worker role, in an access-denied answer):
 * the deployment's internals, not the tenant's, so a tenant never reads it in its run's error.
 */
const PRINCIPAL_ARN = /\barn:aws[a-z-]*:(?:sts|iam)::\d{12}:[^\s,;"']+/g;
const OWN_ROLE = "(the scheduler's role)";

/**
 * An AWS answer's text as a tenant may read it (a run's error, a notification's last error): the
 * scheduler's role ARNs replaced. The whole text is logged when anything was taken out.
 */
export function tenantReadable(text: string, code: string): string {
  const shown = text.replace(PRINCIPAL_ARN, OWN_ROLE);
  // `message` is the logger's own key: the text goes under `error`.
  if (shown !== text) logger.warn("an AWS call was refused; the scheduler's role is left out of what the tenant reads", { code, error: text });
  return shown;
}

const RETRYABLE_NAMES = new Set([
  'ThrottlingException',
  'Throttling',
  'TooManyRequestsException',
  'RequestLimitExceeded',
  'ProvisionedThroughputExceededException',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'InternalFailure',
  'InternalError',
  'InternalServerError',
  'ServiceException', // Lambda's own 500
  'EC2ThrottledException',
  'ResourceConflictException', // Lambda: the function is being updated
  'KMSThrottlingException',
  'SubnetIPAddressLimitReachedException',
  'ENILimitReachedException',
]);

interface SdkErrorShape {
  readonly name?: unknown;
  readonly message?: unknown;
  readonly $fault?: unknown;
  readonly $retryable?: unknown;
  readonly $metadata?: { readonly httpStatusCode?: unknown };
}

/** The failure of a target call that threw, given the signals that may have aborted it. */
export function sdkFailure(error: unknown, timeout: AbortSignal, cancel: AbortSignal | undefined, timeoutMs: number): TargetResult {
  if (timeout.aborted) return { ok: false, timedOut: true, error: { code: 'TIMEOUT', message: `no answer within ${timeoutMs} ms`, retryable: true } };
  if (cancel?.aborted) return { ok: false, timedOut: false, error: { code: 'ABORTED', message: 'the run was cancelled or its lease lost', retryable: false } };
  const shape: SdkErrorShape = typeof error === 'object' && error !== null ? error : {};
  const name = typeof shape.name === 'string' ? shape.name : 'Error';
  const message = typeof shape.message === 'string' ? shape.message : String(error);
  const status = typeof shape.$metadata?.httpStatusCode === 'number' ? shape.$metadata.httpStatusCode : undefined;
  if (shape.$fault === undefined && status === undefined) {
    // Not an answer from the service: the request did not get through (DNS, refused, reset).
    return { ok: false, timedOut: false, error: { code: 'NETWORK_ERROR', message, retryable: true } };
  }
  const retryable = shape.$retryable !== undefined || shape.$fault === 'server' || RETRYABLE_NAMES.has(name) || status === 429 || (status ?? 0) >= 500;
  return { ok: false, timedOut: false, error: { code: name, message: tenantReadable(message, name).slice(0, 512), retryable } };
}

/** The abort signal of one target call: the attempt's timeout, or the run's cancellation. */
export function callSignal(timeoutMs: number, cancel: AbortSignal | undefined): { readonly timeout: AbortSignal; readonly signal: AbortSignal } {
  const timeout = AbortSignal.timeout(timeoutMs);
  return { timeout, signal: cancel ? AbortSignal.any([timeout, cancel]) : timeout };
}
