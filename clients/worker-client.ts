// A small typed client for external workers: claim a run of an `external` target, heartbeat within
// its lease (with progress and a checkpoint), then complete or fail it. Every call after the claim
// carries the claim's lease token; a 409 means the token is no longer the run's (the run was
// cancelled, taken over after the lease lapsed, or finished) and the worker must stop.
// Dependency-free (global fetch, Node 18+), so a worker can copy this one file.

export interface RunError {
  readonly code: string;
  readonly message: string;
  readonly retryable: boolean;
}

/** A run as the API shows it (the fields a worker is likely to read; the API may add more). */
export interface RunView {
  readonly runId: string;
  readonly jobId: string;
  readonly tenantId: string;
  readonly scheduledFor: string;
  readonly attempt: number;
  readonly status: string;
  readonly leaseOwner: string | null;
  readonly leaseExpiresAt: string | null;
  readonly progress: unknown;
  readonly error: RunError | null;
  readonly idempotencyKey: string;
  readonly result?: unknown;
}

export interface Claim<Payload = unknown, Checkpoint = unknown> {
  readonly run: RunView;
  /** The lease's secret: send it with every heartbeat, complete and fail. */
  readonly leaseToken: string;
  readonly leaseExpiresAt: string;
  /** Heartbeat well within this (the client's `process` beats every third of it). */
  readonly leaseSeconds: number;
  readonly attempt: number;
  /** Grows strictly across the attempts of an occurrence: pass it to systems that can fence writes. */
  readonly fencingToken: number;
  /** The occurrence's key, the same for every attempt: deduplicate effects by it. */
  readonly idempotencyKey: string;
  readonly payload: Payload;
  /** The last checkpoint saved by an earlier attempt of this occurrence: resume from it. */
  readonly checkpoint: Checkpoint | null;
}

export interface Problem {
  readonly type?: string;
  readonly title?: string;
  readonly status?: number;
  readonly detail?: string;
  readonly errors?: readonly { readonly path: string; readonly message: string }[];
  readonly runStatus?: string;
}

/** The API refused a call (other than a stale lease). */
export class WorkerApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Problem,
  ) {
    super(`${status} ${problem.title ?? 'error'}: ${problem.detail ?? ''}`.trim());
    this.name = 'WorkerApiError';
  }
}

/** The lease token is no longer the run's: stop working on it; its outcome is not this worker's to record. */
export class LeaseLostError extends Error {
  constructor(
    readonly runStatus: string,
    detail: string,
  ) {
    super(detail);
    this.name = 'LeaseLostError';
  }
}

/** The run was cancelled: seen at the next heartbeat. */
export class RunCancelledError extends LeaseLostError {
  constructor(detail: string) {
    super('CANCELLED', detail);
    this.name = 'RunCancelledError';
  }
}

export interface WorkerClientOptions {
  /** The API's base URL, e.g. https://abc.execute-api.eu-west-1.amazonaws.com or http://127.0.0.1:3000. */
  readonly baseUrl: string;
  readonly apiKey: string;
  /** Shown as the run's leaseOwner (`external:<workerId>`). */
  readonly workerId?: string;
  readonly fetch?: typeof fetch;
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

export class WorkerClient {
  private readonly baseUrl: string;
  private readonly fetchFn: typeof fetch;

  constructor(private readonly options: WorkerClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetchFn = options.fetch ?? fetch;
  }

  /** The next run waiting for an external worker (of `jobType`, if given), waiting up to `waitSeconds` (≤ 20); null if none. */
  async claim<Payload = unknown, Checkpoint = unknown>(options: { jobType?: string; waitSeconds?: number } = {}): Promise<Claim<Payload, Checkpoint> | null> {
    const body = { ...options, ...(this.options.workerId ? { workerId: this.options.workerId } : {}) };
    const answer = await this.call('/v1/workers/claim', body);
    return answer === null ? null : (answer as Claim<Payload, Checkpoint>);
  }

  /** Extends the lease; records progress and a checkpoint if given. Throws LeaseLostError / RunCancelledError. */
  async heartbeat(runId: string, leaseToken: string, beat: { progress?: unknown; checkpoint?: unknown } = {}): Promise<{ leaseExpiresAt: string | null }> {
    return (await this.call(`/v1/runs/${encodeURIComponent(runId)}/heartbeat`, { leaseToken, ...beat })) as { leaseExpiresAt: string | null };
  }

  async complete(runId: string, leaseToken: string, result?: unknown): Promise<RunView> {
    return (await this.call(`/v1/runs/${encodeURIComponent(runId)}/complete`, { leaseToken, ...(result !== undefined ? { result } : {}) })) as RunView;
  }

  /** Fails the attempt; a retryable error is retried by the job's policy, with the last checkpoint. */
  async fail(runId: string, leaseToken: string, error: RunError): Promise<RunView> {
    return (await this.call(`/v1/runs/${encodeURIComponent(runId)}/fail`, { leaseToken, error })) as RunView;
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
    const timer = setInterval(() => {
      // A missed beat is retried at the next interval; the lease has two more to run.
      beat().catch(() => undefined);
    }, Math.max(500, (claim.leaseSeconds * 1000) / 3));
    try {
      const result = await work({ claim, signal: stop.signal, checkpoint: (value, progress) => beat({ checkpoint: value, ...(progress !== undefined ? { progress } : {}) }) });
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
          ? { code: error.code, message: error.message, retryable: error.retryable }
          : { code: 'WORKER_ERROR', message: error instanceof Error ? error.message : String(error), retryable: true };
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

  private async call(path: string, body: unknown): Promise<unknown> {
    const response = await this.fetchFn(`${this.baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.options.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (response.status === 204) return null;
    const text = await response.text();
    const parsed: unknown = text ? JSON.parse(text) : null;
    if (response.ok) return parsed;
    const problem: Problem = typeof parsed === 'object' && parsed !== null ? parsed : {};
    if (response.status === 409 && typeof problem.runStatus === 'string') {
      const detail = problem.detail ?? 'the lease token is stale';
      throw problem.runStatus === 'CANCELLED' ? new RunCancelledError(detail) : new LeaseLostError(problem.runStatus, detail);
    }
    throw new WorkerApiError(response.status, problem);
  }
}
