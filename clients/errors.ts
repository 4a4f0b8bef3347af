// The errors of the client: one class for every refusal the API answers (its RFC 9457 problem), one
// for a request that got no answer. The CLI maps them to its exit codes; workers catch the lease
// subclasses to stop.

/** A field the API named in a 400: its dotted path in the request, and what is wrong with it. */
export interface FieldError {
  readonly path: string;
  readonly message: string;
}

/**
 * An RFC 9457 problem as the API answers it (`application/problem+json`): `type` is a URN such as
 * `urn:job-scheduler:problem:not-found`; `errors` lists a 400's fields; any other member is an
 * extension (`runStatus` on a stale lease, `errorsOmitted` past 20 field errors).
 */
export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail?: string;
  readonly errors?: readonly FieldError[];
  readonly [extension: string]: unknown;
}

const STANDARD_MEMBERS = new Set(['type', 'title', 'status', 'detail', 'instance']);

/** The API refused a request: its status and problem, and when to try again where it said so. */
export class SchedulerApiError extends Error {
  readonly status: number;
  readonly problem: Problem;
  /** Seconds the API asked the caller to wait (Retry-After), or null when it did not say. */
  readonly retryAfterSeconds: number | null;
  /** The request, for messages and logs: `GET /v1/jobs/job_1`. */
  readonly request: string;

  constructor(problem: Problem, request: string, retryAfterSeconds: number | null = null) {
    super(`${problem.status} ${problem.title}${problem.detail ? `: ${problem.detail}` : ''} (${request})`);
    this.name = new.target.name;
    this.status = problem.status;
    this.problem = problem;
    this.request = request;
    this.retryAfterSeconds = retryAfterSeconds;
  }

  get type(): string {
    return this.problem.type;
  }

  get title(): string {
    return this.problem.title;
  }

  get detail(): string | undefined {
    return this.problem.detail;
  }

  /** The fields a 400 named (empty for other problems). */
  get errors(): readonly FieldError[] {
    return this.problem.errors ?? [];
  }

  /** The problem's members beyond RFC 9457's own (`errors` among them). */
  get extensions(): Readonly<Record<string, unknown>> {
    return Object.fromEntries(Object.entries(this.problem).filter(([key]) => !STANDARD_MEMBERS.has(key)));
  }
}

/** No answer from the API (refused connection, DNS, reset, timeout): nothing is known of the request's fate. */
export class SchedulerConnectionError extends Error {
  constructor(
    readonly request: string,
    cause: unknown,
  ) {
    super(
      `no answer from the scheduler API (${request}): ${cause instanceof Error ? (cause.cause instanceof Error ? cause.cause.message : cause.message) : String(cause)}`,
      { cause },
    );
    this.name = 'SchedulerConnectionError';
  }
}

/** The problem of an answer, whatever its body: a proxy's HTML 502 gets one too (type `about:blank`). */
export function problemOf(status: number, statusText: string, body: unknown): Problem {
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    const record = body as Record<string, unknown>;
    return {
      ...record,
      type: typeof record.type === 'string' ? record.type : 'about:blank',
      title: typeof record.title === 'string' ? record.title : statusText || `HTTP ${status}`,
      status,
    };
  }
  return { type: 'about:blank', title: statusText || `HTTP ${status}`, status, ...(typeof body === 'string' && body ? { detail: body.slice(0, 500) } : {}) };
}
