// The types of the API's requests and answers, as the client sees them.
//
// Requests come from the zod schemas the handlers validate with (lambdas/domain), as their *input*
// types: what a caller may send, defaults left out. Answers are the domain's Job and Run. The few
// shapes the use cases (lambdas/app) define themselves are restated here, so that the client's
// declarations need only the domain and zod, not the whole backend with its AWS SDK types (decision
// 0101); test/unit/client-types.test.ts checks at compile time that each is the same type as the
// backend's, so the two cannot drift apart.
import type { z } from 'zod';
import type { Delivery } from '../lambdas/domain/delivery';
import type {
  HeaderValue,
  Job,
  JobStatus,
  RetryPolicy,
  Schedule,
  SecretReference,
  Target,
  jobPatchSchema,
  jobSpecSchema,
  scheduleSchema,
  targetSchema,
} from '../lambdas/domain/job';
import type { Run, RunError, RunStatus, RunTrigger } from '../lambdas/domain/run';
import type { AuditAction, AuditEntry } from '../lambdas/domain/audit';
import type {
  NotificationBody,
  NotifyDestination,
  NotifyEvent,
  NotifySpec,
  RunNotificationBody,
  WorkflowNotifySpec,
  WorkflowRunNotificationBody,
} from '../lambdas/domain/notify';

/**
 * An HTTP target header's value: text, or `{ secretArn }`, a Secrets Manager secret the deployment
 * lists, whose value the worker sends. Answers show text as "<redacted>" and a reference as given.
 */
export type { HeaderValue, SecretReference };
export type { Delivery, Job, JobStatus, RetryPolicy, Run, RunError, RunStatus, RunTrigger, Schedule, Target };
/** An entry of the audit trail (`GET /v1/audit`): who changed what, when, with the fields before and after. */
export type { AuditAction, AuditEntry };
/** A job's `notify`, its events and destinations, and the body each notification carries (docs/notifications.md). */
export type { NotificationBody, NotifyDestination, NotifyEvent, NotifySpec, RunNotificationBody, WorkflowNotifySpec, WorkflowRunNotificationBody };

/** A run's outcome notification as `GET /v1/runs/{runId}/notifications` shows it: where it goes and how its tries went. */
export interface RunNotification {
  readonly notificationId: string;
  readonly event: NotifyEvent;
  readonly destination: NotifyDestination;
  /** PENDING while tried, SENT once delivered, DEAD once its budget is spent (`runs.resendNotification` tries it again). */
  readonly status: 'PENDING' | 'SENT' | 'DEAD';
  readonly tries: number;
  readonly lastError: string | null;
  readonly createdAt: string;
  readonly sentAt: string | null;
  readonly deadAt: string | null;
  readonly resentAt: string | null;
}

/** A workflow run's outcome notification, with the end that raised it: 0 its first, n the one after its nth retry. */
export type WorkflowRunNotification = RunNotification & { readonly retry: number };
import type { Workflow, WorkflowSpec, workflowSpecSchema } from '../lambdas/domain/workflow';
import type { StepState, StepStatus, WorkflowRun, WorkflowRunStatus } from '../lambdas/domain/workflow-run';

export type { StepState, StepStatus, Workflow, WorkflowRun, WorkflowRunStatus, WorkflowSpec };

/** A workflow as `POST /v1/workflows` (and a new version) takes it: fields with defaults optional. */
export type WorkflowSpecInput = z.input<typeof workflowSpecSchema>;

/** A scheduled workflow's occurrences: its schedule's status, next fire time and the five after (decision 0147). */
export interface WorkflowScheduleState {
  readonly status: JobStatus;
  readonly nextRunAt: string | null;
  readonly upcomingRuns: string[];
  readonly pausedAt: string | null;
}

/** A workflow as the API answers it: the head and one version's definition, and its schedule's state once it has had one. */
export interface WorkflowView extends Workflow {
  readonly definition: WorkflowSpec;
  readonly scheduleState?: WorkflowScheduleState;
}

