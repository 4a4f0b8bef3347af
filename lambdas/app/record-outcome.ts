// Records the outcome of an attempt under its lease's fencing version and plans the retry that
// follows a retryable failure: for the worker after its call, for external workers' complete and
// fail calls, and for a run whose worker was lost.
import { logger } from '../core/logger';
import type { Job } from '../domain/job';
import { decideRetry } from '../domain/retry';
import type { AttemptOutcome, Run, RunError } from '../domain/run';
import { occurrenceKey } from '../domain/run';
import { deliveryOf, fencingTokenOf } from '../domain/delivery';
import type { TargetResult } from '../targets/target';
import type { SchedulerDeps } from './deps';
import { planRun } from './plan-run';
import { runFields } from './run-log';
import { sendPlannedRun } from './send-planned-run';
import { jobSubject, notifyEventFor, notifyOutcome } from './notifications';
import { continueWorkflow } from './workflow-progress';
import { keptResult } from './step-results';
import { discardPayload } from './payloads';
import type { RunPayload } from '../domain/payload';

/** An attempt's outcome as recorded, or fenced (the lease was lost first: nothing was written). */
export interface RecordedOutcome {
  readonly status: AttemptOutcome;
  readonly recorded: 'recorded' | 'fenced';
  /** The next attempt, when a retryable failure had budget left. */
  readonly retry?: Run;
}

/**
 * Records an attempt's outcome; a retryable failure with budget left plans the next attempt, which
 * receives the attempt's checkpoint (external workers). Used by the worker and by the external
 * workers' complete and fail calls.
 */
export async function recordOutcome(
  deps: SchedulerDeps,
  job: Job,
  run: Run,
  budgetFrom: number,
  result: TargetResult,
  now: number,
  reason: string | null,
  carried: { readonly checkpoint?: unknown; readonly result?: unknown; readonly inputs?: unknown; readonly payload?: RunPayload } = {},
): Promise<RecordedOutcome> {
  if (result.ok) {
    const effect =
      deliveryOf(run, job) === 'exactly-once'
        ? {
            occurrence: occurrenceKey(run.jobId, run.scheduledFor),
            runId: run.runId,
            attempt: run.attempt,
            fencingToken: fencingTokenOf(run),
            recordedAt: new Date(now).toISOString(),
          }
        : undefined;
    const notify = notifyEventFor(jobSubject(job), 'SUCCEEDED');
    // A step's result over the inline bound is stored before the write that names it (decision 0163).
    // An object whose write failed is left to the lifecycle rule, which expires the runs' objects.
    const kept = carried.result === undefined ? undefined : await keptResult(deps, run, carried.result);
    const recorded = await deps.leases.finishAttempt(
      run,
      { status: 'SUCCEEDED', now, error: null, reason, result: kept, notify },
      null,
      effect ? { effect } : {},
    );
    // Fenced: another attempt owns the run, and nothing names the object.
    if (recorded === 'fenced' && kept && 'ref' in kept) await discardPayload(deps, kept.ref);
    if (recorded === 'effect-exists') logger.warn("exactly-once: another attempt recorded this occurrence's effect first; one effect kept", runFields(run));
    if (recorded !== 'fenced') {
      await continueWorkflow(deps, { ...run, result: carried.result }, { status: 'SUCCEEDED', reason });
      await notifyOutcome(deps, jobSubject(job), finishedRun(run, 'SUCCEEDED', now, null, reason ?? run.reason));
    }
    return { status: 'SUCCEEDED', recorded: recorded === 'fenced' ? 'fenced' : 'recorded' };
  }
  // At-most-once (the run's own, or an attempt consumed as such): the target may have acted on a
  // failed call, so it is never called again. One that failed before any call may be.
  const atMostOnce = deliveryOf(run, job) === 'at-most-once' || typeof run.consumedAt === 'string';
  const decision =
    atMostOnce && result.notCalled !== true
      ? { retry: false as const, delayMs: 0, why: 'at-most-once: a failed attempt is not retried' }
      : decideRetry(
          job.retryPolicy,
          { retryable: result.error.retryable, retryAfterSeconds: result.retryAfterSeconds },
          run.attempt - budgetFrom + 1,
          deps.random,
        );
  if (!decision.retry) {
    const notify = notifyEventFor(jobSubject(job), 'DEAD');
    const recorded =
      (await deps.leases.finishAttempt(run, { status: 'DEAD', now, error: result.error, reason: decision.why, notify }, null)) === 'fenced'
        ? 'fenced'
        : 'recorded';
    if (recorded === 'recorded') {
      await continueWorkflow(deps, run, { status: 'DEAD', error: result.error, reason: decision.why });
      await notifyOutcome(deps, jobSubject(job), finishedRun(run, 'DEAD', now, result.error, decision.why));
    }
    return { status: 'DEAD', recorded };
  }
  const status: AttemptOutcome = result.timedOut ? 'TIMED_OUT' : 'FAILED';
  const retry = planRetry(deps, job, run, budgetFrom, now + decision.delayMs, now, carried);
  const notify = notifyEventFor(jobSubject(job), status);
  const recorded = (await deps.leases.finishAttempt(run, { status, now, error: result.error, reason, notify }, retry)) === 'fenced' ? 'fenced' : 'recorded';
  if (recorded === 'recorded') {
    deps.telemetry.runCreated(retry.run);
    // The retry is on its way before any notification is made: a notification never delays a run.
    await sendPlannedRun(deps, retry, now);
    await notifyOutcome(deps, jobSubject(job), finishedRun(run, status, now, result.error, reason ?? run.reason));
  }
  return { status, recorded, retry: retry.run };
}

