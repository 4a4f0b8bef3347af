// A workflow run's end, after the one write that ended it: counted and logged, a scheduled one's
// buffered next occurrence woken, and its notification made (marked by the end's write, so that the
// ticker makes it should its writer stop first: decision 0148).
import { logger } from '../core/logger';
import type { WorkflowVersion } from '../domain/workflow';
import type { WorkflowRun } from '../domain/workflow-run';
import { scheduleJobIdOf } from '../domain/workflow-jobs';
import type { NotifyEvent } from '../domain/notify';
import { wantedWorkflowEvent } from '../domain/notify';
import type { SchedulerDeps } from './deps';
import { wakeBuffered } from './occurrence-chain';
import { notifyWorkflowRunEnd } from './notifications';
import { workflowRunFields } from './workflow-versions';

/**
 * The notification a workflow run's end raises, marked by the end's write with a check-back, so that
 * the ticker makes it should its writer stop before it does (decision 0148).
 */
export function notifyMark(
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
export async function notifyEnd(
  deps: SchedulerDeps,
  version: WorkflowVersion,
  run: WorkflowRun,
  options: { resend?: boolean; /** Throw when it is not made, rather than leave it to the ticker. */ rethrow?: boolean } = {},
): Promise<void> {
  const notify = version.spec.notify;
  const event = run.status === 'RUNNING' ? null : wantedWorkflowEvent(notify, run.status);
  if (!notify || !event) return;
  try {
    await notifyWorkflowRunEnd(deps, { workflowId: run.workflowId, name: version.spec.name, type: version.spec.type }, notify, run, event, options);
    // A cancelled run whose started steps are not all settled keeps its check-back: the ticker's
    // repair finishes their cancel (`repairWorkflowRun`).
    await deps.workflowRuns.notified(run, event, hasStartedSteps(run));
  } catch (error) {
    if (options.rethrow) throw error;
    logger.warn("a workflow run's notification was not made; the ticker makes it", {
      ...workflowRunFields(run),
      event,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

/** After the one write that ended a workflow run: counted, logged, a scheduled one's buffered next occurrence woken, and notified. */
export async function workflowRunEnded(deps: SchedulerDeps, version: WorkflowVersion | null, run: WorkflowRun, now: number): Promise<void> {
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

/** A step of the run is STARTED: its run may still be waiting or running (an ended run's, a cancel not finished). */
export function hasStartedSteps(run: WorkflowRun): boolean {
  return Object.values(run.steps).some((state) => state.status === 'STARTED');
}
