// A workflow run's step runs found by their deterministic ids (a retry or a replay is a new run of
// a later attempt), and a step run's cancel. Used by the progress (workflow-progress.ts) and by the
// API's reads, cancels and retries of workflow runs (workflow-runs.ts).
import type { Run } from '../domain/run';
import type { StepState, WorkflowRun } from '../domain/workflow-run';
import { parseStepJobId, stepRunIdOf } from '../domain/workflow-jobs';
import type { SchedulerDeps } from './deps';

/** How far past a step's recorded attempt its newest run is looked for (retries and replays add attempts). */
const ATTEMPTS_LOOKED_AHEAD = 20;

/** The newest run written of each step given (a retry or a replay is a new run of a later attempt), in one batch read. */
export async function newestStepRuns(deps: SchedulerDeps, run: WorkflowRun, steps: readonly (readonly [string, StepState])[]): Promise<Map<string, Run>> {
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
export async function currentStepRun(deps: SchedulerDeps, run: WorkflowRun, stepId: string, state: StepState): Promise<Run | null> {
  return (await newestStepRuns(deps, run, [[stepId, state]])).get(stepId) ?? null;
}

/**
 * Whether a step run is no longer its workflow run's to run (decision 0190): the workflow run was
 * cancelled, or a retry of it started the step at a later attempt than the run's. A replay asked
 * for by name (`POST /v1/runs/{id}/replay`) is of an attempt past the step's own, and runs as any
 * replay does; a workflow retry's run of the step (its trigger `replay` too) is of the step's own
 * attempt, and is checked.
 */
export function stepRunSuperseded(workflowRun: WorkflowRun, stepId: string, run: Pick<Run, 'attempt' | 'trigger'>): boolean {
  const state = workflowRun.steps[stepId];
  if (run.trigger === 'replay' && state !== undefined && run.attempt > state.attempt) return false;
  return workflowRun.status === 'CANCELLED' || (state !== undefined && state.attempt > run.attempt);
}

export async function cancelStepRun(deps: SchedulerDeps, run: Run, now: number): Promise<boolean> {
  const reason = 'the workflow run was cancelled';
  const cancelled =
    run.status === 'RUNNING' ? await deps.leases.cancelRunning(run.runId, now, reason) : await deps.runs.retirePending(run.runId, 'CANCELLED', reason, now);
  if (cancelled) deps.telemetry.runEnded(run, 'CANCELLED', reason, { previousStatus: run.status });
  return cancelled || run.status === 'CANCELLED';
}
