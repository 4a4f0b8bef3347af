// The external workers' part of the client: claim a run of an `external` target, heartbeat within
// its lease (with progress and a checkpoint), then complete or fail it. Every call after the claim
// carries the claim's lease token; a 409 naming the run's status means the token is no longer the
// run's (the run was cancelled, taken over after the lease lapsed, or finished) and the worker must
// stop: LeaseLostError, a SchedulerApiError like every other refusal. It shares the transport of
// SchedulerClient (retries of 429, Retry-After), which hands it out as `client.workers`.
import type { Problem } from './errors.js';
import { SchedulerApiError } from './errors.js';
import type { RetryOptions } from './transport.js';
import { Transport, segment } from './transport.js';
import type { Claim, ClaimRequest, Heartbeat, HeartbeatResult, Run, RunError } from './types.js';

export type { Claim, Problem, RunError };
/** A run as the API shows it. */
export type RunView = Run;

/** The API refused a worker's call (other than a stale lease). */
export class WorkerApiError extends SchedulerApiError {}

/** The lease token is no longer the run's: stop working on it; its outcome is not this worker's to record. */
export class LeaseLostError extends SchedulerApiError {
  /** The run's status now: RUNNING (taken over by another claim), a finished status, or CANCELLED. */
  readonly runStatus: string;

  constructor(problem: Problem, request: string) {
    super(problem, request);
    this.runStatus = typeof problem.runStatus === 'string' ? problem.runStatus : 'UNKNOWN';
  }
}

/** The run was cancelled: seen at the next heartbeat. */
export class RunCancelledError extends LeaseLostError {}

/** The problem of a worker's call as its error: a 409 with `runStatus` is a lost lease. */
function workerRefusal(problem: Problem, request: string, retryAfterSeconds: number | null): SchedulerApiError {
  if (problem.status === 409 && typeof problem.runStatus === 'string') {
    return problem.runStatus === 'CANCELLED' ? new RunCancelledError(problem, request) : new LeaseLostError(problem, request);
  }
  return new WorkerApiError(problem, request, retryAfterSeconds);
}

export interface WorkerClientOptions {
  /** The API's base URL, e.g. https://abc.execute-api.eu-west-1.amazonaws.com or http://127.0.0.1:3000, with or without its `/v1`. */
  readonly baseUrl: string;
  readonly apiKey: string;
  /** Shown as the run's leaseOwner (`external:<workerId>`). */
  readonly workerId?: string;
  readonly fetch?: typeof fetch;
  readonly retry?: RetryOptions;
}

/** What `process` hands the work function. */
export interface WorkContext<Payload, Checkpoint> {
  readonly claim: Claim<Payload, Checkpoint>;
  /** Aborted when the run is cancelled or the lease is lost: stop as soon as possible. */
  readonly signal: AbortSignal;
  /** Saves a checkpoint now (a heartbeat): a later attempt, after a crash, resumes from it. */
  readonly checkpoint: (value: Checkpoint, progress?: unknown) => Promise<void>;
}

export type ProcessOutcome = 'completed' | 'failed' | 'cancelled' | 'lease-lost';

/** Thrown by a work function to fail the run with its own code and class. */
export class WorkFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'WorkFailure';
  }
}

/** The longest error message POST /v1/runs/{runId}/fail takes (failSchema); a longer one is cut to it. */
export const MAX_RUN_ERROR_MESSAGE_LENGTH = 1024;
/** The error codes POST /v1/runs/{runId}/fail takes (failSchema). */
export const RUN_ERROR_CODE_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * A work error as the fail route takes it: the message cut to its bound (ending in `…`), the code
 * with each character the route refuses replaced by `_` and cut to 64 (WORKER_ERROR if empty). Sent
 * as thrown, an error the route refused (a 400) left its run RUNNING until its lease ended.
 */
export function runErrorOf(code: string, message: string, retryable: boolean): RunError {
  let shortMessage = message;
  if (message.length > MAX_RUN_ERROR_MESSAGE_LENGTH) {
    let end = MAX_RUN_ERROR_MESSAGE_LENGTH - 1;
    // Not between the two halves of a surrogate pair.
    const last = message.charCodeAt(end - 1);
    if (last >= 0xd800 && last <= 0xdbff) end -= 1;
    shortMessage = `${message.slice(0, end)}…`;
  }
  const fitCode = RUN_ERROR_CODE_PATTERN.test(code) ? code : code.replace(/[^A-Za-z0-9_.:-]/g, '_').slice(0, 64);
  return { code: fitCode === '' ? 'WORKER_ERROR' : fitCode, message: shortMessage, retryable };
}

