// A workflow step's dependants started by the worker that ran it (decision 0179). When a step run's
// outcome lets its dependants start, their runs are written as always; a worker that received the
// step's message from its queue then runs them itself, at once, instead of sending each a message
// that another worker receives (a send, a receive, a visibility change and a delete per step, and
// the queue's and the event source mapping's latency between the steps).
//
// The offer is made by the worker's message path alone (`executeRun` with `eagerUntil`), for the
// time of its own run's outcome: the store's writers (`startStepRuns`) ask the offer in scope
// (AsyncLocalStorage, so the outcome's writers keep their signatures) and send what it declines.
// A run taken is written leased by the worker (no lease write follows) where its tenant has no
// in-flight limit, QUEUED otherwise, with its check-back in the time index as any run: a worker
// that dies before running it leaves it to the ticker, as a lost worker or message does.
import { AsyncLocalStorage } from 'node:async_hooks';
import { logger } from '../core/logger';
import type { SchedulerDeps } from './deps';
import type { DispatchContext, ExecuteResult } from './execute-run';
import type { RunPlan } from './plan-run';
import type { LeaseResult } from '../store/run-leases';
import { leaseCheckAt } from '../domain/time-gate';
import { runFields } from './run-log';
import { sendPlannedRun } from './send-planned-run';
import { parseStepJobId, workflowRunIdOf } from '../domain/workflow-jobs';
import { cancelStepRun, stepRunSuperseded } from './workflow-step-runs';

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
  /** The worker: a run it takes may be written leased by it. */
  readonly owner: string;
}

/** What one step run's outcome handed to its worker: the runs it takes, in the order offered. */
export class StepHandoff {
  private readonly taken: RunPlan[] = [];

  constructor(private readonly terms: HandoffTerms) {}

  /**
   * The run as this worker writes it when it runs it itself (`lease` makes it the worker's already);
   * null when it is to be sent: not due, another pool's, a lease the invocation cannot wait for, or
   * ten taken already.
   */
  take(plan: RunPlan, lease: (plan: RunPlan) => RunPlan = (same) => same): RunPlan | null {
    const { dispatch, run } = plan;
    if (!dispatch || this.taken.length >= MAX_HANDED_OFF) return null;
    if (dispatch.availableAt > this.terms.clock()) return null;
    if (this.terms.poolOf(dispatch.jobType) !== this.terms.pool) return null;
    if (this.terms.clock() + run.leaseSeconds * 1000 + HANDOFF_MARGIN_MS > this.terms.until) return null;
    const taken = lease(plan);
    this.taken.push(taken);
    return taken;
  }

  /** A run taken that is not to run after all (its write found it written, or its workflow run was cancelled). */
  withdraw(runId: string): void {
    const index = this.taken.findIndex((plan) => plan.run.runId === runId);
    if (index >= 0) this.taken.splice(index, 1);
  }

  /** The worker that takes the runs. */
  get owner(): string {
    return this.terms.owner;
  }

  /** The runs taken, to be run by the worker once its own run is done. */
  runs(): readonly RunPlan[] {
    return this.taken;
  }
}

/**
 * A taken run written already leased by its worker (decision 0179): RUNNING under the lease a lease
 * write would give it (version 1, its lease from now, its check-back where a lease's is), so no
 * lease write follows. Only where no in-flight slot must come first (the tenant has no limit).
 */
export function leasedPlan(
  plan: RunPlan,
  owner: string,
  now: number,
  settings: { readonly leaseMarginSeconds: number; readonly timeIndexShards: number },
): RunPlan {
  const at = new Date(now).toISOString();
  return {
    ...plan,
    run: {
      ...plan.run,
      status: 'RUNNING',
      leaseOwner: owner,
      leaseExpiresAt: new Date(now + plan.run.leaseSeconds * 1000).toISOString(),
      startedAt: at,
      updatedAt: at,
      version: plan.run.version + 1,
    },
    extras: { ...plan.extras, gate: { at: leaseCheckAt(now, settings), shards: settings.timeIndexShards } },
  };
}

