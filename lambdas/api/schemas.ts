// The HTTP contract of the API as zod schemas: what each route reads (path, query, body); what it
// answers is in responses.ts. The router validates requests with these, the OpenAPI document (lambdas/api/openapi.ts)
// is generated from them, and a client may import them: this module depends on zod and the pure
// domain only, never on the AWS SDK.
import { z } from 'zod';
import { cursorParam, limitParam, resourceId } from '../core/validation';
import { WORKFLOW_RUN_STATUSES } from '../domain/workflow-run';
import { MAX_JOB_PAYLOAD_BYTES, payloadBytes } from '../domain/payload';
import {
  JOB_LABEL_PATTERN,
  MASKED_HEADER_VALUE,
  MAX_PAUSE_NOTE_LENGTH,
  MAX_PAYLOAD_BYTES,
  MAX_SKIPPED_OCCURRENCES,
  jobPatchSchema,
  jobSpecSchema,
  isoInstant,
  jobTypeSchema,
  jsonValue,
  labelKeySchema,
  labelValueSchema,
  scheduleSchema,
} from '../domain/job';
import { RUN_STATUSES } from '../domain/run';
import { JOB_NOTIFY_EVENTS } from '../domain/notify';
import { FIRE_TIME_RANGE } from '../domain/schedule-series';
import { MAX_STORED_STEP_RESULT_BYTES } from '../domain/workflow';

export { MASKED_HEADER_VALUE, jobPatchSchema, jobSpecSchema };

/** A time filter in a query string, normalised to UTC (`Z`) so that it compares with stored keys. */
const isoInstantParam = isoInstant.transform((value) => new Date(value).toISOString());
/**
 * A listing's `from` may not be after its `to`: DynamoDB refuses a key condition `BETWEEN a AND b`
 * with a > b (a 500, where the caller's error is a 400). Compared as instants (both are normalised).
 */
const fromNotAfterTo = <T extends { readonly from?: string; readonly to?: string }>(range: T): boolean =>
  range.from === undefined || range.to === undefined || Date.parse(range.from) <= Date.parse(range.to);
const FROM_AFTER_TO = { message: 'must not be after `to`', path: ['from'] };
const boundedJson = (what: string, max = MAX_PAYLOAD_BYTES) =>
  jsonValue.refine((value) => Buffer.byteLength(JSON.stringify(value ?? null), 'utf8') <= max, `${what} must be at most ${max} bytes of JSON`);

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
    name: z
      .string()
      .min(1)
      .max(128)
      .optional()
      .meta({ description: 'Jobs with exactly this name: the live one (at most one) and any deleted ones that had it.' }),
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
export const listRunsQuery = z.strictObject(runFilterShape).refine(fromNotAfterTo, FROM_AFTER_TO);
export type ListRunsQuery = z.output<typeof listRunsQuery>;

export const deadQuery = z
  .strictObject({
    limit: limitParam(20, 100),
    cursor: cursorParam.optional(),
    jobId: resourceId.optional(),
    from: isoInstantParam.optional().meta({ description: 'Dead runs that ended at or after this instant.' }),
    to: isoInstantParam.optional().meta({ description: 'Dead runs that ended at or before this instant.' }),
  })
  .refine(fromNotAfterTo, FROM_AFTER_TO);
export type DeadQuery = z.output<typeof deadQuery>;

export const healthQuery = z.strictObject({ minutes: limitParam(15, 60) });
export type HealthQuery = z.output<typeof healthQuery>;

/** The longest debounce window: an hour. */
export const MAX_DEBOUNCE_SECONDS = 3600;

export const triggerSchema = z.strictObject({
  payload: jsonValue
    .optional()
    .refine((payload) => payload === undefined || payloadBytes(payload) <= MAX_JOB_PAYLOAD_BYTES, `must be at most ${MAX_JOB_PAYLOAD_BYTES} bytes of JSON`),
  debounceSeconds: z
    .number()
    .int()
    .min(1)
    .max(MAX_DEBOUNCE_SECONDS)
    .optional()
    .meta({ description: "Coalesce the triggers of this many seconds, from the first, into one run at the window's end carrying the last payload." }),
});
export type TriggerRequest = z.output<typeof triggerSchema>;

/** Skipping occurrences (issue 19 item 5): the next N, or fire times named one by one. */
export const skipSchema = z
  .strictObject({
    next: z
      .number()
      .int()
      .min(1)
      .max(MAX_SKIPPED_OCCURRENCES)
      .optional()
      .meta({ description: 'Skip the next N occurrences that would fire, from the pending one.' }),
    occurrences: z
      .array(isoInstantParam)
      .min(1)
      .max(MAX_SKIPPED_OCCURRENCES)
      .optional()
      .meta({ description: "Skip these fire times of the job's schedule (each one not yet started)." }),
  })
  .refine((request) => (request.next === undefined) !== (request.occurrences === undefined), { message: 'give next or occurrences, not both', path: ['next'] })
  .meta({ id: 'SkipRequest' });
export type SkipRequest = z.output<typeof skipSchema>;

