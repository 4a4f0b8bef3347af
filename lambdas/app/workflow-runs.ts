// Workflow runs: started by request or by an occurrence of the workflow's schedule, read, listed,
// cancelled and retried. A step run is an ordinary run (leased, fenced, retried, timed out,
// replayable); a workflow run is one item holding its steps' states, moved on by workflow-progress.ts.
import { ConflictError, NotFoundError, TooManyRequestsError } from '../core/errors';
import { logger } from '../core/logger';
import type { Run } from '../domain/run';
import { isTerminal } from '../domain/run';
import type { TenantLimits } from '../domain/tenant';
import type { WorkflowRun, WorkflowRunStatus } from '../domain/workflow-run';
import { initialSteps, stepsForRetry } from '../domain/workflow-run';
import { workflowRunIdOf } from '../domain/workflow-jobs';
import { latestWorkflowRetry } from '../domain/retention';
import type { Job } from '../domain/job';
import { formatTraceparent, newTraceContext } from '../domain/trace-context';
import type { Page } from '../store/page';
import type { WorkflowRunWrite } from '../store/workflow-runs';
import type { TargetResult } from '../targets/target';
import type { SchedulerDeps } from './deps';
import { admitRunRequest } from './create-rate';
import { runFields } from './run-log';
import { advance, openWorkflowRun, recordEndedSteps, withOpeningMoves } from './workflow-progress';
import { cancelledRunSettled, settleCancelledSteps } from './workflow-repair';
import { hasStartedSteps, notifyEnd, notifyMark, workflowRunEnded } from './workflow-run-end';
import { newestStepRuns } from './workflow-step-runs';
import { liveWorkflow, tenantWorkflow, versionOf, workflowRunFields } from './workflow-versions';

/** Starts a run of the workflow's newest version now (a manual trigger); counted as a create. */
export async function startWorkflowRun(
  deps: SchedulerDeps,
  tenantId: string,
  workflowId: string,
  limits: TenantLimits = deps.config.tenantDefaults,
  /** The request's W3C trace context, which every step run joins (a new trace without it). */
  traceparent?: string,
): Promise<WorkflowRun> {
  const workflow = await liveWorkflow(deps, tenantId, workflowId);
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
  const opened = withOpeningMoves(version, run, now);
  if (!(await deps.workflowRuns.createRun(opened.run, now))) throw new ConflictError('A run of this workflow was started at the same millisecond; try again');
  // Committed: the run is started, whatever fails after (the ticker's repair writes the runs of its
  // claimed steps, a grace later). Answering an error would have a caller retry it into a second run.
  try {
    if (await cancelIfDeleted(deps, opened.run)) throw new NotFoundError(`No workflow ${workflowId}: it was deleted`);
  } catch (error) {
    if (error instanceof NotFoundError) throw error;
    return startedAnyway(opened.run, 'its workflow could not be read again', error);
  }
  deps.telemetry.workflowRunStarted(run, version.spec.name);
  logger.info('workflow run started', { ...workflowRunFields(run), version: version.version });
  try {
    return await openWorkflowRun(deps, version, opened.run, opened.start, now);
  } catch (error) {
    return startedAnyway(opened.run, 'its steps could not all be started', error);
  }
}

/**
 * A workflow run whose write (its start, or its retry) committed and whose steps' start then failed:
 * answered as written, the failure logged. The write kept its check-back, and the ticker's repair
 * writes the runs of the steps it claimed and moves it on (decision 0142).
 */
function startedAnyway(run: WorkflowRun, what: string, error: unknown): WorkflowRun {
  logger.error(`workflow run written, but ${what}; the ticker's repair completes it`, {
    ...workflowRunFields(run),
    error: error instanceof Error ? error.message : String(error),
  });
  return run;
}

export async function getWorkflowRun(deps: SchedulerDeps, tenantId: string, workflowId: string, workflowRunId: string): Promise<WorkflowRun> {
  const run = await deps.workflowRuns.getRun(workflowId, workflowRunId);
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
  return deps.workflowRuns.listRuns(workflowId, query.limit, query.status, query.cursor);
}

/**
 * Cancels a running workflow run: it ends CANCELLED (once), its waiting steps never start, and its
 * started steps' runs are cancelled as a run is (a running one aborts at its worker's next heartbeat).
 */
