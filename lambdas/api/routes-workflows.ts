// The workflows' routes: definitions, versions, schedules, runs and their notifications.
import { MAX_WORKFLOW_STEPS } from '../domain/workflow';
import { listWorkflowRunsQuery, listWorkflowsQuery, workflowQuery, workflowSpecSchema } from './schemas';
import {
  workflowRunNotificationListSchema,
  workflowRunNotificationSchema,
  workflowRunPageSchema,
  workflowRunSchema,
  workflowDetailSchema,
  workflowSummaryPageSchema,
  workflowViewSchema,
} from './responses';
import type { RouteSpec } from './route-spec';

export const WORKFLOW_ROUTES = {
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
    problems: [409, 429],
  },
  pauseWorkflow: {
    method: 'POST',
    path: '/v1/workflows/{workflowId}/pause',
    tag: 'Workflows',
    summary: "Pause a workflow's schedule",
    description:
      'Its pending occurrence never starts; workflow runs already started go on. Pausing a paused workflow answers it again (nothing changes). A 409 when the workflow has no schedule, or its schedule is neither ACTIVE nor PAUSED.',
    responses: { 200: { description: 'The workflow, its schedule PAUSED', schema: workflowViewSchema } },
    problems: [409, 429],
  },
  resumeWorkflow: {
    method: 'POST',
    path: '/v1/workflows/{workflowId}/resume',
    tag: 'Workflows',
    summary: "Resume a workflow's paused schedule",
    description:
      'The next occurrence is the one its misfire policy picks (fire-once: the latest missed one, at once; skip: the first after now; backfill: the missed ones in order).',
    responses: { 200: { description: 'The workflow, its schedule ACTIVE again', schema: workflowViewSchema } },
    problems: [409, 429],
  },
  updateWorkflow: {
    method: 'POST',
    path: '/v1/workflows/{workflowId}/versions',
    tag: 'Workflows',
    summary: 'Write a new version of the definition',
    description:
      'Runs started before keep the version they started with. If-Match: the version read (a 412 when another came first; without it, the version is written after any that came first). A definition under another name is a 400. A changed schedule replans the pending occurrence; new policies apply from the next occurrence; a version without a schedule cancels it.',
    body: { schema: workflowSpecSchema, required: true },
    headers: ['If-Match'],
    responses: { 201: { description: 'The workflow at its new version', schema: workflowViewSchema } },
    problems: [409, 412, 413, 415, 429],
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
    problems: [409, 429],
  },
  retryWorkflowRun: {
    method: 'POST',
    path: '/v1/workflows/{workflowId}/runs/{workflowRunId}/retry',
    tag: 'Workflows',
    summary: 'Retry a failed workflow run from its failed steps',
    description:
      'Succeeded steps are not run again; their results are reused. Failed steps start their next attempt with a fresh retry budget, in the request’s traceparent (a new trace without one). A retry comes within RUN_RETENTION_DAYS − 1 days of the workflow run’s time, while its steps’ runs are kept (409 later).',
    headers: ['traceparent'],
    responses: { 202: { description: 'The workflow run, running again', schema: workflowRunSchema } },
    problems: [409, 429],
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
      "The latest end's DEAD notification of that event is tried again with a fresh budget, the same body and notificationId, as a run's is, to the destination of the workflow's newest version. Counted against the tenant's create rate. A 409 unless it is DEAD.",
    responses: { 202: { description: 'The notification, PENDING again', schema: workflowRunNotificationSchema } },
    problems: [409, 429, 503],
  },
} as const satisfies Record<string, RouteSpec>;
