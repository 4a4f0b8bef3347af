// What one route of the table says (routes.ts): its method and path, what it reads, what it answers.
import type { z } from 'zod';
import type { ProblemStatus } from './responses';

export interface SuccessResponse {
  readonly description: string;
  /** The body's schema; none for an empty body (204). */
  readonly schema?: z.ZodType;
  /** Response headers worth documenting, by name. */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface RouteSpec {
  readonly method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** A path template; `{name}` is one segment, checked by PATH_PARAMS[name]. */
  readonly path: string;
  readonly summary: string;
  readonly description?: string;
  readonly tag: 'Jobs' | 'Workflows' | 'Runs' | 'Dead runs' | 'External workers' | 'Schedules' | 'Signing secrets' | 'Audit' | 'Health' | 'Contract';
  /** The query string's schema; a route without one takes no query parameters. */
  readonly query?: z.ZodType;
  /** The JSON body; absent: the route takes no body (none, or `{}`). */
  readonly body?: { readonly schema: z.ZodType; readonly required: boolean };
  /** Request headers the route reads, besides Authorization. */
  readonly headers?: readonly ('If-Match' | 'Idempotency-Key' | 'traceparent')[];
  readonly responses: Readonly<Partial<Record<200 | 201 | 202 | 204, SuccessResponse>>>;
  /** Problems this route answers with besides those every route may (400, 404, 429, 500, 503). */
  readonly problems?: readonly ProblemStatus[];
  /** Served without an API key (API Gateway routes it without the authorizer). */
  readonly public?: boolean;
  /** An example request body, shown in the document. */
  readonly example?: unknown;
}
