// The route table of the API as data: method, path, what each route reads and what it answers.
// The router (adapter.ts) serves it, with one handler per operation; the OpenAPI document
// (openapi.ts) is generated from it. No AWS SDK here: a client or a script may import it.
import type { z } from 'zod';
import { resourceId } from '../core/validation';
import { MAX_WORKFLOW_STEPS } from '../domain/workflow';
import type { ProblemStatus } from './responses';
import {
  auditQuery,
  bulkReplaySchema,
  claimSchema,
  completeSchema,
  deadQuery,
  failSchema,
  healthQuery,
  heartbeatSchema,
  issueSigningSecretSchema,
  jobPatchSchema,
  jobSpecSchema,
  listJobsQuery,
  listRunsQuery,
  previewSchema,
  triggerSchema,
  listWorkflowRunsQuery,
  listWorkflowsQuery,
  workflowQuery,
  workflowSpecSchema,
  backfillSchema,
  pauseSchema,
  skipSchema,
  notifyEventParam,
  workflowEventParam,
} from './schemas';
import {
  auditPageSchema,
  bulkReplayResponseSchema,
  claimedRunSchema,
  createJobResponseSchema,
  healthReportSchema,
  heartbeatResponseSchema,
  issuedSigningSecretSchema,
  jobDetailSchema,
  jobPageSchema,
  jobViewSchema,
  previewResponseSchema,
  runPageSchema,
  runResponseSchema,
  notificationListSchema,
  notificationSchema,
  runSchema,
  signingSecretListSchema,
  workflowRunNotificationListSchema,
  workflowRunNotificationSchema,
  workflowRunPageSchema,
  workflowRunSchema,
  workflowDetailSchema,
  workflowSummaryPageSchema,
  workflowViewSchema,
  backfillResponseSchema,
} from './responses';

/** Every path parameter of every route, by name. A malformed id is a 400; a well-formed unknown one, 404. */
export const PATH_PARAMS = {
  jobId: resourceId,
  runId: resourceId,
  secretId: resourceId,
  workflowId: resourceId,
  workflowRunId: resourceId,
  backfillId: resourceId,
  event: notifyEventParam,
  workflowEvent: workflowEventParam,
} as const satisfies Record<string, z.ZodType>;

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

const job = { description: 'The job', schema: jobViewSchema };

