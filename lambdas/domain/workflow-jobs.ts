// The jobs a workflow's runs execute: a step's job (`wf_….v<version>.<stepId>`), whose runs are the
// step's, and the schedule's job (`wf_….schedule`, decision 0147), whose runs start workflow runs;
// and the ids that tie a step run to its workflow run.
import type { Job } from './job';
import { runIdFor } from './run';
import type { PayloadRef } from './payload';
import type { Workflow, WorkflowSpec, WorkflowVersion } from './workflow';

// ---- Steps as jobs -------------------------------------------------------------------------------

/**
 * The job id of a step of a version: `wf_….v<version>.<stepId>`. Step runs carry it as their
 * `jobId`, so the worker finds the step's target, payload and policies the way it finds a job's.
 */
export function stepJobIdOf(workflowId: string, version: number, stepId: string): string {
  return `${workflowId}.v${version}.${stepId}`;
}

const STEP_JOB_ID = /^(wf_[0-9a-z]+)\.v(\d+)\.([A-Za-z0-9][A-Za-z0-9_-]*)$/;

export function parseStepJobId(jobId: string): { workflowId: string; version: number; stepId: string } | null {
  const match = STEP_JOB_ID.exec(jobId);
  if (!match?.[1] || !match[2] || !match[3]) return null;
  return { workflowId: match[1], version: Number(match[2]), stepId: match[3] };
}

/** The run of a step of a workflow run, at an attempt: deterministic, so that a repeated start writes nothing. */
export function stepRunIdOf(
  run: { readonly workflowId: string; readonly version: number; readonly scheduledFor: string },
  stepId: string,
  attempt: number,
): string {
  return runIdFor(stepJobIdOf(run.workflowId, run.version, stepId), run.scheduledFor, attempt);
}

/**
 * A workflow run's id: its workflow and its time, so that the runs of its steps (whose occurrence
 * is that time) name it, and racing creators of one occurrence make it once.
 */
export function workflowRunIdOf(workflowId: string, scheduledFor: string): string {
  return `${workflowId}.${Date.parse(scheduledFor).toString(36)}`;
}

/** The job a step's runs execute: the step's definition with the workflow's identity around it. */
export function stepJobOf(version: WorkflowVersion, stepId: string): Job | null {
  const step = version.spec.steps.find((candidate) => candidate.id === stepId);
  if (!step) return null;
  return {
    jobId: stepJobIdOf(version.workflowId, version.version, step.id),
    tenantId: version.tenantId,
    name: `${version.spec.name}/${step.id}`,
    type: step.type ?? version.spec.type,
    labels: {},
    schedule: { kind: 'now' },
    target: step.target,
    payload: step.payload,
    retryPolicy: step.retryPolicy,
    timeoutSeconds: step.timeoutSeconds,
    delivery: step.delivery,
    overlapPolicy: 'allow',
    misfirePolicy: 'fire-once',
    backfillLimit: 1,
    priority: version.spec.priority,
    // Steps are never a schedule's chain: their runs are started by the workflow run.
    status: 'COMPLETED',
    createdAt: version.createdAt,
    updatedAt: version.createdAt,
    version: version.version,
    nextRunAt: null,
    nextRunId: null,
  };
}

// ---- A workflow's schedule as a job -------------------------------------------------------------

/**
 * The job id of a workflow's schedule (its driver job, decision 0147): `wf_….schedule`. Its runs are
 * the schedule's occurrences; the worker starts a workflow run for each it executes.
 */
export function scheduleJobIdOf(workflowId: string): string {
  return `${workflowId}.schedule`;
}

const SCHEDULE_JOB_ID = /^(wf_[0-9a-z]+)\.schedule$/;

export function parseScheduleJobId(jobId: string): { workflowId: string } | null {
  const match = SCHEDULE_JOB_ID.exec(jobId);
  return match?.[1] ? { workflowId: match[1] } : null;
}

/** Job ids that belong to a workflow (its steps, its schedule): not jobs of the jobs API. */
export const isWorkflowJobId = (jobId: string): boolean => parseStepJobId(jobId) !== null || parseScheduleJobId(jobId) !== null;

/** How long starting a workflow run may take: the lease of a schedule's run. */
export const SCHEDULE_RUN_TIMEOUT_SECONDS = 60;

