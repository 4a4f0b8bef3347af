// Workflows: definitions (versioned), workflow runs and their progress. A step run is an ordinary
// run (leased, fenced, retried, timed out, replayable); a workflow run is one item holding its
// steps' states. After a step run's outcome is recorded, `continueWorkflow` records it on the
// workflow run and starts what it unblocked; the ticker's repair (`repairWorkflowRun`) does the same
// for a workflow run whose progress stopped (a worker died between the two).
import { ConflictError, NotFoundError, TooManyRequestsError, ValidationError } from '../core/errors';
import { checkNotify, checkTarget, maskedTarget } from './jobs';
import { newJobId } from '../core/ids';
import { logger } from '../core/logger';
import type { Run, RunStatus } from '../domain/run';
import { runIdFor } from '../domain/run';
import type { TenantLimits } from '../domain/tenant';
import type { StepContext, StepState, Workflow, WorkflowRun, WorkflowRunStatus, WorkflowSpec, WorkflowVersion } from '../domain/workflow';
import {
  initialSteps,
  parseStepJobId,
  scheduleJobIdOf,
  planProgress,
  stepJobIdOf,
  stepJobOf,
  stepOutcomeOf,
  stepsForRetry,
  workflowRunIdOf,
} from '../domain/workflow';
import type { Page } from '../store/page';
import type { SchedulerDeps } from './deps';
import { admitRunRequest } from './job-lifecycle';
import type { Job } from '../domain/job';
import { MAX_CAS_ATTEMPTS, wakeBuffered } from './occurrence-chain';
import type { TargetResult } from '../targets/target';
import type { WorkflowRunWrite } from '../store/workflows';
import type { NotifyEvent } from '../domain/notify';
import { wantedWorkflowEvent } from '../domain/notify';
import { notifyWorkflowRunEnd } from './notifications';
import type { WorkflowScheduleState } from './workflow-schedules';
import { newSchedule, pauseWorkflowSchedule, readSchedule, resumeWorkflowSchedule, scheduleChangeFor, scheduleStateOf } from './workflow-schedules';
import { runFields } from './run-log';
import { formatTraceparent, newTraceContext, traceIdOf } from '../domain/trace-context';
import { planRun } from './plan-run';
import { sendPlannedRun } from './send-planned-run';

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

/** Each step's target is checked as a job's is (the deployment's egress policy and allowlist). */
function checkSteps(deps: SchedulerDeps, spec: WorkflowSpec): void {
  spec.steps.forEach((step, index) => {
    try {
      checkTarget(deps, step.target);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      throw new ValidationError(
        'Invalid workflow',
        error.errors.map((field) => ({ ...field, path: `steps.${index}.${field.path}` })),
      );
    }
  });
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
  checkSteps(deps, spec);
  checkNotify(deps, spec.notify, 'Invalid workflow');
  const now = deps.clock();
  const at = new Date(now).toISOString();
  const workflowId = newJobId(now).replace(/^job_/, 'wf_');
  const workflow: Workflow = { workflowId, tenantId, name: spec.name, version: 1, createdAt: at, updatedAt: at };
  const version: WorkflowVersion = { workflowId, tenantId, version: 1, spec, createdAt: at };
  const schedule = newSchedule(deps, workflow, spec, now, limits);
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
  checkSteps(deps, spec);
  checkNotify(deps, spec.notify, 'Invalid workflow');
  for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
    const workflow = await tenantWorkflow(deps, tenantId, workflowId);
    if (spec.name !== workflow.name) throw new ConflictError(`The workflow is named ${workflow.name}; a new version keeps the name`);
    if (expected !== undefined && expected !== workflow.version) throw new ConflictError(`The workflow is at version ${workflow.version}, not ${expected}`);
    const current = await readSchedule(deps, workflowId);
    const pending = current?.nextRunId ? await deps.runs.get(current.nextRunId) : null;
    const now = deps.clock();
    const at = new Date(now).toISOString();
    const version: WorkflowVersion = { workflowId, tenantId, version: workflow.version + 1, spec, createdAt: at };
    const planned = scheduleChangeFor(deps, workflow, spec, current, pending, now, limits);
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
    // Another version came first (the caller must read it), or the schedule's chain moved on (read again).
    const now2 = await tenantWorkflow(deps, tenantId, workflowId);
    if (now2.version !== workflow.version) throw new ConflictError('The workflow was changed meanwhile; read it again');
  }
  throw new ConflictError('The workflow is changing too quickly; try again');
}

