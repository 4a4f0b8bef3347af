// The occurrence chain of a recurring job: it moves on when its pending occurrence starts (or is
// cancelled), each successor written just before the job that points at it (decision 0175), and
// the ticker repairs a chain whose pending run was lost.
import { logger } from '../core/logger';
import type { Job } from '../domain/job';
import type { Successor } from '../domain/recurrence';
import type { Run } from '../domain/run';
import { isTerminal } from '../domain/run';
import { nextFireTimeAfter, skipsFrom } from '../domain/schedule';
import { occurrenceOnResume } from '../domain/recurrence';
import type { SchedulerDeps } from './deps';
import type { RunPlan } from './plan-run';
import { planRun } from './plan-run';
import { sendPlannedRun } from './send-planned-run';
import { batchCoalesce } from './batch-coalesce';
import { dispatchOfRun } from '../store/dispatch-queue';

/** Tries of a compare-and-swap on a job before a race with other writers is given up. */
export const MAX_CAS_ATTEMPTS = 5;
const iso = (ms: number): string => new Date(ms).toISOString();

/** The attempt number for a new run of an occurrence, given the run that last stood for it. */
export function attemptFor(scheduledFor: number, previous: { scheduledFor: string; attempt: number } | null): number {
  return previous && Date.parse(previous.scheduledFor) === scheduledFor ? previous.attempt + 1 : 1;
}

/** The run that stands for the job's pending occurrence, if it has one. */
export async function pendingRun(deps: SchedulerDeps, job: Job): Promise<Run | null> {
  return job.nextRunId ? deps.runs.get(job.nextRunId) : null;
}

/**
 * Moves the chain of a recurring job on when its pending occurrence starts: the successor is
 * written first, on its own (a conditional put), then the job pointing at it (a conditional put),
 * not both in one transaction, which bills each item twice (decision 0175). Returns false when the
 * job had already moved on (a PATCH, pause or another worker got there first).
 *
 * Between the two writes the successor is a run its job does not point at. If the job's write
 * loses to an edit, the successor is deleted; if its writer stops first, the worker that leases the
 * successor tells by the run it follows (`chainedFrom`) whether to point the job at it (the job
 * still points there) or to end it (an edit replaced it): `admitRun`.
 */
export async function advanceChain(deps: SchedulerDeps, job: Job, started: Run, successor: Successor | null, executes: boolean, now: number): Promise<boolean> {
  let current: Job | null = job;
  // The occurrence to plan: moved past one found ended already (below).
  let next: Successor | null = successor;
  // The successor this call wrote, which no job points at until the job's write lands.
  let written: RunPlan | undefined;
  // A successor found written already (by a resume, a repair, or a chain writer that stopped before
  // its send): the job is pointed at it, and its message sent, which may be its second.
  let found: Run | undefined;
  for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS && current; attempt++) {
    // The job's write landed though its answer said otherwise (a retry that met its first try): the
    // successor is the job's, and is sent, not deleted.
    if (written && current.nextRunId === written.run.runId) return chained(deps, written, now);
    if (current.status !== 'ACTIVE' || current.nextRunId !== started.runId) break;
    const plan = next
      ? planRun(
          deps.config,
          current,
          {
            scheduledFor: next.scheduledFor,
            attempt: 1,
            trigger: 'schedule',
            ...(next.backfillRemaining !== undefined ? { backfillRemaining: next.backfillRemaining } : {}),
            chainedFrom: started.runId,
          },
          now,
        )
      : undefined;
    if (plan && plan.run.runId !== written?.run.runId) {
      if (written) await discard(deps, written);
      written = undefined;
      found = undefined;
      if (await deps.runs.create(plan)) {
        written = plan;
      } else {
        // The successor was already written (a resume or a repair planned the same occurrence):
        // point the job at it without writing it again. One that has ended was a skip recorded
        // after this job was read (or ran already): the chain moves past it, never runs it again.
        const existing = await deps.runs.get(plan.run.runId);
        if (!existing || isTerminal(existing.status)) {
          current = await deps.jobs.getAnyTenant(job.jobId);
          if (existing && current) next = pastEnded(current, next!, existing);
          continue;
        }
        found = existing;
      }
    }
    const moved: Job = {
      ...current,
      updatedAt: iso(now),
      ...passedSkips(current, now, plan?.run.scheduledFor),
      lastStartedRunId: executes ? started.runId : (current.lastStartedRunId ?? null),
      ...(plan ? { nextRunAt: plan.run.scheduledFor, nextRunId: plan.run.runId } : { nextRunAt: null, nextRunId: null, status: 'COMPLETED' as const }),
    };
    if ((await deps.jobs.replace(moved, current)) === 'replaced') {
      if (written) return chained(deps, written, now);
      if (found && plan) await sendExisting(deps, found, now);
      return true;
    }
    current = await deps.jobs.getAnyTenant(job.jobId);
  }
  if (written && current?.nextRunId === written.run.runId) return chained(deps, written, now);
  if (written) await discard(deps, written);
  return false;
}

