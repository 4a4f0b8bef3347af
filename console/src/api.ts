// The console's only way to the scheduler: the public API (docs/api.md) with the signed-in key.
// Types come from the server's own modules (type imports only: nothing server-side is bundled).
// When the typed SchedulerClient (clients/) lands, it replaces the request functions below; the
// parameter names of the list filters live in JOB_FILTER_PARAMS so they can follow the API's.
import type { HealthReport } from '../../lambdas/app/health';
import type { JobView, SchedulePreview } from '../../lambdas/app/jobs';
import type { JobSpec, JobStatus, Schedule } from '../../lambdas/domain/job';
import type { Run } from '../../lambdas/domain/run';
import type { WorkflowDetail, WorkflowSummary, WorkflowView } from '../../lambdas/app/workflows';
import type { WorkflowRun } from '../../lambdas/domain/workflow-run';
import type { NotificationView, WorkflowRunNotificationView } from '../../lambdas/app/run-notifications';

export type {
  HealthReport,
  JobSpec,
  JobStatus,
  JobView,
  NotificationView,
  WorkflowRunNotificationView,
  Run,
  Schedule,
  SchedulePreview,
  WorkflowDetail,
  WorkflowRun,
  WorkflowSummary,
  WorkflowView,
};

/** A job as the list and the job page show it (labels arrive with the API's labels work). */
export type Job = JobView & { readonly labels?: Readonly<Record<string, string>> };
export type JobDetail = Job & { readonly recentRuns: Run[] };

export interface Page<T> {
  readonly items: T[];
  readonly nextCursor: string | null;
}

export interface FieldError {
  readonly path: string;
  readonly message: string;
}

export interface Problem {
  readonly type?: string;
  readonly title?: string;
  readonly status: number;
  readonly detail?: string;
  readonly errors?: FieldError[];
}

export class ApiError extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail ?? problem.title ?? `HTTP ${problem.status}`);
  }

  get status(): number {
    return this.problem.status;
  }
}

const KEY_STORAGE = 'scheduler.apiKey';

/** The key lives in sessionStorage: for this tab's session, never in a URL or a log. */
export const session = {
  key(): string | null {
    return sessionStorage.getItem(KEY_STORAGE);
  },
  signIn(key: string): void {
    sessionStorage.setItem(KEY_STORAGE, key);
  },
  signOut(): void {
    sessionStorage.removeItem(KEY_STORAGE);
  },
};

/** The API's root: the console is served beside it (`/console` next to `/v1`). */
const API_ROOT = new URL('../v1', window.location.href).pathname.replace(/\/$/, '');

async function request<T>(method: string, path: string, body?: unknown, key = session.key()): Promise<T> {
  const response = await fetch(`${API_ROOT}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key ?? ''}`,
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: 'no-store',
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (!response.ok) {
    // API Gateway's own answers to a missing or refused key are not problem+json.
    const problem: Problem =
      parsed && typeof parsed === 'object' && 'status' in parsed
        ? (parsed as Problem)
        : {
            status: response.status,
            title: response.statusText,
            detail: response.status === 401 || response.status === 403 ? 'The API key was not accepted.' : `HTTP ${response.status}`,
          };
    if ((response.status === 401 || response.status === 403) && key === session.key()) window.dispatchEvent(new CustomEvent('scheduler:unauthorized'));
    throw new ApiError({ ...problem, status: response.status });
  }
  return parsed as T;
}

const query = (params: Record<string, string | number | readonly string[] | undefined>): string => {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined || value === '') continue;
    for (const one of Array.isArray(value) ? value : [value]) search.append(name, String(one));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
};

/** Checks a key without keeping it: a key the API refuses is a 401 or 403. */
export async function checkKey(key: string): Promise<boolean> {
  try {
    await request('GET', '/jobs?limit=1', undefined, key);
    return true;
  } catch (error) {
    if (error instanceof ApiError && (error.status === 401 || error.status === 403)) return false;
    throw error;
  }
}

export interface JobFilter {
  /** Name prefix. */
  readonly name?: string;
  readonly status?: JobStatus;
  /** `key=value` pairs; a job matches when it has all of them. */
  readonly labels?: readonly string[];
}

/**
 * The query parameters of GET /v1/jobs the console sends for its filters: the search box is a
 * name prefix (`namePrefix`), each label `key=value` (`label`, repeated), served by the API's indexes.
 */
export const JOB_FILTER_PARAMS = { name: 'namePrefix', label: 'label', status: 'status' } as const;

/** A job id's form (the API refuses it as a given name): the search box looks such a text up as an unnamed job's name. */
const JOB_ID_FORM = /^job_[0-9a-z]{26}$/;

/** A page of jobs matching the filter: the API serves each filter (status, name prefix, labels) from its indexes. */
export async function listJobs(filter: JobFilter, cursor?: string): Promise<Page<Job>> {
  // A job created without a name is named by its id and found by that name exactly, not by a prefix.
  const byId = filter.name !== undefined && JOB_ID_FORM.test(filter.name);
  const params = {
    [JOB_FILTER_PARAMS.status]: filter.status,
    [byId ? 'name' : JOB_FILTER_PARAMS.name]: filter.name,
    [JOB_FILTER_PARAMS.label]: filter.labels,
  };
  return request<Page<Job>>('GET', `/jobs${query({ ...params, limit: 20, cursor })}`);
}

/**
 * The workflow run of a workflow step's run, from its ids (lambdas/domain/workflow-jobs.ts): its job
 * is `<workflowId>.v<version>.<step>`, which no job route serves, and its workflow run
 * `<workflowId>.<time in base-36 ms>`, the time every step run of it is scheduled for.
 */
