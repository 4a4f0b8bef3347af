// A workflow step's dependants started by the worker that ran it (decision 0179). When a step run's
// outcome lets its dependants start, their runs are written as always; a worker that received the
// step's message from its queue then runs them itself, at once, instead of sending each a message
// that another worker receives (a send, a receive, a visibility change and a delete per step, and
// the queue's and the event source mapping's latency between the steps).
//
// The offer is made by the worker's message path alone (`executeRun` with `eagerUntil`), for the
// time of its own run's outcome: the store's writers (`startStepRuns`) ask the offer in scope
// (AsyncLocalStorage, so the outcome's writers keep their signatures) and send what it declines.
// Every run taken is a run written QUEUED with its check-back in the time index, like any sent
// run: a worker that dies before its lease leaves it to the ticker, as a lost message does.
import { AsyncLocalStorage } from 'node:async_hooks';
import { logger } from '../core/logger';
import type { SchedulerDeps } from './deps';
import type { DispatchContext, ExecuteResult } from './execute-run';
import type { RunPlan } from './plan-run';
import { runFields } from './run-log';
import { sendPlannedRun } from './send-planned-run';

/** At most this many dependants of one step run are taken; the rest are sent (a wide fan-out spreads over workers). */
export const MAX_HANDED_OFF = 10;
/** Time kept after a taken run's lease ends, for its outcome's writes, before the invocation's end. */
export const HANDOFF_MARGIN_MS = 10_000;

export interface HandoffTerms {
  /** When the invocation ends (a Lambda's deadline): a run is taken only if its lease ends before, with the margin. */
  readonly until: number;
  /** The worker pool this worker serves: a run of another pool's job type is sent to its own workers. */
  readonly pool: string;
  /** The pool of a run's job type. */
  readonly poolOf: (jobType: string | undefined) => string;
  readonly clock: () => number;
}

/** What one step run's outcome handed to its worker: the runs it takes, in the order offered. */
export class StepHandoff {
  private readonly taken: RunPlan[] = [];

  constructor(private readonly terms: HandoffTerms) {}

  /** Whether this worker runs the planned run itself (true: it is not to be sent). */
  take(plan: RunPlan): boolean {
    const { dispatch, run } = plan;
    if (!dispatch || this.taken.length >= MAX_HANDED_OFF) return false;
    if (dispatch.availableAt > this.terms.clock()) return false;
    if (this.terms.poolOf(dispatch.jobType) !== this.terms.pool) return false;
    if (this.terms.clock() + run.leaseSeconds * 1000 + HANDOFF_MARGIN_MS > this.terms.until) return false;
    this.taken.push(plan);
    return true;
  }

  /** The runs taken, to be run by the worker once its own run is done. */
  runs(): readonly RunPlan[] {
    return this.taken;
  }
}

const offers = new AsyncLocalStorage<StepHandoff>();

/** Runs `work` (a run's execution) with `handoff` offered to the writers of the dependants it starts. */
export function offeringHandoff<T>(handoff: StepHandoff, work: () => Promise<T>): Promise<T> {
  return offers.run(handoff, work);
}

/** The offer in scope: a worker's, while it executes a run from its queue; none elsewhere (the API, the ticker, tests that call the use cases). */
export function handoffInScope(): StepHandoff | undefined {
  return offers.getStore();
}

/**
 * Runs the steps a run's outcome handed to this worker (decision 0179), each as if its message had
 * just been received: within its tenant's in-flight limit, leased, executed, and free to hand off
 * its own dependants. The message of the run that handed them off is deleted when the invocation
 * ends: the heartbeats of the longest of them keep it hidden until then (a message come back would
 * be a duplicate of a finished run). No message follows their leases: a worker lost while it runs
 * them is found by their leases' check-backs, within a tick of the lease's end. A run that fails
 * here before its lease is sent instead.
 */
export async function runHandedOff(
  deps: SchedulerDeps,
  plans: readonly RunPlan[],
  message: DispatchContext,
  execute: (deps: SchedulerDeps, runId: string, message: DispatchContext) => Promise<ExecuteResult>,
): Promise<void> {
  if (plans.length === 0) return;
  const longest = plans.reduce((held, plan) => (plan.run.leaseSeconds > held.run.leaseSeconds ? plan : held));
  await Promise.all(
    plans.map(async (plan) => {
      const { run } = plan;
      const context: DispatchContext = {
        tenantId: run.tenantId,
        traceparent: run.traceparent,
        eagerUntil: message.eagerUntil,
        handedOff: true,
        ...(plan === longest && message.receiptHandle ? { receiptHandle: message.receiptHandle, queueUrl: message.queueUrl } : {}),
      };
      try {
        const result = await execute(deps, run.runId, context);
        logger.debug('handed-off step run executed', { ...runFields(run), result });
      } catch (error) {
        await handOffFailed(deps, plan, error);
      }
    }),
  );
}

/** The runs handed off by a run whose execution threw: written and not run, sent now so that they do not wait for the ticker. */
export async function sendHandedOff(deps: SchedulerDeps, handoff: StepHandoff): Promise<void> {
  await Promise.all(handoff.runs().map((plan) => sendPlannedRun(deps, plan, deps.clock())));
}

/**
 * A handed-off run whose execution threw: one not leased yet is sent to the queue; a leased one is
 * left to its lease's check-back (the ticker recovers it as a lost worker's, within a tick of the
 * lease's end), as is one whose status cannot be read.
 */
async function handOffFailed(deps: SchedulerDeps, plan: RunPlan, error: unknown): Promise<void> {
  const fields = { ...runFields(plan.run), error: error instanceof Error ? error.message : String(error) };
  try {
    if ((await deps.runs.get(plan.run.runId))?.status !== 'QUEUED') {
      logger.warn('a handed-off step run failed in this worker after its lease; its check-back recovers it', fields);
      return;
    }
    logger.warn('a handed-off step run failed in this worker before its lease; sent to the queue', fields);
    await sendPlannedRun(deps, plan, deps.clock());
  } catch (readError) {
    logger.warn('a handed-off step run failed in this worker; its check-back recovers it', {
      ...fields,
      readError: readError instanceof Error ? readError.message : String(readError),
    });
  }
}
