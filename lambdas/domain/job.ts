// Job definitions: the request schema (what a caller may send) and the stored job (what we keep).
import { z } from 'zod';
import { DEFAULT_DELIVERY, DELIVERY_MODES } from './delivery';
import { notifySchema } from './notify';
import { concurrencySchema, rateLimitSchema } from './flow-control';
import type { PayloadRef } from './payload';
import { payloadBytes, payloadRefusal } from './payload';

/**
 * The bound of what external workers report (progress, checkpoint, result) and of a workflow step's
 * payload, kept in the items that carry them. A job's payload may be larger: domain/payload.ts.
 */
export const MAX_PAYLOAD_BYTES = 64 * 1024;
/** A Lambda worker lives at most 900 s; a run must finish inside it with room to record the outcome. */
export const MAX_TIMEOUT_SECONDS = 840;
const MAX_DELAY_SECONDS = 366 * 24 * 3600;
export const MAX_TARGET_HEADERS = 20;
/** An external worker's lease: it must heartbeat within this many seconds or its run is retried. */
export const DEFAULT_EXTERNAL_LEASE_SECONDS = 300;
export const MAX_EXTERNAL_LEASE_SECONDS = 3600;
export const MAX_TARGET_HEADER_VALUE_BYTES = 1024;
/**
 * What responses show for each header value of an HTTP target: the values are write-only (they
 * often carry credentials). In a PATCH, a header sent with this value keeps its stored value.
 */
export const MASKED_HEADER_VALUE = '<redacted>';
/** Names and values of a target's headers together, well under what servers accept (8 KiB). */
export const MAX_TARGET_HEADER_BYTES = 4096;
/** Lambda's Invoke accepts a function ARN (with its version or alias) of at most 170 characters. */
export const MAX_FUNCTION_ARN_LENGTH = 170;

/**
 * Headers the scheduler sets itself or the connection owns; a job that names one is refused (400),
 * never stored and then silently replaced. The HTTP target sends no other header of its own (a
 * unit test checks that), so the two cannot drift.
 */
export const RESERVED_HEADERS = [
  'idempotency-key',
  'x-job-id',
  'x-run-id',
  'x-attempt',
  'x-fencing-token',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'traceparent',
  'user-agent',
  'content-type',
  'content-length',
  'host',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
] as const;

const identifier = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, 'use letters, digits and . _ : - (starting with a letter or digit)');

/**
 * The one rule for job type names, wherever a job type is named: a job's `type`, a worker's claim,
 * the jobs listing's filter, a pool's `jobTypes`. No `#`: the claim index's sort key is
 * `type#availableAt#runId` and a claim reads `begins_with(type#)`, so no type is the prefix of
 * another's keys.
 */
export const JOB_TYPE_MAX_LENGTH = 64;
export const jobTypeSchema = identifier(JOB_TYPE_MAX_LENGTH);

/**
 * An ISO 8601 instant with its offset, in years 0000 to 9999 once in UTC: an offset can carry
 * 9999-12-31T23:59:59-12:00 past the last, which JavaScript writes `+010000-…` (no longer an ISO
 * 8601 timestamp of the contract, and sorting below every year 0000–9999 in the stores' keys).
 */
export const isoInstant = z.iso.datetime({ offset: true, message: 'must be an ISO 8601 timestamp' }).refine((value) => {
  // A value that is no timestamp fails the check before (zod runs this one too): not twice.
  const ms = Date.parse(value);
  return Number.isNaN(ms) || /^\d{4}-/.test(new Date(ms).toISOString());
}, 'must be from 0000-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z');

/** Limits of recurring schedules (docs/api.md, "Schedules"). */
export const MAX_JITTER_SECONDS = 86_400;
export const MAX_OCCURRENCES = 100_000;
export const MAX_EXCLUDE_DATES = 366;

