// The HTTP contract of the API as zod schemas: what each route reads (path, query, body) and what it
// answers. The router validates requests with these, the OpenAPI document (lambdas/api/openapi.ts)
// is generated from them, and a client may import them: this module depends on zod and the pure
// domain only, never on the AWS SDK.
import { z } from 'zod';
import { cursorParam, limitParam, resourceId } from '../core/validation';
import { AUDIT_ACTIONS } from '../domain/audit';
import { DELIVERY_MODES } from '../domain/delivery';
import {
  JOB_LABEL_PATTERN,
  MASKED_HEADER_VALUE,
  MAX_PAYLOAD_BYTES,
  jobPatchSchema,
  jobSpecSchema,
  jobTypeSchema,
  jsonValue,
  labelKeySchema,
  labelValueSchema,
  retryPolicySchema,
  scheduleSchema,
  targetSchema,
} from '../domain/job';
import { RUN_STATUSES } from '../domain/run';
import { FIRE_TIME_RANGE } from '../domain/schedule';

export { MASKED_HEADER_VALUE, jobPatchSchema, jobSpecSchema };

const isoInstant = z.iso.datetime({ offset: true, message: 'must be an ISO 8601 timestamp' });
/** A time filter in a query string, normalised to UTC (`Z`) so that it compares with stored keys. */
const isoInstantParam = isoInstant.transform((value) => new Date(value).toISOString());
const boundedJson = (what: string) =>
  jsonValue.refine(
    (value) => Buffer.byteLength(JSON.stringify(value ?? null), 'utf8') <= MAX_PAYLOAD_BYTES,
    `${what} must be at most ${MAX_PAYLOAD_BYTES} bytes of JSON`,
  );

// ---------------------------------------------------------------------------------------------
// Requests

export const JOB_STATUSES = ['ACTIVE', 'PAUSED', 'COMPLETED', 'CANCELLED'] as const;
export const jobStatusSchema = z.enum(JOB_STATUSES);
export const runStatusSchema = z.enum(RUN_STATUSES);

/** `key=value`; in a query string, repeated (`label=a=1&label=b=2`) or comma-separated: API Gateway joins repeats with commas. */
const labelFilterParam = z
  .string()
  .max(10 * 130)
  .regex(new RegExp(`^${JOB_LABEL_PATTERN}(,${JOB_LABEL_PATTERN})*$`), 'must be key=value (repeat the parameter for more labels)')
  .transform((raw) =>
    raw.split(',').map((pair) => {
      const at = pair.indexOf('=');
      return { key: pair.slice(0, at), value: pair.slice(at + 1) };
    }),
  )
  .pipe(z.array(z.object({ key: labelKeySchema, value: labelValueSchema })).max(10, 'at most 10 labels'));

export const listJobsQuery = z
  .strictObject({
    status: jobStatusSchema.optional(),
    type: jobTypeSchema.optional(),
    name: z.string().min(1).max(128).optional().meta({ description: 'Jobs with exactly this name (at most one).' }),
    namePrefix: z.string().min(1).max(128).optional().meta({ description: 'Jobs whose name starts with this, in name order.' }),
    label: labelFilterParam.optional().meta({ description: 'Jobs carrying this label, as key=value; repeat for several (all must match).' }),
    limit: limitParam(20, 100),
    cursor: cursorParam.optional(),
  })
  .refine((q) => q.name === undefined || q.namePrefix === undefined, { message: 'give name or namePrefix, not both', path: ['namePrefix'] });
export type ListJobsQuery = z.output<typeof listJobsQuery>;

export const pageQuery = z.strictObject({ limit: limitParam(20, 100), cursor: cursorParam.optional() });
export type PageQuery = z.output<typeof pageQuery>;

const runFilterShape = {
  status: runStatusSchema.optional(),
  from: isoInstantParam.optional().meta({ description: 'Runs of occurrences scheduled at or after this instant.' }),
  to: isoInstantParam.optional().meta({ description: 'Runs of occurrences scheduled before this instant.' }),
  limit: limitParam(20, 100),
  cursor: cursorParam.optional(),
};
/** Runs of one job or of the tenant: newest occurrence first. */
export const listRunsQuery = z.strictObject(runFilterShape);
export type ListRunsQuery = z.output<typeof listRunsQuery>;

export const deadQuery = z.strictObject({
  limit: limitParam(20, 100),
  cursor: cursorParam.optional(),
  jobId: resourceId.optional(),
  from: isoInstantParam.optional(),
  to: isoInstantParam.optional(),
});
export type DeadQuery = z.output<typeof deadQuery>;

export const healthQuery = z.strictObject({ minutes: limitParam(15, 60) });
export type HealthQuery = z.output<typeof healthQuery>;

export const triggerSchema = z.strictObject({
  payload: jsonValue
    .optional()
    .refine(
      (payload) => payload === undefined || Buffer.byteLength(JSON.stringify(payload)) <= MAX_PAYLOAD_BYTES,
      `must be at most ${MAX_PAYLOAD_BYTES} bytes of JSON`,
    ),
});
export type TriggerRequest = z.output<typeof triggerSchema>;

export const bulkReplaySchema = z.strictObject({
  jobId: resourceId.optional(),
  from: isoInstantParam.optional(),
  to: isoInstantParam.optional(),
  limit: z.number().int().min(1).max(100).default(100),
});
export type BulkReplayRequest = z.output<typeof bulkReplaySchema>;

