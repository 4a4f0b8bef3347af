// What a worker does with a run it has just leased, before calling the target: a scheduled
// occurrence checks its job (paused, deleted), the overlap policy and the misfire policy, and moves
// the job's chain on to the next occurrence. Manual, retry and replay runs execute as they are.
import { runFields } from './run-log';
import { logger } from '../core/logger';
import type { Job } from '../domain/job';
import { classifyUnpointed, decideOverlap, decideStart } from '../domain/recurrence';
import type { StartDecision } from '../domain/recurrence';
import type { Run } from '../domain/run';
import { PENDING_STATUSES, runIdFor } from '../domain/run';
import type { SkipReason } from '../domain/schedule';
import { nextFireTimeAfter, skipReasonOf } from '../domain/schedule';
import { checkBackAt } from '../domain/time-gate';
import type { SchedulerDeps } from './deps';
import { MAX_CAS_ATTEMPTS, adoptOccurrence, advanceChain } from './occurrence-chain';
import { jobSubject, notifyEventFor, notifyOutcome } from './notifications';
import { cancelForOverlap, workflowRunOfOccurrence } from './workflow-runs';
import { dispatchOfRun } from '../store/dispatch-queue';

/** How long a buffered occurrence waits before it looks again at the run it is waiting for. */
const BUFFER_RECHECK_SECONDS = 30;

export type Admission =
  { readonly kind: 'execute'; readonly reason: string | null } | { readonly kind: 'stopped'; readonly outcome: 'skipped' | 'cancelled' | 'waiting' | 'fenced' };

/** What the lease read from the run's item besides the run. */
export interface PlannedOccurrence {
  /** Carried on runs created while catching up under `backfill`. */
  readonly backfillRemaining?: number;
  /** The run its job pointed at when it was planned (decision 0175). */
  readonly chainedFrom?: string | null;
  /** When it was first given back to wait for the occurrence before it (overlap buffer-one), in ms. */
  readonly bufferedSince?: number;
}

