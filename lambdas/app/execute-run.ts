// Executes one dispatch message: within the tenant's in-flight limit (in-flight-slot.ts), lease
// the run and hand it to the worker's path (leased-run.ts). A message that cannot lease its run is a
// duplicate, a stale message or an early one, and is acknowledged (the early one is sent again for
// its remaining delay); a message for a run whose worker was lost records that attempt as
// worker-lost and retries it (record-outcome.ts).
import { logger } from '../core/logger';
import { leaseCheckAt } from '../domain/time-gate';
import type { LeaseResult } from '../store/run-leases';
import type { Dispatch } from '../store/dispatch-queue';
import { dispatchOfRun } from '../store/dispatch-queue';
import type { SchedulerDeps } from './deps';
import { withInFlightSlot } from './in-flight-slot';
import { VISIBILITY_SLACK_SECONDS, executeLeasedRun } from './leased-run';
import { recordWorkerLost } from './record-outcome';
import { runFields } from './run-log';
import { jobSubject, notifyOutcome } from './notifications';
import type { Run } from '../domain/run';
import { traceIdOf } from '../domain/trace-context';
import { StepHandoff, offeringHandoff, runHandedOff, sendHandedOff } from './step-handoff';

/** A message that arrives this close to its run's time waits in the worker rather than in SQS. */
const MAX_IN_WORKER_WAIT_MS = 2_000;
/**
 * A message for a run whose lease ends within this many milliseconds is kept for a recheck when the
 * lease has ended, not dropped: it may be the one message of a worker that is about to be found lost.
 */
const HELD_RECHECK_WINDOW_MS = 5_000;

export type ExecuteResult =
  | 'skipped'
  | 'cancelled'
  | 'waiting'
  | 'succeeded'
  | 'failed'
  | 'timed-out'
  | 'dead'
  | 'fenced'
  | 'missing'
  | 'duplicate'
  | 'held'
  /** Held under a lease that ends soon: the message must stay, to come back when it has ended. */
  | 'recheck'
  | 'worker-lost'
  | 'requeued'
  /** A run of an external target, handed to external workers to claim over the API. */
  | 'offered'
  /** The tenant is at its in-flight limit: the run waits, its message sent again with a delay. */
  | 'deferred';

export interface DispatchContext {
  /** The SQS receipt handle, so the message's visibility can follow the lease. */
  readonly receiptHandle?: string;
  /** The run's tenant, from the message: its in-flight limit applies before the lease. */
  readonly tenantId?: string;
  /** How often this run already waited for an in-flight slot. */
  readonly deferrals?: number;
  /** The queue the message came from (its pool and lane): receipt handles and deferrals use it. */
  readonly queueUrl?: string;
  /** The run's trace, from the message: for the lines written before the run is read (decision 0117). */
  readonly traceparent?: string;
  /** When a delayed message was meant to arrive (decision 0172): the lease waits for it. */
  readonly notBefore?: number;
  /**
   * When the invocation that received the message ends (decision 0179). Given, the worker runs the
   * workflow steps its run's outcome starts itself, those of its pool whose leases end before then
   * (step-handoff.ts); absent, it sends them, as the API and the ticker do.
   */
  readonly eagerUntil?: number;
  /**
   * A step run handed to this worker by its parent's run (decision 0179), not received: the
   * receipt handle, if any, is its parent's message's, which its heartbeats keep hidden.
   */
  readonly handedOff?: boolean;
  /**
   * A handed-off step run written leased, whose workflow run its taker read just before it runs
   * (step-handoff.ts `stillLeased`): the lease does not read it again. One written QUEUED (a tenant
   * with an in-flight limit) is leased when it runs, and read then, as a run from its queue is.
   */
  readonly workflowRunRead?: boolean;
}

/** The worker's use case for one dispatch message (lambdas/worker/adapter.ts). */
export async function executeRun(deps: SchedulerDeps, runId: string, message: DispatchContext = {}): Promise<ExecuteResult> {
  if (await sentAgainForLater(deps, runId, message)) return 'requeued';
  return withHandoff(deps, message, () => withInFlightSlot(deps, runId, message, () => executeMessage(deps, runId, message)));
}

/** A workflow step's run its worker wrote already leased, handed on by its parent's run (decision 0179). */
export async function executeLeased(deps: SchedulerDeps, lease: Extract<LeaseResult, { kind: 'leased' }>, message: DispatchContext): Promise<ExecuteResult> {
  return withHandoff(deps, message, () => executeLeasedRun(deps, lease, deps.clock(), message));
}

/**
 * Executes a run with the offer of its dependants (decision 0179), when the message says until when
 * the invocation lasts: the runs its outcome hands on are run once it is done (its in-flight slot
 * given back), or sent back should it throw.
 */
async function withHandoff(deps: SchedulerDeps, message: DispatchContext, work: () => Promise<ExecuteResult>): Promise<ExecuteResult> {
  if (message.eagerUntil === undefined) return work();
  const handoff = new StepHandoff({
    until: message.eagerUntil,
    pool: deps.dispatch.poolOfQueueUrl(message.queueUrl).name,
    poolOf: (jobType) => deps.dispatch.poolOf(jobType).name,
    clock: deps.clock,
    owner: deps.workerId,
  });
  let result: ExecuteResult;
  try {
    result = await offeringHandoff(handoff, work);
  } catch (error) {
    await sendHandedOff(deps, handoff);
    throw error;
  }
  await runHandedOff(deps, handoff.runs(), message, { executeRun, executeLeased });
  return result;
}