/** What a version's definition says of its schedule's job: the schedule, its policies, its runs' pool and lane. */
export function scheduleFieldsOf(
  spec: Pick<WorkflowSpec, 'schedule' | 'overlapPolicy' | 'misfirePolicy' | 'backfillLimit' | 'priority' | 'type' | 'notify'>,
): Pick<Job, 'schedule' | 'overlapPolicy' | 'misfirePolicy' | 'backfillLimit' | 'priority' | 'type' | 'notify'> | null {
  if (!spec.schedule) return null;
  return {
    schedule: spec.schedule,
    overlapPolicy: spec.overlapPolicy ?? 'allow',
    misfirePolicy: spec.misfirePolicy ?? 'fire-once',
    backfillLimit: spec.backfillLimit ?? 10,
    priority: spec.priority,
    type: spec.type,
    // The schedule job raises the workflow's `skipped` (an occurrence a policy skipped); a workflow
    // run's own end raises the others. Its occurrences' other outcomes raise nothing.
    notify: spec.notify?.events.includes('skipped') ? { events: ['skipped'], destination: spec.notify.destination } : null,
  };
}

/**
 * A new schedule job for a workflow (its status, next run and version are the caller's to set). Its
 * runs call nothing: starting the workflow run is all they do, retried on a short budget.
 */
export function scheduleJobOf(
  workflow: Pick<Workflow, 'workflowId' | 'tenantId' | 'name'>,
  fields: NonNullable<ReturnType<typeof scheduleFieldsOf>>,
  at: string,
): Job {
  return {
    jobId: scheduleJobIdOf(workflow.workflowId),
    tenantId: workflow.tenantId,
    name: workflow.name,
    labels: {},
    ...fields,
    target: { kind: 'workflow', workflowId: workflow.workflowId },
    payload: null,
    retryPolicy: { maxAttempts: 3, initialDelaySeconds: 1, maxDelaySeconds: 30 },
    timeoutSeconds: SCHEDULE_RUN_TIMEOUT_SECONDS,
    delivery: 'at-least-once',
    status: 'ACTIVE',
    createdAt: at,
    updatedAt: at,
    version: 1,
    nextRunAt: null,
    nextRunId: null,
  };
}

/** What a step's target receives besides its payload: where it is, and its parents' results. */
export interface StepContext {
  readonly workflowId: string;
  readonly workflowRunId: string;
  readonly stepId: string;
  readonly version: number;
  readonly results: Readonly<Record<string, unknown>>;
  /**
   * As the run keeps them: the parents' results stored apart (decision 0163), by step id, read into
   * `results` by the worker that delivers the run. Absent once read, and on the context a target sees.
   */
  readonly storedResults?: Readonly<Record<string, PayloadRef>>;
}

/**
 * What a step's run keeps of its context (its `inputsJson`): its parents' results alone, and nothing
 * when it has none (a root step). Where it is (workflow, workflow run, step, version) is in its
 * job id and time, so the item stays under 1 KB, a write unit a write (decision 0164).
 */
export type StepInputs = Pick<StepContext, 'results' | 'storedResults'>;

/** Parents' results as a step's run keeps them; undefined when there are none to keep. */
export function storedStepInputs(inputs: StepInputs): StepInputs | undefined {
  const stored = inputs.storedResults && Object.keys(inputs.storedResults).length > 0 ? inputs.storedResults : undefined;
  if (Object.keys(inputs.results).length === 0 && !stored) return undefined;
  return stored ? { results: inputs.results, storedResults: stored } : { results: inputs.results };
}

/**
 * A step run's context, from its ids and what its item keeps (`inputs`: its parents' results, or the
 * whole context as runs kept it before decision 0164); undefined for a run that is not a step's.
 */
export function stepContextOf(run: { readonly jobId: string; readonly scheduledFor: string }, inputs: unknown): StepContext | undefined {
  const step = parseStepJobId(run.jobId);
  if (!step) return undefined;
  const kept = typeof inputs === 'object' && inputs !== null ? (inputs as Partial<StepInputs>) : {};
  return {
    workflowId: step.workflowId,
    workflowRunId: workflowRunIdOf(step.workflowId, run.scheduledFor),
    stepId: step.stepId,
    version: step.version,
    results: kept.results ?? {},
    ...(kept.storedResults ? { storedResults: kept.storedResults } : {}),
  };
}