/** What cron and interval schedules share: an end, a count, excluded days and jitter (issue 19). */
const recurringFields = {
  timezone: z.string().min(1).max(64).default('UTC'),
  endAt: isoInstant.optional(),
  maxOccurrences: z
    .number()
    .int()
    .min(1)
    .max(MAX_OCCURRENCES)
    .optional()
    .meta({ description: 'The schedule ends after this many fire times, counted from startAt (cron) or anchor (every); skipped ones count.' }),
  excludeDates: z
    .array(z.iso.date({ message: 'must be a date, YYYY-MM-DD' }))
    .max(MAX_EXCLUDE_DATES)
    .optional()
    .meta({ description: "Calendar days, in the schedule's zone, on which no occurrence fires." }),
  jitterSeconds: z.number().int().min(1).max(MAX_JITTER_SECONDS).optional().meta({
    description:
      'Each occurrence starts at its fire time plus a delay in [0, jitterSeconds), the same for an occurrence at every evaluation; less than the shortest time between fire times.',
  }),
};

export const scheduleSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('now') }),
  z.strictObject({ kind: z.literal('delay'), seconds: z.number().int().min(0).max(MAX_DELAY_SECONDS) }),
  z.strictObject({ kind: z.literal('at'), at: isoInstant }),
  z.strictObject({
    kind: z.literal('cron'),
    expression: z
      .string()
      .min(1)
      .max(256)
      .meta({ description: 'Five fields (minute hour day-of-month month day-of-week), or six with a seconds field first.' }),
    startAt: isoInstant.optional(),
    ...recurringFields,
  }),
  z.strictObject({
    kind: z.literal('every'),
    interval: z.string().min(2).max(64).meta({ description: 'An ISO 8601 duration from PT1S to P366D, in weeks, days, hours, minutes and seconds.' }),
    anchor: isoInstant.optional().meta({
      description: 'Fire times are anchor + k × interval (k >= 0); when absent, one interval after the time the schedule is set (the first fire time).',
    }),
    ...recurringFields,
  }),
]);
export type Schedule = z.infer<typeof scheduleSchema>;

const headerName = z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/, 'must be an HTTP header name');
/** Visible ASCII, spaces and tabs: no CR or LF (header injection), nothing a socket would refuse. */
export const headerTextSchema = z
  .string()
  .max(MAX_TARGET_HEADER_VALUE_BYTES)
  .regex(/^[\t\x20-\x7e]*$/, 'must be visible ASCII, spaces or tabs');

/** A Secrets Manager secret's full ARN, with the 6-character suffix Secrets Manager adds to its name. */
export const SECRET_ARN_PATTERN = /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}$/;
export const secretArnSchema = z
  .string()
  .max(2048)
  .regex(SECRET_ARN_PATTERN, "must be a Secrets Manager secret's full ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>-<6 characters>)");

/**
 * A header's value: the text itself, or a reference to a Secrets Manager secret whose string the
 * worker sends (read at the call, cached a minute; decision 0110). Either way write-only: responses
 * mask the text and show the reference, which is not the secret.
 */
export const headerValueSchema = z.union([headerTextSchema, z.strictObject({ secretArn: secretArnSchema })]);
export type HeaderValue = z.infer<typeof headerValueSchema>;
export type SecretReference = Extract<HeaderValue, { secretArn: string }>;
const headerValue = headerValueSchema;

export const isSecretReference = (value: HeaderValue): value is SecretReference => typeof value !== 'string';

export const httpTargetSchema = z.strictObject({
  kind: z.literal('http'),
  url: z
    .url({ protocol: /^https?$/, message: 'must be an http or https URL' })
    .max(2048)
    .refine((url) => !URL.canParse(url) || (new URL(url).username === '' && new URL(url).password === ''), 'must not carry credentials; use a header'),
  method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).default('POST'),
  headers: z
    .record(headerName, headerValue)
    .default({})
    .check((ctx) => {
      const names = Object.keys(ctx.value);
      if (names.length > MAX_TARGET_HEADERS) {
        ctx.issues.push({ code: 'custom', message: `at most ${MAX_TARGET_HEADERS} headers`, input: ctx.value });
      }
      // A secret's value is checked when it is read: here only what is stored counts.
      const bytes = names.reduce((sum, name) => {
        const value = ctx.value[name];
        return sum + name.length + (value === undefined ? 0 : typeof value === 'string' ? value.length : value.secretArn.length);
      }, 0);
      if (bytes > MAX_TARGET_HEADER_BYTES) {
        ctx.issues.push({ code: 'custom', message: `at most ${MAX_TARGET_HEADER_BYTES} bytes of names and values together`, input: ctx.value });
      }
      const seen = new Set<string>();
      for (const name of names) {
        if (seen.has(name.toLowerCase())) {
          ctx.issues.push({ code: 'custom', message: 'is given twice (header names are case-insensitive)', input: name, path: [name] });
        }
        seen.add(name.toLowerCase());
        if ((RESERVED_HEADERS as readonly string[]).includes(name.toLowerCase())) {
          ctx.issues.push({
            code: 'custom',
            message: `is set by the scheduler or its HTTP connection (${name}) and cannot be given`,
            input: name,
            path: [name],
          });
        }
      }
    }),
  timeoutSeconds: z.number().int().min(1).max(MAX_TIMEOUT_SECONDS).optional(),
});