export async function getWorkflow(deps: SchedulerDeps, tenantId: string, workflowId: string, versionNumber?: number): Promise<WorkflowDetail> {
  const workflow = await tenantWorkflow(deps, tenantId, workflowId);
  const version = await versionOf(deps, workflowId, versionNumber ?? workflow.version);
  if (!version || (versionNumber !== undefined && versionNumber > workflow.version))
    throw new NotFoundError(`No version ${versionNumber} of workflow ${workflowId}`);
  const schedule = await readSchedule(deps, workflowId);
  const recent = schedule ? (await deps.runs.listByJob(schedule.jobId, 10)).items : [];
  return { ...viewOf(workflow, version, schedule), recentOccurrences: recent };
}

/** Pauses a scheduled workflow: its pending occurrence is retired; runs already started go on. */
export async function pauseWorkflow(deps: SchedulerDeps, tenantId: string, workflowId: string): Promise<WorkflowView> {
  const workflow = await tenantWorkflow(deps, tenantId, workflowId);
  const schedule = await pauseWorkflowSchedule(deps, tenantId, workflowId);
  const version = await versionOf(deps, workflowId, workflow.version);
  if (!version) throw new NotFoundError(`No version ${workflow.version} of workflow ${workflowId}`);
  return viewOf(workflow, version, schedule);
}

