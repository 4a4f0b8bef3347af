// Whether an error from the store (DynamoDB, SQS) means it did not answer in time or could not be
// reached, as opposed to an answer (a failed condition, a validation error) or a bug: the API
// answers the first with 503 and Retry-After, which a client may act on, and never waits longer
// than the clients' timeouts (lambdas/store/aws.ts).

const UNAVAILABLE_NAMES: ReadonlySet<string> = new Set([
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'ThrottlingException',
  'Throttling',
  'RequestLimitExceeded',
  'ProvisionedThroughputExceededException',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'InternalServerError',
  'InternalFailure',
]);

const NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ECONNABORTED',
]);

/** Seconds a client is told to wait before trying again. */
export const STORE_RETRY_AFTER_SECONDS = 5;

export function isStoreUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const shape = error as { name?: unknown; code?: unknown; $metadata?: { httpStatusCode?: unknown }; cause?: unknown };
  // SDK errors carry $metadata (attempts, and the status when the service answered).
  if (shape.$metadata === undefined) return false;
  if (typeof shape.name === 'string' && UNAVAILABLE_NAMES.has(shape.name)) return true;
  if (typeof shape.code === 'string' && NETWORK_CODES.has(shape.code)) return true;
  const status = shape.$metadata.httpStatusCode;
  return typeof status === 'number' && (status === 429 || status >= 500);
}
