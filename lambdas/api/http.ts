// The HTTP edge of the API: requests as API Gateway (HTTP API, payload 2.0) hands them over,
// JSON responses, and the one mapping of errors to RFC 9457 problem+json.
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { FieldError } from '../core/errors';
import { PayloadTooLargeError, ProblemError, StaleLeaseError, UnsupportedMediaTypeError, ValidationError } from '../core/errors';
import { logger } from '../core/logger';
import { isStoreUnavailable, STORE_RETRY_AFTER_SECONDS } from '../store/store-unavailable';

export type ApiEvent = APIGatewayProxyEventV2;
export type ApiResult = APIGatewayProxyStructuredResultV2;

/**
 * Request bodies above this are refused before parsing: a job's payload of 1 MiB of compact JSON
 * (decision 0162) with room for the rest of the job and for whitespace; the fields are limited further.
 */
export const MAX_BODY_BYTES = 2 * 1024 * 1024;

export function json(statusCode: number, body: unknown, headers: Record<string, string> = {}): ApiResult {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  };
}

/**
 * A problem lists at most this many field errors; `errorsOmitted` (a problem extension member) and
 * the detail say how many more there were. A body of thousands of bad entries is answered in a few
 * KB, not megabytes, and the first errors are enough to fix the request.
 */
export const MAX_PROBLEM_ERRORS = 20;

function problem(
  status: number,
  title: string,
  detail: string,
  errors: readonly { path: string; message: string }[] = [],
  headers: Record<string, string> = {},
  extensions: Record<string, unknown> = {},
): ApiResult {
  const slug = title.toLowerCase().replace(/[^a-z]+/g, '-');
  const omitted = Math.max(0, errors.length - MAX_PROBLEM_ERRORS);
  const capped =
    omitted > 0
      ? {
          detail: `${detail} (the first ${MAX_PROBLEM_ERRORS} errors are listed; ${omitted} more omitted)`,
          errors: errors.slice(0, MAX_PROBLEM_ERRORS),
          errorsOmitted: omitted,
        }
      : { detail, errors };
  return {
    statusCode: status,
    headers: { 'content-type': 'application/problem+json', ...headers },
    body: JSON.stringify({ type: `urn:job-scheduler:problem:${slug}`, title, status, ...capped, ...extensions }),
  };
}

/** Maps typed errors to their problem; anything else is a 500 that carries no internals. */
export function problemDetails(): MiddlewareObj<ApiEvent, ApiResult> {
  return {
    onError: (request) => {
      const { error } = request;
      if (error instanceof ProblemError) {
        const extensions = error instanceof StaleLeaseError ? { runStatus: error.runStatus } : {};
        request.response = problem(error.status, error.title, error.message, error.errors, { ...error.headers }, extensions);
        return;
      }
      if (isStoreUnavailable(error)) {
        // The store did not answer in time (or at all): nothing of this request may have been done,
        // or all of it; a retry with the same Idempotency-Key is safe either way.
        logger.warn('the store did not answer; answered 503', { error: error instanceof Error ? { name: error.name, message: error.message } : String(error) });
        request.response = problem(503, 'Service unavailable', 'The scheduler could not reach its store in time. Try again shortly.', [], {
          'retry-after': String(STORE_RETRY_AFTER_SECONDS),
        });
        return;
      }
      logger.error('unhandled error in API', {
        error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error),
      });
      request.response = problem(500, 'Internal error', 'The request could not be completed. It is safe to retry.');
    },
  };
}

export function header(event: ApiEvent, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(event.headers ?? {})) {
    if (key.toLowerCase() === wanted) return value;
  }
  return undefined;
}

/** JSON nested deeper than this is refused: validating and storing it would recurse without bound. */
export const MAX_JSON_DEPTH = 32;
/** Keys that could reach an object's prototype in code that copies JSON by assignment. */
const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);
const MAX_SHAPE_ERRORS = 20;

/** The JSON body of a request; absent, oversized, non-JSON and malformed bodies are refused. */
export function jsonBody(event: ApiEvent, required: boolean): unknown {
  const encoded = event.body ?? '';
  // Measured before decoding or parsing anything: an oversized body costs no more than its length.
  const size = event.isBase64Encoded ? Math.floor((encoded.length * 3) / 4) : Buffer.byteLength(encoded, 'utf8');
  if (size > MAX_BODY_BYTES) {
    throw new PayloadTooLargeError(`The body must be at most ${MAX_BODY_BYTES} bytes`);
  }
  const raw = event.isBase64Encoded ? Buffer.from(encoded, 'base64').toString('utf8') : encoded;
  if (raw.trim() === '') {
    if (required) throw new ValidationError('A JSON body is required', [{ path: '(body)', message: 'is missing' }]);
    return undefined;
  }
  const contentType = header(event, 'content-type');
  if (contentType && !/^application\/(.+\+)?json\b/i.test(contentType)) {
    throw new UnsupportedMediaTypeError('Send the body as application/json');
  }
  let value: unknown;
  try {
    value = JSON.parse(raw) as unknown;
  } catch (error) {
    throw new ValidationError('The body is not valid JSON', [{ path: '(body)', message: error instanceof Error ? error.message : 'cannot be parsed' }]);
  }
  const problems = jsonShapeProblems(value);
  if (problems.length > 0) throw new ValidationError('Invalid request', problems);
  return value;
}

/**
 * Walks parsed JSON without recursion: nesting beyond MAX_JSON_DEPTH and prototype keys are
 * refused, each with its path (`payload.a.0`), so that nothing downstream recurses without bound
 * or copies a `__proto__` key onto a prototype.
 */
export function jsonShapeProblems(root: unknown, maxDepth = MAX_JSON_DEPTH): FieldError[] {
  const problems: FieldError[] = [];
  const stack: { value: unknown; depth: number; path: string }[] = [{ value: root, depth: 0, path: '' }];
  while (stack.length > 0 && problems.length < MAX_SHAPE_ERRORS) {
    const { value, depth, path } = stack.pop() as { value: unknown; depth: number; path: string };
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= maxDepth) {
      problems.push({ path: path || '(body)', message: `nests deeper than ${maxDepth} levels` });
      continue;
    }
    const entries: [string, unknown][] = Array.isArray(value) ? value.map((item, index) => [String(index), item]) : Object.entries(value);
    for (const [key, child] of entries) {
      const childPath = path ? `${path}.${key}` : key;
      if (!Array.isArray(value) && FORBIDDEN_KEYS.has(key)) {
        problems.push({ path: childPath, message: 'is a reserved key name' });
        continue;
      }
      stack.push({ value: child, depth: depth + 1, path: childPath });
    }
  }
  return problems;
}