export const previewSchema = z.strictObject({
  schedule: scheduleSchema,
  from: isoInstant
    .refine(
      (from) => Date.parse(from) >= FIRE_TIME_RANGE.earliest && Date.parse(from) <= FIRE_TIME_RANGE.latest,
      'must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z',
    )
    .optional(),
  count: z.number().int().min(1).max(100).default(5),
});
export type PreviewRequest = z.output<typeof previewSchema>;

/** The longest a claim waits for work: well inside API Gateway's 30 s. */
export const MAX_CLAIM_WAIT_SECONDS = 20;
export const claimSchema = z.strictObject({
  jobType: jobTypeSchema.optional(),
  waitSeconds: z.number().int().min(0).max(MAX_CLAIM_WAIT_SECONDS).default(0),
  /** Names the worker in the run's leaseOwner (e.g. its host and process). */
  workerId: z
    .string()
    .regex(/^[A-Za-z0-9._:-]{1,64}$/)
    .optional(),
});
export type ClaimRequest = z.output<typeof claimSchema>;
const leaseToken = z.string().regex(/^[A-Za-z0-9_-]{16,128}$/, 'must be the lease token the claim returned');
export const heartbeatSchema = z.strictObject({ leaseToken, progress: boundedJson('progress').optional(), checkpoint: boundedJson('checkpoint').optional() });
export type HeartbeatRequest = z.output<typeof heartbeatSchema>;
export const completeSchema = z.strictObject({ leaseToken, result: boundedJson('result').optional() });
export type CompleteRequest = z.output<typeof completeSchema>;
export const failSchema = z.strictObject({
  leaseToken,
  error: z.strictObject({ code: z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/), message: z.string().max(1024), retryable: z.boolean() }),
});
export type FailRequest = z.output<typeof failSchema>;

export type JobSpecRequest = z.output<typeof jobSpecSchema>;
export type JobPatchRequest = z.output<typeof jobPatchSchema>;

// ---------------------------------------------------------------------------------------------
// Responses

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
    result: jsonValue.optional(),
    replayedAs: z.string().optional().meta({ description: 'The run that replayed this one, once replayed.' }),
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
    target: targetViewSchema.meta({ description: `An HTTP target's header values are write-only: each shows as "${MASKED_HEADER_VALUE}".` }),
    labels: z.record(z.string(), z.string()),
    payload: jsonValue,
    retryPolicy: retryPolicySchema,
    timeoutSeconds: z.number().int(),
    delivery: z.enum(DELIVERY_MODES),
    overlapPolicy: z.enum(['allow', 'skip', 'buffer-one', 'cancel-running']),
    misfirePolicy: z.enum(['fire-once', 'skip', 'backfill']),
    backfillLimit: z.number().int(),
    priority: z.enum(['high', 'normal', 'low']),
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
    upcomingRuns: z.array(timestamp),
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
export const bulkReplayResponseSchema = z.strictObject({ replayed: z.array(runSchema), remaining: z.boolean() }).meta({ id: 'BulkReplay' });
export const previewResponseSchema = z.strictObject({ fireTimes: z.array(timestamp) }).meta({ id: 'Preview' });
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
  413: { title: 'Payload too large', meaning: 'The body is over 256 KiB.' },
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

// ---- Signing secrets (docs/delivery.md#signed-deliveries) ------------------------------------

/** How long a replaced signing secret keeps signing, unless the request says otherwise. */
export const DEFAULT_GRACE_SECONDS = 86_400;
export const MAX_GRACE_SECONDS = 7 * 86_400;

export const issueSigningSecretSchema = z
  .strictObject({
    graceSeconds: z
      .number()
      .int()
      .min(0)
      .max(MAX_GRACE_SECONDS)
      .default(DEFAULT_GRACE_SECONDS)
      .describe('How long the secret this one replaces keeps signing beside it (0: it stops now)'),
  })
  .meta({ id: 'IssueSigningSecretRequest' });
export type IssueSigningSecretRequest = z.output<typeof issueSigningSecretSchema>;

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
  })
  .meta({ id: 'IssuedSigningSecret' });

export const signingSecretListSchema = z.strictObject({ items: z.array(signingSecretSchema) }).meta({ id: 'SigningSecretList' });

// ---- The audit trail (docs/api.md#audit-trail) -----------------------------------------------

export const auditQuery = z
  .strictObject({
    limit: limitParam(20, 100),
    cursor: cursorParam.optional(),
    objectId: resourceId.optional().describe('Only the entries of this job, run, secret or key'),
    from: isoInstantParam.optional().describe('Entries at or after this instant'),
    to: isoInstantParam.optional().describe('Entries at or before this instant'),
  })
  .meta({ id: 'AuditQuery' });
export type AuditQuery = z.output<typeof auditQuery>;

const fieldChangeSchema = z.strictObject({ before: z.unknown().optional(), after: z.unknown().optional() });

export const auditEntrySchema = z
  .strictObject({
    auditId: z.string(),
    at: isoInstant,
    tenantId: z.string(),
    actor: z.string().describe('The API key id (`key_…`) that made the change, or `admin` for the operator CLI'),
    action: z.enum(AUDIT_ACTIONS),
    objectId: z.string(),
    objectIds: z.array(z.string()).optional(),
    changes: z.record(z.string(), fieldChangeSchema).describe('Fields changed, before and after; payloads and header values are never shown'),
    requested: z.array(z.string()).optional(),
  })
  .meta({ id: 'AuditEntry' });

export const auditPageSchema = z.strictObject({ items: z.array(auditEntrySchema), nextCursor: z.string().nullable() }).meta({ id: 'AuditPage' });
