// The answers of the API as zod schemas: the shapes each route returns and the problem+json of its
// refusals. The OpenAPI document (openapi.ts) is generated from them and the integration tests check
// every answer against it; requests are in schemas.ts. Zod and the pure domain only, no AWS SDK.
import { z } from 'zod';
import { AUDIT_ACTIONS } from '../domain/audit';
import { DELIVERY_MODES } from '../domain/delivery';
import { NOTIFY_EVENTS, notifyDestinationSchema, notifySchema } from '../domain/notify';
import { concurrencySchema, rateLimitSchema } from '../domain/flow-control';
import { MASKED_HEADER_VALUE, jsonValue, retryPolicySchema, scheduleSchema, targetSchema } from '../domain/job';
import { jobStatusSchema, runStatusSchema } from './schemas';
import { workflowSpecSchema } from '../domain/workflow';
import { STEP_STATUSES, WORKFLOW_RUN_STATUSES } from '../domain/workflow-run';

const isoInstant = z.iso.datetime({ offset: true, message: 'must be an ISO 8601 timestamp' });

const timestamp = z.string().meta({ format: 'date-time' });
const nullableTimestamp = timestamp.nullable();

export const runSchema = z
  .strictObject({
    runId: z.string(),
    jobId: z.string(),
    tenantId: z.string(),
    jobType: z.string(),
    priority: z.enum(['high', 'normal', 'low']).optional(),
    scheduledFor: timestamp,
    attempt: z.number().int(),
    status: runStatusSchema,
    availableAt: timestamp,
    enqueuedAt: nullableTimestamp,
    startedAt: nullableTimestamp,
    finishedAt: nullableTimestamp,
    leaseOwner: z.string().nullable(),
    leaseExpiresAt: nullableTimestamp,
    version: z.number().int().meta({ description: 'The fencing token: grows by one with every lease.' }),
    leaseSeconds: z.number(),
    progress: jsonValue,
    error: z.strictObject({ code: z.string(), message: z.string(), retryable: z.boolean() }).nullable(),
    reason: z.string().nullable(),
    idempotencyKey: z.string(),
    trigger: z.enum(['schedule', 'manual', 'retry', 'replay']),
    delivery: z.enum(DELIVERY_MODES).optional(),
    consumedAt: nullableTimestamp.optional(),
    result: jsonValue.optional().meta({
      description:
        "A workflow step's result: the JSON its target answered, or its external worker reported. One over 4 KiB is stored apart (`resultStored`); a list of runs then shows it only when it is at most 64 KiB and within the page's 2 MiB of results; GET /v1/runs/{runId} always shows it.",
    }),
    resultStored: z
      .strictObject({ bytes: z.number().int() })
      .optional()
      .meta({ description: "Present when the run's result is over 4 KiB and stored apart in the payload bucket: its size in bytes of JSON." }),
    replayedAs: z.string().optional().meta({ description: 'The run that replayed this one, once replayed.' }),
    traceparent: z.string().optional().meta({
      description:
        "The W3C trace context the run was made under: the request's `traceparent` when it sent a valid one, else a new trace. Targets receive its trace id with a span per attempt.",
    }),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Run' });

/** A job's target as responses show it: an HTTP target's header values masked. */
const targetViewSchema = targetSchema;

export const jobViewSchema = z
  .strictObject({
    name: z.string(),
    type: z.string(),
    schedule: scheduleSchema,
    target: targetViewSchema.meta({
      description: `An HTTP target's header values are write-only: each text value shows as "${MASKED_HEADER_VALUE}"; a reference to a Secrets Manager secret ({"secretArn": …}) shows as given, as it names the secret and is not its value.`,
    }),
    labels: z.record(z.string(), z.string()),
    payload: jsonValue,
    retryPolicy: retryPolicySchema,
    timeoutSeconds: z.number().int(),
    delivery: z.enum(DELIVERY_MODES),
    overlapPolicy: z.enum(['allow', 'skip', 'buffer-one', 'cancel-running']),
    misfirePolicy: z.enum(['fire-once', 'skip', 'backfill']),
    backfillLimit: z.number().int(),
    priority: z.enum(['high', 'normal', 'low']),
    notify: notifySchema.optional().meta({ description: 'Absent when the job asks for no notifications.' }),
    concurrency: concurrencySchema.nullable().optional(),
    rateLimit: rateLimitSchema.nullable().optional(),
    jobId: z.string(),
    tenantId: z.string(),
    status: jobStatusSchema,
    createdAt: timestamp,
    updatedAt: timestamp,
    version: z.number().int().meta({ description: 'Send it as If-Match on a PATCH.' }),
    nextRunAt: nullableTimestamp,
    nextRunId: z.string().nullable(),
    lastStartedRunId: z.string().nullable().optional(),
    pausedAt: nullableTimestamp.optional(),
    pausedPending: z.strictObject({ runId: z.string().nullable(), scheduledFor: timestamp }).nullable().optional(),
    pauseNote: z.string().nullable().optional().meta({ description: 'Why the job is paused, as the pause request said.' }),
    pausedUntil: nullableTimestamp.optional().meta({ description: 'When the paused job resumes by itself.' }),
    skippedOccurrences: z
      .array(timestamp)
      .optional()
      .meta({ description: "Fire times skipped on request that the job's chain has not reached yet (each recorded as a SKIPPED run)." }),
    upcomingRuns: z.array(timestamp),
    payloadStored: z.strictObject({ bytes: z.number().int() }).optional().meta({
      description:
        'Present when the payload is over 4 KiB and stored apart: its size in bytes of JSON. A list of jobs then shows `payload: null` when the payload is over 64 KiB or past the 2 MiB of payloads a page shows; GET /v1/jobs/{jobId} always shows it.',
    }),
  })
  .meta({ id: 'Job' });

export const jobDetailSchema = jobViewSchema.extend({ recentRuns: z.array(runSchema) }).meta({ id: 'JobDetail' });

const pageOf = <T extends z.ZodType>(item: T, id: string) =>
  z
    .strictObject({
      items: z.array(item),
      nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null when nothing follows.' }),
    })
    .meta({ id });

export const jobPageSchema = pageOf(jobViewSchema, 'JobPage');
export const runPageSchema = pageOf(runSchema, 'RunPage');
export const createJobResponseSchema = z.strictObject({ job: jobViewSchema, nextRunAt: nullableTimestamp }).meta({ id: 'CreatedJob' });
export const runResponseSchema = z.strictObject({ run: runSchema }).meta({ id: 'RunAccepted' });
export const heartbeatResponseSchema = z.strictObject({ run: runSchema, leaseExpiresAt: nullableTimestamp }).meta({ id: 'Heartbeat' });
export const bulkReplayResponseSchema = z
  .strictObject({
    replayed: z.array(runSchema),
    remaining: z.boolean(),
    until: z.string().meta({
      description:
        'The end of the range of deaths this call took (its `to`, or when it began). Pass it as `to` to the next call while `remaining` is true: a replay that died again since is not taken again.',
    }),
  })
  .meta({ id: 'BulkReplay' });
export const backfillSchema = z
  .strictObject({
    backfillId: z.string(),
    jobId: z.string(),
    from: timestamp,
    to: timestamp,
    total: z.number().int().meta({ description: 'Fire times in the range.' }),
    released: z.number().int().meta({ description: 'Fire times released so far, oldest first (a run written, or one it already had).' }),
    status: z.enum(['ACTIVE', 'DONE']),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Backfill' });
export const backfillResponseSchema = z.strictObject({ backfill: backfillSchema }).meta({ id: 'BackfillAccepted' });
export const occurrenceSchema = z
  .strictObject({
    at: timestamp.meta({ description: "The fire time: the occurrence's identity (its runs' scheduledFor)." }),
    startsAt: timestamp
      .nullable()
      .meta({ description: 'When it starts: the fire time plus its jitter. Null when it is skipped, or when it has jitter and no jobId was given.' }),
    skipped: z.enum(['excluded date', 'skipped on request']).nullable().meta({ description: 'Why it does not fire, or null.' }),
  })
  .meta({ id: 'Occurrence' });

export const previewResponseSchema = z
  .strictObject({
    fireTimes: z.array(timestamp).meta({ description: 'The fire times that fire, skipped ones left out.' }),
    occurrences: z.array(occurrenceSchema).meta({ description: 'Every occurrence of the series in order, skipped ones marked.' }),
  })
  .meta({ id: 'Preview' });
export const claimedRunSchema = z
  .strictObject({
    run: runSchema,
    leaseToken: z.string().meta({ description: 'The lease: send it with every heartbeat, complete and fail. Shown only here.' }),
    leaseExpiresAt: timestamp,
    leaseSeconds: z.number(),
    attempt: z.number().int(),
    fencingToken: z.number().int(),
    idempotencyKey: z.string(),
    payload: jsonValue,
    checkpoint: jsonValue,
    workflow: z
      .strictObject({ workflowId: z.string(), workflowRunId: z.string(), stepId: z.string(), version: z.number().int() })
      .optional()
      .meta({ description: "A workflow step's run: its workflow run and step." }),
    results: z
      .record(z.string(), jsonValue)
      .optional()
      .meta({ description: "A workflow step's run: its dependencies' results, by step id (the same for every attempt and replay)." }),
  })
  .meta({ id: 'ClaimedRun' });

const queueHealth = z
  .object({ visible: z.number(), inFlight: z.number(), delayed: z.number(), oldestMessageAgeSeconds: z.number().nullable() })
  .meta({ id: 'QueueHealth' });
const percentiles = z.object({ p50: z.number().nullable(), p95: z.number().nullable(), p99: z.number().nullable(), samples: z.number() });
export const healthReportSchema = z
  .object({
    status: z.enum(['ok', 'degraded']),
    checkedAt: timestamp,
    problems: z.array(z.string()),
    queues: z.object({
      dispatch: queueHealth,
      dispatchDlq: queueHealth,
      pools: z.record(
        z.string(),
        z.object({ jobTypes: z.array(z.string()), standard: queueHealth, high: queueHealth.nullable(), low: queueHealth.nullable(), dlq: queueHealth }),
      ),
    }),
    ticker: z.object({
      lastCompletedAt: nullableTimestamp,
      sinceLastCompletionSeconds: z.number().nullable(),
      lastReport: z.record(z.string(), z.number()).nullable(),
    }),
    runs: z.object({
      windowMinutes: z.number().int(),
      byStatus: z.record(z.string(), z.number()),
      started: z.number(),
      retried: z.number(),
      workerLost: z.number(),
      successRate: z.number().nullable(),
      startLagMs: percentiles,
      claimWaitMs: percentiles,
      perMinute: z.array(
        z.object({
          minute: z.string(),
          started: z.number(),
          succeeded: z.number(),
          errors: z.number(),
          startLagP50Ms: z.number().nullable(),
          startLagP99Ms: z.number().nullable(),
        }),
      ),
      deadAwaitingReplay: z.object({ count: z.number(), capped: z.boolean() }),
    }),
    inFlight: z.array(
      z.object({
        runId: z.string(),
        jobId: z.string(),
        jobType: z.string(),
        attempt: z.number().int(),
        startedAt: nullableTimestamp,
        leaseOwner: z.string().nullable(),
        leaseExpiresAt: nullableTimestamp,
        leaseExpired: z.boolean(),
      }),
    ),
  })
  .meta({ id: 'Health' });

/** Every problem type the API answers with, by HTTP status; `type` is `urn:job-scheduler:problem:<slug of title>`. */
export const PROBLEM_TYPES = {
  400: { title: 'Invalid request', meaning: 'A path parameter, query parameter, header or the body is invalid; `errors` names each field.' },
  404: { title: 'Not found', meaning: 'No such route, or no such job or run in the caller’s tenant.' },
  405: { title: 'Method not allowed', meaning: 'The path exists but not with this method.' },
  409: { title: 'Conflict', meaning: 'The request conflicts with the resource’s state (a name taken, a finished run, a stale lease).' },
  412: { title: 'Precondition failed', meaning: 'If-Match does not match the job’s version.' },
  413: { title: 'Payload too large', meaning: 'The body is over 2 MiB.' },
  415: { title: 'Unsupported media type', meaning: 'The body is not application/json.' },
  429: { title: 'Too many requests', meaning: 'Over a tenant limit; Retry-After says when to try again.' },
  500: { title: 'Internal error', meaning: 'Unexpected; nothing internal is disclosed. Safe to retry.' },
  503: {
    title: 'Service unavailable',
    meaning: 'The store did not answer in time; Retry-After says when to try again. Safe to retry with the same Idempotency-Key.',
  },
} as const;
export type ProblemStatus = keyof typeof PROBLEM_TYPES;

export const problemTypeOf = (title: string): string => `urn:job-scheduler:problem:${title.toLowerCase().replace(/[^a-z]+/g, '-')}`;

export const problemSchema = z
  .object({
    type: z.string().meta({ description: 'A URN naming the kind of problem: urn:job-scheduler:problem:<slug>.' }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    errors: z.array(z.strictObject({ path: z.string(), message: z.string() })),
    errorsOmitted: z.number().int().optional(),
    runStatus: runStatusSchema.optional().meta({ description: 'On a stale lease (409): the run’s status now.' }),
  })
  .meta({ id: 'Problem', description: 'RFC 9457 problem details.' });

/** What API Gateway (and the local runtime, in its place) answers without a valid API key (401, 403). */
export const gatewayErrorSchema = z.strictObject({ message: z.string() }).meta({ id: 'GatewayError' });

export type RunView = z.output<typeof runSchema>;
export type JobViewBody = z.output<typeof jobViewSchema>;

// ---- Signing secrets

export const signingSecretSchema = z
  .strictObject({
    secretId: z.string(),
    createdAt: isoInstant,
    expiresAt: isoInstant.nullable().describe('When a replaced secret stops signing; null for the current one'),
  })
  .meta({ id: 'SigningSecret' });

export const issuedSigningSecretSchema = signingSecretSchema
  .extend({
    secret: z
      .string()
      .regex(/^whsec_[A-Za-z0-9+/]+=*$/)
      .describe('The value, `whsec_` + base64: in this answer only, never again'),
    previous: z.array(signingSecretSchema).describe('The secrets that sign beside it until their expiresAt'),
    signsFrom: isoInstant.describe(
      'From when every delivery carries its signature (about a minute: workers hold the secrets they read that long). Until then a delivery may be signed only with the previous secrets, or not at all when this is the first: a receiver accepts both until then',
    ),
  })
  .meta({ id: 'IssuedSigningSecret' });

export const signingSecretListSchema = z.strictObject({ items: z.array(signingSecretSchema) }).meta({ id: 'SigningSecretList' });

// ---- The audit trail

const fieldChangeSchema = z.strictObject({ before: z.unknown().optional(), after: z.unknown().optional() });

export const auditEntrySchema = z
  .strictObject({
    auditId: z.string(),
    at: isoInstant,
    tenantId: z.string(),
    actor: z.string().describe('The API key id (`key_…`) that made the change, or `admin` for the operator CLI'),
    action: z.enum(AUDIT_ACTIONS),
    objectId: z.string(),
    objectIds: z
      .array(z.string())
      .optional()
      .describe('Only on bulk replay entries written before each replayed run got an entry of its own: the runs replayed, the first being objectId'),
    changes: z.record(z.string(), fieldChangeSchema).describe('Fields changed, before and after; payloads and header values are never shown'),
    requested: z.array(z.string()).optional(),
  })
  .meta({ id: 'AuditEntry' });

export const auditPageSchema = z.strictObject({ items: z.array(auditEntrySchema), nextCursor: z.string().nullable() }).meta({ id: 'AuditPage' });

// ---- Notifications -----------------------------------------------------------------------------

export const notificationSchema = z
  .strictObject({
    notificationId: z.string().meta({ description: 'As in the body the destination receives.' }),
    event: z.enum(NOTIFY_EVENTS),
    destination: notifyDestinationSchema,
    status: z.enum(['PENDING', 'SENT', 'DEAD']).meta({ description: 'PENDING while it is being tried, SENT once delivered, DEAD once its budget is spent.' }),
    tries: z.number().int().meta({ description: 'Tries started (since its last resend).' }),
    lastError: z.string().nullable(),
    createdAt: timestamp,
    sentAt: nullableTimestamp,
    deadAt: nullableTimestamp,
    resentAt: nullableTimestamp.meta({ description: 'When it was last sent again on request.' }),
  })
  .meta({ id: 'Notification' });
export const notificationListSchema = z.strictObject({ items: z.array(notificationSchema) }).meta({ id: 'NotificationList' });
export const workflowRunNotificationSchema = notificationSchema
  .extend({
    retry: z.number().int().min(0).meta({ description: "The end that raised it: 0 the workflow run's first, n the one after its nth retry." }),
  })
  .meta({ id: 'WorkflowRunNotification' });
export const workflowRunNotificationListSchema = z
  .strictObject({ items: z.array(workflowRunNotificationSchema).meta({ description: 'The latest end first; the last 20 ends at most.' }) })
  .meta({ id: 'WorkflowRunNotificationList' });

// ---- Workflows ---------------------------------------------------------------------------------

export const workflowViewSchema = z
  .strictObject({
    workflowId: z.string(),
    tenantId: z.string(),
    name: z.string(),
    version: z.number().int().meta({ description: 'The version shown (the newest unless one was asked for); send the newest as If-Match on a new version.' }),
    createdAt: timestamp,
    updatedAt: timestamp,
    deletedAt: timestamp
      .optional()
      .meta({ description: 'When the workflow was deleted (DELETE): its versions and runs stay readable, and it can no longer be changed or run.' }),
    definition: workflowSpecSchema.meta({ description: `The definition of that version; an HTTP target's header values show as "${MASKED_HEADER_VALUE}".` }),
    scheduleState: z
      .strictObject({
        status: jobStatusSchema.meta({ description: 'ACTIVE, PAUSED, COMPLETED (no occurrence left) or CANCELLED (a later version removed the schedule).' }),
        nextRunAt: nullableTimestamp,
        upcomingRuns: z.array(timestamp).meta({ description: 'The next fire times, from the pending occurrence on.' }),
        pausedAt: nullableTimestamp,
      })
      .optional()
      .meta({ id: 'WorkflowScheduleState', description: "Present once the workflow has had a schedule: its occurrences' state." }),
  })
  .meta({ id: 'Workflow' });

export const workflowSummarySchema = workflowViewSchema
  .omit({ definition: true })
  .extend({ stepCount: z.number().int().optional().meta({ description: 'Steps of the newest version.' }) })
  .meta({ id: 'WorkflowSummary' });
export const workflowSummaryPageSchema = pageOf(workflowSummarySchema, 'WorkflowSummaryPage');

export const workflowDetailSchema = workflowViewSchema
  .extend({
    recentOccurrences: z.array(runSchema).meta({
      description:
        "The schedule's latest occurrences, newest first: each a run that started a workflow run (its result names it) or was skipped by a policy (its reason says why).",
    }),
  })
  .meta({ id: 'WorkflowDetail' });

export const stepStateSchema = z
  .strictObject({
    status: z.enum(STEP_STATUSES),
    attempt: z.number().int().meta({ description: "The attempt of the step's current (or last) run." }),
    runId: z.string().nullable().meta({ description: "The step's run (its last attempt's, once ended): an ordinary run, GET /v1/runs/{runId}." }),
    startedAt: nullableTimestamp,
    finishedAt: nullableTimestamp,
    reason: z.string().nullable().meta({ description: 'Why the step did not start, or how its run ended.' }),
  })
  .meta({ id: 'WorkflowStep' });

export const workflowRunSchema = z
  .strictObject({
    workflowRunId: z.string(),
    workflowId: z.string(),
    tenantId: z.string(),
    version: z.number().int().meta({ description: 'The definition version the run started with, and keeps.' }),
    status: z.enum(WORKFLOW_RUN_STATUSES),
    trigger: z.enum(['manual', 'retry', 'schedule']),
    scheduledFor: timestamp,
    createdAt: timestamp,
    finishedAt: nullableTimestamp,
    failedSteps: z.array(z.string()),
    retries: z.number().int(),
    steps: z.record(z.string(), stepStateSchema),
    traceparent: z.string().optional().meta({ description: 'The W3C trace context the run was started (or last retried) under; its step runs join it.' }),
  })
  .meta({ id: 'WorkflowRun' });

export const workflowRunPageSchema = pageOf(workflowRunSchema, 'WorkflowRunPage');