/** The successor this chain wrote, its job pointing at it: counted and sent. */
async function chained(deps: SchedulerDeps, written: RunPlan, now: number): Promise<true> {
  deps.telemetry.runCreated(written.run);
  // The successors of a batch's runs share a SendMessageBatch (decision 0160).
  await sendPlannedRun(deps, written, now, { coalesce: batchCoalesce(deps.config) });
  return true;
}

/**
 * Sends a queued occurrence written before, which its job now points at: its writer may have
 * stopped before its send, and its check-back would send it only past the redelivery grace. A
 * message it already had makes this one a duplicate, which its lease drops.
 */
async function sendExisting(deps: SchedulerDeps, run: Run, now: number): Promise<void> {
  if (run.status !== 'QUEUED') return;
  await deps.dispatch.send([dispatchOfRun(run, Math.max(now, Date.parse(run.availableAt)))], now);
}

/**
 * Points the job at an occurrence the chain wrote but never pointed it at (`classifyUnpointed`:
 * `unadopted`), as the chain's write would have: the occurrence before it is taken as started.
 * Returns the job as written, or null when the job changed meanwhile.
 */
export async function adoptOccurrence(deps: SchedulerDeps, job: Job, run: Run, now: number): Promise<Job | null> {
  const next: Job = {
    ...job,
    updatedAt: iso(now),
    ...passedSkips(job, now, run.scheduledFor),
    // The occurrence it follows started or was skipped; the overlap policy reads its status.
    lastStartedRunId: job.nextRunId ?? job.lastStartedRunId ?? null,
    nextRunAt: run.scheduledFor,
    nextRunId: run.runId,
  };
  if ((await deps.jobs.replace(next, job)) !== 'replaced') return null;
  logger.warn('pointed a job at the occurrence its chain wrote last', {
    jobId: job.jobId,
    tenantId: job.tenantId,
    runId: run.runId,
    previousRunId: job.nextRunId,
  });
  return next;
}

/** Deletes a successor no job will point at (its job's edit won the race); left to `admitRun` if that fails too. */
async function discard(deps: SchedulerDeps, plan: RunPlan): Promise<void> {
  try {
    await deps.runs.discardUnstarted(plan.run);
  } catch (error) {
    logger.warn('could not delete a successor its job does not point at; its worker will end it', { runId: plan.run.runId, error: String(error) });
  }
}

/**
 * The ticker's repair of a job whose pending occurrence is long overdue and whose run is gone
 * or ended without starting the chain's next occurrence. A missing run is planned again for its
 * occurrence (whose admission applies the misfire policy). After an ended one, the fire times
 * missed since are the misfire policy's, as after a pause: skip goes on from now, fire-once runs
 * the latest missed one, backfill runs them from the first (within its limit).
 */