/** Resumes a paused scheduled workflow from the occurrence its misfire policy picks. */
export async function resumeWorkflow(deps: SchedulerDeps, tenantId: string, workflowId: string): Promise<WorkflowView> {
  const workflow = await tenantWorkflow(deps, tenantId, workflowId);
  const schedule = await resumeWorkflowSchedule(deps, tenantId, workflowId);
  const version = await versionOf(deps, workflowId, workflow.version);
  if (!version) throw new NotFoundError(`No version ${workflow.version} of workflow ${workflowId}`);
  return viewOf(workflow, version, schedule);
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

async function tenantWorkflow(deps: SchedulerDeps, tenantId: string, workflowId: string): Promise<Workflow> {
  const workflow = await deps.workflows.get(tenantId, workflowId);
  if (!workflow) throw new NotFoundError(`No workflow ${workflowId}`);
  return workflow;
}

/** Versions never change once written: a process keeps the ones it read. */
const versions = new Map<string, WorkflowVersion>();
async function versionOf(deps: SchedulerDeps, workflowId: string, version: number): Promise<WorkflowVersion | null> {
  const key = `${workflowId}#${version}`;
  const known = versions.get(key);
  if (known) return known;
  const read = await deps.workflows.getVersion(workflowId, version);
  if (read) {
    if (versions.size >= 500) versions.delete(versions.keys().next().value ?? '');
    versions.set(key, read);
  }
  return read;
}

// ---- Workflow runs -------------------------------------------------------------------------------

/** The fields that name a workflow run in a log line, its trace id among them (as `runFields` for a run). */
export function workflowRunFields(run: Pick<WorkflowRun, 'workflowRunId' | 'workflowId' | 'tenantId' | 'traceparent'>): Record<string, unknown> {
  return { workflowRunId: run.workflowRunId, workflowId: run.workflowId, tenantId: run.tenantId, traceId: traceIdOf(run.traceparent) };
}

/** Starts a run of the workflow's newest version now (a manual trigger); counted as a create. */
export async function startWorkflowRun(
  deps: SchedulerDeps,
  tenantId: string,
  workflowId: string,
  limits: TenantLimits = deps.config.tenantDefaults,
  /** The request's W3C trace context, which every step run joins (a new trace without it). */
  traceparent?: string,
): Promise<WorkflowRun> {
  const workflow = await tenantWorkflow(deps, tenantId, workflowId);
  const version = await versionOf(deps, workflowId, workflow.version);
  if (!version) throw new NotFoundError(`No version ${workflow.version} of workflow ${workflowId}`);
  const now = deps.clock();
  await admitRunRequest(deps, tenantId, limits, now);
  const scheduledFor = new Date(now).toISOString();
  const run: WorkflowRun = {
    workflowRunId: workflowRunIdOf(workflowId, scheduledFor),
    workflowId,
    tenantId,
    version: version.version,
    status: 'RUNNING',
    trigger: 'manual',
    scheduledFor,
    createdAt: scheduledFor,
    finishedAt: null,
    failedSteps: [],
    retries: 0,
    steps: initialSteps(version.spec),
    traceparent: traceparent ?? formatTraceparent(newTraceContext(now)),
  };
  if (!(await deps.workflows.createRun(run, now))) throw new ConflictError('A run of this workflow was started at the same millisecond; try again');
  deps.telemetry.workflowRunStarted(run, version.spec.name);
  logger.info('workflow run started', { ...workflowRunFields(run), version: version.version });
  return advance(deps, version, run);
}

export async function getWorkflowRun(deps: SchedulerDeps, tenantId: string, workflowId: string, workflowRunId: string): Promise<WorkflowRun> {
  const run = await deps.workflows.getRun(workflowId, workflowRunId);
  if (!run || run.tenantId !== tenantId) throw new NotFoundError(`No run ${workflowRunId} of workflow ${workflowId}`);
  return run;
}

export async function listWorkflowRuns(
  deps: SchedulerDeps,
  tenantId: string,
  workflowId: string,
  query: { limit: number; status?: WorkflowRunStatus; cursor?: string },
): Promise<Page<WorkflowRun>> {
  await tenantWorkflow(deps, tenantId, workflowId);
  return deps.workflows.listRuns(workflowId, query.limit, query.status, query.cursor);
}

/**
 * Cancels a running workflow run: it ends CANCELLED (once), its waiting steps never start, and its
 * started steps' runs are cancelled as a run is (a running one aborts at its worker's next heartbeat).
 */
export async function cancelWorkflowRun(deps: SchedulerDeps, tenantId: string, workflowId: string, workflowRunId: string): Promise<WorkflowRun> {
  const run = await getWorkflowRun(deps, tenantId, workflowId, workflowRunId);
  const cancelled = await endCancelled(deps, run);
  if (cancelled.held) return cancelled.run;
  if (cancelled.run && cancelled.run.status !== 'RUNNING')
    throw new ConflictError(`The workflow run is ${cancelled.run.status}; only a running one can be cancelled`);
  throw new ConflictError('The workflow run changed meanwhile; try again');
}

/**
 * Ends a running workflow run CANCELLED (condition: RUNNING, its waiting steps NOT_STARTED in the
 * same write, so no claim can succeed after it), then cancels its started steps' runs.
 */
async function endCancelled(deps: SchedulerDeps, run: WorkflowRun): Promise<WorkflowRunWrite> {
  const now = deps.clock();
  const at = new Date(now).toISOString();
  const waiting = Object.fromEntries(
    Object.entries(run.steps)
      .filter(([, state]) => state.status === 'WAITING')
      .map(([stepId, state]) => [stepId, { ...state, status: 'NOT_STARTED' as const, finishedAt: at, reason: 'the workflow run was cancelled' }]),
  );
  const version = await versionOf(deps, run.workflowId, run.version);
  const ended = await deps.workflows.finish(run, 'CANCELLED', [], now, waiting, notifyMark(deps, version, 'CANCELLED', now));
  if (!ended.held) return ended;
  const name = version?.spec.name ?? run.workflowId;
  await workflowRunEnded(deps, version, ended.run, now);
  let current = ended.run;
  for (const [stepId, state] of Object.entries(ended.run.steps)) {
    if (state.status !== 'STARTED') continue;
    const stepRun = await currentStepRun(deps, ended.run, stepId, state);
    if (stepRun && (await cancelStepRun(deps, stepRun, now)))
      current = (await recordStepEnd(deps, name, ended.run, stepId, state, stepRun, 'CANCELLED', now)) ?? current;
  }
  return { held: true, run: current };
}

// ---- Scheduled workflow runs (decision 0147) -------------------------------------------------------

/**
 * An occurrence of a workflow's schedule, leased by a worker and admitted by its policies: the
 * workflow run of the occurrence's time starts (`workflowRunIdOf(workflowId, scheduledFor)`), on the
 * newest version, in the occurrence's trace. A repeat (the occurrence's run retried after its
 * worker was lost) finds that workflow run and moves it on. A store failure is a retryable failure
 * of the occurrence's run, which its retry policy retries.
 */
export async function startScheduledWorkflowRun(deps: SchedulerDeps, schedule: Job, occurrence: Run): Promise<TargetResult> {
  const workflowId = schedule.target.kind === 'workflow' ? schedule.target.workflowId : null;
  try {
    const workflow = workflowId ? await deps.workflows.get(occurrence.tenantId, workflowId) : null;
    const version = workflow ? await versionOf(deps, workflow.workflowId, workflow.version) : null;
    if (!workflow || !version) {
      return { ok: false, timedOut: false, error: { code: 'WORKFLOW_NOT_FOUND', message: `workflow ${workflowId ?? '?'} no longer exists`, retryable: false } };
    }
    const now = deps.clock();
    const run: WorkflowRun = {
      workflowRunId: workflowRunIdOf(workflow.workflowId, occurrence.scheduledFor),
      workflowId: workflow.workflowId,
      tenantId: workflow.tenantId,
      version: version.version,
      status: 'RUNNING',
      trigger: 'schedule',
      scheduledFor: occurrence.scheduledFor,
      createdAt: new Date(now).toISOString(),
      finishedAt: null,
      failedSteps: [],
      retries: 0,
      steps: initialSteps(version.spec),
      // One trace per occurrence, as a recurring job's (decision 0111): the occurrence's run's.
      traceparent: occurrence.traceparent ?? formatTraceparent(newTraceContext(now)),
    };
    if (await deps.workflows.createRun(run, now)) {
      deps.telemetry.workflowRunStarted(run, version.spec.name);
      logger.info('workflow run started', { ...workflowRunFields(run), version: version.version, occurrenceRunId: occurrence.runId });
      await advance(deps, version, run);
    } else {
      // Started by an earlier attempt of this occurrence (or a manual start at the same millisecond): moved on, not made twice.
      const existing = await deps.workflows.getRun(workflow.workflowId, run.workflowRunId);
      const existingVersion = existing ? await versionOf(deps, workflow.workflowId, existing.version) : null;
      if (existing && existingVersion) await advance(deps, existingVersion, existing);
      logger.info('workflow run of this occurrence exists; moved on, not started again', { ...runFields(occurrence), workflowRunId: run.workflowRunId });
    }
    return { ok: true, detail: `started workflow run ${run.workflowRunId}`, result: { workflowRunId: run.workflowRunId } };
  } catch (error) {
    return {
      ok: false,
      timedOut: false,
      error: { code: 'WORKFLOW_START_FAILED', message: error instanceof Error ? error.message : String(error), retryable: true },
    };
  }
}

/** The workflow run an occurrence of a workflow's schedule started (or will start): the overlap policies look at it. */
export function workflowRunOfOccurrence(deps: SchedulerDeps, workflowId: string, occurrence: Pick<Run, 'scheduledFor'>): Promise<WorkflowRun | null> {
  return deps.workflows.getRun(workflowId, workflowRunIdOf(workflowId, occurrence.scheduledFor));
}

/** Overlap policy cancel-running: the previous occurrence's workflow run ends CANCELLED (if it still runs). */
export async function cancelForOverlap(deps: SchedulerDeps, run: WorkflowRun): Promise<boolean> {
  const cancelled = await endCancelled(deps, run);
  if (cancelled.held) logger.info('workflow run cancelled by the next occurrence (overlapPolicy cancel-running)', workflowRunFields(run));
  return cancelled.held;
}

/** Retries a FAILED (or CANCELLED) workflow run from its failed and unstarted steps; succeeded steps and their results are kept. */
export async function retryWorkflowRun(
  deps: SchedulerDeps,
  tenantId: string,
  workflowId: string,
  workflowRunId: string,
  limits: TenantLimits = deps.config.tenantDefaults,
  /** The request's W3C trace context: the steps the retry starts join it (a new trace without it). */
  traceparent?: string,
): Promise<WorkflowRun> {
  const run = await getWorkflowRun(deps, tenantId, workflowId, workflowRunId);
  if (run.status !== 'FAILED' && run.status !== 'CANCELLED')
    throw new ConflictError(`The workflow run is ${run.status}; only a FAILED or CANCELLED one can be retried`);
  const version = await versionOf(deps, workflowId, run.version);
  if (!version) throw new NotFoundError(`No version ${run.version} of workflow ${workflowId}`);
  const now = deps.clock();
  await admitRunRequest(deps, tenantId, limits, now);
  // A dead step's run may have been replayed since: the retry takes the replay as the step's own.
  const newest = await newestStepRuns(
    deps,
    run,
    Object.entries(run.steps).filter(([, state]) => state.status !== 'SUCCEEDED' && state.runId !== null),
  );
  const steps = stepsForRetry(run, Object.fromEntries(newest));
  const retried = await deps.workflows.retry(run, steps, now, traceparent ?? formatTraceparent(newTraceContext(now)));
  if (!retried.held) throw new ConflictError('The workflow run was retried or changed meanwhile; read it again');
  deps.telemetry.workflowRunStarted(retried.run, version.spec.name);
  logger.info('workflow run retried', { ...workflowRunFields(retried.run), retries: retried.run.retries });
  const advanced = await advance(deps, version, retried.run);
  // A replay taken over as the step's run may have ended between the read and the retry's write,
  // its continuation finding the workflow run not running: its outcome is recorded here.
  const adopted = Object.keys(steps).filter((stepId) => steps[stepId]?.status === 'STARTED');
  return adopted.length > 0 ? recordEndedSteps(deps, version, advanced, adopted) : advanced;
}

// ---- Progress ------------------------------------------------------------------------------------

/**
 * After a step run's outcome was recorded (or its run cancelled): a final outcome is recorded on
 * its step, and the workflow run moves on. Never throws: the ticker's repair makes good a failure.
 */
export async function continueWorkflow(
  deps: SchedulerDeps,
  leased: Run,
  ended: { readonly status: RunStatus; readonly error?: Run['error']; readonly reason?: string | null },
): Promise<void> {
  const step = parseStepJobId(leased.jobId);
  const outcome = stepOutcomeOf(ended.status);
  const run: Run = {
    ...leased,
    status: ended.status,
    error: ended.error ?? null,
    reason: ended.reason ?? leased.reason,
    finishedAt: new Date(deps.clock()).toISOString(),
  };
  if (!step || !outcome) return;
  try {
    const version = await versionOf(deps, step.workflowId, step.version);
    const workflowRunId = workflowRunIdOf(step.workflowId, run.scheduledFor);
    const workflowRun = await deps.workflows.getRun(step.workflowId, workflowRunId);
    const state = workflowRun?.steps[step.stepId];
    if (!version || !workflowRun || !state) return;
    const now = deps.clock();
    const recorded =
      state.status === 'STARTED' ? await recordStepEnd(deps, version.spec.name, workflowRun, step.stepId, state, run, outcome, now) : workflowRun;
    if (recorded) await advance(deps, version, recorded);
  } catch (error) {
    logger.error('workflow continuation failed; the ticker will repair it', {
      ...runFields(run),
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

/** Records a step's outcome from its run, once (the step must still be STARTED); the run as it became. */
async function recordStepEnd(
  deps: SchedulerDeps,
  workflowName: string,
  workflowRun: WorkflowRun,
  stepId: string,
  state: StepState,
  run: Run,
  outcome: 'SUCCEEDED' | 'DEAD' | 'CANCELLED' | 'SKIPPED',
  now: number,
): Promise<WorkflowRun | null> {
  const written = await deps.workflows.recordStep(workflowRun, stepId, {
    ...state,
    status: outcome,
    attempt: run.attempt,
    runId: run.runId,
    finishedAt: run.finishedAt ?? new Date(now).toISOString(),
    reason: run.error ? `${run.error.code}: ${run.error.message}` : run.reason,
  });
  if (written.held && outcome !== 'SUCCEEDED') deps.telemetry.workflowStepFailed(workflowName);
  return written.run;
}

/**
 * Moves a workflow run on from the state given: steps that can never start are recorded so, ready
 * steps are claimed (a conditional write: of two writers that both saw a step ready, one wins) and
 * their runs written and sent; a run whose steps are all done ends, exactly once.
 */
async function advance(deps: SchedulerDeps, version: WorkflowVersion, from: WorkflowRun): Promise<WorkflowRun> {
  let run = from;
  // Each round either moves a step or learns of a racer's move; a graph of N steps needs at most N.
  for (let round = 0; round <= version.spec.steps.length + 1; round++) {
    const plan = planProgress(version.spec, run);
    const now = deps.clock();
    if (plan.start.length === 0 && plan.notStarted.length === 0) {
      if (!plan.finished) return run;
      const ended = await deps.workflows.finish(
        run,
        plan.finished.status,
        plan.finished.failedSteps,
        now,
        {},
        notifyMark(deps, version, plan.finished.status, now),
      );
      if (ended.held) await workflowRunEnded(deps, version, ended.run, now);
      return ended.run ?? run;
    }
    const at = new Date(now).toISOString();
    const moves: Record<string, StepState> = {};
    for (const { stepId, reason } of plan.notStarted) moves[stepId] = { ...stateOf(run, stepId), status: 'NOT_STARTED', finishedAt: at, reason };
    for (const stepId of plan.start) {
      const state = stateOf(run, stepId);
      moves[stepId] = { ...state, status: 'STARTED', runId: stepRunIdOf(run, stepId, state.attempt), startedAt: at, finishedAt: null, reason: null };
    }
    const written = await deps.workflows.moveSteps(run, moves, now);
    if (!written.run) return run;
    run = written.run;
    if (written.held && plan.start.length > 0) run = await startStepRuns(deps, version, run, plan.start, now);
  }
  logger.warn('workflow run did not settle; the ticker will look again', workflowRunFields(run));
  return run;
}

const stateOf = (run: WorkflowRun, stepId: string): StepState =>
  run.steps[stepId] ?? { status: 'WAITING', attempt: 1, runId: null, startedAt: null, finishedAt: null, reason: null };

function stepRunIdOf(run: Pick<WorkflowRun, 'workflowId' | 'version' | 'scheduledFor'>, stepId: string, attempt: number): string {
  return runIdFor(stepJobIdOf(run.workflowId, run.version, stepId), run.scheduledFor, attempt);
}

/**
 * Writes the runs of claimed steps (deterministic ids: a repeat writes nothing), each with its
 * parents' results as its inputs, and sends them. A cancel that landed meanwhile retires them.
 */
async function startStepRuns(deps: SchedulerDeps, version: WorkflowVersion, run: WorkflowRun, stepIds: readonly string[], now: number): Promise<WorkflowRun> {
  const parentsOf = new Map(version.spec.steps.map((step) => [step.id, step.dependsOn]));
  const parentRunIds = [...new Set(stepIds.flatMap((stepId) => parentsOf.get(stepId) ?? []))]
    .map((parent) => run.steps[parent])
    .flatMap((state) => (state?.status === 'SUCCEEDED' && state.runId ? [state.runId] : []));
  const parentRuns = new Map((parentRunIds.length > 0 ? await deps.runs.getMany(parentRunIds) : []).map((parentRun) => [parentRun.runId, parentRun]));
  const plans = stepIds.flatMap((stepId) => {
    const job = stepJobOf(version, stepId);
    if (!job) return [];
    const results: Record<string, unknown> = {};
    for (const parent of parentsOf.get(stepId) ?? []) {
      const state = run.steps[parent];
      const parentRun = state?.runId ? parentRuns.get(state.runId) : undefined;
      if (state?.status === 'SUCCEEDED') results[parent] = parentRun?.result ?? null;
    }
    const inputs: StepContext = { workflowId: run.workflowId, workflowRunId: run.workflowRunId, stepId, version: run.version, results };
    const attempt = stateOf(run, stepId).attempt;
    const plan = planRun(
      deps.config,
      job,
      {
        scheduledFor: Date.parse(run.scheduledFor),
        attempt,
        trigger: attempt === 1 ? 'manual' : 'replay',
        availableAt: now,
        inputs,
        // Every step of the workflow run is in its trace (a new one for runs from before traces).
        ...(run.traceparent ? { traceparent: run.traceparent } : {}),
      },
      now,
    );
    return [{ ...plan, extras: { ...plan.extras, budgetFrom: attempt } }];
  });
  const created = await Promise.all(plans.map(async (plan) => ((await deps.runs.create(plan)) ? plan : null)));
  for (const plan of created) {
    if (!plan) continue;
    deps.telemetry.runCreated(plan.run);
    await sendPlannedRun(deps, plan, now);
  }
  // A cancel reads the started steps after it ends the workflow run; a step claimed before the cancel
  // whose run was written after that read is retired here, so no step starts after a cancel.
  const after = await deps.workflows.getRun(run.workflowId, run.workflowRunId);
  if (after?.status === 'CANCELLED') {
    for (const plan of created) {
      if (plan && (await deps.runs.retirePending(plan.run.runId, 'CANCELLED', 'the workflow run was cancelled', now))) {
        const stepId = parseStepJobId(plan.run.jobId)?.stepId;
        const state = stepId ? after.steps[stepId] : undefined;
        if (stepId && state?.status === 'STARTED') await recordStepEnd(deps, version.spec.name, after, stepId, state, plan.run, 'CANCELLED', now);
      }
    }
  }
  return after ?? run;
}

/** How far past a step's recorded attempt its newest run is looked for (retries and replays add attempts). */
const ATTEMPTS_LOOKED_AHEAD = 20;

/** The newest run written of each step given (a retry or a replay is a new run of a later attempt), in one batch read. */
async function newestStepRuns(deps: SchedulerDeps, run: WorkflowRun, steps: readonly (readonly [string, StepState])[]): Promise<Map<string, Run>> {
  if (steps.length === 0) return new Map();
  const ids = steps.flatMap(([stepId, state]) =>
    Array.from({ length: ATTEMPTS_LOOKED_AHEAD + 1 }, (_, index) => stepRunIdOf(run, stepId, state.attempt + index)),
  );
  const newest = new Map<string, Run>();
  for (const candidate of await deps.runs.getMany(ids)) {
    const stepId = parseStepJobId(candidate.jobId)?.stepId;
    if (stepId === undefined) continue;
    const known = newest.get(stepId);
    if (!known || candidate.attempt > known.attempt) newest.set(stepId, candidate);
  }
  return newest;
}

/** The step's current run: its newest attempt written. */
async function currentStepRun(deps: SchedulerDeps, run: WorkflowRun, stepId: string, state: StepState): Promise<Run | null> {
  return (await newestStepRuns(deps, run, [[stepId, state]])).get(stepId) ?? null;
}

/**
 * Records the outcome of each of the given steps still STARTED whose run has ended (its
 * continuation was never made, or found the workflow run not running), then moves the run on.
 */
async function recordEndedSteps(deps: SchedulerDeps, version: WorkflowVersion, from: WorkflowRun, stepIds: readonly string[]): Promise<WorkflowRun> {
  const started = stepIds.flatMap((stepId) => {
    const state = from.steps[stepId];
    return state?.status === 'STARTED' ? [[stepId, state] as const] : [];
  });
  const newest = await newestStepRuns(deps, from, started);
  const now = deps.clock();
  let run = from;
  let moved = false;
  for (const [stepId, state] of started) {
    const stepRun = newest.get(stepId);
    const outcome = stepRun ? stepOutcomeOf(stepRun.status) : null;
    if (stepRun && outcome) {
      run = (await recordStepEnd(deps, version.spec.name, run, stepId, state, stepRun, outcome, now)) ?? run;
      moved = true;
    }
  }
  return moved ? advance(deps, version, run) : run;
}

async function cancelStepRun(deps: SchedulerDeps, run: Run, now: number): Promise<boolean> {
  const reason = 'the workflow run was cancelled';
  const cancelled =
    run.status === 'RUNNING' ? await deps.leases.cancelRunning(run.runId, now, reason) : await deps.runs.retirePending(run.runId, 'CANCELLED', reason, now);
  if (cancelled) deps.telemetry.runEnded(run, 'CANCELLED', reason, { previousStatus: run.status });
  return cancelled || run.status === 'CANCELLED';
}

/**
 * The notification a workflow run's end raises, marked by the end's write with a check-back, so that
 * the ticker makes it should its writer stop before it does (decision 0148).
 */
function notifyMark(
  deps: SchedulerDeps,
  version: WorkflowVersion | null,
  status: 'SUCCEEDED' | 'FAILED' | 'CANCELLED',
  now: number,
): { event: NotifyEvent; checkBackAt: number } | undefined {
  const event = wantedWorkflowEvent(version?.spec.notify, status);
  return event ? { event, checkBackAt: now + deps.config.redeliveryGraceSeconds * 1000 } : undefined;
}

/**
 * Makes the notification of a workflow run's end, then clears its mark. Never throws, and never
 * delays the workflow run (it has ended): a failure is the ticker's to make good.
 */
async function notifyEnd(deps: SchedulerDeps, version: WorkflowVersion, run: WorkflowRun, options: { resend?: boolean } = {}): Promise<void> {
  const notify = version.spec.notify;
  const event = run.status === 'RUNNING' ? null : wantedWorkflowEvent(notify, run.status);
  if (!notify || !event) return;
  try {
    await notifyWorkflowRunEnd(deps, { workflowId: run.workflowId, name: version.spec.name, type: version.spec.type }, notify, run, event, options);
    await deps.workflows.notified(run, event);
  } catch (error) {
    logger.warn("a workflow run's notification was not made; the ticker makes it", {
      ...workflowRunFields(run),
      event,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

/** After the one write that ended a workflow run: counted, logged, a scheduled one's buffered next occurrence woken, and notified. */
async function workflowRunEnded(deps: SchedulerDeps, version: WorkflowVersion | null, run: WorkflowRun, now: number): Promise<void> {
  deps.telemetry.workflowRunEnded(run, version?.spec.name ?? run.workflowId, now - Date.parse(run.scheduledFor));
  logger.info('workflow run ended', { ...workflowRunFields(run), status: run.status, failedSteps: run.failedSteps });
  // Under buffer-one the next occurrence waits for this run to end (overlap policies, decision 0147).
  if (run.trigger === 'schedule') {
    try {
      await wakeBuffered(deps, scheduleJobIdOf(run.workflowId), now);
    } catch (error) {
      logger.warn('could not wake the occurrence buffered behind this workflow run; it looks again within 30 s', {
        ...workflowRunFields(run),
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
  if (version) await notifyEnd(deps, version, run);
}

/**
 * The ticker's repair of a running workflow run whose progress stopped: a started step whose run
 * ended (its worker died before continuing) is recorded, a claimed step whose run was never written
 * is written, and the run moves on; its check-back moves on with it. True when something moved.
 */
export async function repairWorkflowRun(deps: SchedulerDeps, workflowId: string, workflowRunId: string): Promise<boolean> {
  const read = await deps.workflows.getRunWithNotification(workflowId, workflowRunId);
  if (!read) return false;
  const found = read.run;
  const version = await versionOf(deps, workflowId, found.version);
  if (!version) return false;
  if (found.status !== 'RUNNING') {
    // Ended, its notification marked and not made (its writer stopped between the two): made now, once.
    if (!read.notify) return false;
    await notifyEnd(deps, version, found, { resend: true });
    logger.warn("workflow run repaired: its end's notification had not been made", workflowRunFields(found));
    return true;
  }
  const now = deps.clock();
  let run = found;
  let moved = false;
  for (const [stepId, state] of Object.entries(found.steps)) {
    if (state.status !== 'STARTED') continue;
    const stepRun = await currentStepRun(deps, run, stepId, state);
    if (!stepRun) {
      // Claimed, but its run was never written: the claimer died between the two writes.
      run = await startStepRuns(deps, version, run, [stepId], now);
      moved = true;
      continue;
    }
    const outcome = stepOutcomeOf(stepRun.status);
    if (outcome) {
      run = (await recordStepEnd(deps, version.spec.name, run, stepId, state, stepRun, outcome, now)) ?? run;
      moved = true;
    }
  }
  const advanced = await advance(deps, version, run);
  if (advanced.status === 'RUNNING') await deps.workflows.moveCheckBack(advanced, now);
  if (moved || advanced !== run) logger.warn('workflow run repaired: its progress had stopped', workflowRunFields(advanced));
  return moved || advanced.status !== 'RUNNING';
}
