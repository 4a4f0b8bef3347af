// Workflows: definitions, versioned (a new version leaves started runs on theirs), with an optional
// schedule run by a schedule job (decision 0147). Workflow runs are in workflow-runs.ts and their
// progress in workflow-progress.ts.
import { ConflictError, NotFoundError, PreconditionFailedError, TooManyRequestsError, ValidationError } from '../core/errors';
import { checkNotify, checkPoolTimeout, checkTarget, grantsToCheck, maskedTarget } from './jobs';
import { newJobId } from '../core/ids';
import { logger } from '../core/logger';
import type { Run } from '../domain/run';
import type { TenantLimits } from '../domain/tenant';
import type { Workflow, WorkflowSpec, WorkflowVersion } from '../domain/workflow';
import { scheduleJobIdOf } from '../domain/workflow-jobs';
import type { Page } from '../store/page';
import type { SchedulerDeps } from './deps';
import type { Job } from '../domain/job';
import { MAX_CAS_ATTEMPTS } from './occurrence-chain';
import { endedRuns } from './job-mutation';
import type { WorkflowScheduleState } from './workflow-schedules';
import { newSchedule, pauseWorkflowSchedule, readSchedule, resumeWorkflowSchedule, scheduleChangeFor, scheduleStateOf } from './workflow-schedules';
import { sendPlannedRun } from './send-planned-run';
import { admitRunRequest } from './create-rate';
import { liveWorkflow, tenantWorkflow, versionOf } from './workflow-versions';
import { cancelRunningWorkflowRuns } from './workflow-runs';

export interface WorkflowView extends Workflow {
  readonly definition: WorkflowSpec;
  /** Present once the workflow has had a schedule (decision 0147): the state of its occurrences. */
  readonly scheduleState?: WorkflowScheduleState;
}

/** A workflow as `GET /v1/workflows/{id}` shows it: with its schedule's latest occurrences (their runs), newest first. */
export interface WorkflowDetail extends WorkflowView {
  readonly recentOccurrences: Run[];
}

/** The workflow as the API shows it: HTTP targets' header values masked, as a job's are. */
const viewOf = (workflow: Workflow, version: WorkflowVersion, schedule: Job | null): WorkflowView => ({
  ...workflow,
  version: version.version,
  definition: { ...version.spec, steps: version.spec.steps.map((step) => ({ ...step, target: maskedTarget(step.target) })) },
  ...(schedule ? { scheduleState: scheduleStateOf(schedule) } : {}),
});

/**
 * Each step is checked as a job's is: its target against the deployment's egress policy and
 * allowlist and the tenant's grants, and its timeout against its type's pool, whose worker would cut
 * a longer run off; then the workflow's notification destination.
 */
async function checkDefinition(deps: SchedulerDeps, tenantId: string, spec: WorkflowSpec): Promise<void> {
  const grants = await grantsToCheck(
    deps,
    tenantId,
    spec.steps.map((step) => step.target),
    spec.notify,
  );
  spec.steps.forEach((step, index) => {
    try {
      checkTarget(deps, step.target, grants);
      checkPoolTimeout(deps, { type: step.type ?? spec.type, timeoutSeconds: step.timeoutSeconds, target: step.target });
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      throw new ValidationError(
        'Invalid workflow',
        error.errors.map((field) => ({ ...field, path: `steps.${index}.${field.path}` })),
      );
    }
  });
  checkNotify(deps, spec.notify, grants, 'Invalid workflow');
}

const tooManyActiveJobs = (limits: TenantLimits): TooManyRequestsError =>
  new TooManyRequestsError(
    `This tenant has ${limits.maxActiveJobs ?? 0} active or paused jobs and scheduled workflows, its limit; delete or complete some first`,
    60,
  );

/** A new workflow at version 1; with a schedule, its schedule job and first occurrence in the same transaction. */
export async function createWorkflow(
  deps: SchedulerDeps,
  tenantId: string,
  spec: WorkflowSpec,
  limits: TenantLimits = deps.config.tenantDefaults,
): Promise<WorkflowView> {
  await checkDefinition(deps, tenantId, spec);
  const now = deps.clock();
  const at = new Date(now).toISOString();
  const workflowId = newJobId(now).replace(/^job_/, 'wf_');
  const workflow: Workflow = { workflowId, tenantId, name: spec.name, version: 1, createdAt: at, updatedAt: at };
  const version: WorkflowVersion = { workflowId, tenantId, version: 1, spec, createdAt: at };
  // The schedule is checked (a 400) before the create is counted.
  const schedule = newSchedule(deps, workflow, spec, now, limits);
  // A create, as a job's is: counted against the tenant's creates per second (a scheduled one plans
  // its first run now), before anything is written.
  await admitRunRequest(deps, tenantId, limits, now);
  const written = await deps.workflows.create(workflow, version, schedule ?? undefined);
  if (written.kind === 'name-taken') throw new ConflictError(`A workflow named ${spec.name} exists already`);
  if (written.kind === 'too-many-active-jobs') throw tooManyActiveJobs(limits);
  if (written.kind === 'changed') throw new TooManyRequestsError('Concurrent writes conflicted and this one was not written; try again', 1);
  if (schedule?.firstRun) {
    deps.telemetry.runCreated(schedule.firstRun.run);
    await sendPlannedRun(deps, schedule.firstRun, now);
  }
  logger.info('workflow created', { workflowId, tenantId, scheduled: schedule !== null, nextRunAt: schedule?.job.nextRunAt ?? null });
  return viewOf(workflow, version, schedule?.job ?? null);
}