/** A workflow as `GET /v1/workflows` lists it: the head, its newest version's step count and its schedule's state. */
export interface WorkflowSummary extends Workflow {
  readonly stepCount?: number;
  readonly scheduleState?: WorkflowScheduleState;
}

/** `GET /v1/workflows`: newest first, or in name order (`order: 'name'`, or from `namePrefix`). */
export interface ListWorkflowsQuery extends PageQuery {
  readonly order?: 'newest' | 'name';
  readonly namePrefix?: string;
}

/** `GET /v1/workflows/{id}`: the workflow with its schedule's latest occurrences (each a run), newest first. */
export interface WorkflowDetail extends WorkflowView {
  readonly recentOccurrences: Run[];
}

export interface ListWorkflowRunsQuery extends PageQuery {
  readonly status?: WorkflowRunStatus;
}

/** A job as `POST /v1/jobs` takes it: what jobSpecSchema accepts (fields with defaults optional). */
export type JobSpecInput = z.input<typeof jobSpecSchema>;
/** `PATCH /v1/jobs/{jobId}`: any fields of a job spec, each replaced whole. */
export type JobPatch = z.input<typeof jobPatchSchema>;
export type ScheduleInput = z.input<typeof scheduleSchema>;
export type TargetInput = z.input<typeof targetSchema>;

/** A job as the API answers it: the stored job and its next fire times. */
export interface JobView extends Omit<Job, 'payloadRef'> {
  readonly upcomingRuns: string[];
  /**
   * Present when the payload is over 4 KiB and stored apart: its size. A list then shows
   * `payload: null` for a payload over 64 KiB (or past the page's 2 MiB); GET shows it always.
   */
  readonly payloadStored?: { readonly bytes: number };
}

/** `GET /v1/jobs/{jobId}`: the job and its ten newest runs. */
export type JobDetail = JobView & { recentRuns: Run[] };

export interface Page<T> {
  readonly items: T[];
  /** Pass as `cursor` for the next page; null on the last. */
  readonly nextCursor: string | null;
}

export interface CreatedJob {
  readonly job: JobView;
  readonly nextRunAt: string | null;
  /** True when the API answered a retry under the same Idempotency-Key with the job the first try created. */
  readonly replayed: boolean;
}

/** `GET /v1/jobs`: the tenant's jobs, filtered. */
export interface ListJobsQuery {
  readonly status?: JobStatus;
  readonly type?: string;
  /** Jobs with exactly this name (at most one); not with `namePrefix`. */
  readonly name?: string;
  /** Jobs whose name starts with this, in name order. */
  readonly namePrefix?: string;
  /** Jobs carrying this label, `key=value`; several (all must match) as an array or comma-separated. */
  readonly label?: string | readonly string[];
  /** Page size, 1 to 100 (default 20). */
  readonly limit?: number;
  readonly cursor?: string;
}

export interface PageQuery {
  readonly limit?: number;
  readonly cursor?: string;
}

/** `GET /v1/jobs/{jobId}/runs` and `GET /v1/runs`: newest occurrence first. */
export interface ListRunsQuery extends PageQuery {
  readonly status?: RunStatus;
  /** ISO 8601 instants: runs of occurrences scheduled at or after `from`, and before `to`. */
  readonly from?: string;
  readonly to?: string;
}

/** `GET /v1/audit`: newest first. */
export interface AuditQuery extends PageQuery {
  /** Only the entries of this job, run, workflow, secret or key. */
  readonly objectId?: string;
  /** ISO 8601 instants: entries at or after `from`, at or before `to`. */
  readonly from?: string;
  readonly to?: string;
}

export interface DeadRunsQuery extends PageQuery {
  readonly jobId?: string;
  /** ISO 8601 instants bounding when the runs ended (died), both included. */
  readonly from?: string;
  readonly to?: string;
}

/** `POST /v1/dead-runs/replay`: the dead runs of a job and/or a time range, up to `limit` (≤ 100) per call. */
export interface BulkReplayRequest {
  jobId?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
  limit?: number | undefined;
}