export class WorkerClient {
  private readonly transport: Transport;
  private readonly workerId: string | undefined;

  /** Either its own options, or the transport of a SchedulerClient (`client.workers`). */
  constructor(options: WorkerClientOptions | { readonly transport: Transport; readonly workerId?: string }) {
    this.transport = 'transport' in options ? options.transport : new Transport(options);
    this.workerId = options.workerId;
  }

  /** The next run waiting for an external worker (of `jobType`, if given), waiting up to `waitSeconds` (≤ 20); null if none. */
  async claim<Payload = unknown, Checkpoint = unknown>(options: ClaimRequest = {}): Promise<Claim<Payload, Checkpoint> | null> {
    const body: ClaimRequest = { ...options, ...(options.workerId === undefined && this.workerId ? { workerId: this.workerId } : {}) };
    // Not repeated after a 503: a claim that was made would hold a run nobody works on until its lease ends.
    const answer = await this.post('/v1/workers/claim', body, 'once');
    return answer === null ? null : (answer as Claim<Payload, Checkpoint>);
  }

  /** Extends the lease; records progress and a checkpoint if given. Throws LeaseLostError / RunCancelledError. */
  async heartbeat(runId: string, leaseToken: string, beat: Heartbeat = {}): Promise<HeartbeatResult> {
    return (await this.post(`/v1/runs/${segment(runId)}/heartbeat`, { leaseToken, ...beat }, 'repeatable')) as HeartbeatResult;
  }

  async complete(runId: string, leaseToken: string, result?: unknown): Promise<Run> {
    return (await this.post(`/v1/runs/${segment(runId)}/complete`, { leaseToken, ...(result !== undefined ? { result } : {}) }, 'once')) as Run;
  }

  /** Fails the attempt; a retryable error is retried by the job's policy, with the last checkpoint. */
  async fail(runId: string, leaseToken: string, error: RunError): Promise<Run> {
    return (await this.post(`/v1/runs/${segment(runId)}/fail`, { leaseToken, error }, 'once')) as Run;
  }

  /**
   * Runs `work` for a claimed run, heartbeating every third of the lease; completes the run with what
   * `work` returns, or fails it with what it throws (a WorkFailure keeps its code and class; anything
   * else is a retryable WORKER_ERROR). A cancellation or lost lease aborts `signal` and is not an error.
   */
  async process<Payload, Checkpoint, Result>(
    claim: Claim<Payload, Checkpoint>,
    work: (context: WorkContext<Payload, Checkpoint>) => Promise<Result>,
  ): Promise<ProcessOutcome> {
    const stop = new AbortController();
    let lost: LeaseLostError | undefined;
    const beat = async (extra: { progress?: unknown; checkpoint?: unknown } = {}): Promise<void> => {
      try {
        await this.heartbeat(claim.run.runId, claim.leaseToken, extra);
      } catch (error) {
        if (!(error instanceof LeaseLostError)) throw error;
        lost = error;
        stop.abort(error);
        throw error;
      }
    };
    const timer = setInterval(
      () => {
        // A missed beat is retried at the next interval; the lease has two more to run.
        beat().catch(() => undefined);
      },
      Math.max(500, (claim.leaseSeconds * 1000) / 3),
    );
    try {
      const result = await work({
        claim,
        signal: stop.signal,
        checkpoint: (value, progress) => beat({ checkpoint: value, ...(progress !== undefined ? { progress } : {}) }),
      });
      if (lost) return lost instanceof RunCancelledError ? 'cancelled' : 'lease-lost';
      await this.complete(claim.run.runId, claim.leaseToken, result);
      return 'completed';
    } catch (error) {
      if (lost || error instanceof LeaseLostError) {
        const why = lost ?? (error as LeaseLostError);
        return why instanceof RunCancelledError ? 'cancelled' : 'lease-lost';
      }
      const failure =
        error instanceof WorkFailure
          ? runErrorOf(error.code, error.message, error.retryable)
          : runErrorOf('WORKER_ERROR', error instanceof Error ? error.message : String(error), true);
      try {
        await this.fail(claim.run.runId, claim.leaseToken, failure);
      } catch (failError) {
        if (failError instanceof LeaseLostError) return failError instanceof RunCancelledError ? 'cancelled' : 'lease-lost';
        throw failError;
      }
      return 'failed';
    } finally {
      clearInterval(timer);
    }
  }

  private async post(path: string, body: unknown, repeat: 'repeatable' | 'once'): Promise<unknown> {
    return (await this.transport.send({ method: 'POST', path, body, repeat, refusal: workerRefusal })).body;
  }
}
