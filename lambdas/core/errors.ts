// Typed errors that carry their HTTP meaning. The API adapter maps them to problem+json in one place.

export interface FieldError {
  readonly path: string;
  readonly message: string;
}

export abstract class ProblemError extends Error {
  abstract readonly status: number;
  abstract readonly title: string;
  readonly errors: readonly FieldError[];
  readonly headers: Readonly<Record<string, string>>;

  constructor(detail: string, errors: readonly FieldError[] = [], headers: Record<string, string> = {}) {
    super(detail);
    this.name = new.target.name;
    this.errors = errors;
    this.headers = headers;
  }
}

export class ValidationError extends ProblemError {
  readonly status = 400;
  readonly title = 'Invalid request';
}

export class UnauthorizedError extends ProblemError {
  readonly status = 401;
  readonly title = 'Unauthorized';
  constructor(detail = 'A valid API key is required: Authorization: Bearer <key>') {
    super(detail, [], { 'www-authenticate': 'Bearer' });
  }
}

export class NotFoundError extends ProblemError {
  readonly status = 404;
  readonly title = 'Not found';
}

export class MethodNotAllowedError extends ProblemError {
  readonly status = 405;
  readonly title = 'Method not allowed';
}

export class ConflictError extends ProblemError {
  readonly status = 409;
  readonly title = 'Conflict';
}

/**
 * An external worker's lease token is no longer the run's: the run was taken over, finished, or
 * cancelled. `runStatus` (a problem extension member) tells a worker which, so it can stop.
 */
export class StaleLeaseError extends ConflictError {
  constructor(readonly runStatus: string) {
    super(runStatus === 'CANCELLED' ? 'The run was cancelled; stop working on it' : `The lease token is stale (the run is ${runStatus}); stop working on it`);
  }
}

export class PreconditionFailedError extends ProblemError {
  readonly status = 412;
  readonly title = 'Precondition failed';
}

export class PayloadTooLargeError extends ProblemError {
  readonly status = 413;
  readonly title = 'Payload too large';
}

export class UnsupportedMediaTypeError extends ProblemError {
  readonly status = 415;
  readonly title = 'Unsupported media type';
}

export class TooManyRequestsError extends ProblemError {
  readonly status = 429;
  readonly title = 'Too many requests';
  constructor(detail: string, retryAfterSeconds: number) {
    super(detail, [], { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
  }
}

export class ServiceUnavailableError extends ProblemError {
  readonly status = 503;
  readonly title = 'Service unavailable';
}
