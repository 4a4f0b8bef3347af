// Sends a planned run that goes straight to the queue, or leaves it to the ticker. Every writer of
// a run (a create, a change of a job's chain, a retry, a replay, a manual trigger) calls this right
// after the transaction that stored the run has committed.
import { runFields } from './run-log';
import { logger } from '../core/logger';
import type { SchedulerDeps } from './deps';
import type { RunPlan } from './plan-run';
import type { SendOptions } from '../store/dispatch-queue';

/**
 * `now`: when the run was planned. A failed send does not fail the writer: the run is stored, QUEUED, with a check-back entry in the
 * time index, and the ticker sends it once the redelivery grace has passed (decision 0005). The
 * write the caller made succeeded, so the caller answers success; a client that retried it would
 * find it done (a 409) rather than a second run.
 */
export async function sendPlannedRun(
  deps: SchedulerDeps,
  plan: Pick<RunPlan, 'run' | 'dispatch'> | null | undefined,
  now: number,
  options: SendOptions = {},
): Promise<void> {
  if (!plan?.dispatch) return;
  try {
    // Its delay counts from now, not from when it was planned: the writes between (a create's, a
    // chain's) would make it that much late.
    await deps.dispatch.send([plan.dispatch], Math.max(now, deps.clock()), options);
    deps.telemetry.runQueued(plan.run);
  } catch (error) {
    const { run } = plan;
    logger.error('dispatch failed; the ticker will redeliver', {
      ...runFields(run),
      trigger: run.trigger,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}