/**
 * A message for a run whose lease expired (the lost worker's own, back at the lease's end, or the
 * ticker's, sent when it found the lease's check-back passed): that attempt failed. Fenced when
 * another worker recorded or took over the run first.
 */
export async function recordWorkerLost(deps: SchedulerDeps, run: Run, budgetFrom: number, carried: Carried = {}): Promise<'recorded' | 'fenced'> {
  const now = deps.clock();
  const job = await deps.jobs.getAnyTenant(run.jobId);
  // At-most-once: a consumed attempt may have reached its target; it is never called again.
  const consumed = typeof run.consumedAt === 'string';
  const error: RunError = consumed
    ? {
        code: 'OUTCOME_UNKNOWN',
        message: `the lease of ${run.leaseOwner ?? 'its worker'} expired after the attempt was consumed; the target may or may not have been called`,
        retryable: false,
      }
    : { code: 'WORKER_LOST', message: `the lease of ${run.leaseOwner ?? 'its worker'} expired before an outcome was recorded`, retryable: true };
  const decision = consumed
    ? { retry: false as const, delayMs: 0, why: 'at-most-once: the attempt was consumed before its worker was lost; it is not called again' }
    : job
      ? decideRetry(job.retryPolicy, { retryable: true }, run.attempt - budgetFrom + 1, deps.random)
      : null;
  const retry = job && decision?.retry ? planRetry(deps, job, run, budgetFrom, now + decision.delayMs, now, carried) : null;
  const status = retry ? 'FAILED' : 'DEAD';
  const reason = decision?.why ?? 'the job no longer exists';
  const owner = job ? jobSubject(job) : null;
  const recorded = await deps.leases.finishAttempt(run, { status, now, error, reason, notify: notifyEventFor(owner, status) }, retry, {
    leaseExpiredBefore: now,
    // Read unconsumed, recorded so only while it is: its worker's consume may land in between (its
    // clock behind this one's), and a retry would then call a target that attempt may have called.
    unconsumed: !consumed,
  });
  if (recorded === 'fenced') return consumed ? 'fenced' : recordConsumedSince(deps, run, budgetFrom, carried);
  deps.telemetry.leaseExpired(run, true);
  deps.telemetry.runFinished(run, retry ? 'FAILED' : 'DEAD', now - Date.parse(run.startedAt ?? run.updatedAt), retry !== null);
  if (retry) {
    deps.telemetry.runCreated(retry.run);
    await sendPlannedRun(deps, retry, now);
  } else {
    await continueWorkflow(deps, run, { status: 'DEAD', error, reason: decision?.why ?? 'the job no longer exists' });
  }
  if (owner) await notifyOutcome(deps, owner, finishedRun(run, status, now, error, reason));
  logger.warn('worker lost during a run; attempt recorded as failed', {
    ...runFields(run),
    status: retry ? 'FAILED' : 'DEAD',
    errorCode: error.code,
    leaseOwner: run.leaseOwner,
    retryRunId: retry?.run.runId,
  });
  return 'recorded';
}

/**
 * A lost worker's attempt whose outcome was fenced although it was read unconsumed: when it is still
 * the same lease and consumed now, its worker consumed it in between, and it ends as a consumed
 * attempt does (DEAD, OUTCOME_UNKNOWN, no retry). Anything else fenced it: another recorder, a
 * cancel.
 */
async function recordConsumedSince(deps: SchedulerDeps, run: Run, budgetFrom: number, carried: Carried): Promise<'recorded' | 'fenced'> {
  const current = await deps.runs.get(run.runId);
  const consumedSince = current?.status === 'RUNNING' && current.version === run.version && typeof current.consumedAt === 'string';
  return consumedSince ? recordWorkerLost(deps, current, budgetFrom, carried) : 'fenced';
}

/** What an attempt hands to the next: its checkpoint, a step's inputs, and the run's own payload (a trigger's). */
interface Carried {
  readonly checkpoint?: unknown;
  readonly inputs?: unknown;
  readonly payload?: RunPayload;
}

function planRetry(deps: SchedulerDeps, job: Job, run: Run, budgetFrom: number, availableAt: number, now: number, { checkpoint, inputs, payload }: Carried) {
  const plan = planRun(
    deps.config,
    job,
    {
      scheduledFor: Date.parse(run.scheduledFor),
      attempt: run.attempt + 1,
      trigger: 'retry',
      availableAt,
      // A retry is the same occurrence's delivery going on: it stays in its trace.
      traceparent: run.traceparent,
      ...(checkpoint !== undefined ? { checkpoint } : {}),
      ...(inputs !== undefined ? { inputs } : {}),
      ...(payload !== undefined ? { payload } : {}),
    },
    now,
  );
  return { ...plan, extras: { ...plan.extras, budgetFrom } };
}

/** The run as its outcome recorded it: what its notification describes. */
function finishedRun(run: Run, status: Run['status'], now: number, error: RunError | null, reason: string | null): Run {
  const at = new Date(now).toISOString();
  return { ...run, status, error, reason, finishedAt: at, updatedAt: at };
}
