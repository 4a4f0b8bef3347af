// Runs and their state machine. A run is one attempt of one occurrence of a job; every change of
// its status is a conditional write whose condition is the `from` side of a transition below.
import type { Delivery } from './delivery';

export const RUN_STATUSES = ['SCHEDULED', 'QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELLED', 'SKIPPED', 'DEAD'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export type RunTrigger = 'schedule' | 'manual' | 'retry' | 'replay';

export interface RunError {
  readonly code: string;
  readonly message: string;
  readonly retryable: boolean;
}

export interface Run {
  readonly runId: string;
  readonly jobId: string;
  readonly tenantId: string;
  readonly jobType: string;
  /** The job's priority when the run was made (absent on runs older than priorities: normal). */
  readonly priority?: 'high' | 'normal' | 'low';
  /** The occurrence this run belongs to: its scheduled fire time. */
  readonly scheduledFor: string;
  readonly attempt: number;
  readonly status: RunStatus;
  /** Not to be leased before this instant (the occurrence time, or a retry's backoff). */
  readonly availableAt: string;
  readonly enqueuedAt: string | null;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
  readonly leaseOwner: string | null;
  readonly leaseExpiresAt: string | null;
  /** Fencing token: grows by one with every lease; every later write is conditioned on it. */
  readonly version: number;
  /** How long a lease on this run lasts: its attempt timeout plus a margin. */
  readonly leaseSeconds: number;
  readonly progress: unknown;
  readonly error: RunError | null;
  /** Why a run was skipped or cancelled, or what a misfire or overlap policy did to it. */
  readonly reason: string | null;
  readonly idempotencyKey: string;
  readonly trigger: RunTrigger;
  /** The job's delivery semantics when the run was made (absent on older runs: at-least-once). */
  readonly delivery?: Delivery;
  /** At-most-once: when the attempt was recorded as consumed, just before its target was called. */
  readonly consumedAt?: string | null;
  /** A workflow step's result: the JSON its target answered, or its external worker reported. */
  readonly result?: unknown;
  /**
   * A result over 4 KiB stored apart (decision 0163): its size in bytes of JSON. The run's item
   * names the object; `result` is then read from it where shown (GET /v1/runs/{runId}).
   */
  readonly resultStored?: { readonly bytes: number };
  /** The run a replay of this one made: a run is replayed once. */
  readonly replayedAs?: string;
  /**
   * The W3C trace context the run was made under (the API request's, or a new trace): its targets
   * get the trace id with a span per attempt, and its log lines carry the trace id (decision 0111).
   * Absent on runs from before traces.
   */
  readonly traceparent?: string;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/**
 * The fields of a run as the API shows it, each named once: a run read from the store is built of
 * these and nothing else, so that what the store keeps beside them (lease tokens, index keys) never
 * leaks. The type requires every field of `Run`, and no other.
 */
const RUN_VIEW: Readonly<Record<keyof Run, true>> = {
  runId: true,
  jobId: true,
  tenantId: true,
  jobType: true,
  priority: true,
  scheduledFor: true,
  attempt: true,
  status: true,
  availableAt: true,
  enqueuedAt: true,
  startedAt: true,
  finishedAt: true,
  leaseOwner: true,
  leaseExpiresAt: true,
  version: true,
  leaseSeconds: true,
  progress: true,
  error: true,
  reason: true,
  idempotencyKey: true,
  trigger: true,
  delivery: true,
  consumedAt: true,
  result: true,
  resultStored: true,
  replayedAs: true,
  traceparent: true,
  createdAt: true,
  updatedAt: true,
};
export const RUN_FIELDS = Object.keys(RUN_VIEW) as readonly (keyof Run)[];

/** Which statuses a run may move to from each status. Terminal statuses have no way out. */
export const RUN_TRANSITIONS: Readonly<Record<RunStatus, readonly RunStatus[]>> = {
  // SCHEDULED -> RUNNING: the ticker sent the message but crashed before marking the run QUEUED.
  SCHEDULED: ['QUEUED', 'RUNNING', 'CANCELLED', 'SKIPPED'],
  QUEUED: ['RUNNING', 'CANCELLED', 'SKIPPED'],
  // RUNNING -> QUEUED gives a lease back before anything ran (overlap policy buffer-one);
  // RUNNING -> SKIPPED decides not to run. A lost worker's run ends FAILED (WORKER_LOST) and is
  // retried as a new run, never leased again.
  RUNNING: ['QUEUED', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELLED', 'SKIPPED', 'DEAD'],
  SUCCEEDED: [],
  FAILED: [],
  TIMED_OUT: [],
  CANCELLED: [],
  SKIPPED: [],
  DEAD: [],
};

export function canTransition(from: RunStatus, to: RunStatus): boolean {
  return RUN_TRANSITIONS[from].includes(to);
}

export function isTerminal(status: RunStatus): boolean {
  return RUN_TRANSITIONS[status].length === 0;
}

/**
 * The statuses a run may leave to reach `to`: the status condition of the store's conditional
 * write of that transition. `among` narrows them to the ones a write starts from (a write fenced by
 * a lease starts from RUNNING); a write the table does not allow from any of them is a bug.
 */
export function sourcesOf(to: RunStatus, among: readonly RunStatus[] = RUN_STATUSES): RunStatus[] {
  const sources = RUN_STATUSES.filter((from) => among.includes(from) && canTransition(from, to));
  if (sources.length === 0) throw new Error(`no run may move to ${to} from ${among.join(' or ')}`);
  return sources;
}

/** A run that has not started: waiting for its time (SCHEDULED) or for a worker (QUEUED). */
export const PENDING_STATUSES: readonly RunStatus[] = ['SCHEDULED', 'QUEUED'];

/** Outcomes that end an attempt. */
export type AttemptOutcome = Extract<RunStatus, 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'DEAD'>;

/** The key a target uses to deduplicate effects: the same for every attempt of an occurrence. */
export function occurrenceKey(jobId: string, scheduledFor: string): string {
  return `${jobId}#${scheduledFor}`;
}

/**
 * Run ids are deterministic in the occurrence and the attempt, so that racing writers (two
 * tickers, an API retry) put the same item and a conditional put makes it exactly once.
 */
export function runIdFor(jobId: string, scheduledFor: string, attempt: number): string {
  return `${jobId}.${Date.parse(scheduledFor).toString(36)}.${attempt}`;
}