const exampleJob = {
  name: 'nightly-report',
  type: 'reports',
  labels: { team: 'billing', env: 'prod' },
  schedule: { kind: 'cron', expression: '0 2 * * *', timezone: 'Europe/Paris' },
  target: {
    kind: 'http',
    url: 'https://example.com/hooks/report',
    method: 'POST',
    headers: { Authorization: 'Bearer s3cr3t', 'X-Api-Key': { secretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:reports/api-key-AbC123' } },
  },
  payload: { report: 'daily' },
};

/** The API's routes, by operation id (the OpenAPI operationId and the name of its handler). */
export const ROUTES = {
  createJob: {
    method: 'POST',
    path: '/v1/jobs',
    tag: 'Jobs',
    summary: 'Create a job',
    description:
      'Creates a job and plans its first run in one transaction. With an Idempotency-Key, a retry answers as the first request did (201, with `Idempotent-Replayed: true`).',
    body: { schema: jobSpecSchema, required: true },
    headers: ['Idempotency-Key', 'traceparent'],
    responses: {
      201: {
        description: 'The job was created (or, under a replayed Idempotency-Key, had been)',
        schema: createJobResponseSchema,
        headers: { Location: 'The job’s URL', 'Idempotent-Replayed': '`true` when this answers an earlier request with the same key' },
      },
    },
    problems: [409, 413, 415],
    example: exampleJob,
  },
  listJobs: {
    method: 'GET',
    path: '/v1/jobs',
    tag: 'Jobs',
    summary: 'List jobs',
    description:
      'Newest first, or in name order with `namePrefix`. Filters combine (all must match); each is served by an index (docs/decisions/0095-job-and-run-finding-indexes.md).',
    query: listJobsQuery,
    responses: { 200: { description: 'A page of jobs', schema: jobPageSchema } },
  },
  getJob: {
    method: 'GET',
    path: '/v1/jobs/{jobId}',
    tag: 'Jobs',
    summary: 'Get a job with its recent runs',
    responses: { 200: { description: 'The job and its ten most recent runs', schema: jobDetailSchema } },
  },
  patchJob: {
    method: 'PATCH',
    path: '/v1/jobs/{jobId}',
    tag: 'Jobs',
    summary: 'Change a job',
    description: `Each field given replaces the stored one whole; the result is checked as a full job. A header of an HTTP target sent with the masked value "<redacted>" keeps its stored value; a header left out is removed.`,
    body: { schema: jobPatchSchema, required: true },
    headers: ['If-Match'],
    responses: { 200: job },
    problems: [409, 412, 413, 415],
    example: { timeoutSeconds: 120, labels: { team: 'billing' } },
  },
  deleteJob: { method: 'DELETE', path: '/v1/jobs/{jobId}', tag: 'Jobs', summary: 'Delete (cancel) a job', responses: { 200: job }, problems: [409] },
  pauseJob: {
    method: 'POST',
    path: '/v1/jobs/{jobId}/pause',
    tag: 'Jobs',
    summary: 'Pause a job',
    description:
      'Retires the pending occurrence. With `until`, the job resumes by itself at that time (the ticker resumes it within its period, a minute), by its misfire policy. Pausing a PAUSED job replaces its note and end.',
    body: { schema: pauseSchema, required: false },
    responses: { 200: job },
    problems: [409, 413, 415],
    example: { note: 'supplier API down, INC-2231', until: '2026-12-01T09:00:00Z' },
  },
  skipJob: {
    method: 'POST',
    path: '/v1/jobs/{jobId}/skip',
    tag: 'Jobs',
    summary: 'Skip occurrences of a recurring job',
    description:
      "Each skipped occurrence is recorded as a SKIPPED run (reason `skipped on request by <key id>`), and the job's chain plans over it. The job lists the skips it has not reached in `skippedOccurrences` (at most 100).",
    body: { schema: skipSchema, required: true },
    responses: { 200: job },
    problems: [409, 413, 415],
    example: { next: 2 },
  },
  resumeJob: { method: 'POST', path: '/v1/jobs/{jobId}/resume', tag: 'Jobs', summary: 'Resume a paused job', responses: { 200: job }, problems: [409] },
  triggerJob: {
    method: 'POST',
    path: '/v1/jobs/{jobId}/trigger',
    tag: 'Jobs',
    summary: 'Run a job now',
    headers: ['traceparent'],
    body: { schema: triggerSchema, required: false },
    responses: { 202: { description: 'The manual run', schema: runResponseSchema } },
    problems: [409, 413, 415],
    example: { payload: { report: 'adhoc' } },
  },
  backfillJob: {
    method: 'POST',
    path: '/v1/jobs/{jobId}/backfill',
    tag: 'Jobs',
    summary: 'Backfill a range of fire times',
    description:
      "One run per fire time of the job's cron schedule in [from, to) that has no run yet, released oldest first at a bounded rate. The same range answers the same backfill. At most 527,040 fire times (a leap year of minutes) per backfill.",
    body: { schema: backfillSchema, required: true },
    headers: ['traceparent'],
    responses: { 202: { description: 'The backfill and its progress', schema: backfillResponseSchema } },
    problems: [409, 413, 415],
    example: { from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' },
  },
  getBackfill: {
    method: 'GET',
    path: '/v1/jobs/{jobId}/backfills/{backfillId}',
    tag: 'Jobs',
    summary: "A backfill's progress",
    responses: { 200: { description: 'The backfill', schema: backfillResponseSchema } },
  },
  listJobRuns: {
    method: 'GET',
    path: '/v1/jobs/{jobId}/runs',
    tag: 'Runs',
    summary: 'List the runs of a job',
    description: 'Newest occurrence first; `from`/`to` bound the occurrence time.',
    query: listRunsQuery,
    responses: { 200: { description: 'A page of runs', schema: runPageSchema } },
  },
  listRuns: {
    method: 'GET',
    path: '/v1/runs',
    tag: 'Runs',
    summary: 'List the runs of the tenant',
    description: 'Newest occurrence first; `from`/`to` bound the occurrence time.',
    query: listRunsQuery,
    responses: { 200: { description: 'A page of runs', schema: runPageSchema } },
  },
  getRun: { method: 'GET', path: '/v1/runs/{runId}', tag: 'Runs', summary: 'Get a run', responses: { 200: { description: 'The run', schema: runSchema } } },
  cancelRun: {
    method: 'POST',
    path: '/v1/runs/{runId}/cancel',
    tag: 'Runs',
    summary: 'Cancel a run',
    responses: { 200: { description: 'The run as it is now', schema: runSchema } },
    problems: [409],
  },
  replayRun: {
    method: 'POST',
    path: '/v1/runs/{runId}/replay',
    tag: 'Runs',
    summary: 'Replay a finished run',
    headers: ['traceparent'],
    responses: { 202: { description: 'The new run', schema: runResponseSchema } },
    problems: [409],
  },
  listRunNotifications: {
    method: 'GET',
    path: '/v1/runs/{runId}/notifications',
    tag: 'Runs',
    summary: "A run's outcome notifications",
    description: 'One per event the run raised (docs/notifications.md): where it goes, whether it was sent, its tries and last error. Kept 14 days.',
    responses: { 200: { description: "The run's notifications", schema: notificationListSchema } },
  },
  resendNotification: {
    method: 'POST',
    path: '/v1/runs/{runId}/notifications/{event}/resend',
    tag: 'Runs',
    summary: 'Send a dead notification again',
    description:
      "A DEAD notification (its budget spent, or its destination refused it) is tried again with a fresh budget, the same body and notificationId. Counted against the tenant's create rate, as a replay is. A 409 unless it is DEAD.",
    responses: { 202: { description: 'The notification, PENDING again', schema: notificationSchema } },
    problems: [409, 429, 503],
  },
  claimRun: {
    method: 'POST',
    path: '/v1/workers/claim',
    tag: 'External workers',
    summary: 'Claim a due run of an external target',
    body: { schema: claimSchema, required: false },
    responses: {
      200: { description: 'A run, leased to the caller', schema: claimedRunSchema },
      204: { description: 'Nothing due within waitSeconds: ask again' },
    },
    problems: [413, 415],
    example: { jobType: 'reports', waitSeconds: 10, workerId: 'host-1' },
  },
  heartbeatRun: {
    method: 'POST',
    path: '/v1/runs/{runId}/heartbeat',
    tag: 'External workers',
    summary: 'Renew a lease, report progress',
    body: { schema: heartbeatSchema, required: true },
    responses: { 200: { description: 'The run and its renewed lease', schema: heartbeatResponseSchema } },
    problems: [409, 413, 415],
  },
  completeRun: {
    method: 'POST',
    path: '/v1/runs/{runId}/complete',
    tag: 'External workers',
    summary: 'Complete a claimed run',
    body: { schema: completeSchema, required: true },
    responses: { 200: { description: 'The run', schema: runSchema } },
    problems: [409, 413, 415],
  },
  failRun: {
    method: 'POST',
    path: '/v1/runs/{runId}/fail',
    tag: 'External workers',
    summary: 'Fail a claimed run',
    body: { schema: failSchema, required: true },
    responses: { 200: { description: 'The run', schema: runSchema } },
    problems: [409, 413, 415],
  },
  createWorkflow: {
    method: 'POST',
    path: '/v1/workflows',
    tag: 'Workflows',
    summary: 'Create a workflow',
    description: `A DAG of steps, each a target, payload and policies of its own with \`dependsOn\` (docs/api.md#workflows). At most ${MAX_WORKFLOW_STEPS} steps; a cycle, an unknown or duplicate step id or an unreachable step is a 400 naming the step. With a \`schedule\` (any kind a job takes) each occurrence starts a workflow run, under the overlap and misfire policies; a scheduled workflow counts against the tenant's active jobs (429 at the limit).`,
    body: { schema: workflowSpecSchema, required: true },
    responses: { 201: { description: 'The workflow, at version 1', schema: workflowViewSchema, headers: { Location: 'The workflow’s URL' } } },
    problems: [409, 413, 415, 429],
    example: {
      name: 'nightly-etl',
      steps: [
        { id: 'extract', target: { kind: 'http', url: 'https://example.com/extract' } },
        { id: 'load', target: { kind: 'http', url: 'https://example.com/load' }, dependsOn: ['extract'] },
        { id: 'cleanup', target: { kind: 'http', url: 'https://example.com/cleanup' }, dependsOn: ['load'], runIf: 'all-done' },
      ],
    },
  },
  listWorkflows: {
    method: 'GET',
    path: '/v1/workflows',
    tag: 'Workflows',
    summary: "List the tenant's workflows",
    description:
      'Newest first, or in name order (order=name, or a namePrefix). Each with its newest version, step count and schedule state; GET one for its definition.',
    query: listWorkflowsQuery,
    responses: { 200: { description: 'A page of workflows', schema: workflowSummaryPageSchema } },
  },
  getWorkflow: {
    method: 'GET',
    path: '/v1/workflows/{workflowId}',
    tag: 'Workflows',
    summary: 'Get a workflow and a version of its definition',
    query: workflowQuery,
    responses: { 200: { description: "The workflow, with its schedule's latest occurrences", schema: workflowDetailSchema } },
  },
  deleteWorkflow: {
    method: 'DELETE',
    path: '/v1/workflows/{workflowId}',
    tag: 'Workflows',
    summary: 'Delete a workflow',
    description:
      "It leaves the list and frees its name; its schedule, if any, is CANCELLED with its pending occurrence (freeing its place under the tenant's active jobs), and its running workflow runs are cancelled. Its versions and runs stay readable; starting, retrying, pausing, resuming or versioning it is a 409 from then on. Deleting it again answers it as it is.",
    responses: { 200: { description: 'The workflow, with deletedAt', schema: workflowViewSchema } },
    problems: [409],
  },
  pauseWorkflow: {
    method: 'POST',
    path: '/v1/workflows/{workflowId}/pause',
    tag: 'Workflows',
    summary: "Pause a workflow's schedule",
    description: 'Its pending occurrence never starts; workflow runs already started go on. A 409 when the workflow has no schedule or it is not ACTIVE.',
    responses: { 200: { description: 'The workflow, its schedule PAUSED', schema: workflowViewSchema } },
    problems: [409],
  },
  resumeWorkflow: {
    method: 'POST',
    path: '/v1/workflows/{workflowId}/resume',
    tag: 'Workflows',
    summary: "Resume a workflow's paused schedule",
    description:
      'The next occurrence is the one its misfire policy picks (fire-once: the latest missed one, at once; skip: the first after now; backfill: the missed ones in order).',
    responses: { 200: { description: 'The workflow, its schedule ACTIVE again', schema: workflowViewSchema } },
    problems: [409],
  },
  updateWorkflow: {
    method: 'POST',
    path: '/v1/workflows/{workflowId}/versions',
    tag: 'Workflows',
    summary: 'Write a new version of the definition',
    description:
      'Runs started before keep the version they started with. If-Match: the version read (a 409 when another came first). A changed schedule replans the pending occurrence; new policies apply from the next occurrence; a version without a schedule cancels it.',
    body: { schema: workflowSpecSchema, required: true },
    headers: ['If-Match'],
    responses: { 201: { description: 'The workflow at its new version', schema: workflowViewSchema } },
    problems: [409, 413, 415, 429],
  },
  startWorkflowRun: {
    method: 'POST',
    path: '/v1/workflows/{workflowId}/runs',
    tag: 'Workflows',
    summary: 'Start a run of the workflow now',
    description:
      'Steps without dependencies start at once; each other step when its dependencies are done. Counted against the create rate. Every step run joins the request’s traceparent (a new trace without one).',
    headers: ['traceparent'],
    responses: { 202: { description: 'The workflow run', schema: workflowRunSchema } },
    problems: [409],
  },
  listWorkflowRuns: {
    method: 'GET',
    path: '/v1/workflows/{workflowId}/runs',
    tag: 'Workflows',
    summary: "List a workflow's runs, newest first",
    query: listWorkflowRunsQuery,
    responses: { 200: { description: 'A page of workflow runs', schema: workflowRunPageSchema } },
  },
  getWorkflowRun: {
    method: 'GET',
    path: '/v1/workflows/{workflowId}/runs/{workflowRunId}',
    tag: 'Workflows',
    summary: 'Get a workflow run with its steps',
    responses: { 200: { description: 'The workflow run', schema: workflowRunSchema } },
  },
  cancelWorkflowRun: {
    method: 'POST',
    path: '/v1/workflows/{workflowId}/runs/{workflowRunId}/cancel',
    tag: 'Workflows',
    summary: 'Cancel a workflow run',
    description: 'Waiting steps never start; running steps are cancelled as runs are (the target call aborts at the next heartbeat).',
    responses: { 200: { description: 'The cancelled workflow run', schema: workflowRunSchema } },
    problems: [409],
  },
  retryWorkflowRun: {
    method: 'POST',
    path: '/v1/workflows/{workflowId}/runs/{workflowRunId}/retry',
    tag: 'Workflows',
    summary: 'Retry a failed workflow run from its failed steps',
    description:
      'Succeeded steps are not run again; their results are reused. Failed steps start their next attempt with a fresh retry budget, in the request’s traceparent (a new trace without one).',
    headers: ['traceparent'],
    responses: { 202: { description: 'The workflow run, running again', schema: workflowRunSchema } },
    problems: [409],
  },
  listWorkflowRunNotifications: {
    method: 'GET',
    path: '/v1/workflows/{workflowId}/runs/{workflowRunId}/notifications',
    tag: 'Workflows',
    summary: "A workflow run's outcome notifications",
    description:
      "One per event each end of the workflow run raised (its first, and each retry's; docs/notifications.md#workflows), the latest end's first: where it goes, whether it was sent, its tries and last error. Kept 14 days.",
    responses: { 200: { description: "The workflow run's notifications", schema: workflowRunNotificationListSchema } },
  },
  resendWorkflowRunNotification: {
    method: 'POST',
    path: '/v1/workflows/{workflowId}/runs/{workflowRunId}/notifications/{workflowEvent}/resend',
    tag: 'Workflows',
    summary: "Send a workflow run's dead notification again",
    description:
      "The latest end's DEAD notification of that event is tried again with a fresh budget, the same body and notificationId, as a run's is. Counted against the tenant's create rate. A 409 unless it is DEAD.",
    responses: { 202: { description: 'The notification, PENDING again', schema: workflowRunNotificationSchema } },
    problems: [409, 429, 503],
  },
  listDeadRuns: {
    method: 'GET',
    path: '/v1/dead-runs',
    tag: 'Dead runs',
    summary: 'List dead runs',
    query: deadQuery,
    responses: { 200: { description: 'A page of dead runs, newest death first', schema: runPageSchema } },
  },
  replayDeadRuns: {
    method: 'POST',
    path: '/v1/dead-runs/replay',
    tag: 'Dead runs',
    summary: 'Replay dead runs in bulk',
    headers: ['traceparent'],
    body: { schema: bulkReplaySchema, required: false },
    responses: { 202: { description: 'What was replayed', schema: bulkReplayResponseSchema } },
    problems: [413, 415],
  },
  previewSchedule: {
    method: 'POST',
    path: '/v1/schedules/preview',
    tag: 'Schedules',
    summary: 'Preview the fire times of a schedule',
    body: { schema: previewSchema, required: true },
    responses: { 200: { description: 'The next fire times', schema: previewResponseSchema } },
    problems: [413, 415],
    example: { schedule: { kind: 'cron', expression: '*/15 9-17 * * MON-FRI', timezone: 'America/New_York' }, count: 3 },
  },
  issueSigningSecret: {
    method: 'POST',
    path: '/v1/signing-secrets',
    tag: 'Signing secrets',
    summary: 'Issue (or rotate) the webhook signing secret',
    description:
      'HTTP deliveries are signed (Standard Webhooks) with each live secret. The one this replaces keeps signing for graceSeconds. The value is in this answer only (Cache-Control: no-store).',
    body: { schema: issueSigningSecretSchema, required: false },
    responses: { 201: { description: 'The new secret, with its value', schema: issuedSigningSecretSchema, headers: { 'Cache-Control': '`no-store`' } } },
    problems: [409, 413, 415],
    example: { graceSeconds: 86400 },
  },
  listSigningSecrets: {
    method: 'GET',
    path: '/v1/signing-secrets',
    tag: 'Signing secrets',
    summary: 'List the live signing secrets, without their values',
    responses: { 200: { description: 'The live secrets, newest first', schema: signingSecretListSchema } },
  },
  revokeSigningSecret: {
    method: 'DELETE',
    path: '/v1/signing-secrets/{secretId}',
    tag: 'Signing secrets',
    summary: 'Stop a signing secret at once',
    responses: { 204: { description: 'The secret no longer signs' } },
  },
  listAudit: {
    method: 'GET',
    path: '/v1/audit',
    tag: 'Audit',
    summary: 'What people changed: the audit trail, newest first',
    description:
      'Every change made through the API or the operator CLI, with who (the API key id), what, and the fields before and after. Filter by object and time range; entries are kept AUDIT_RETENTION_DAYS.',
    query: auditQuery,
    responses: { 200: { description: 'A page of audit entries', schema: auditPageSchema } },
  },
  checkHealth: {
    method: 'GET',
    path: '/v1/health',
    tag: 'Health',
    summary: 'Health of the scheduler, as the tenant sees it',
    query: healthQuery,
    responses: { 200: { description: 'The health report', schema: healthReportSchema } },
  },
  getOpenApi: {
    method: 'GET',
    path: '/v1/openapi.json',
    tag: 'Contract',
    summary: 'This document',
    public: true,
    responses: { 200: { description: 'The OpenAPI 3.1 document of this API' } },
  },
} as const satisfies Record<string, RouteSpec>;

export type OperationId = keyof typeof ROUTES;

/** Routes API Gateway serves without the authorizer (the stack and the local runtime both read this). */
export const PUBLIC_ROUTES: readonly { readonly method: string; readonly path: string }[] = Object.values(ROUTES as Record<string, RouteSpec>)
  .filter((route) => route.public === true)
  .map(({ method, path }) => ({ method, path }));