/** A pause's note and end (issue 19 item 7). */
export const pauseSchema = z
  .strictObject({
    note: z.string().min(1).max(MAX_PAUSE_NOTE_LENGTH).optional().meta({ description: 'Why the job is paused: shown on the job until it resumes.' }),
    until: isoInstantParam.optional().meta({ description: 'The job resumes by itself at this time (within a minute), at most 366 days ahead.' }),
  })
  .meta({ id: 'PauseRequest' });
export type PauseRequest = z.output<typeof pauseSchema>;

/** A backfill's range: fire times `from` <= t < `to` (issue 19 item 6). */
export const backfillSchema = z.strictObject({
  from: isoInstantParam.meta({ description: 'The first fire time included.' }),
  to: isoInstantParam.meta({ description: "The end of the range, excluded; at most now and the job's next occurrence." }),
});
export type BackfillRequestBody = z.output<typeof backfillSchema>;

export const bulkReplaySchema = z
  .strictObject({
    jobId: resourceId.optional(),
    from: isoInstantParam.optional(),
    to: isoInstantParam.optional(),
    limit: z.number().int().min(1).max(100).default(100),
  })
  .refine(fromNotAfterTo, FROM_AFTER_TO);
export type BulkReplayRequest = z.output<typeof bulkReplaySchema>;

export const previewSchema = z
  .strictObject({
    schedule: scheduleSchema.optional().meta({ description: "The schedule to preview; without it, the job's own (jobId)." }),
    jobId: resourceId
      .optional()
      .meta({ description: "A job of the caller: its id seeds the occurrences' jitter, and without a schedule its own schedule and skips are shown." }),
    from: isoInstant
      .refine(
        (from) => Date.parse(from) >= FIRE_TIME_RANGE.earliest && Date.parse(from) <= FIRE_TIME_RANGE.latest,
        'must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z',
      )
      .optional(),
    count: z.number().int().min(1).max(100).default(5),
  })
  .refine((request) => request.schedule !== undefined || request.jobId !== undefined, { message: 'give a schedule, a jobId or both', path: ['schedule'] });
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
// The deployment's own bound (a payload bucket or none; a step or not) is checked by the complete itself.
export const completeSchema = z.strictObject({ leaseToken, result: boundedJson('result', MAX_STORED_STEP_RESULT_BYTES).optional() });
export type CompleteRequest = z.output<typeof completeSchema>;
export const failSchema = z.strictObject({
  leaseToken,
  error: z.strictObject({ code: z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/), message: z.string().max(1024), retryable: z.boolean() }),
});
export type FailRequest = z.output<typeof failSchema>;

export type JobSpecRequest = z.output<typeof jobSpecSchema>;
export type JobPatchRequest = z.output<typeof jobPatchSchema>;

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

// ---- The audit trail (docs/api.md#audit-trail) -----------------------------------------------

export const auditQuery = z
  .strictObject({
    limit: limitParam(20, 100),
    cursor: cursorParam.optional(),
    objectId: resourceId.optional().describe('Only the entries of this job, run, secret or key'),
    from: isoInstantParam.optional().describe('Entries at or after this instant'),
    to: isoInstantParam.optional().describe('Entries at or before this instant'),
  })
  .refine(fromNotAfterTo, FROM_AFTER_TO)
  .meta({ id: 'AuditQuery' });
export type AuditQuery = z.output<typeof auditQuery>;

// ---- Workflows (docs/api.md#workflows) --------------------------------------------------------

export { workflowSpecSchema } from '../domain/workflow';

export const workflowQuery = z
  .strictObject({
    version: z
      .string()
      .regex(/^[1-9]\d{0,8}$/, 'must be a whole number from 1')
      .transform(Number)
      .optional()
      .describe('A version of the definition (the newest when absent)'),
  })
  .meta({ id: 'WorkflowQuery' });

export const listWorkflowRunsQuery = z
  .strictObject({
    limit: limitParam(20, 100),
    cursor: cursorParam.optional(),
    status: z.enum(WORKFLOW_RUN_STATUSES).optional().describe('Only the workflow runs of this status'),
  })
  .meta({ id: 'ListWorkflowRunsQuery' });
export type ListWorkflowRunsQuery = z.output<typeof listWorkflowRunsQuery>;

export const listWorkflowsQuery = z
  .strictObject({
    limit: limitParam(20, 100),
    cursor: cursorParam.optional(),
    order: z.enum(['newest', 'name']).default('newest').describe('Newest first (by creation), or in name order'),
    namePrefix: z.string().min(1).max(100).optional().describe('Only workflows whose name starts with this, in name order'),
  })
  .meta({ id: 'ListWorkflowsQuery' });
export type ListWorkflowsQuery = z.output<typeof listWorkflowsQuery>;

/** The event of a run's notification in a path (`/v1/runs/{runId}/notifications/{event}/…`). */
export const notifyEventParam = z.enum(JOB_NOTIFY_EVENTS).meta({ description: "A run notification's event: dead, failed, succeeded or skipped." });
/** The event of a workflow run's notification in a path (`/v1/workflows/{workflowId}/runs/{workflowRunId}/notifications/{workflowEvent}/…`). */
export const workflowEventParam = z
  .enum(['succeeded', 'failed', 'cancelled'])
  .meta({ description: "A workflow run notification's event: succeeded, failed or cancelled (a skipped occurrence's is its run's)." });