export interface BulkReplayResult {
  replayed: Run[];
  /** More dead runs match: call again, with `to` set to `until`. */
  remaining: boolean;
  /** The end of the range of deaths the call took: pass it as `to` to the next call, so that a replay that died again since is not taken again. */
  until: string;
}

/** `POST /v1/jobs/{jobId}/trigger`: a manual run now, with the job's payload or this one. */
export interface TriggerRequest {
  payload?: unknown;
  /** Coalesce the triggers of this many seconds (1 to 3600), from the first, into one run at the window's end carrying the last payload. */
  debounceSeconds?: number | undefined;
}

/** `POST /v1/jobs/{jobId}/backfill`: one run per fire time in [from, to) that has none yet (ISO 8601 instants). */
export interface BackfillRequest {
  from: string;
  to: string;
}

/** A backfill and its progress (`GET /v1/jobs/{jobId}/backfills/{backfillId}`). */
export interface Backfill {
  readonly backfillId: string;
  readonly jobId: string;
  readonly from: string;
  readonly to: string;
  /** Fire times in the range. */
  readonly total: number;
  /** Fire times released so far, oldest first. */
  readonly released: number;
  readonly status: 'ACTIVE' | 'DONE';
  readonly createdAt: string;
  readonly updatedAt: string;
}

/**
 * `POST /v1/schedules/preview`: the next `count` (≤ 100, default 5) occurrences of a schedule from
 * `from` (default now); with `jobId`, a job's (its id seeds the jitter; without `schedule`, its own
 * schedule and skips).
 */
export interface PreviewRequest {
  schedule?: ScheduleInput | undefined;
  jobId?: string | undefined;
  from?: string | undefined;
  count?: number | undefined;
}

/** One occurrence of a preview: its fire time, when it starts (with jitter), and why it is skipped. */
export interface Occurrence {
  readonly at: string;
  readonly startsAt: string | null;
  readonly skipped: 'excluded date' | 'skipped on request' | null;
}

export interface PreviewResult {
  readonly fireTimes: string[];
  readonly occurrences: Occurrence[];
}

/** `POST /v1/jobs/{jobId}/pause`: why, and when the job resumes by itself. */
export interface PauseRequest {
  note?: string | undefined;
  until?: string | undefined;
}

/** `POST /v1/jobs/{jobId}/skip`: the next N occurrences (`next`), or fire times named one by one (`occurrences`); one of the two. */
export interface SkipRequest {
  next?: number | undefined;
  occurrences?: string[] | undefined;
}

/** A webhook signing secret as the API lists it: never its value. */
export interface SigningSecret {
  readonly secretId: string;
  readonly createdAt: string;
  /** When a replaced secret stops signing; null for the current one. */
  readonly expiresAt: string | null;
}

/** `POST /v1/signing-secrets`: the new secret, with its value (in this answer only, never again). */
export interface IssuedSigningSecret extends SigningSecret {
  /** The value, `whsec_` + base64. */
  readonly secret: string;
  /** The secrets that sign beside it, until their `expiresAt`. */
  readonly previous: readonly SigningSecret[];
  /**
   * From when every delivery carries its signature (about a minute after the issue: workers hold the
   * secrets they read that long). Until then a delivery may be signed only with the previous
   * secrets, or not at all for a tenant's first: a receiver accepts both until then.
   */
  readonly signsFrom: string;
}

/** `POST /v1/signing-secrets`: how long the secret it replaces keeps signing (default 86400 s, at most 7 days). */
export interface IssueSigningSecretRequest {
  graceSeconds?: number | undefined;
}

export interface HealthQuery {
  /** The window of the run figures, 1 to 60 minutes (default 15). */
  readonly minutes?: number;
}

export interface QueueHealth {
  readonly visible: number;
  readonly inFlight: number;
  readonly delayed: number;
  /** From CloudWatch (AWS/SQS); null when the backend publishes no SQS metrics (moto). */
  readonly oldestMessageAgeSeconds: number | null;
}