export function workflowRunOf(run: Pick<Run, 'jobId' | 'scheduledFor'>): { workflowId: string; workflowRunId: string } | null {
  const workflowId = /^(wf_[0-9a-z]+)\.v\d+\.[A-Za-z0-9][A-Za-z0-9_-]*$/.exec(run.jobId)?.[1];
  return workflowId ? { workflowId, workflowRunId: `${workflowId}.${Date.parse(run.scheduledFor).toString(36)}` } : null;
}

export const api = {
  job: (jobId: string) => request<JobDetail>('GET', `/jobs/${encodeURIComponent(jobId)}`),
  jobRuns: (jobId: string, limit = 20, cursor?: string, range: { from?: string; to?: string } = {}) =>
    request<Page<Run>>('GET', `/jobs/${encodeURIComponent(jobId)}/runs${query({ limit, cursor, ...range })}`),
  /** The tenant's runs of occurrences scheduled in [from, to). */
  runs: (range: { from: string; to: string }, limit = 100, cursor?: string) => request<Page<Run>>('GET', `/runs${query({ limit, cursor, ...range })}`),
  createJob: (spec: unknown) => request<{ job: Job; nextRunAt: string | null }>('POST', '/jobs', spec),
  pause: (jobId: string, pause: { note?: string; until?: string } = {}) => request<Job>('POST', `/jobs/${encodeURIComponent(jobId)}/pause`, pause),
  skip: (jobId: string, occurrences: string[]) => request<Job>('POST', `/jobs/${encodeURIComponent(jobId)}/skip`, { occurrences }),
  resume: (jobId: string) => request<Job>('POST', `/jobs/${encodeURIComponent(jobId)}/resume`),
  trigger: (jobId: string) => request<{ run: Run }>('POST', `/jobs/${encodeURIComponent(jobId)}/trigger`),
  deleteJob: (jobId: string) => request<Job>('DELETE', `/jobs/${encodeURIComponent(jobId)}`),
  run: (runId: string) => request<Run>('GET', `/runs/${encodeURIComponent(runId)}`),
  cancel: (runId: string) => request<Run>('POST', `/runs/${encodeURIComponent(runId)}/cancel`),
  replay: (runId: string) => request<{ run: Run }>('POST', `/runs/${encodeURIComponent(runId)}/replay`),
  notifications: (runId: string) => request<{ items: NotificationView[] }>('GET', `/runs/${encodeURIComponent(runId)}/notifications`),
  resendNotification: (runId: string, event: string) =>
    request<NotificationView>('POST', `/runs/${encodeURIComponent(runId)}/notifications/${encodeURIComponent(event)}/resend`),
  deadRuns: (cursor?: string) => request<Page<Run>>('GET', `/dead-runs${query({ limit: 50, cursor })}`),
  preview: (schedule: unknown, count = 5) => request<SchedulePreview>('POST', '/schedules/preview', { schedule, count }),
  /** A job's own occurrences: its skips marked, and each start with its jitter. */
  previewJob: (jobId: string, count = 5) => request<SchedulePreview>('POST', '/schedules/preview', { jobId, count }),
  health: (minutes = 60) => request<HealthReport>('GET', `/health${query({ minutes })}`),
  workflows: (order: 'newest' | 'name', namePrefix?: string, cursor?: string) =>
    request<Page<WorkflowSummary>>('GET', `/workflows${query({ limit: 50, order, namePrefix, cursor })}`),
  workflow: (workflowId: string, version?: number) => request<WorkflowDetail>('GET', `/workflows/${encodeURIComponent(workflowId)}${query({ version })}`),
  pauseWorkflow: (workflowId: string) => request<WorkflowView>('POST', `/workflows/${encodeURIComponent(workflowId)}/pause`),
  deleteWorkflow: (workflowId: string) => request<WorkflowView>('DELETE', `/workflows/${encodeURIComponent(workflowId)}`),
  resumeWorkflow: (workflowId: string) => request<WorkflowView>('POST', `/workflows/${encodeURIComponent(workflowId)}/resume`),
  workflowRuns: (workflowId: string, limit = 20, cursor?: string) =>
    request<Page<WorkflowRun>>('GET', `/workflows/${encodeURIComponent(workflowId)}/runs${query({ limit, cursor })}`),
  workflowRun: (workflowId: string, workflowRunId: string) =>
    request<WorkflowRun>('GET', `/workflows/${encodeURIComponent(workflowId)}/runs/${encodeURIComponent(workflowRunId)}`),
  workflowRunNotifications: (workflowId: string, workflowRunId: string) =>
    request<{ items: WorkflowRunNotificationView[] }>(
      'GET',
      `/workflows/${encodeURIComponent(workflowId)}/runs/${encodeURIComponent(workflowRunId)}/notifications`,
    ),
  resendWorkflowRunNotification: (workflowId: string, workflowRunId: string, event: 'succeeded' | 'failed' | 'cancelled') =>
    request<WorkflowRunNotificationView>(
      'POST',
      `/workflows/${encodeURIComponent(workflowId)}/runs/${encodeURIComponent(workflowRunId)}/notifications/${encodeURIComponent(event)}/resend`,
    ),
  startWorkflowRun: (workflowId: string) => request<WorkflowRun>('POST', `/workflows/${encodeURIComponent(workflowId)}/runs`),
  cancelWorkflowRun: (workflowId: string, workflowRunId: string) =>
    request<WorkflowRun>('POST', `/workflows/${encodeURIComponent(workflowId)}/runs/${encodeURIComponent(workflowRunId)}/cancel`),
  retryWorkflowRun: (workflowId: string, workflowRunId: string) =>
    request<WorkflowRun>('POST', `/workflows/${encodeURIComponent(workflowId)}/runs/${encodeURIComponent(workflowRunId)}/retry`),
};
