// What the CLI's exit code says happened, so that a script can branch on it without reading output.
import { SchedulerApiError, SchedulerConnectionError } from '../errors.js';

export const EXIT = {
  /** Done. */
  ok: 0,
  /** Bad arguments, an unreadable file, or a request the API refused as invalid (400, 405, 413, 415). */
  usage: 1,
  /** No such job or run (404). */
  notFound: 2,
  /** The job or run is not in a state for this (409), or changed since the version given (412). */
  conflict: 3,
  /** No key, or a key the API does not accept (401, 403). */
  auth: 4,
  /** The API failed (5xx) or did not answer. */
  unavailable: 5,
  /** Still over the tenant's rate limit after the client's retries (429). */
  rateLimited: 6,
  /** `watch --timeout` ran out before the job was done. */
  watchTimeout: 7,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A mistake in the command line or its files, found before any request. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** No API key given (neither --api-key nor SCHEDULER_API_KEY): an authentication failure (exit 4), found before any request. */
export class MissingKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MissingKeyError';
  }
}

export function exitCodeOf(error: unknown): ExitCode {
  if (error instanceof UsageError) return EXIT.usage;
  if (error instanceof MissingKeyError) return EXIT.auth;
  if (error instanceof SchedulerConnectionError) return EXIT.unavailable;
  if (!(error instanceof SchedulerApiError)) return EXIT.unavailable;
  const { status } = error;
  if (status === 401 || status === 403) return EXIT.auth;
  if (status === 404) return EXIT.notFound;
  if (status === 409 || status === 412) return EXIT.conflict;
  if (status === 429) return EXIT.rateLimited;
  if (status >= 500) return EXIT.unavailable;
  return EXIT.usage;
}