export const targetSchema = z.discriminatedUnion('kind', [
  httpTargetSchema,
  z.strictObject({ kind: z.literal('sqs'), queueUrl: z.url().max(2048) }),
  z.strictObject({
    kind: z.literal('lambda'),
    functionArn: z
      .string()
      .max(MAX_FUNCTION_ARN_LENGTH)
      .regex(/^arn:aws[a-z-]*:lambda:/, 'must be a Lambda function ARN'),
  }),
  z.strictObject({
    kind: z.literal('eventbridge'),
    eventBusName: z.string().min(1).max(256),
    detailType: z.string().min(1).max(128),
    source: z.string().min(1).max(256),
  }),
  // Run by a worker outside Lambda that claims it over the API and heartbeats within the lease.
  z.strictObject({
    kind: z.literal('external'),
    leaseSeconds: z.number().int().min(1).max(MAX_EXTERNAL_LEASE_SECONDS).default(DEFAULT_EXTERNAL_LEASE_SECONDS),
  }),
]);
export type Target = z.infer<typeof targetSchema>;
export type HttpTarget = z.infer<typeof httpTargetSchema>;

/**
 * The target of a workflow's schedule (its driver job, decision 0147): the worker starts a run of the
 * workflow instead of calling anything. Never accepted from a request; no target schema names it.
 */
export interface WorkflowStartTarget {
  readonly kind: 'workflow';
  readonly workflowId: string;
}
/** What a stored job's runs do: call a target, or (a workflow's schedule) start a workflow run. */
export type JobTarget = Target | WorkflowStartTarget;

/**
 * A delay in seconds, fractions allowed down to a millisecond: a smaller positive number (`1e-200`)
 * is no delay anyone means, and DynamoDB refuses to store numbers under 1e-130.
 */
const delaySeconds = (max: number) =>
  z
    .number()
    .min(0)
    .max(max)
    .refine((seconds) => seconds === 0 || seconds >= 0.001, 'must be 0 or at least 0.001 (a millisecond)');

export const retryPolicySchema = z.strictObject({
  maxAttempts: z.number().int().min(1).max(20).default(3),
  initialDelaySeconds: delaySeconds(3600).default(1),
  maxDelaySeconds: delaySeconds(24 * 3600).default(300),
});
export type RetryPolicy = z.infer<typeof retryPolicySchema>;

/** Any JSON value (a payload, a progress report, a result); named for the OpenAPI document. */
export const jsonValue: z.ZodType<unknown> = z.json().meta({ id: 'JsonValue', description: 'Any JSON value.' });

/** A job carries at most this many labels (key/value pairs to find it by). */
export const MAX_JOB_LABELS = 10;
/**
 * Label keys and values: letters, digits and `. _ / -`, up to 63 characters (a key starts with a
 * letter or digit). No `=`, `,` or `#`: a filter is written `key=value`, API Gateway joins repeated
 * query parameters with commas, and a label's index key is `tenant#key=value`.
 */
export const LABEL_KEY_PATTERN = '[A-Za-z0-9][A-Za-z0-9._/-]{0,62}';
export const LABEL_VALUE_PATTERN = '[A-Za-z0-9._/-]{0,63}';
export const JOB_LABEL_PATTERN = `${LABEL_KEY_PATTERN}=${LABEL_VALUE_PATTERN}`;
export const labelKeySchema = z
  .string()
  .regex(new RegExp(`^${LABEL_KEY_PATTERN}$`), 'must be 1 to 63 letters, digits or . _ / - (starting with a letter or digit)');