/**
 * A message meant for later than SQS could delay it (a rate key's wait past 900 s) comes back early:
 * it is sent again for the rest of its wait, with no lease, which the run's key would only have it
 * give back, nor a slot of its tenant's in-flight limit (decision 0193). Its run's check-back stands
 * behind it should a send be lost. A message without its tenant or queue (not one this scheduler
 * writes) is leased as before.
 */
async function sentAgainForLater(deps: SchedulerDeps, runId: string, message: DispatchContext): Promise<boolean> {
  const { notBefore, tenantId, queueUrl } = message;
  const now = deps.clock();
  if (notBefore === undefined || notBefore - now <= MAX_IN_WORKER_WAIT_MS || tenantId === undefined || queueUrl === undefined || message.handedOff)
    return false;
  const again: Dispatch = {
    runId,
    tenantId,
    availableAt: notBefore,
    queueUrl,
    ...(message.deferrals !== undefined ? { deferrals: message.deferrals } : {}),
    ...(message.traceparent !== undefined ? { traceparent: message.traceparent } : {}),
  };
  await deps.dispatch.send([again], now);
  logger.info('message back before its time; sent again for the rest of its wait', {
    runId,
    tenantId,
    traceId: traceIdOf(message.traceparent),
    waitMs: notBefore - now,
  });
  return true;
}

async function executeMessage(deps: SchedulerDeps, runId: string, message: DispatchContext): Promise<ExecuteResult> {
  const receivedAt = deps.clock();
  // A delayed message comes up to a second early (SQS delays are whole seconds): a lease tried now
  // would fail its condition, a write DynamoDB bills all the same (decision 0172).
  const early = (message.notBefore ?? 0) - receivedAt;
  if (early > 0 && early <= MAX_IN_WORKER_WAIT_MS) await sleep(early + 1);
  let lease = await leaseRun(deps, runId);
  // SQS delays are whole seconds (rounded down) and at most 900 s: a message may come a little
  // early. Wait out a short remainder here; send a longer one back to the queue.
  for (let round = 0; lease.kind === 'early'; round++) {
    const availableAt = Date.parse(lease.run.availableAt);
    const waitMs = availableAt - deps.clock();
    if (waitMs > MAX_IN_WORKER_WAIT_MS || round >= 3) {
      await deps.dispatch.send([dispatchOfRun(lease.run, availableAt)], deps.clock());
      logger.info('run not due yet; sent again for the remaining delay', { ...runFields(lease.run), waitMs });
      return 'requeued';
    }
    await sleep(Math.max(0, waitMs) + 1);
    lease = await leaseRun(deps, runId);
  }

  switch (lease.kind) {
    case 'missing':
      logger.warn('dispatch message for a run that does not exist; dropped', { runId, traceId: traceIdOf(message.traceparent) });
      return 'missing';
    case 'finished':
      logger.info('duplicate dispatch message for a finished run; dropped', runFields(lease.run));
      if (lease.notify) await ensureNotification(deps, lease.run);
      return 'duplicate';
    case 'held': {
      const remainingMs = lease.run.leaseExpiresAt ? Date.parse(lease.run.leaseExpiresAt) - deps.clock() : Infinity;
      // A handed-off run's receipt handle is its parent's message, not its own (decision 0179).
      if (message.receiptHandle && !message.handedOff && remainingMs <= HELD_RECHECK_WINDOW_MS) {
        // Back just after the lease ends: if its worker is gone by then, this message recovers the run.
        await deps.dispatch.setVisibility(message.receiptHandle, Math.max(0, Math.ceil(remainingMs / 1000)) + VISIBILITY_SLACK_SECONDS, message.queueUrl);
        logger.info('run is leased by another worker until shortly; message kept for a recheck', {
          ...runFields(lease.run),
          leaseOwner: lease.run.leaseOwner,
          remainingMs,
        });
        return 'recheck';
      }
      logger.info('run is leased by another worker; dropped this copy of its message', {
        ...runFields(lease.run),
        leaseOwner: lease.run.leaseOwner,
      });
      return 'held';
    }
    case 'expired':
      // Fenced: another worker recorded the lost attempt, or took the run over, first.
      // The retry is given what the attempt was: its checkpoint, a step's inputs, a trigger's own payload.
      return (await recordWorkerLost(deps, lease.run, lease.budgetFrom, {
        checkpoint: lease.checkpoint,
        inputs: lease.inputs,
        ...(lease.payloadOverride !== undefined ? { payload: lease.payloadOverride } : {}),
      })) === 'fenced'
        ? 'held'
        : 'worker-lost';
    case 'leased':
      return executeLeasedRun(deps, lease, receivedAt, message);
  }
}

/**
 * A redelivered message for a run whose outcome raised a notification: the worker that recorded it
 * may have stopped before making or enqueueing it, so this makes sure it exists and is on its way
 * (once: the notification is made by a conditional put, and each try claims it).
 */
async function ensureNotification(deps: SchedulerDeps, run: Run): Promise<void> {
  const job = await deps.jobs.getAnyTenant(run.jobId);
  if (job) await notifyOutcome(deps, jobSubject(job), run, { resend: true });
}

/**
 * The lease, with its check-back in the time index: should this worker die before its message
 * follows the lease (or with it), the ticker finds the lease expired there and has it recovered.
 */
function leaseRun(deps: SchedulerDeps, runId: string): Promise<LeaseResult> {
  const now = deps.clock();
  return deps.leases.lease(runId, { owner: deps.workerId, now, checkBackAt: leaseCheckAt(now, deps.config), shards: deps.config.timeIndexShards });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
