// The jobs' routes: create, list, read, change, pause, skip, trigger, backfill, and a job's runs.
import { jobPatchSchema, jobSpecSchema, listJobsQuery, listRunsQuery, triggerSchema, backfillSchema, pauseSchema, skipSchema } from './schemas';
import { createJobResponseSchema, jobDetailSchema, jobPageSchema, jobViewSchema, runPageSchema, runResponseSchema, backfillResponseSchema } from './responses';
import type { RouteSpec } from './route-spec';

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

export const JOB_ROUTES = {
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
      "Newest first, or in name order with `namePrefix`. Filters combine (all must match). A label, a name or a status is read from an index (docs/decisions/0095-job-and-run-finding-indexes.md); `type` is kept from the jobs another filter or the tenant's listing reads (docs/decisions/0186-no-job-type-index.md). A request reads at most 1,000 entries, so a page may be short, with a cursor to go on.",
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
    problems: [409, 412, 413, 415, 429],
    example: { timeoutSeconds: 120, labels: { team: 'billing' } },
  },
  deleteJob: { method: 'DELETE', path: '/v1/jobs/{jobId}', tag: 'Jobs', summary: 'Delete (cancel) a job', responses: { 200: job }, problems: [409, 429] },
  pauseJob: {
    method: 'POST',
    path: '/v1/jobs/{jobId}/pause',
    tag: 'Jobs',
    summary: 'Pause a job',
    description:
      'Retires the pending occurrence. With `until`, the job resumes by itself at that time (the ticker resumes it within its period, a minute), by its misfire policy. Pausing a PAUSED job replaces its note and end.',
    body: { schema: pauseSchema, required: false },
    responses: { 200: job },
    problems: [409, 413, 415, 429],
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
    problems: [409, 413, 415, 429],
    example: { next: 2 },
  },
  resumeJob: { method: 'POST', path: '/v1/jobs/{jobId}/resume', tag: 'Jobs', summary: 'Resume a paused job', responses: { 200: job }, problems: [409, 429] },
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
      "One run per fire time of the job's cron schedule in [from, to) that has no run yet, released oldest first at a bounded rate. The same range answers the same backfill. At most 527,040 fire times (a leap year of minutes) per backfill, and `from` no more than RUN_RETENTION_DAYS − 1 days ago (older occurrences may have lost their runs). 429 when the tenant has its `maxActiveBackfills` (100 by default) releasing already.",
    body: { schema: backfillSchema, required: true },
    headers: ['traceparent'],
    responses: { 202: { description: 'The backfill and its progress', schema: backfillResponseSchema, headers: { Location: 'The backfill’s URL' } } },
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
} as const satisfies Record<string, RouteSpec>;
