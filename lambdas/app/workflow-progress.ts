// A workflow run's progress: after a step run's outcome is recorded, `continueWorkflow` records it on
// the workflow run and starts what it unblocked (`advance`); the ticker's repair
// (workflow-repair.ts) does the same for a workflow run whose progress stopped (a worker died
// between the two). Every move is a conditional write of the workflow run item (store/workflows.ts).
// A run's end is workflow-run-end.ts's; finding a step's runs, workflow-step-runs.ts's.
import { logger } from '../core/logger';
import type { Run, RunStatus } from '../domain/run';
import type { WorkflowVersion } from '../domain/workflow';
import type { ProgressPlan, StepEnd, StepState, WorkflowRun } from '../domain/workflow-run';
import { planProgress, stepOutcomeOf } from '../domain/workflow-run';
import { parseStepJobId, stepJobOf, stepRunIdOf, storedStepInputs, workflowRunIdOf } from '../domain/workflow-jobs';
import type { SchedulerDeps } from './deps';
import { runFields } from './run-log';
import { planRun } from './plan-run';
import { sendPlannedRun } from './send-planned-run';
import { versionOf, workflowRunFields } from './workflow-versions';
import { inputsFrom } from './step-results';
import type { RunPayload } from '../domain/payload';
import { handoffInScope, leasedPlan } from './step-handoff';
import { notifyMark, workflowRunEnded } from './workflow-run-end';
import { cancelStepRun, newestStepRuns } from './workflow-step-runs';
import type { RunPlan } from './plan-run';

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
    // Steps of one workflow run that end together in this process (siblings a worker runs itself,
    // decision 0179) continue in turn: each reads what the one before wrote, rather than both
    // writing from the same read and one write refused (billed) and made again.
    await deps.workflowTurns.inTurn(workflowRunId, async () => {
      const workflowRun = await deps.workflowRuns.getRun(step.workflowId, workflowRunId);
      const state = workflowRun?.steps[step.stepId];
      if (!version || !workflowRun || !state) return;
      const now = deps.clock();
      // The step's outcome goes with the first move it allows, in one write (decision 0158).
      await advance(
        deps,
        version,
        workflowRun,
        state.status === 'STARTED' ? { stepId: step.stepId, state: stepEndState(state, run, outcome, now) } : undefined,
      );
    });
  } catch (error) {
    logger.error('workflow continuation failed; the ticker will repair it', {
      ...runFields(run),
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

/** Records a step's outcome from its run, once (the step must still be STARTED); the run as it became. */
export async function recordStepEnd(
  deps: SchedulerDeps,
  workflowName: string,
  workflowRun: WorkflowRun,
  stepId: string,
  state: StepState,
  run: Run,
  outcome: 'SUCCEEDED' | 'DEAD' | 'CANCELLED' | 'SKIPPED',
  now: number,
): Promise<WorkflowRun | null> {
  const ended = { stepId, state: stepEndState(state, run, outcome, now) };
  const written = await deps.workflowRuns.recordStep(workflowRun, stepId, ended.state);
  stepEndWritten(deps, workflowName, ended, written.held);
  return written.run;
}

/** A started step's state once its run ended with `outcome`. */
function stepEndState(state: StepState, run: Run, outcome: 'SUCCEEDED' | 'DEAD' | 'CANCELLED' | 'SKIPPED', now: number): StepState {
  return {
    ...state,
    status: outcome,
    attempt: run.attempt,
    runId: run.runId,
    finishedAt: run.finishedAt ?? new Date(now).toISOString(),
    reason: run.error ? `${run.error.code}: ${run.error.message}` : run.reason,
  };
}

function stepEndWritten(deps: SchedulerDeps, workflowName: string, ended: StepEnd, held: boolean): void {
  if (held && ended.state.status !== 'SUCCEEDED') deps.telemetry.workflowStepFailed(workflowName);
}

/**
 * Moves a workflow run on from the state given: steps that can never start are recorded so, ready
 * steps are claimed (a conditional write: of two writers that both saw a step ready, one wins) and
 * their runs written and sent; a run whose steps are all done ends, exactly once.
 */
export async function advance(deps: SchedulerDeps, version: WorkflowVersion, from: WorkflowRun, stepEnd?: StepEnd): Promise<WorkflowRun> {
  let run = from;
  // A step's outcome not yet written: planned as if written, and written with the first move, under
  // both conditions. Should that write be refused (a racer moved first), it is written alone, as
  // before decision 0158, and the plan is made again from what the store holds.
  let pending = stepEnd;
  /** Writes the outcome alone and takes the run as the store answered it; false when the run is gone. */
  const recordAlone = async (ended: StepEnd): Promise<boolean> => {
    pending = undefined;
    const written = await deps.workflowRuns.recordStep(run, ended.stepId, ended.state);
    stepEndWritten(deps, version.spec.name, ended, written.held);
    if (!written.run) return false;
    run = written.run;
    return true;
  };
  // Each round either moves a step or learns of a racer's move; a graph of N steps needs at most N.
  for (let round = 0; round <= version.spec.steps.length + 2; round++) {
    const view = pending ? { ...run, steps: { ...run.steps, [pending.stepId]: pending.state } } : run;
    const plan = planProgress(version.spec, view);
    const now = deps.clock();
    if (plan.start.length === 0 && plan.notStarted.length === 0) {
      if (!plan.finished) {
        if (!pending || !(await recordAlone(pending))) return run;
        continue;
      }
      const ending = pending;
      const ended = await deps.workflowRuns.finish(
        run,
        plan.finished.status,
        plan.finished.failedSteps,
        now,
        {},
        notifyMark(deps, version, plan.finished.status, now),
        ending,
      );
      if (ending && !ended.held) {
        if (!(await recordAlone(ending))) return run;
        continue;
      }
      if (ending) stepEndWritten(deps, version.spec.name, ending, true);
      if (ended.held) await workflowRunEnded(deps, version, ended.run, now);
      return ended.run ?? run;
    }
    const moves = movesOf(run, plan, now);
    const ending = pending;
    const written = await deps.workflowRuns.moveSteps(run, moves, ending);
    if (ending) {
      if (!written.held) {
        if (!(await recordAlone(ending))) return run;
        continue;
      }
      pending = undefined;
      stepEndWritten(deps, version.spec.name, ending, true);
    }
    if (!written.run) return run;
    run = written.run;
    if (written.held && plan.start.length > 0) run = await startStepRuns(deps, version, run, plan.start, now);
  }
  logger.warn('workflow run did not settle; the ticker will look again', workflowRunFields(run));
  return run;
}

/** The steps a plan rules out (with the reason) and those it starts (claimed, with their runs' ids). */
function movesOf(run: WorkflowRun, plan: Pick<ProgressPlan, 'start' | 'notStarted'>, now: number): Record<string, StepState> {
  const at = new Date(now).toISOString();
  const moves: Record<string, StepState> = {};
  for (const { stepId, reason } of plan.notStarted) moves[stepId] = { ...stateOf(run, stepId), status: 'NOT_STARTED', finishedAt: at, reason };
  for (const stepId of plan.start) {
    const state = stateOf(run, stepId);
    moves[stepId] = { ...state, status: 'STARTED', runId: stepRunIdOf(run, stepId, state.attempt), startedAt: at, finishedAt: null, reason: null };
  }
  return moves;
}

/**
 * A new workflow run with its opening moves made (decision 0178): the steps that start at once
 * (its roots) are written STARTED with the run's put, instead of claimed by a write of their own
 * right after it. Only the put's writer (the put is conditional on a new run) starts them
 * (`openWorkflowRun`); should it stop before their runs are written, the ticker's repair writes them,
 * as it does for a claim whose runs were never written.
 */
export function withOpeningMoves(version: WorkflowVersion, run: WorkflowRun, now: number): { readonly run: WorkflowRun; readonly start: readonly string[] } {
  const plan = planProgress(version.spec, run);
  if (plan.finished || plan.start.length === 0) return { run, start: [] };
  return { run: { ...run, steps: { ...run.steps, ...movesOf(run, plan, now) } }, start: plan.start };
}

/** Starts the steps a new workflow run's put claimed (`withOpeningMoves`), then moves it on as any. */
export async function openWorkflowRun(
  deps: SchedulerDeps,
  version: WorkflowVersion,
  run: WorkflowRun,
  start: readonly string[],
  now: number,
): Promise<WorkflowRun> {
  const started = start.length > 0 ? await startStepRuns(deps, version, run, start, now) : run;
  return advance(deps, version, started);
}

const stateOf = (run: WorkflowRun, stepId: string): StepState =>
  run.steps[stepId] ?? { status: 'WAITING', attempt: 1, runId: null, startedAt: null, finishedAt: null, reason: null };

/**
 * Writes the runs of claimed steps (deterministic ids: a repeat writes nothing), each with its
 * parents' results as its inputs, and sends them. A cancel that landed meanwhile retires them.
 */
export async function startStepRuns(
  deps: SchedulerDeps,
  version: WorkflowVersion,
  run: WorkflowRun,
  stepIds: readonly string[],
  now: number,
): Promise<WorkflowRun> {
  const parentsOf = new Map(version.spec.steps.map((step) => [step.id, step.dependsOn]));
  const parentRunIds = [...new Set(stepIds.flatMap((stepId) => parentsOf.get(stepId) ?? []))]
    .map((parent) => run.steps[parent])
    .flatMap((state) => (state?.status === 'SUCCEEDED' && state.runId ? [state.runId] : []));
  // Each parent's result as its run keeps it: inline, or a reference to its object (decision 0163).
  const parentRuns = parentRunIds.length > 0 ? await deps.runs.resultsOf(parentRunIds) : new Map<string, RunPayload | null>();
  // A succeeded parent whose run has left (RUN_RETENTION_DAYS, decision 0159) has no result to pass
  // on: its dependant does not start, rather than start with a null input.
  const gone = new Map<string, string>();
  for (const stepId of stepIds) {
    const parent = (parentsOf.get(stepId) ?? []).find((id) => {
      const state = run.steps[id];
      return state?.status === 'SUCCEEDED' && state.runId !== null && !parentRuns.has(state.runId);
    });
    if (parent) gone.set(stepId, `the run of dependency ${parent} (${run.steps[parent]?.runId}) has left (RUN_RETENTION_DAYS): its result cannot be passed on`);
  }
  const plans = stepIds.flatMap((stepId) => {
    const job = stepJobOf(version, stepId);
    if (!job || gone.has(stepId)) return [];
    const kept = new Map<string, RunPayload | null>();
    for (const parent of parentsOf.get(stepId) ?? []) {
      const state = run.steps[parent];
      if (state?.status === 'SUCCEEDED') kept.set(parent, (state.runId ? parentRuns.get(state.runId) : undefined) ?? null);
    }
    // Its parents' results only: where the step is comes from its run's ids (decision 0164).
    const inputs = storedStepInputs(inputsFrom(kept));
    const attempt = stateOf(run, stepId).attempt;
    const plan = planRun(
      deps.config,
      job,
      {
        scheduledFor: Date.parse(run.scheduledFor),
        attempt,
        trigger: attempt === 1 ? 'manual' : 'replay',
        availableAt: now,
        ...(inputs ? { inputs } : {}),
        // Every step of the workflow run is in its trace (a new one for runs from before traces).
        ...(run.traceparent ? { traceparent: run.traceparent } : {}),
      },
      now,
    );
    return [{ ...plan, extras: { ...plan.extras, budgetFrom: attempt } }];
  });
  // A worker running a step from its queue takes its dependants' runs to run itself (decision 0179),
  // and writes them leased by it unless the tenant's in-flight limit wants a slot taken first.
  const handoff = handoffInScope();
  const leaseAhead = handoff !== undefined && (await deps.tenantLimits.of(run.tenantId)).maxInFlightRuns === null;
  const lease = (plan: RunPlan): RunPlan => (leaseAhead && handoff ? leasedPlan(plan, handoff.owner, now, deps.config) : plan);
  const toWrite = plans.map((plan) => {
    const taken = handoff?.take(plan, lease) ?? null;
    return taken ? { plan: taken, taken: true } : { plan, taken: false };
  });
  const created = await Promise.all(
    toWrite.map(async ({ plan, taken }) => {
      let written = false;
      try {
        written = await deps.runs.create(plan);
      } finally {
        // A run taken whose write was refused or failed is not this worker's to run: a failed write
        // may not have landed, and its step is the ticker's to repair (`repairWorkflowRun`).
        if (taken && !written) handoff?.withdraw(plan.run.runId);
      }
      return written ? { plan, taken } : null;
    }),
  );
  for (const written of created) {
    if (!written) continue;
    deps.telemetry.runCreated(written.plan.run);
    if (written.taken && written.plan.run.status === 'QUEUED') deps.telemetry.runQueued(written.plan.run);
  }
  for (const [stepId, reason] of gone) {
    const state = stateOf(run, stepId);
    await deps.workflowRuns.recordStep(run, stepId, { ...state, status: 'NOT_STARTED', runId: null, finishedAt: new Date(now).toISOString(), reason });
    logger.warn("a step was not started: a dependency's run has left", { ...workflowRunFields(run), stepId, reason });
  }
  // A cancel reads the started steps after it ends the workflow run; a step claimed before the cancel
  // whose run was written after that read is retired here, so no step starts after a cancel. Nothing
  // is sent or run before this read: should it fail, a cancel may have landed unseen, and the runs
  // written are left to the ticker (sent a grace later, or retired by the cancelled run's repair).
  let after: WorkflowRun | null;
  try {
    after = await deps.workflowRuns.getRun(run.workflowId, run.workflowRunId);
  } catch (error) {
    await leaveToTicker(deps, created, now);
    throw error;
  }
  if (after?.status !== 'CANCELLED') {
    for (const written of created) if (written && !written.taken) await sendPlannedRun(deps, written.plan, now);
  } else {
    for (const written of created) {
      if (!written) continue;
      const { plan } = written;
      handoff?.withdraw(plan.run.runId);
      // Written QUEUED, or RUNNING when written leased for this worker to run (decision 0179).
      if (await cancelStepRun(deps, plan.run, now)) {
        const stepId = parseStepJobId(plan.run.jobId)?.stepId;
        const state = stepId ? after.steps[stepId] : undefined;
        if (stepId && state?.status === 'STARTED') await recordStepEnd(deps, version.spec.name, after, stepId, state, plan.run, 'CANCELLED', now);
      }
    }
  }
  return after ?? run;
}

/**
 * The runs just written whose workflow run could not be read again: none is sent or run here. One
 * taken to run by this worker is withdrawn from its handoff, and one written leased by it gives its
 * lease back (QUEUED, its check-back a grace from now), as a lost message leaves a run; should that
 * fail too, its lease's check-back recovers it.
 */
async function leaveToTicker(deps: SchedulerDeps, created: readonly ({ plan: RunPlan; taken: boolean } | null)[], now: number): Promise<void> {
  const handoff = handoffInScope();
  for (const written of created) {
    if (!written?.taken) continue;
    const { run } = written.plan;
    handoff?.withdraw(run.runId);
    if (run.status !== 'RUNNING') continue;
    try {
      const reason = 'handed back: its workflow run could not be read after its write';
      await deps.leases.giveBack(run.runId, run.version, now, now + deps.config.redeliveryGraceSeconds * 1000, deps.config.timeIndexShards, reason);
    } catch (error) {
      logger.warn('a step run written leased could not be given back; its lease check-back recovers it', {
        ...runFields(run),
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
  logger.warn('a workflow run could not be read after its step runs were written; the ticker sends them or retires them', {
    runIds: created.flatMap((written) => (written ? [written.plan.run.runId] : [])),
  });
}

/**
 * Records the outcome of each of the given steps still STARTED whose run has ended (its
 * continuation was never made, or found the workflow run not running), then moves the run on.
 */
export async function recordEndedSteps(deps: SchedulerDeps, version: WorkflowVersion, from: WorkflowRun, stepIds: readonly string[]): Promise<WorkflowRun> {
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