export interface PoolHealth {
  readonly jobTypes: readonly string[];
  readonly standard: QueueHealth;
  readonly high: QueueHealth | null;
  readonly low: QueueHealth | null;
  readonly dlq: QueueHealth;
}

export interface InFlightRun {
  readonly runId: string;
  readonly jobId: string;
  readonly jobType: string;
  readonly attempt: number;
  readonly startedAt: string | null;
  readonly leaseOwner: string | null;
  readonly leaseExpiresAt: string | null;
  readonly leaseExpired: boolean;
}

export interface MinuteFigures {
  readonly minute: string;
  readonly started: number;
  readonly succeeded: number;
  readonly errors: number;
  /** Start lag percentiles of the runs leased in the minute; null when none was. */
  readonly startLagP50Ms: number | null;
  readonly startLagP99Ms: number | null;
}

interface Percentiles {
  readonly p50: number | null;
  readonly p95: number | null;
  readonly p99: number | null;
  readonly samples: number;
}

/** `GET /v1/health`: queues and the ticker (the deployment's), runs and in-flight work (the caller's tenant's). */
export interface HealthReport {
  readonly status: 'ok' | 'degraded';
  readonly checkedAt: string;
  readonly problems: string[];
  readonly queues: {
    readonly dispatch: QueueHealth;
    readonly dispatchDlq: QueueHealth;
    readonly pools: Record<string, PoolHealth>;
  };
  readonly ticker: {
    readonly lastCompletedAt: string | null;
    readonly sinceLastCompletionSeconds: number | null;
    readonly lastReport: Record<string, number> | null;
  };
  readonly runs: {
    readonly windowMinutes: number;
    readonly byStatus: Record<'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'DEAD' | 'SKIPPED' | 'CANCELLED', number>;
    readonly started: number;
    readonly retried: number;
    readonly workerLost: number;
    readonly successRate: number | null;
    readonly startLagMs: Percentiles;
    readonly claimWaitMs: Percentiles;
    readonly perMinute: MinuteFigures[];
    readonly deadAwaitingReplay: { readonly count: number; readonly capped: boolean };
  };
  readonly inFlight: InFlightRun[];
}

/** `POST /v1/workers/claim`. */
export interface ClaimRequest {
  /** Only runs of jobs of this type. */
  jobType?: string | undefined;
  /** Wait up to this many seconds (≤ 20) for a run; 0 answers at once. */
  waitSeconds?: number | undefined;
  /** Names the worker in the run's leaseOwner (`external:<workerId>`). */
  workerId?: string | undefined;
}

/** What a claim hands an external worker. */
export interface Claim<Payload = unknown, Checkpoint = unknown> {
  readonly run: Run;
  /** The lease's secret: send it with every heartbeat, complete and fail. */
  readonly leaseToken: string;
  readonly leaseExpiresAt: string;
  /** Heartbeat well within this (the worker client's `process` beats every third of it). */
  readonly leaseSeconds: number;
  readonly attempt: number;
  /** Grows strictly across the attempts of an occurrence: pass it to systems that can fence writes. */
  readonly fencingToken: number;
  /** The occurrence's key, the same for every attempt: deduplicate effects by it. */
  readonly idempotencyKey: string;
  readonly payload: Payload;
  /** The last checkpoint saved by an earlier attempt of this occurrence: resume from it. */
  readonly checkpoint: Checkpoint | null;
  /** A workflow step's run: its workflow run and step. */
  readonly workflow?: { readonly workflowId: string; readonly workflowRunId: string; readonly stepId: string; readonly version: number };
  /**
   * A workflow step's run: its dependencies' results, by step id. Complete it with a result of at most
   * 1 MiB of JSON where the deployment has a payload bucket, else 4 KiB (docs/api.md, "Large payloads").
   */
  readonly results?: Readonly<Record<string, unknown>>;
}

export interface Heartbeat {
  progress?: unknown;
  checkpoint?: unknown;
}

export interface HeartbeatResult {
  run: Run;
  leaseExpiresAt: string | null;
}