export const labelValueSchema = z.string().regex(new RegExp(`^${LABEL_VALUE_PATTERN}$`), 'must be at most 63 letters, digits or . _ / -');
export const labelsSchema = z
  .record(labelKeySchema, labelValueSchema)
  .refine((labels) => Object.keys(labels).length <= MAX_JOB_LABELS, `at most ${MAX_JOB_LABELS} labels`);

/** The policies of a schedule's occurrences, shared by jobs and scheduled workflows (decision 0147). */
export const overlapPolicySchema = z.enum(['allow', 'skip', 'buffer-one', 'cancel-running']);
export const misfirePolicySchema = z.enum(['fire-once', 'skip', 'backfill']);
export const backfillLimitSchema = z.number().int().min(1).max(1000);
export const prioritySchema = z.enum(['high', 'normal', 'low']);

/**
 * A job id's form (`job_` and 26 base32 characters): a job created without a name is named by its
 * id, so no name of this form may be given (decision 0154).
 */
export const JOB_ID_PATTERN = /^job_[0-9a-z]{26}$/;

/** A job's name, unique in its tenant; without one the job is named by its id and writes no name guard (decision 0154). */
const jobNameSchema = identifier(128)
  .refine((name) => !JOB_ID_PATTERN.test(name), 'has the form of a job id, which names a job created without a name')
  .optional()
  .meta({
    description: 'Unique in the tenant; letters, digits and . _ : -. Optional: without it the job is named by its id (fire-and-forget runs need no name).',
  });

const jobSpecShape = {
  name: jobNameSchema,
  type: jobTypeSchema,
  labels: labelsSchema.default({}),
  schedule: scheduleSchema,
  target: targetSchema,
  payload: jsonValue.default({}),
  retryPolicy: retryPolicySchema.default({ maxAttempts: 3, initialDelaySeconds: 1, maxDelaySeconds: 300 }),
  timeoutSeconds: z.number().int().min(1).max(MAX_TIMEOUT_SECONDS).default(300),
  delivery: z.enum(DELIVERY_MODES).default(DEFAULT_DELIVERY),
  overlapPolicy: overlapPolicySchema.default('allow'),
  misfirePolicy: misfirePolicySchema.default('fire-once'),
  /** Under `backfill`, at most this many missed occurrences run (the oldest first). */
  backfillLimit: backfillLimitSchema.default(10),
  priority: prioritySchema.default('normal'),
  /** Notifications of run outcomes (docs/notifications.md); absent or null: none. A PATCH with null removes them. */
  notify: notifySchema.nullable().optional(),
  // Keyed flow control (lambdas/domain/flow-control.ts); null in a PATCH removes it.
  concurrency: concurrencySchema.nullable().optional(),
  rateLimit: rateLimitSchema.nullable().optional(),
};

/** A schema without its default: a PATCH leaves a field it does not name as it is. */
const withoutDefault = (schema: z.ZodType): z.ZodType => (schema instanceof z.ZodDefault ? (schema.unwrap() as z.ZodType) : schema);

/**
 * The fields a PATCH may carry: those of a job spec, each optional and without its default (a
 * field the PATCH does not name is left as it is); the merged job is checked whole.
 */
export const jobPatchSchema = z.strictObject(
  // A job's name cannot change; a PATCH may repeat it, an unnamed job's (its id) too.
  Object.fromEntries(Object.entries({ ...jobSpecShape, name: identifier(128) }).map(([field, schema]) => [field, withoutDefault(schema).optional()])),
) as unknown as z.ZodObject<
  { [K in keyof typeof jobSpecShape]: z.ZodOptional<z.ZodType<z.output<(typeof jobSpecShape)[K]>, z.input<(typeof jobSpecShape)[K]>>> },
  z.core.$strict
>;

