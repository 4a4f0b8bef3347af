// The occurrence chain of a recurring job: it moves on when its pending occurrence starts (or is
// cancelled), each successor written in the same transaction as the job that points at it, and the
// ticker repairs a chain whose pending run was lost.
import { logger } from '../core/logger';
import type { Job } from '../domain/job';
import type { Successor } from '../domain/recurrence';
import type { Run } from '../domain/run';
import { isTerminal } from '../domain/run';
import { nextFireTimeAfter, skipsFrom } from '../domain/schedule';
import type { SchedulerDeps } from './deps';
import { planRun } from './plan-run';
import { sendPlannedRun } from './send-planned-run';
import { batchCoalesce } from './batch-coalesce';

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
 * Moves the chain of a recurring job on when its pending occurrence starts: the job points at the
 * successor, which is written in the same transaction. Returns false when the job had already
 * moved on (a PATCH, pause or another worker got there first).
 */
export async function advanceChain(deps: SchedulerDeps, job: Job, started: Run, successor: Successor | null, executes: boolean, now: number): Promise<boolean> {
  let current: Job | null = job;
  for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS && current; attempt++) {
    if (current.status !== 'ACTIVE' || current.nextRunId !== started.runId) return false;
    const plan = successor
      ? planRun(
          deps.config,
          current,
          {
            scheduledFor: successor.scheduledFor,
            attempt: 1,
            trigger: 'schedule',
            ...(successor.backfillRemaining !== undefined ? { backfillRemaining: successor.backfillRemaining } : {}),
          },
          now,
        )
      : undefined;
    const next: Job = {
      ...current,
      updatedAt: iso(now),
      ...passedSkips(current, now),
      lastStartedRunId: executes ? started.runId : (current.lastStartedRunId ?? null),
      ...(plan ? { nextRunAt: plan.run.scheduledFor, nextRunId: plan.run.runId } : { nextRunAt: null, nextRunId: null, status: 'COMPLETED' as const }),
    };
    const result = await deps.jobs.replace(next, current, { newRuns: plan ? [plan] : [] });
    if (result === 'replaced') {
      if (plan) deps.telemetry.runCreated(plan.run);
      // The successors of a batch's runs share a SendMessageBatch (decision 0160).
      await sendPlannedRun(deps, plan, now, { coalesce: batchCoalesce(deps.config) });
      return true;
    }
    if (result === 'run-exists' && plan) {
      // The successor was already written (a resume or a repair planned the same occurrence):
      // point the job at it without writing it again.
      const existing = await deps.runs.get(plan.run.runId);
      if (existing && !isTerminal(existing.status)) {
        const pointed = await deps.jobs.replace(next, current);
        if (pointed === 'replaced') return true;
      }
    }
    current = await deps.jobs.getAnyTenant(job.jobId);
  }
  return false;
}

/**
 * The ticker's repair of a job whose pending occurrence is long overdue and whose run is gone
 * or ended without starting the chain's next occurrence: the chain resumes from now.
 */
export async function repairChain(deps: SchedulerDeps, jobId: string, overdueBefore: number): Promise<boolean> {
  const job = await deps.jobs.getAnyTenant(jobId);
  if (!job || job.status !== 'ACTIVE' || !job.nextRunAt || Date.parse(job.nextRunAt) >= overdueBefore) return false;
  const run = await pendingRun(deps, job);
  if (run && !isTerminal(run.status)) return false; // waiting or running: the time index covers it
  const now = deps.clock();
  const pendingAt = Date.parse(job.nextRunAt);
  // A missing run is planned again for its occurrence; an ended one hands over to the next.
  const scheduledFor = run ? nextFireTimeAfter(job, now) : pendingAt;
  const plan =
    scheduledFor === null
      ? undefined
      : planRun(
          deps.config,
          job,
          { scheduledFor, attempt: attemptFor(scheduledFor, run), trigger: 'schedule', reason: 'repaired: the pending occurrence was lost' },
          now,
        );
  const next: Job = plan
    ? { ...job, updatedAt: iso(now), ...passedSkips(job, now), nextRunAt: plan.run.scheduledFor, nextRunId: plan.run.runId }
    : { ...job, updatedAt: iso(now), ...passedSkips(job, now), nextRunAt: null, nextRunId: null, status: 'COMPLETED' };
  const result = await deps.jobs.replace(next, job, { newRuns: plan ? [plan] : [] });
  if (result !== 'replaced') return false;
  await sendPlannedRun(deps, plan, now);
  logger.warn('repaired a job whose pending occurrence was lost', { jobId, tenantId: job.tenantId, lostRunId: job.nextRunId, nextRunAt: next.nextRunAt });
  return true;
}

/**
 * The job's skipped fire times less those in the past (the chain is past them, and previews start
 * from now); nothing when it has none.
 */
function passedSkips(job: Job, now: number): Pick<Job, 'skippedOccurrences'> {
  return job.skippedOccurrences?.length ? { skippedOccurrences: skipsFrom(job.skippedOccurrences, now) } : {};
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
    await deps.dispatch.send(
      [
        {
          runId: pending.runId,
          tenantId: pending.tenantId,
          availableAt: now,
          jobType: pending.jobType,
          priority: pending.priority,
          traceparent: pending.traceparent,
        },
      ],
      now,
    );
  }
}
