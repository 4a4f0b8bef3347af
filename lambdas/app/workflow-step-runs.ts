// A workflow run's step runs found by their deterministic ids (a retry or a replay is a new run of
// a later attempt), and a step run's cancel. Used by the progress (workflow-progress.ts) and by the
// API's reads, cancels and retries of workflow runs (workflow-runs.ts).
import type { Run } from '../domain/run';
import type { StepState, WorkflowRun } from '../domain/workflow-run';
import { parseStepJobId, stepRunIdOf } from '../domain/workflow-jobs';
import type { SchedulerDeps } from './deps';

/** How far past a step's recorded attempt its newest run is looked for at first (retries and replays add attempts). */
const ATTEMPTS_LOOKED_AHEAD = 20;

/** Attempts read in one further look past a window whose last attempt was found (a BatchGetItem's 100 keys). */
const ATTEMPTS_READ_ON = 100;

/**
 * How far past a step's recorded attempt its runs are followed at most. Each replay of a dead run
 * adds up to `retryPolicy.maxAttempts` (20) attempts, and a replay may be replayed: a retry that
 * planned its step's next attempt from a look that stopped short named a run that exists, wrote
 * nothing and sent nothing, and left the step STARTED on an old run. Past this bound (50 replays of a
 * 20-attempt step) that can happen still; the ticker's repair then records the step from the
 * newest run it finds, as that run ended, and a retry after it goes on from there.
 */
const MAX_ATTEMPTS_LOOKED_AHEAD = 1_000;

/**
 * The newest run written of each step given (a retry or a replay is a new run of a later attempt),
 * in one batch read, and more only when a step's runs reach past it. A step's attempts have no gap:
 * each new run is the attempt after one that exists (a retry after its failed attempt, a replay
 * after the run it replays, refused if that attempt exists, a workflow retry after the newest
 * found), so a window whose last attempt was found is read on from there; one that ends short of
 * its last attempt holds the newest.
 */
export async function newestStepRuns(deps: SchedulerDeps, run: WorkflowRun, steps: readonly (readonly [string, StepState])[]): Promise<Map<string, Run>> {
  const newest = new Map<string, Run>();
  const limitOf = new Map(steps.map(([stepId, state]) => [stepId, state.attempt + MAX_ATTEMPTS_LOOKED_AHEAD]));
  let windows = steps.map(([stepId, state]) => ({ stepId, from: state.attempt, to: state.attempt + ATTEMPTS_LOOKED_AHEAD }));
  while (windows.length > 0) {
    const ids = windows.flatMap(({ stepId, from, to }) => Array.from({ length: to - from + 1 }, (_, index) => stepRunIdOf(run, stepId, from + index)));
    for (const candidate of await deps.runs.getMany(ids)) {
      const stepId = parseStepJobId(candidate.jobId)?.stepId;
      if (stepId === undefined) continue;
      const known = newest.get(stepId);
      if (!known || candidate.attempt > known.attempt) newest.set(stepId, candidate);
    }
    windows = windows.flatMap(({ stepId, to }) => {
      const limit = limitOf.get(stepId) ?? to;
      return newest.get(stepId)?.attempt === to && to < limit ? [{ stepId, from: to + 1, to: Math.min(to + ATTEMPTS_READ_ON, limit) }] : [];
    });
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