/**
 * A new version of the definition; runs already started keep theirs. Its schedule and policies apply
 * to the occurrences after it (decision 0147). `expected`: the version the caller read (If-Match).
 */
export async function updateWorkflow(
  deps: SchedulerDeps,
  tenantId: string,
  workflowId: string,
  spec: WorkflowSpec,
  expected?: number,
  limits: TenantLimits = deps.config.tenantDefaults,
): Promise<WorkflowView> {
  await checkDefinition(deps, tenantId, spec);
  const ended = endedRuns();
  let admitted = false;
  for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
    const workflow = await liveWorkflow(deps, tenantId, workflowId);
    if (spec.name !== workflow.name) {
      throw new ValidationError('Invalid workflow', [{ path: 'name', message: `the workflow is named ${workflow.name}; a new version keeps the name` }]);
    }
    if (expected !== undefined && expected !== workflow.version)
      throw new PreconditionFailedError(`The workflow is at version ${workflow.version}, not ${expected}`);
    const current = await readSchedule(deps, workflowId);
    const pending = current?.nextRunId ? await deps.runs.withOccurrenceState(current.nextRunId) : null;
    const now = deps.clock();
    const at = new Date(now).toISOString();
    const version: WorkflowVersion = { workflowId, tenantId, version: workflow.version + 1, spec, createdAt: at };
    const planned = scheduleChangeFor(deps, workflow, spec, current, pending, now, limits, ended);
    // A version that gives the workflow a schedule, or brings one back, plans its first occurrence:
    // a create, counted against the tenant's creates per second as the workflow's own was (a new
    // schedule on a live one replaces its pending occurrence, and adds none).
    const starts =
      planned?.change.kind === 'new'
        ? planned.change.firstRun !== null
        : current !== null && (current.status === 'COMPLETED' || current.status === 'CANCELLED') && (planned?.change.newRuns.length ?? 0) > 0;
    if (starts && !admitted) {
      await admitRunRequest(deps, tenantId, limits, now);
      admitted = true;
    }
    const written = await deps.workflows.addVersion(version, workflow.version, planned?.change);
    if (written.kind === 'too-many-active-jobs') throw tooManyActiveJobs(limits);
    if (written.kind === 'written') {
      const schedule = planned ? (planned.change.kind === 'new' ? planned.change.job : planned.change.next) : current;
      for (const plan of planned?.change.kind === 'new' ? [planned.change.firstRun] : (planned?.change.newRuns ?? [])) {
        if (plan) deps.telemetry.runCreated(plan.run);
      }
      await planned?.afterCommit();
      logger.info('workflow updated', { workflowId, tenantId, version: version.version, nextRunAt: schedule?.nextRunAt ?? null });
      return viewOf({ ...workflow, version: version.version, updatedAt: at }, version, schedule);
    }
    // Another version came first (the caller must read it), or the schedule's chain moved on (read
    // again), or the occurrence planned holds a run an earlier version retired (its next attempt).
    const plans = planned?.change.kind === 'new' ? [planned.change.firstRun] : (planned?.change.newRuns ?? []);
    for (const plan of plans) if (plan) await ended.noteIfEnded(deps, plan.run.runId);
    // Another version came first: the caller who named the version it read must read the new one;
    // a caller who named none has its version written after it (the next try).
    const now2 = await tenantWorkflow(deps, tenantId, workflowId);
    if (expected !== undefined && now2.version !== workflow.version) {
      throw new PreconditionFailedError(`The workflow is at version ${now2.version}, not ${expected}`);
    }
  }
  throw new TooManyRequestsError('The workflow is changing too quickly; try again', 1);
}

export async function getWorkflow(deps: SchedulerDeps, tenantId: string, workflowId: string, versionNumber?: number): Promise<WorkflowDetail> {
  const workflow = await tenantWorkflow(deps, tenantId, workflowId);
  const version = await versionOf(deps, workflowId, versionNumber ?? workflow.version);
  if (!version || (versionNumber !== undefined && versionNumber > workflow.version))
    throw new NotFoundError(`No version ${versionNumber} of workflow ${workflowId}`);
  const schedule = await readSchedule(deps, workflowId);
  const recent = schedule ? (await deps.runs.listByJob(schedule, 10)).items : [];
  return { ...viewOf(workflow, version, schedule), recentOccurrences: recent };
}