export async function admitRun(deps: SchedulerDeps, leasedJob: Job, run: Run, planned: PlannedOccurrence): Promise<Admission> {
  const now = deps.clock();
  // A deleted job's runs never call its target, whatever made them (a trigger, a retry, a replay):
  // the delete's retire of its pending runs may have missed one (stopped after its commit, raced a
  // trigger, or past the runs it reads).
  if (leasedJob.status === 'CANCELLED') return end(deps, run, 'CANCELLED', 'job deleted', now);
  if (run.trigger !== 'schedule') return { kind: 'execute', reason: null };
  const { backfillRemaining } = planned;
  let job = leasedJob;
  // Skipped since it was planned: a skip that named it while its job pointed at the occurrence
  // before it (the chain's write of the job had not landed) could neither retire it nor record it.
  // Read from the job before its adoption, which drops the skips it has passed.
  let skipped: SkipReason | null;

  for (let attempt = 0; ; attempt++) {
    if (job.status === 'CANCELLED' || job.status === 'PAUSED') {
      const status = job.status === 'CANCELLED' ? 'CANCELLED' : 'SKIPPED';
      const reason = job.status === 'CANCELLED' ? 'job deleted' : 'job paused';
      return end(deps, run, status, reason, now);
    }
    skipped = skipReasonOf(job, Date.parse(run.scheduledFor));
    if (job.nextRunId === run.runId) break;
    // Not the pending occurrence (decision 0175).
    const unpointed = classifyUnpointed(job, run, planned.chainedFrom);
    // An edit of the job re-planned it: its retire raced this lease or never landed.
    if (unpointed === 'replaced') return end(deps, run, 'SKIPPED', 'job definition changed', now);
    // Planned before runs kept what their job pointed at, or by no job's write (a backfill): as it is.
    if (unpointed === 'other' || attempt >= MAX_CAS_ATTEMPTS) return { kind: 'execute', reason: null };
    // The chain's successor whose job write never landed: the job is pointed at it, then it
    // starts as the pending occurrence does (and moves the chain on).
    const adopted = await adoptOccurrence(deps, job, run, now);
    if (adopted) {
      job = adopted;
      break;
    }
    const reread = await deps.jobs.getAnyTenant(job.jobId);
    if (!reread) return end(deps, run, 'CANCELLED', 'job deleted', now);
    job = reread;
  }

  if (skipped !== null) {
    const decision = decideStart(job, { scheduledFor: Date.parse(run.scheduledFor), dueAt: Date.parse(run.availableAt), startedAt: now, backfillRemaining });
    await advanceChain(deps, job, run, decision.successor, false, now);
    return end(deps, run, 'SKIPPED', skipped, now);
  }

  if (job.overlapPolicy !== 'allow' && job.lastStartedRunId && job.lastStartedRunId !== run.runId) {
    // The previous occurrence as it is now: its newest attempt, a retry of it being the occurrence
    // going on (decision 0195).
    const newest = await newestAttemptOf(deps, job, run, job.lastStartedRunId);
    const previous = newest?.run ?? null;
    const leaseLive = previous?.status === 'RUNNING' && Date.parse(previous.leaseExpiresAt ?? '') > now;
    // An external job's occurrence admitted and offered waits QUEUED for a worker to claim it
    // (decision 0062): it is the external workers' to run, as a leased one is.
    const offered = job.target.kind === 'external' && previous?.status === 'QUEUED';
    // Admitted and waiting QUEUED for a key's slot or rate mark, its lease given back (decision 0130),
    // or a retry not started yet (waiting out its backoff, or for a worker): the occurrence's work
    // still to do, as a leased one is (decision 0195).
    const waiting = newest !== null && (newest.waitsForKey || (newest.retry && PENDING_STATUSES.includes(newest.run.status)));
    // A workflow's occurrence overlaps while the workflow run the previous one started runs (decision 0147).
    const previousWorkflowRun = job.target.kind === 'workflow' && previous ? await workflowRunOfOccurrence(deps, job.target.workflowId, previous) : null;
    const running = leaseLive || offered || waiting || previousWorkflowRun?.status === 'RUNNING';
    const overlap = previousWorkflowRun
      ? decideOverlap(job.overlapPolicy, previousWorkflowRun.workflowRunId, running, 'workflow run')
      : decideOverlap(job.overlapPolicy, previous?.runId ?? job.lastStartedRunId, running);
    if (overlap.action === 'wait' && previous) {
      // Its misfire policy is applied as it arrives, not after its wait: an occurrence that arrives
      // late (the scheduler was down) under misfire skip is skipped now, one on time waits and then runs.
      if (planned.bufferedSince === undefined) {
        const onArrival = decideStart(job, {
          scheduledFor: Date.parse(run.scheduledFor),
          dueAt: Date.parse(run.availableAt),
          startedAt: now,
          backfillRemaining,
        });
        if (!onArrival.execute) {
          await advanceChain(deps, job, run, onArrival.successor, false, now);
          return end(deps, run, 'SKIPPED', onArrival.reason ?? 'skipped', now, job);
        }
      }
      // Give the lease back and look again later; the finishing run (or workflow run) also wakes it.
      const remainingMs = previousWorkflowRun || !leaseLive ? BUFFER_RECHECK_SECONDS * 1000 : Date.parse(previous.leaseExpiresAt ?? '') - now;
      const wait = Math.max(1, Math.min(BUFFER_RECHECK_SECONDS, Math.ceil(remainingMs / 1000)));
      if (
        !(await deps.leases.giveBack(
          run.runId,
          run.version,
          now,
          checkBackAt(now + wait * 1000, now, deps.config),
          deps.config.timeIndexShards,
          overlap.reason,
          { bufferedSince: planned.bufferedSince ?? now },
        ))
      ) {
        return { kind: 'stopped', outcome: 'fenced' };
      }
      await deps.dispatch.send([dispatchOfRun(run, now + wait * 1000)], now);
      logger.info('occurrence buffered behind a running one', { ...runFields(run), waitingFor: previousWorkflowRun?.workflowRunId ?? previous.runId });
      return { kind: 'stopped', outcome: 'waiting' };
    }
    if (overlap.action === 'skip') {
      const decision = decideStart(job, { scheduledFor: Date.parse(run.scheduledFor), dueAt: Date.parse(run.availableAt), startedAt: now, backfillRemaining });
      await advanceChain(deps, job, run, decision.successor, false, now);
      return end(deps, run, 'SKIPPED', overlap.reason, now, job);
    }
    if (overlap.action === 'cancel-previous' && previousWorkflowRun) {
      await cancelForOverlap(deps, previousWorkflowRun);
    } else if (overlap.action === 'cancel-previous' && previous) {
      const cancelled = await cancelPrevious(deps, previous, overlap.reason, now);
      if (cancelled) deps.telemetry.runEnded(cancelled, 'CANCELLED', overlap.reason, { supersededBy: run.runId });
      // A workflow's occurrence leased and not yet past its workflow run's write (decision 0147):
      // its worker may have written it since it was read above, and read its own run before this
      // cancel landed. Read again after the cancel's write, as that worker reads its run after its
      // own (`startScheduledWorkflowRun`), so one of the two sees the other and cancels it.
      if (job.target.kind === 'workflow') {
        const written = await workflowRunOfOccurrence(deps, job.target.workflowId, previous);
        if (written?.status === 'RUNNING') await cancelForOverlap(deps, written);
      }
    }
  }

  const decision =
    planned.bufferedSince !== undefined
      ? afterBuffering(job, planned.bufferedSince, now)
      : decideStart(job, { scheduledFor: Date.parse(run.scheduledFor), dueAt: Date.parse(run.availableAt), startedAt: now, backfillRemaining });
  const moved = await advanceChain(deps, job, run, decision.successor, decision.execute, now);
  if (!decision.execute) return end(deps, run, 'SKIPPED', decision.reason ?? 'skipped', now, job);
  // Only a chain write that was tried and lost can have met such an edit: a job that did not point
  // at this run (a run-now job's, completed at its create) wrote nothing, and is not read again.
  const triedChain = job.status === 'ACTIVE' && job.nextRunId === run.runId;
  if (!moved && triedChain && (await replannedMeanwhile(deps, run, planned))) return end(deps, run, 'SKIPPED', 'job definition changed', now);
  return { kind: 'execute', reason: decision.reason };
}