export async function repairChain(deps: SchedulerDeps, jobId: string, overdueBefore: number): Promise<boolean> {
  const job = await deps.jobs.getAnyTenant(jobId);
  if (!job || job.status !== 'ACTIVE' || !job.nextRunAt || Date.parse(job.nextRunAt) >= overdueBefore) return false;
  const run = await pendingRun(deps, job);
  if (run && !isTerminal(run.status)) return false; // waiting or running: the time index covers it
  const now = deps.clock();
  const pendingAt = Date.parse(job.nextRunAt);
  const picked = run ? occurrenceOnResume(job, nextFireTimeAfter(job, pendingAt), now, 'repaired') : null;
  let scheduledFor = run ? (picked?.scheduledFor ?? null) : pendingAt;
  const reason = picked?.reason ?? (run ? 'repaired: the pending occurrence ended without moving the chain on' : 'repaired: the pending occurrence was lost');
  for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
    const plan =
      scheduledFor === null
        ? undefined
        : planRun(
            deps.config,
            job,
            {
              scheduledFor,
              attempt: attemptFor(scheduledFor, run),
              trigger: 'schedule',
              reason,
              chainedFrom: job.nextRunId ?? null,
            },
            now,
          );
    const next: Job = plan
      ? { ...job, updatedAt: iso(now), ...passedSkips(job, now, plan.run.scheduledFor), nextRunAt: plan.run.scheduledFor, nextRunId: plan.run.runId }
      : { ...job, updatedAt: iso(now), ...passedSkips(job, now), nextRunAt: null, nextRunId: null, status: 'COMPLETED' };
    const result = await deps.jobs.replace(next, job, { newRuns: plan ? [plan] : [] });
    if (result === 'run-exists' && plan) {
      // Its id holds a run already: one not ended is the chain's, written ahead of a job write
      // that never landed; one ended (a skip the job no longer lists, or a run of it made) is
      // passed over, or the repair would fail at every tick.
      const existing = await deps.runs.get(plan.run.runId);
      if (existing === null || !isTerminal(existing.status)) return pointAtExisting(deps, job, plan.run.runId);
      scheduledFor = nextFireTimeAfter(job, Date.parse(existing.scheduledFor));
      continue;
    }
    if (result !== 'replaced') return false;
    await sendPlannedRun(deps, plan, now);
    logger.warn('repaired a job whose pending occurrence was lost', { jobId, tenantId: job.tenantId, lostRunId: job.nextRunId, nextRunAt: next.nextRunAt });
    return true;
  }
  return false;
}

/**
 * The repair planned an occurrence that is already written: the chain's successor whose job write
 * never landed (decision 0175), not yet due. The job is pointed at it, rather than the repair
 * failing at every tick until it comes due.
 */
async function pointAtExisting(deps: SchedulerDeps, job: Job, runId: string): Promise<boolean> {
  const existing = await deps.runs.get(runId);
  if (existing === null || isTerminal(existing.status) || (await adoptOccurrence(deps, job, existing, deps.clock())) === null) return false;
  // Its writer stopped between its put and the job's, before its send.
  await sendExisting(deps, existing, deps.clock());
  return true;
}

/**
 * The job's skipped fire times less those both in the past and before the occurrence the chain
 * moves to (`planned`): the chain is past them, and previews start from now. A chain catching up
 * (backfilling) keeps the past skips it has not reached, or it would plan them. Nothing when the
 * job has none.
 */
function passedSkips(job: Job, now: number, planned?: string): Pick<Job, 'skippedOccurrences'> {
  const from = planned === undefined ? now : Math.min(now, Date.parse(planned));
  return job.skippedOccurrences?.length ? { skippedOccurrences: skipsFrom(job.skippedOccurrences, from) } : {};
}

/**
 * The occurrence after one the chain planned and found ended under its id (a skip recorded after
 * the job was read, or a run of it already made): the job's next fire time after it, with the
 * backfill budget it had; null when the schedule has none.
 */
function pastEnded(job: Job, planned: Successor, ended: Run): Successor | null {
  const following = nextFireTimeAfter(job, Date.parse(ended.scheduledFor));
  if (following === null) return null;
  return { scheduledFor: following, ...(planned.backfillRemaining !== undefined ? { backfillRemaining: planned.backfillRemaining } : {}) };
}

/**
 * Under buffer-one, the occurrence waiting behind a run (or a scheduled workflow's run) may start
 * now: its message is sent at once rather than at its next look (within 30 s).
 */
export async function wakeBuffered(deps: SchedulerDeps, jobId: string, now: number): Promise<void> {
  const job = await deps.jobs.getAnyTenant(jobId);
  if (job?.overlapPolicy !== 'buffer-one') return;
  const pending = job.nextRunId ? await deps.runs.get(job.nextRunId) : null;
  if (pending?.status === 'QUEUED' && Date.parse(pending.availableAt) <= now) {
    await deps.dispatch.send([dispatchOfRun(pending, now)], now);
  }
}
