// A workflow run's progress as plain functions over its steps' states: which steps start, which
// never will (and why), when the run ends and how, and what a retry starts again.
import type { RunStatus } from './run';
import { isTerminal } from './run';
import type { StepSpec } from './workflow';

// ---- Workflow runs -------------------------------------------------------------------------------

export const WORKFLOW_RUN_STATUSES = ['RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
export type WorkflowRunStatus = (typeof WORKFLOW_RUN_STATUSES)[number];

/**
 * A step in a workflow run: WAITING for its dependencies, STARTED (its run exists; the run holds
 * its attempts), then the outcome of its last run, or NOT_STARTED (with the reason) when a
 * dependency's outcome ruled it out or the workflow run was cancelled first.
 */
export const STEP_STATUSES = ['WAITING', 'STARTED', 'SUCCEEDED', 'DEAD', 'CANCELLED', 'SKIPPED', 'NOT_STARTED'] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

export interface StepState {
  readonly status: StepStatus;
  /** The attempt the step's current (or last) run is; a retry of the workflow run starts the next one. */
  readonly attempt: number;
  readonly runId: string | null;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
  readonly reason: string | null;
}

/**
 * A step's outcome, to be written together with the moves it allows: one write of the workflow run
 * item instead of two, under both writes' conditions (decision 0158).
 */
export interface StepEnd {
  readonly stepId: string;
  readonly state: StepState;
}

export interface WorkflowRun {
  readonly workflowRunId: string;
  readonly workflowId: string;
  readonly tenantId: string;
  readonly version: number;
  readonly status: WorkflowRunStatus;
  /** `schedule`: an occurrence of the workflow's schedule started it. */
  readonly trigger: 'manual' | 'retry' | 'schedule';
  /** The workflow run's time: every step run's occurrence (`scheduledFor`). */
  readonly scheduledFor: string;
  readonly createdAt: string;
  readonly finishedAt: string | null;
  readonly failedSteps: readonly string[];
  /** How often the run was retried from its failed steps (its optimistic-concurrency version). */
  readonly retries: number;
  readonly steps: Readonly<Record<string, StepState>>;
  /**
   * The W3C trace context of the request that started the run (or last retried it), or a new trace:
   * every step run started under it joins it (decision 0146). Absent on runs from before.
   */
  readonly traceparent?: string;
}

const STEP_DONE: readonly StepStatus[] = ['SUCCEEDED', 'DEAD', 'CANCELLED', 'SKIPPED', 'NOT_STARTED'];
export const isStepDone = (status: StepStatus): boolean => STEP_DONE.includes(status);

/** What a run's ending means for its step: nothing for an attempt that a retry follows. */
export function stepOutcomeOf(status: RunStatus): Extract<StepStatus, 'SUCCEEDED' | 'DEAD' | 'CANCELLED' | 'SKIPPED'> | null {
  switch (status) {
    case 'SUCCEEDED':
    case 'DEAD':
    case 'CANCELLED':
    case 'SKIPPED':
      return status;
    default:
      return null;
  }
}

export interface ProgressPlan {
  /** Steps whose dependencies are all done, as their runIf wants: their runs start now. */
  readonly start: readonly string[];
  /** Steps that will never start, with the reason (cascading: their dependants are decided too). */
  readonly notStarted: readonly { readonly stepId: string; readonly reason: string }[];
  /** Set when every step is done: how the workflow run ends. */
  readonly finished: { readonly status: 'SUCCEEDED' | 'FAILED'; readonly failedSteps: readonly string[] } | null;
}

/** The next moves of a workflow run from its steps' states (nothing moves once it is not RUNNING). */
export function planProgress(
  spec: { readonly steps: readonly Pick<StepSpec, 'id' | 'dependsOn' | 'runIf'>[] },
  run: Pick<WorkflowRun, 'status' | 'steps'>,
): ProgressPlan {
  if (run.status !== 'RUNNING') return { start: [], notStarted: [], finished: null };
  const status = new Map(spec.steps.map((step) => [step.id, run.steps[step.id]?.status ?? 'WAITING']));
  const start: string[] = [];
  const notStarted: { stepId: string; reason: string }[] = [];
  for (let changed = true; changed;) {
    changed = false;
    for (const step of spec.steps) {
      if (status.get(step.id) !== 'WAITING') continue;
      const parents = step.dependsOn.map((id) => ({ id, status: status.get(id) ?? 'WAITING' }));
      if (!parents.every((parent) => isStepDone(parent.status))) continue;
      const blocker = parents.find((parent) => parent.status !== 'SUCCEEDED');
      if (step.runIf === 'all-succeeded' && blocker) {
        const reason = blocker.status === 'NOT_STARTED' ? `dependency ${blocker.id} did not start` : `dependency ${blocker.id} ended ${blocker.status}`;
        notStarted.push({ stepId: step.id, reason });
        status.set(step.id, 'NOT_STARTED');
        changed = true;
      } else {
        start.push(step.id);
        status.set(step.id, 'STARTED');
      }
    }
  }
  const all = [...status.values()];
  const finished = all.every(isStepDone)
    ? {
        status: all.every((s) => s === 'SUCCEEDED') ? ('SUCCEEDED' as const) : ('FAILED' as const),
        failedSteps: spec.steps.filter((step) => failedOnItsOwn(step, status)).map((step) => step.id),
      }
    : null;
  return { start, notStarted, finished };
}

/**
 * Whether a step is among a failed run's `failedSteps`: it ended DEAD, CANCELLED or SKIPPED, or did
 * not start for a reason of its own (a succeeded dependency's run had left, so its result could not
 * be passed on). A step that did not start because a dependency failed is not: that dependency is
 * named. So a FAILED run always names a step (the first that did not succeed has no failed
 * dependency), where one whose only failure was a step not started named none.
 */
function failedOnItsOwn(step: Pick<StepSpec, 'id' | 'dependsOn' | 'runIf'>, status: ReadonlyMap<string, StepStatus>): boolean {
  const own = status.get(step.id);
  if (own === 'DEAD' || own === 'CANCELLED' || own === 'SKIPPED') return true;
  if (own !== 'NOT_STARTED') return false;
  return step.runIf === 'all-done' || step.dependsOn.every((parent) => status.get(parent) === 'SUCCEEDED');
}

/**
 * The newest run of a step as a retry of its workflow run finds it: a replay of the step's dead run
 * (or that replay's own retries) may have followed the attempt the step recorded.
 */
export interface StepRunSeen {
  readonly runId: string;
  readonly attempt: number;
  readonly status: RunStatus;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
}

/**
 * The step states a retry of a finished workflow run starts from: succeeded steps are kept, the
 * others wait again at their next attempt (a fresh retry budget, as a replay). A step whose run was
 * replayed since it ended takes the replay as its own (decision 0144): succeeded, the step is
 * SUCCEEDED with the replay's result; still under way, the step is STARTED on it; ended otherwise,
 * the step's next attempt comes after the replay's, so its run id is a new one.
 */
export function stepsForRetry(run: Pick<WorkflowRun, 'steps'>, newest: Readonly<Record<string, StepRunSeen>> = {}): Record<string, StepState> {
  return Object.fromEntries(
    Object.entries(run.steps).map(([stepId, state]): [string, StepState] => {
      if (state.status === 'SUCCEEDED') return [stepId, state];
      const seen = newest[stepId];
      const replayed = seen !== undefined && state.runId !== null && seen.runId !== state.runId && seen.attempt > state.attempt;
      // Its own run, ended after the workflow run did without its outcome recorded (a cancel that
      // found it ended, a continuation that failed): what it did stands.
      const own = seen !== undefined && state.runId !== null && seen.runId === state.runId;
      if ((replayed || own) && seen.status === 'SUCCEEDED') {
        return [
          stepId,
          {
            status: 'SUCCEEDED',
            attempt: seen.attempt,
            runId: seen.runId,
            startedAt: seen.startedAt,
            finishedAt: seen.finishedAt,
            reason: replayed ? 'succeeded in a replay of its run' : 'succeeded; its outcome was not recorded before the workflow run ended',
          },
        ];
      }
      if (replayed && !isTerminal(seen.status)) {
        return [stepId, { status: 'STARTED', attempt: seen.attempt, runId: seen.runId, startedAt: seen.startedAt, finishedAt: null, reason: null }];
      }
      const last = Math.max(state.attempt, seen?.attempt ?? 0);
      return [
        stepId,
        {
          status: 'WAITING',
          // A step that ran starts its next attempt, with a fresh retry budget (as a replay).
          attempt: state.runId ? last + 1 : state.attempt,
          runId: null,
          startedAt: null,
          finishedAt: null,
          reason: null,
        },
      ];
    }),
  );
}

export function initialSteps(spec: { readonly steps: readonly Pick<StepSpec, 'id'>[] }): Record<string, StepState> {
  return Object.fromEntries(
    spec.steps.map((step) => [step.id, { status: 'WAITING' as const, attempt: 1, runId: null, startedAt: null, finishedAt: null, reason: null }]),
  );
}