/**
 * Pauses a scheduled workflow: its pending occurrence is retired; runs already started go on.
 * `pausedNow`: this call paused it (a pause of a paused workflow changes nothing).
 */
export async function pauseWorkflow(
  deps: SchedulerDeps,
  tenantId: string,
  workflowId: string,
): Promise<{ readonly workflow: WorkflowView; readonly pausedNow: boolean }> {
  const workflow = await liveWorkflow(deps, tenantId, workflowId);
  const { schedule, pausedNow } = await pauseWorkflowSchedule(deps, tenantId, workflowId);
  const version = await versionOf(deps, workflowId, workflow.version);
  if (!version) throw new NotFoundError(`No version ${workflow.version} of workflow ${workflowId}`);
  return { workflow: viewOf(workflow, version, schedule), pausedNow };
}

/** Resumes a paused scheduled workflow from the occurrence its misfire policy picks. */
export async function resumeWorkflow(deps: SchedulerDeps, tenantId: string, workflowId: string): Promise<WorkflowView> {
  const workflow = await liveWorkflow(deps, tenantId, workflowId);
  const schedule = await resumeWorkflowSchedule(deps, tenantId, workflowId);
  const version = await versionOf(deps, workflowId, workflow.version);
  if (!version) throw new NotFoundError(`No version ${workflow.version} of workflow ${workflowId}`);
  return viewOf(workflow, version, schedule);
}

/**
 * Deletes a workflow (decision 0149): it leaves the tenant's list and frees its name, its schedule
 * (if any) is CANCELLED with its pending occurrence, freeing its place under the tenant's active
 * jobs, and its running workflow runs are cancelled as a cancel request does. Its versions and runs
 * stay readable; it can no longer be changed or run. Deleting a deleted workflow answers it again.
 */
export async function deleteWorkflow(
  deps: SchedulerDeps,
  tenantId: string,
  workflowId: string,
): Promise<{ readonly workflow: WorkflowView; readonly deletedNow: boolean }> {
  for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
    const workflow = await tenantWorkflow(deps, tenantId, workflowId);
    const version = await versionOf(deps, workflowId, workflow.version);
    if (!version) throw new NotFoundError(`No version ${workflow.version} of workflow ${workflowId}`);
    const schedule = await readSchedule(deps, workflowId);
    if (workflow.deletedAt) return { workflow: viewOf(workflow, version, schedule), deletedNow: false };
    const now = deps.clock();
    const at = new Date(now).toISOString();
    const next: Job | null =
      schedule && schedule.status !== 'CANCELLED'
        ? {
            ...schedule,
            status: 'CANCELLED',
            nextRunAt: null,
            nextRunId: null,
            pausedPending: null,
            pausedUntil: null,
            version: schedule.version + 1,
            updatedAt: at,
          }
        : null;
    const written = await deps.workflows.delete(workflow, at, next && schedule ? { next, expected: schedule } : undefined);
    if (written === 'changed') continue;
    if (next) {
      for (const run of await deps.runs.pendingOfJob(next)) {
        if (await deps.runs.retirePending(run.runId, 'CANCELLED', 'the workflow was deleted', now))
          deps.telemetry.runEnded(run, 'CANCELLED', 'the workflow was deleted');
      }
    }
    const cancelled = await cancelRunningWorkflowRuns(deps, workflowId);
    logger.info('workflow deleted', { workflowId, tenantId, scheduleCancelled: next !== null, workflowRunsCancelled: cancelled });
    return { workflow: viewOf({ ...workflow, deletedAt: at, updatedAt: at }, version, next ?? schedule), deletedNow: true };
  }
  throw new TooManyRequestsError('The workflow is changing too quickly; try again', 1);
}

/** A workflow in the tenant's list: its head, its newest version's step count, its schedule's state. */
export interface WorkflowSummary extends Workflow {
  /** Steps of the newest version (absent on a workflow whose newest version was written before this was kept). */
  readonly stepCount?: number;
  readonly scheduleState?: WorkflowScheduleState;
}

/** The tenant's workflows, newest first or by name (from `namePrefix`), a page at a time. */
export async function listWorkflows(
  deps: SchedulerDeps,
  tenantId: string,
  query: { readonly limit: number; readonly order: 'newest' | 'name'; readonly namePrefix?: string; readonly cursor?: string },
): Promise<Page<WorkflowSummary>> {
  const page = await deps.workflows.list(tenantId, { ...query, order: query.namePrefix !== undefined ? 'name' : query.order });
  const schedules = await deps.jobs.getManyAnyTenant(page.items.map((workflow) => scheduleJobIdOf(workflow.workflowId)));
  return {
    items: page.items.map((workflow) => {
      const schedule = schedules.get(scheduleJobIdOf(workflow.workflowId));
      return { ...workflow, ...(schedule && schedule.tenantId === tenantId ? { scheduleState: scheduleStateOf(schedule) } : {}) };
    }),
    nextCursor: page.nextCursor,
  };
}
