// The HTTP edge of the API: requests as API Gateway (HTTP API, payload 2.0) hands them over,
// JSON responses, and the one mapping of errors to RFC 9457 problem+json.
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { PayloadTooLargeError, ProblemError, UnsupportedMediaTypeError, ValidationError } from '../core/errors';
import { logger } from '../core/logger';

export type ApiEvent = APIGatewayProxyEventV2;
export type ApiResult = APIGatewayProxyStructuredResultV2;

/** Request bodies above this are refused before parsing (a job's payload is limited further). */
export const MAX_BODY_BYTES = 256 * 1024;

export function json(statusCode: number, body: unknown, headers: Record<string, string> = {}): ApiResult {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  };
}

function problem(status: number, title: string, detail: string, errors: readonly { path: string; message: string }[] = [], headers: Record<string, string> = {}): ApiResult {
  const slug = title.toLowerCase().replace(/[^a-z]+/g, '-');
  return {
    statusCode: status,
    headers: { 'content-type': 'application/problem+json', ...headers },
    body: JSON.stringify({ type: `urn:job-scheduler:problem:${slug}`, title, status, detail, errors }),
  };
}

/** Maps typed errors to their problem; anything else is a 500 that carries no internals. */
export function problemDetails(): MiddlewareObj<ApiEvent, ApiResult> {
  return {
    onError: (request) => {
      const { error } = request;
      if (error instanceof ProblemError) {
        request.response = problem(error.status, error.title, error.message, error.errors, { ...error.headers });
        return;
      }
      logger.error('unhandled error in API', { error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error) });
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

/** The JSON body of a request; absent, oversized, non-JSON and malformed bodies are refused. */
export function jsonBody(event: ApiEvent, required: boolean): unknown {
  const raw = event.body ? (event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body) : '';
  if (raw.trim() === '') {
    if (required) throw new ValidationError('A JSON body is required', [{ path: '(body)', message: 'is missing' }]);
    return undefined;
  }
  if (Buffer.byteLength(raw, 'utf8') > MAX_BODY_BYTES) {
    throw new PayloadTooLargeError(`The body must be at most ${MAX_BODY_BYTES} bytes`);
  }
  const contentType = header(event, 'content-type');
  if (contentType && !/^application\/(.+\+)?json\b/i.test(contentType)) {
    throw new UnsupportedMediaTypeError('Send the body as application/json');
  }
  try {
    return JSON.parse(raw) as unknown;
  } catch (error) {
    throw new ValidationError('The body is not valid JSON', [
      { path: '(body)', message: error instanceof Error ? error.message : 'cannot be parsed' },
    ]);
  }
}