export async function cancelWorkflowRun(deps: SchedulerDeps, tenantId: string, workflowId: string, workflowRunId: string): Promise<WorkflowRun> {
  const run = await getWorkflowRun(deps, tenantId, workflowId, workflowRunId);
  // A cancel that stopped after its end's write (a store error, the API's process gone) left steps
  // STARTED whose runs may still run: a repeated cancel finishes it (answered as a cancel, 200).
  if (run.status === 'CANCELLED' && hasStartedSteps(run)) return finishCancel(deps, run);
  const cancelled = await cancelling(deps, run);
  if (cancelled.held) return cancelled.run;
  if (cancelled.run?.status === 'CANCELLED' && hasStartedSteps(cancelled.run)) return finishCancel(deps, cancelled.run);
  if (cancelled.run && cancelled.run.status !== 'RUNNING')
    throw new ConflictError(`The workflow run is ${cancelled.run.status}; only a running one can be cancelled`);
  // Still running, its steps' progress winning every try: contention, which a retry after a second
  // gets through, not a state the caller must change (a 409 said so).
  throw new TooManyRequestsError('The workflow run is changing too quickly; try again', 1);
}

/** Cancels every running workflow run of a workflow (a deleted one's), a page at a time; how many it cancelled. */
export async function cancelRunningWorkflowRuns(deps: SchedulerDeps, workflowId: string): Promise<number> {
  let cancelled = 0;
  let cursor: string | undefined;
  do {
    const page = await deps.workflowRuns.listRuns(workflowId, 100, 'RUNNING', cursor);
    for (const run of page.items) {
      if ((await cancelling(deps, run)).held) cancelled += 1;
    }
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return cancelled;
}

/** How long a cancel has to settle its started steps before the ticker's repair looks at them. */
const CANCEL_SETTLE_MS = 60_000;

/** Tries of a cancel whose write a step's move refused (a claim, a step ruled out) before it gives up. */
const MAX_CANCEL_ATTEMPTS = 5;

/**
 * `endCancelled`, made again from a fresh read while the workflow run is still RUNNING: its write is
 * conditioned on the steps it read as waiting, which a worker moving the run on between the read and
 * the write changes. A run that ended meanwhile is answered as read.
 */
async function cancelling(deps: SchedulerDeps, run: WorkflowRun): Promise<WorkflowRunWrite> {
  let current = run;
  for (let attempt = 1; ; attempt++) {
    const ended = await endCancelled(deps, current);
    if (ended.held || attempt >= MAX_CANCEL_ATTEMPTS) return ended;
    const reread = await deps.workflowRuns.getRun(current.workflowId, current.workflowRunId);
    if (reread?.status !== 'RUNNING') return { held: false, run: reread };
    current = reread;
  }
}

/** The steps a cancel left STARTED settled (`settleCancelledSteps`), and its check-back cleared once none is. */
async function finishCancel(deps: SchedulerDeps, run: WorkflowRun): Promise<WorkflowRun> {
  const now = deps.clock();
  const version = await versionOf(deps, run.workflowId, run.version);
  const settled = await settleCancelledSteps(deps, version?.spec.name ?? run.workflowId, run, now, 'leave');
  await cancelledRunSettled(deps, settled);
  logger.info('a cancelled workflow run had started steps left; their runs are cancelled', workflowRunFields(settled));
  return settled;
}

/**
 * Ends a running workflow run CANCELLED (condition: RUNNING, its waiting steps NOT_STARTED in the
 * same write, so no claim can succeed after it), then cancels its started steps' runs. The end's
 * write keeps the run's check-back, due a minute later, while a step is STARTED: should the cancel stop
 * before its steps' runs are cancelled, the ticker's next repair cancels them (`repairWorkflowRun`).
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
  // Looked at by the ticker a minute from now (its check-backs are found a grace after their time):
  // soon, and not while this cancel is still under way.
  const checkBackAt = hasStartedSteps(run) ? now - deps.config.redeliveryGraceSeconds * 1000 + CANCEL_SETTLE_MS : undefined;
  const ended = await deps.workflowRuns.finish(run, 'CANCELLED', [], now, waiting, notifyMark(deps, version, 'CANCELLED', now), undefined, checkBackAt);
  if (!ended.held) return ended;
  const current = await settleCancelledSteps(deps, version?.spec.name ?? run.workflowId, ended.run, now, 'leave');
  // After its steps: a notification made clears the check-back (kept while a step is STARTED).
  await workflowRunEnded(deps, version, current, now);
  if (checkBackAt !== undefined) await cancelledRunSettled(deps, current);
  return { held: true, run: current };
}

// ---- Scheduled workflow runs (decision 0147) -------------------------------------------------------

/**
 * An occurrence of a workflow's schedule, leased by a worker and admitted by its policies: the
 * workflow run of the occurrence's time starts (`workflowRunIdOf(workflowId, scheduledFor)`), on the
 * newest version, in the occurrence's trace. A repeat (the occurrence's run retried after its
 * worker was lost) finds that workflow run and moves it on. A store failure is a retryable failure
 * of the occurrence's run, which its retry policy retries. An occurrence whose run was cancelled
 * before its workflow run was written (by the next occurrence, overlapPolicy cancel-running)
 * cancels that workflow run at once and answers `lease-lost`, as a call whose run was cancelled does.
 */
export async function startScheduledWorkflowRun(deps: SchedulerDeps, schedule: Job, occurrence: Run): Promise<TargetResult | 'lease-lost'> {
  const workflowId = schedule.target.kind === 'workflow' ? schedule.target.workflowId : null;
  try {
    const found = workflowId ? await deps.workflows.get(occurrence.tenantId, workflowId) : null;
    // A deleted workflow's schedule job is CANCELLED in the delete's transaction; an occurrence
    // leased just before it finds the workflow deleted here and starts nothing.
    const workflow = found?.deletedAt ? null : found;
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
    const opened = withOpeningMoves(version, run, now);
    if (await deps.workflowRuns.createRun(opened.run, now)) {
      // The next occurrence, leased before this write (successors due at once: a backfill, a
      // schedule in seconds), found no workflow run of this one to cancel (overlapPolicy
      // cancel-running) and cancelled this occurrence's run instead. Its run is read after this
      // write, as that cancel reads the workflow run after its own (`admitRun`), so one of the two
      // sees the other: this workflow run ends CANCELLED before any step starts. Read under that
      // policy only (the schedule as this occurrence read it): under the others no occurrence
      // cancels another, and a read on every occurrence would be paid for nothing.
      if (schedule.overlapPolicy === 'cancel-running' && (await deps.runs.get(occurrence.runId))?.status === 'CANCELLED') {
        await cancelForOverlap(deps, opened.run);
        return 'lease-lost';
      }
      if (await cancelIfDeleted(deps, opened.run)) {
        return { ok: false, timedOut: false, error: { code: 'WORKFLOW_NOT_FOUND', message: `workflow ${workflow.workflowId} was deleted`, retryable: false } };
      }
      deps.telemetry.workflowRunStarted(run, version.spec.name);
      logger.info('workflow run started', { ...workflowRunFields(run), version: version.version, occurrenceRunId: occurrence.runId });
      await openWorkflowRun(deps, version, opened.run, opened.start, now);
    } else {
      // Started by an earlier attempt of this occurrence (or a manual start at the same millisecond): moved on, not made twice.
      const existing = await deps.workflowRuns.getRun(workflow.workflowId, run.workflowRunId);
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

/**
 * A run written while a delete of its workflow landed ends CANCELLED before any step starts: the
 * delete cancels the running runs it lists after its commit, and misses one written after that
 * list. Each side writes, then reads (the delete its list, this the head), so one of them sees the
 * other. True when the workflow was deleted.
 */
async function cancelIfDeleted(deps: SchedulerDeps, run: WorkflowRun): Promise<boolean> {
  const head = await deps.workflows.get(run.tenantId, run.workflowId);
  if (head && !head.deletedAt) return false;
  await cancelling(deps, run);
  logger.info('workflow run cancelled as it started: its workflow was deleted', workflowRunFields(run));
  return true;
}

/** The workflow run an occurrence of a workflow's schedule started (or will start): the overlap policies look at it. */
export function workflowRunOfOccurrence(deps: SchedulerDeps, workflowId: string, occurrence: Pick<Run, 'scheduledFor'>): Promise<WorkflowRun | null> {
  return deps.workflowRuns.getRun(workflowId, workflowRunIdOf(workflowId, occurrence.scheduledFor));
}

/** Overlap policy cancel-running: the previous occurrence's workflow run ends CANCELLED (if it still runs). */
export async function cancelForOverlap(deps: SchedulerDeps, run: WorkflowRun): Promise<boolean> {
  const cancelled = await cancelling(deps, run);
  if (cancelled.held) logger.info('workflow run cancelled by the next occurrence (overlapPolicy cancel-running)', workflowRunFields(run));
  return cancelled.held;
}

/**
 * A retry not made: the run no longer FAILED or CANCELLED (another retry made first) is a conflict;
 * still so, contention, which a retry after a second gets through.
 */
async function retryRefused(deps: SchedulerDeps, run: WorkflowRun, contention: string): Promise<never> {
  const now = await deps.workflowRuns.getRun(run.workflowId, run.workflowRunId);
  if (now && now.status !== 'FAILED' && now.status !== 'CANCELLED') {
    throw new ConflictError(`The workflow run is ${now.status}; only a FAILED or CANCELLED one can be retried`);
  }
  throw new TooManyRequestsError(contention, 1);
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
  const read = await getWorkflowRun(deps, tenantId, workflowId, workflowRunId);
  await liveWorkflow(deps, tenantId, workflowId);
  if (read.status !== 'FAILED' && read.status !== 'CANCELLED')
    throw new ConflictError(`The workflow run is ${read.status}; only a FAILED or CANCELLED one can be retried`);
  const version = await versionOf(deps, workflowId, read.version);
  if (!version) throw new NotFoundError(`No version ${read.version} of workflow ${workflowId}`);
  // A cancel that stopped after its end's write (a store error, the API's process gone) left steps
  // STARTED whose runs may still run, one of them mid-call: planned beside it, the retry started the
  // step's next attempt while that one ran on (its heartbeat looks at its run only), and the target
  // was called twice at once. The cancel is finished first, as a repeated cancel finishes it
  // (decision 0142): the retry starts from the steps as the cancel left them.
  const run = read.status === 'CANCELLED' && hasStartedSteps(read) ? await finishCancel(deps, read) : read;
  // Its end's notification not made yet (its worker stopped before it, and the ticker's repair of
  // it waits for the grace): made now, before the retry makes the run RUNNING, which the repair passes by.
  const marked = await deps.workflowRuns.getRunWithNotification(workflowId, workflowRunId);
  if (marked?.notify !== undefined && marked.run.retries === run.retries) await notifyEnd(deps, version, marked.run, { rethrow: true });
  const now = deps.clock();
  // Its steps' runs leave RUN_RETENTION_DAYS after they end (decision 0159): a retry needs them.
  const latest = latestWorkflowRetry(Date.parse(run.scheduledFor), deps.config.runRetentionDays);
  if (latest !== undefined && now > latest) {
    throw new ConflictError(
      `The workflow run is from ${run.scheduledFor}: a retry must come within ${deps.config.runRetentionDays - 1} days of it (RUN_RETENTION_DAYS - 1), while its steps' runs are kept; start a new run instead`,
    );
  }
  await admitRunRequest(deps, tenantId, limits, now);
  // A dead step's run may have been replayed since: the retry takes the replay as the step's own.
  const newest = await newestStepRuns(
    deps,
    run,
    Object.entries(run.steps).filter(([, state]) => state.status !== 'SUCCEEDED' && state.runId !== null),
  );
  // A step still STARTED on a run that has not ended (the settle's cancels of it kept meeting its
  // next attempt): its next attempt would run beside it. Not retried until its cancel lands. A step
  // claimed whose run is not written yet is not such a step: the run its claimer writes late is
  // cancelled at its lease, the retry having started the step at a later attempt (decision 0190).
  const unsettled = Object.entries(run.steps).filter(([stepId, state]) => {
    const stepRun = newest.get(stepId);
    return state.status === 'STARTED' && stepRun !== undefined && !isTerminal(stepRun.status);
  });
  if (unsettled.length > 0) {
    return retryRefused(deps, run, `The cancel of the workflow run is still stopping the run of step ${unsettled[0]![0]}; try again`);
  }
  const steps = stepsForRetry(run, Object.fromEntries(newest));
  const retried = await deps.workflowRuns.retry(run, steps, now, traceparent ?? formatTraceparent(newTraceContext(now)));
  // Another retry (or a cancel's settling) wrote first.
  if (!retried.held) return retryRefused(deps, run, 'The workflow run is changing too quickly; try again');
  deps.telemetry.workflowRunStarted(retried.run, version.spec.name);
  logger.info('workflow run retried', { ...workflowRunFields(retried.run), retries: retried.run.retries });
  try {
    const advanced = await advance(deps, version, retried.run);
    // A replay taken over as the step's run may have ended between the read and the retry's write,
    // its continuation finding the workflow run not running: its outcome is recorded here.
    const adopted = Object.keys(steps).filter((stepId) => steps[stepId]?.status === 'STARTED');
    return adopted.length > 0 ? await recordEndedSteps(deps, version, advanced, adopted) : advanced;
  } catch (error) {
    return startedAnyway(retried.run, 'its steps could not all be started', error);
  }
}