export const jobSpecSchema = z.strictObject(jobSpecShape).check((ctx) => {
  // Up to 1 MiB, less where the target's messages are smaller; without a payload bucket the
  // deployment keeps 64 KiB (checked where the deployment is known: app/payloads.ts).
  const payloadIssue = payloadRefusal(payloadBytes(ctx.value.payload), ctx.value.target.kind, true);
  if (payloadIssue) ctx.issues.push({ code: 'custom', message: payloadIssue, input: ctx.value.payload, path: ['payload'] });
  if (ctx.value.concurrency && ctx.value.target.kind === 'external') {
    ctx.issues.push({
      code: 'custom',
      message: 'is not available with an external target (its runs leave the worker holding no slot)',
      input: ctx.value.concurrency,
      path: ['concurrency'],
    });
  }
  const { retryPolicy } = ctx.value;
  if (retryPolicy.maxDelaySeconds < retryPolicy.initialDelaySeconds) {
    ctx.issues.push({
      code: 'custom',
      message: 'must be at least initialDelaySeconds',
      input: retryPolicy.maxDelaySeconds,
      path: ['retryPolicy', 'maxDelaySeconds'],
    });
  }
});
export type JobSpec = z.infer<typeof jobSpecSchema>;

export type JobStatus = 'ACTIVE' | 'PAUSED' | 'COMPLETED' | 'CANCELLED';

/** A stored job: the definition plus the scheduler's bookkeeping. */
export interface Job extends Omit<JobSpec, 'target' | 'name'> {
  /** Its name, or its id when it was created without one (decision 0154). */
  readonly name: string;
  /** A request's target; a workflow's schedule starts a workflow run instead. */
  readonly target: JobTarget;
  readonly jobId: string;
  readonly tenantId: string;
  readonly status: JobStatus;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** Optimistic-concurrency version of the definition (If-Match on PATCH). */
  readonly version: number;
  /** Fire time of the pending occurrence, or null when none is pending. */
  readonly nextRunAt: string | null;
  /** Run id of the pending occurrence: the next run of the schedule that has not started. */
  readonly nextRunId: string | null;
  /** The last scheduled run that started (for overlap policies). */
  readonly lastStartedRunId?: string | null;
  readonly pausedAt?: string | null;
  /**
   * The occurrence resume starts from: the one pending when the job was paused (with the run that
   * stood for it), or the first of a schedule a PATCH set while paused (`runId` null unless that
   * occurrence is the paused one).
   */
  readonly pausedPending?: { readonly runId: string | null; readonly scheduledFor: string } | null;
  /** Why the job was paused, as the pause request said (shown on the job until it is resumed). */
  readonly pauseNote?: string | null;
  /** When a paused job resumes by itself (the ticker resumes it within its period). */
  readonly pausedUntil?: string | null;
  /**
   * Fire times skipped on request (POST /v1/jobs/{jobId}/skip) that the chain has not passed yet:
   * the chain plans over them. Each was recorded as a SKIPPED run when it was asked for.
   */
  readonly skippedOccurrences?: readonly string[];
  /**
   * Where the payload is when it is stored apart (decision 0162); `payload` is then null until it
   * is read (app/payloads.ts).
   */
  readonly payloadRef?: PayloadRef;
}

/** At most this many skipped fire times wait ahead of a job's chain. */
export const MAX_SKIPPED_OCCURRENCES = 100;
/** A pause's note is at most this long. */
export const MAX_PAUSE_NOTE_LENGTH = 500;

/**
 * How long a lease on a run of this job lasts: its attempt timeout plus a margin for a Lambda worker;
 * for an external worker, the target's lease (renewed by each heartbeat, so a run may last longer).
 */
export function leaseSecondsOf(job: Pick<Job, 'timeoutSeconds' | 'target'>, leaseMarginSeconds: number): number {
  return job.target.kind === 'external' ? job.target.leaseSeconds : attemptTimeoutSeconds(job) + leaseMarginSeconds;
}

/** The execution timeout of one attempt: the job's, narrowed by the target's own where it has one. */
export function attemptTimeoutSeconds(job: Pick<Job, 'timeoutSeconds' | 'target'>): number {
  const targetTimeout = job.target.kind === 'http' ? job.target.timeoutSeconds : undefined;
  return Math.min(job.timeoutSeconds, targetTimeout ?? job.timeoutSeconds);
}

/** Whether the job was created without a name (it is named by its id, and has no name guard). */
export const isUnnamed = (job: Pick<Job, 'jobId' | 'name'>): boolean => job.name === job.jobId;