/** The lease of a run written leased (`leasedPlan`), as the lease write would have answered it. */
export function leaseOfPlan(plan: RunPlan): Extract<LeaseResult, { kind: 'leased' }> {
  const { extras } = plan;
  return {
    kind: 'leased',
    run: plan.run,
    payloadOverride: extras.payloadOverrideRef
      ? { ref: extras.payloadOverrideRef }
      : extras.payloadOverride !== undefined
        ? { inline: extras.payloadOverride }
        : undefined,
    budgetFrom: extras.budgetFrom ?? 1,
    ...(extras.inputs !== undefined ? { inputs: extras.inputs } : {}),
  };
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

/** How a worker executes a run: from its id (leasing it), or one it put already leased. */
export interface HandoffRunners {
  readonly executeRun: (deps: SchedulerDeps, runId: string, message: DispatchContext) => Promise<ExecuteResult>;
  readonly executeLeased: (deps: SchedulerDeps, lease: Extract<LeaseResult, { kind: 'leased' }>, message: DispatchContext) => Promise<ExecuteResult>;
}

/**
 * Runs the steps a run's outcome handed to this worker (decision 0179), each as if its message had
 * just been received: one written leased is executed under that lease, another within its tenant's
 * in-flight limit and leased first; each is free to hand off its own dependants. The message of
 * the run that handed them off is deleted when the invocation ends: the heartbeats of the longest
 * of them of the parent's lane keep it hidden until then (a message come back is a duplicate of a
 * finished run, dropped). No message follows their leases: a worker lost while it runs them is
 * found by their leases' check-backs, within a tick of the lease's end. A run written leased is
 * read again first: one a cancel ended since its write is not run. A run that fails here before
 * its lease is sent.
 */
export async function runHandedOff(deps: SchedulerDeps, plans: readonly RunPlan[], message: DispatchContext, runners: HandoffRunners): Promise<void> {
  if (plans.length === 0) return;
  // Each run's own lane (its pool is the parent's; its priority may not be): a deferral goes there.
  const laneOf = (plan: RunPlan): string => deps.dispatch.queueUrlFor(plan.dispatch?.jobType, plan.dispatch?.priority);
  // The parent's receipt handle goes with the longest lease among those of the parent's lane, whose
  // heartbeats then keep the parent's message hidden (the handle is that queue's).
  const sameLane = message.queueUrl === undefined ? [] : plans.filter((plan) => laneOf(plan) === message.queueUrl);
  const longest = sameLane.reduce<RunPlan | undefined>((held, plan) => (held && held.run.leaseSeconds >= plan.run.leaseSeconds ? held : plan), undefined);
  await Promise.all(
    plans.map(async (plan) => {
      const { run } = plan;
      const context: DispatchContext = {
        tenantId: run.tenantId,
        traceparent: run.traceparent,
        eagerUntil: message.eagerUntil,
        handedOff: true,
        queueUrl: laneOf(plan),
        ...(plan === longest && message.receiptHandle ? { receiptHandle: message.receiptHandle } : {}),
      };
      try {
        if (run.status === 'RUNNING' && !(await stillLeased(deps, run))) return;
        const result =
          run.status === 'RUNNING'
            ? await runners.executeLeased(deps, leaseOfPlan(plan), { ...context, workflowRunRead: true })
            : await runners.executeRun(deps, run.runId, context);
        logger.debug('handed-off step run executed', { ...runFields(run), result });
      } catch (error) {
        await handOffFailed(deps, plan, error);
      }
    }),
  );
}

/**
 * Whether a run written leased for this worker is so still, read just before it runs: a cancel (of
 * the run, or of its workflow run) that ended it since its write is honoured, and its target is not
 * called, as a cancel before a lease write has that lease refused. Its workflow run is read with it
 * (in parallel): a cancel of the workflow run that ended it and stopped before it cancelled its
 * steps' runs (a store error, its process gone) is honoured too, and so is a retry of it that
 * started the step past this run's attempt: the run is cancelled here (decision 0190).
 */
async function stillLeased(deps: SchedulerDeps, run: RunPlan['run']): Promise<boolean> {
  const step = parseStepJobId(run.jobId);
  const [stored, workflowRun] = await Promise.all([
    deps.runs.get(run.runId),
    step ? deps.workflowRuns.getRun(step.workflowId, workflowRunIdOf(step.workflowId, run.scheduledFor)) : Promise.resolve(null),
  ]);
  const leased = stored?.status === 'RUNNING' && stored.version === run.version && stored.leaseOwner === run.leaseOwner;
  // Cancelled, or retried past it, as a run from its queue is checked at its lease (decision 0190).
  if (leased && !(step && workflowRun && stepRunSuperseded(workflowRun, step.stepId, run))) return true;
  if (leased && stored) await cancelStepRun(deps, stored, deps.clock());
  logger.info('a handed-off step run or its workflow run changed before it started; not run', {
    ...runFields(run),
    status: stored?.status ?? 'missing',
    workflowRunStatus: workflowRun?.status ?? 'missing',
  });
  return false;
}

/**
 * The runs handed off by a run whose execution threw: written and not run. Sent now, so that they do
 * not wait for the ticker; one written leased gives its lease back first (QUEUED again).
 */
export async function sendHandedOff(deps: SchedulerDeps, handoff: StepHandoff): Promise<void> {
  await Promise.all(
    handoff.runs().map(async (plan) => {
      const now = deps.clock();
      const { run } = plan;
      try {
        if (run.status === 'RUNNING') {
          const given = await deps.leases.giveBack(
            run.runId,
            run.version,
            now,
            now + deps.config.redeliveryGraceSeconds * 1000,
            deps.config.timeIndexShards,
            'handed back: the worker that took it failed',
          );
          if (!given) return;
        }
        await sendPlannedRun(deps, plan, now);
      } catch (error) {
        logger.warn('a handed-off step run could not be sent back; its check-back recovers it', {
          ...runFields(run),
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }),
  );
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