/** What admission reads of the previous occurrence's attempt it judges. */
interface AttemptRead {
  readonly run: Run;
  /** Pending, given back by its keyed flow after its admission: it waits for a key (decision 0130). */
  readonly waitsForKey: boolean;
  /** A later attempt than the one the job names (a retry of it). */
  readonly retry: boolean;
}

/**
 * The previous occurrence's newest attempt (decision 0195). The job names the attempt that started
 * (`lastStartedRunId`); an attempt that ended FAILED or TIMED_OUT was retried (its outcome and its
 * retry, the next attempt's run id, are one write), so its retry is read, and so on, at most as
 * many attempts as the job's retry budget. The common path, an attempt that runs or ended any other
 * way, reads nothing more. Null when the named run is gone.
 */
async function newestAttemptOf(deps: SchedulerDeps, job: Job, admitting: Run, runId: string): Promise<AttemptRead | null> {
  let read = await deps.runs.getWithKeyWait(runId);
  if (!read) return null;
  let retry = false;
  for (let attempts = 1; attempts < job.retryPolicy.maxAttempts && RETRIED.has(read.run.status); attempts++) {
    const nextId = runIdFor(read.run.jobId, read.run.scheduledFor, read.run.attempt + 1);
    if (nextId === admitting.runId) break;
    const next = await deps.runs.getWithKeyWait(nextId);
    // Its retry gone (its retention ended it): the attempt read is the newest there is.
    if (!next) break;
    read = next;
    retry = true;
  }
  return { ...read, retry };
}

/** The statuses an attempt ends with only when its retry is written in the same write (record-outcome.ts). */
const RETRIED: ReadonlySet<Run['status']> = new Set(['FAILED', 'TIMED_OUT']);

