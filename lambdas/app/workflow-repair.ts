// A workflow run whose progress stopped, made good: the ticker's repair of a running one (a worker
// died between a step's outcome and its continuation, or a claimer between its claim and the step's
// run) and the settling of a cancelled one's started steps (its cancel stopped before their runs
// were cancelled). The moves themselves are workflow-progress.ts's.
import { logger } from '../core/logger';
import type { WorkflowRun } from '../domain/workflow-run';
import { stepOutcomeOf } from '../domain/workflow-run';
import type { SchedulerDeps } from './deps';
import { advance, recordStepEnd, startStepRuns } from './workflow-progress';
import { versionOf, workflowRunFields } from './workflow-versions';
import { hasStartedSteps, notifyEnd } from './workflow-run-end';
import { cancelStepRun, currentStepRun } from './workflow-step-runs';

/** Tries of a step run's cancel refused because the run moved on (its attempt failed and its retry was written). */
const MAX_CANCEL_ATTEMPTS = 5;

/** A step run's ends that are its step's outcome (a FAILED attempt is followed by its retry). */
const ENDED_STEP_OUTCOMES = ['SUCCEEDED', 'DEAD', 'CANCELLED', 'SKIPPED'] as const;

/**
 * The started steps of a CANCELLED workflow run settled: each step's run is cancelled and recorded
 * on its step (one that ended first is recorded as it ended). A step claimed whose run is not
 * written yet is left to its claimer, which retires the run it writes when it reads the workflow
 * run again (decision 0142), unless `unwritten` is 'record': the repair's, a grace after the cancel,
 * records it NOT_STARTED (its claimer died). The run as it became; a step still STARTED is not settled.
 */
export async function settleCancelledSteps(
  deps: SchedulerDeps,
  workflowName: string,
  run: WorkflowRun,
  now: number,
  unwritten: 'leave' | 'record',
): Promise<WorkflowRun> {
  let current = run;
  for (const [stepId, state] of Object.entries(run.steps)) {
    if (state.status !== 'STARTED') continue;
    // A cancel refused because the run moved on (its attempt failed and its retry was written) is
    // made again on the step's newest run.
    for (let attempt = 0; attempt < MAX_CANCEL_ATTEMPTS; attempt++) {
      const stepRun = await currentStepRun(deps, run, stepId, state);
      if (!stepRun) {
        if (unwritten === 'record') {
          const reason = 'the workflow run was cancelled before its run was written';
          const written = await deps.workflowRuns.recordStep(current, stepId, {
            ...state,
            status: 'NOT_STARTED',
            runId: null,
            finishedAt: new Date(now).toISOString(),
            reason,
          });
          current = written.run ?? current;
        }
        break;
      }
      // A run of a later attempt than the one read is the step's retry (its attempt failed), or a
      // retry of the whole workflow run that landed since the read: its step runs are written after
      // its write of the workflow run, so a read now tells. A retried workflow run is not this
      // settle's to touch: cancelling its new step run would undo the retry.
      if (stepRun.attempt > state.attempt && (await retriedSince(deps, run))) return current;
      // Ended already, its outcome not recorded (its continuation failed, or is under way): recorded
      // as it ended, so that the run shows it and a retry does not run it again.
      const ending = ENDED_STEP_OUTCOMES.find((outcome) => outcome === stepRun.status);
      if (ending) {
        current = (await recordStepEnd(deps, workflowName, current, stepId, state, stepRun, ending, now)) ?? current;
        break;
      }
      if (await cancelStepRun(deps, stepRun, now)) {
        current = (await recordStepEnd(deps, workflowName, current, stepId, state, stepRun, 'CANCELLED', now)) ?? current;
        break;
      }
    }
  }
  return current;
}

/** Whether the workflow run read CANCELLED was retried since (or is gone). */
async function retriedSince(deps: SchedulerDeps, read: WorkflowRun): Promise<boolean> {
  const now = await deps.workflowRuns.getRun(read.workflowId, read.workflowRunId);
  return now?.status !== 'CANCELLED' || now.retries !== read.retries;
}

/**
 * A cancelled workflow run whose started steps are all settled gives up the check-back its cancel
 * kept (`finish`), unless its end's notification is still to be made, which clears it (the write's
 * condition: no notification mark on the run). Whether the definition notifies does not say: a
 * notification made while a step was still STARTED kept the check-back, and only this clears it
 * then. Never throws: a check-back left makes the ticker look once more, and find nothing to do.
 */
export async function cancelledRunSettled(deps: SchedulerDeps, run: WorkflowRun): Promise<void> {
  if (run.status !== 'CANCELLED' || hasStartedSteps(run)) return;
  try {
    await deps.workflowRuns.settled(run);
  } catch (error) {
    logger.warn("a cancelled workflow run's check-back was not cleared; the ticker clears it", {
      ...workflowRunFields(run),
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

/**
 * The ticker's repair of a running workflow run whose progress stopped: a started step whose run
 * ended (its worker died before continuing) is recorded, a claimed step whose run was never written
 * is written, and the run moves on; its check-back moves on with it. True when something moved.
 */
export async function repairWorkflowRun(deps: SchedulerDeps, workflowId: string, workflowRunId: string): Promise<boolean> {
  const read = await deps.workflowRuns.getRunWithNotification(workflowId, workflowRunId);
  if (!read) return false;
  const found = read.run;
  const version = await versionOf(deps, workflowId, found.version);
  if (!version) return false;
  const now = deps.clock();
  if (found.status !== 'RUNNING') {
    // Cancelled, and its cancel stopped before its started steps' runs were cancelled (a store
    // error, the API's process gone): they are cancelled now, so that none runs after the cancel.
    let ended = found;
    if (found.status === 'CANCELLED' && hasStartedSteps(found)) {
      ended = await settleCancelledSteps(deps, version.spec.name, found, now, 'record');
      logger.warn("workflow run repaired: its cancel had not cancelled its started steps' runs", workflowRunFields(ended));
    }
    // Ended, its notification marked and not made (its writer stopped between the two): made now, once.
    if (read.notify) {
      await notifyEnd(deps, version, ended, { resend: true });
      logger.warn("workflow run repaired: its end's notification had not been made", workflowRunFields(ended));
      return true;
    }
    await cancelledRunSettled(deps, ended);
    return ended !== found;
  }
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
  if (advanced.status === 'RUNNING') await deps.workflowRuns.moveCheckBack(advanced, now);
  if (moved || advanced !== run) logger.warn('workflow run repaired: its progress had stopped', workflowRunFields(advanced));
  return moved || advanced.status !== 'RUNNING';
}
