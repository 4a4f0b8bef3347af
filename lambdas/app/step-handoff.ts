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
import type { RunPlan } from './plan-run';

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