/**
 * Overlap policy cancel-running: ends the previous occurrence's attempt CANCELLED. One that has not
 * started (offered to external workers, waiting for a key, a retry waiting for its backoff) is
 * retired, never to be leased; a leased one is ended under its lease's version, which fences its
 * worker's outcome and stops it at its next heartbeat. A pending one leased between the read and the
 * retire is read again and ended under its new lease. Returns the attempt as it was cancelled, or
 * null when it ended otherwise first.
 */
async function cancelPrevious(deps: SchedulerDeps, previous: Run, reason: string, now: number): Promise<Run | null> {
  let attempt: Run | null = previous;
  if (PENDING_STATUSES.includes(attempt.status)) {
    if (await deps.runs.retirePending(attempt.runId, 'CANCELLED', reason, now)) return attempt;
    attempt = await deps.runs.get(attempt.runId);
    if (attempt?.status !== 'RUNNING') return null;
  }
  const recorded = await deps.leases.complete(attempt.runId, attempt.version, { status: 'CANCELLED', now, error: null, reason });
  return recorded === 'recorded' ? attempt : null;
}

/**
 * After the chain's write lost (the job changed since admission read it): whether an edit planned
 * this very occurrence again meanwhile. Such an edit (a PATCH, a resume) read the run before its
 * lease, still pending, planned the occurrence as a new run (its next attempt), and its retire of
 * this one failed, the run being leased: run too, it would make two runs of one occurrence, the
 * edit's not knowing this one started (decision 0175). It ends SKIPPED, as that retire would have
 * ended it. An edit that planned another occurrence (it read the run started, or its new schedule
 * no longer fires at it) leaves it to run, as a run leased before an edit runs; so does a pause,
 * whose resume reads it as started.
 */
async function replannedMeanwhile(deps: SchedulerDeps, run: Run, planned: PlannedOccurrence): Promise<boolean> {
  const current = await deps.jobs.getAnyTenant(run.jobId);
  return (
    current?.status === 'ACTIVE' &&
    current.nextRunId !== run.runId &&
    current.nextRunAt !== null &&
    Date.parse(current.nextRunAt) === Date.parse(run.scheduledFor) &&
    classifyUnpointed(current, run, planned.chainedFrom) === 'replaced'
  );
}

/**
 * An occurrence that waited for the one before it (overlap buffer-one) starts however long it
 * waited: its wait is not a misfire (its policy was applied when it arrived). The fire times that
 * passed while it waited are dropped, as buffer-one holds one occurrence: the chain goes on from
 * the first fire time after now.
 */
function afterBuffering(job: Job, bufferedSince: number, now: number): StartDecision {
  const next = nextFireTimeAfter(job, now);
  return {
    execute: true,
    reason: `overlap: waited ${Math.round((now - bufferedSince) / 1000)} s for the occurrence before it (overlapPolicy buffer-one)`,
    successor: next === null ? null : { scheduledFor: next },
  };
}

/**
 * Ends a run that does not execute. `notifying`: the job, when an overlap or misfire policy skipped
 * the run (a `skipped` notification); a run retired because its job was paused or deleted raises none.
 */
async function end(deps: SchedulerDeps, run: Run, status: 'SKIPPED' | 'CANCELLED', reason: string, now: number, notifying?: Job): Promise<Admission> {
  const owner = notifying ? jobSubject(notifying) : null;
  const recorded = await deps.leases.complete(run.runId, run.version, { status, now, error: null, reason, notify: notifyEventFor(owner, status) });
  if (recorded === 'fenced') return { kind: 'stopped', outcome: 'fenced' };
  deps.telemetry.runEnded(run, status, reason);
  if (owner) {
    const at = new Date(now).toISOString();
    await notifyOutcome(deps, owner, { ...run, status, reason, error: null, finishedAt: at, updatedAt: at });
  }
  return { kind: 'stopped', outcome: status === 'SKIPPED' ? 'skipped' : 'cancelled' };
}
