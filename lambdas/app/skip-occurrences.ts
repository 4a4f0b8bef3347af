// Skipping occurrences of a recurring job on request (POST /v1/jobs/{jobId}/skip): the next N, or
// fire times named one by one. The job keeps the skipped fire times its chain has not reached, so
// the chain plans over them (domain/schedule.ts, fireTimes); each is recorded as a SKIPPED run with
// who asked, as the chain would have written it (its run id, attempt 1).
import { mapWithConcurrency } from '../core/concurrency';
import { ConflictError, ValidationError } from '../core/errors';
import { logger } from '../core/logger';
import type { Job } from '../domain/job';
import { MAX_SKIPPED_OCCURRENCES } from '../domain/job';
import type { Run } from '../domain/run';
import { fireTimes, nextFireTimeAfter, skipReasonOf, skipsFrom } from '../domain/schedule';
import { isRecurring, seriesFireTimes } from '../domain/schedule-series';
import type { SkipRequest } from '../api/schemas';
import type { SchedulerDeps } from './deps';
import { mutateJob, touch } from './job-mutation';
import type { Mutation } from './job-mutation';
import { presentJob } from './jobs';
import type { JobView } from './jobs';
import { attemptFor } from './occurrence-chain';
import { planRun } from './plan-run';
import { budgetPassedOn } from './runs';
import { sendPlannedRun } from './send-planned-run';

const iso = (ms: number): string => new Date(ms).toISOString();
const RECORD_CONCURRENCY = 8;

/** The reason a skipped occurrence's run carries: that it was asked for, and by whom. */
export const skippedOnRequest = (actor: string): string => `skipped on request by ${actor}`;

/** The occurrence a job's chain is at: the pending one, the one a paused job resumes from, or none. */
function frontierOf(job: Job): number | null {
  if (job.nextRunAt) return Date.parse(job.nextRunAt);
  if (job.pausedPending) return Date.parse(job.pausedPending.scheduledFor);
  return null;
}

/**
 * Skips occurrences of a recurring ACTIVE or PAUSED job. `actor` names who asked (an API key's id,
 * or `admin`). Fire times already skipped are skipped once; an occurrence that has started is out
 * of reach (409 when named).
 */
export async function skipOccurrences(deps: SchedulerDeps, tenantId: string, jobId: string, request: SkipRequest, actor: string): Promise<JobView> {
  return presentJob(deps, await skipOccurrencesOf(deps, tenantId, jobId, request, actor));
}

/** The skip; answers the job as stored after (the API shows it with `presentJob`). */
export async function skipOccurrencesOf(deps: SchedulerDeps, tenantId: string, jobId: string, request: SkipRequest, actor: string): Promise<Job> {
  const reason = skippedOnRequest(actor);
  const before = await deps.jobs.get(tenantId, jobId);
  // Read with what its occurrence carries: a skipped catch-up occurrence's backfill budget goes on to the next one.
  const pendingRead = before?.nextRunId ? await deps.runs.withOccurrenceState(before.nextRunId) : null;
  const pending = pendingRead?.run ?? null;
  let newlySkipped: number[] = [];
  const job = await mutateJob(deps, tenantId, jobId, (current, now, ended): Mutation => {
    if (!isRecurring(current.schedule)) {
      throw new ConflictError(`The job's schedule (${current.schedule.kind}) has one occurrence; delete the job instead of skipping it`);
    }
    if (current.status !== 'ACTIVE' && current.status !== 'PAUSED') throw new ConflictError(`The job is ${current.status}; it has no occurrences to skip`);
    const frontier = frontierOf(current) ?? now;
    const wanted = request.next !== undefined ? fireTimes(current, frontier - 1, request.next) : occurrencesNamed(current, request.occurrences ?? [], frontier);
    const already = new Set((current.skippedOccurrences ?? []).map((at) => Date.parse(at)));
    newlySkipped = wanted.filter((at) => !already.has(at));
    // Skips in the past are dropped: the chain is past them (and previews start from now).
    const skipped = [...new Set([...skipsFrom(current.skippedOccurrences, Math.min(frontier, now)).map(Date.parse), ...wanted])].sort((a, b) => a - b);
    if (skipped.length > MAX_SKIPPED_OCCURRENCES) {
      throw new ValidationError('Invalid skip', [
        {
          path: request.next !== undefined ? 'next' : 'occurrences',
          message: `at most ${MAX_SKIPPED_OCCURRENCES} skipped occurrences may wait ahead of a job; ${skipped.length} would`,
        },
      ]);
    }
    const updated = touch(current, now, { skippedOccurrences: skipped.map(iso) });
    const frontierSkipped = wanted.includes(frontier) && frontierOf(current) !== null;
    if (!frontierSkipped) return { next: updated, afterCommit: () => record(newlySkipped, updated, now) };

    // The occurrence the chain is at is skipped: it moves on to the next one that fires.
    const following = nextFireTimeAfter(updated, frontier);
    if (current.status === 'PAUSED') {
      return {
        next: { ...updated, pausedPending: following === null ? null : { runId: null, scheduledFor: iso(following) } },
        afterCommit: () => record(newlySkipped, updated, now),
      };
    }
    const retiredId = current.nextRunId;
    if (following === null) {
      return {
        next: { ...updated, status: 'COMPLETED', nextRunAt: null, nextRunId: null },
        afterCommit: () => retireThenRecord(retiredId, updated, now),
      };
    }
    const plan = planRun(
      deps.config,
      updated,
      {
        scheduledFor: following,
        attempt: ended.attemptPast(jobId, following, attemptFor(following, pending)),
        trigger: 'schedule',
        chainedFrom: updated.nextRunId ?? null,
        // The budget of the pending run read, when it is still the one skipped (a race re-reads the job, not the run).
        ...(pending?.runId === current.nextRunId ? budgetPassedOn(pendingRead?.backfillRemaining, following, now) : {}),
      },
      now,
    );
    return {
      next: { ...updated, nextRunAt: plan.run.scheduledFor, nextRunId: plan.run.runId },
      plan,
      afterCommit: async () => {
        await retireThenRecord(retiredId, updated, now);
        await sendPlannedRun(deps, plan, now);
      },
    };
  });

  /** The pending run of the skipped occurrence ends SKIPPED; the others get a SKIPPED record. */
  async function retireThenRecord(runId: string | null, updated: Job, now: number): Promise<void> {
    if (runId && (await deps.runs.retirePending(runId, 'SKIPPED', reason, now))) {
      deps.telemetry.runEnded({ runId, tenantId, jobId, jobType: updated.type }, 'SKIPPED', reason);
    }
    await record(newlySkipped, updated, now);
  }

  /** A SKIPPED run for each skipped occurrence that has none yet (a conditional put each). */
  async function record(times: readonly number[], updated: Job, now: number): Promise<void> {
    await mapWithConcurrency(times, RECORD_CONCURRENCY, async (at) => {
      const skippedRun = skippedRunOf(planRun(deps.config, updated, { scheduledFor: at, attempt: 1, trigger: 'schedule', reason }, now).run, now);
      if (await deps.runs.create({ run: skippedRun, extras: {} })) deps.telemetry.runEnded(skippedRun, 'SKIPPED', reason);
    });
  }

  logger.info('occurrences skipped', { jobId, tenantId, skipped: newlySkipped.map(iso), actor });
  return job;
}

/** A run planned for an occurrence, recorded as ended SKIPPED: in no queue and no time index. */
function skippedRunOf(run: Run, now: number): Run {
  const at = iso(now);
  return { ...run, status: 'SKIPPED', enqueuedAt: null, finishedAt: at, updatedAt: at };
}

/** The fire times named, each checked: a fire time of the series that fires and has not started. */
function occurrencesNamed(job: Job, named: readonly string[], frontier: number): number[] {
  if (!isRecurring(job.schedule)) return [];
  const schedule = job.schedule;
  const errors = named.flatMap((text, index) => {
    const at = Date.parse(text);
    const path = `occurrences.${index}`;
    if (seriesFireTimes(schedule, at - 1, 1)[0] !== at) return [{ path, message: `${iso(at)} is not a fire time of the job's schedule` }];
    if (at < frontier) return [{ path, message: `${iso(at)} is before the job's next occurrence (${iso(frontier)}): it has started or passed` }];
    if (skipReasonOf({ schedule }, at) === 'excluded date') return [{ path, message: `${iso(at)} is on an excluded date: it never fires` }];
    return [];
  });
  if (errors.length > 0) throw new ValidationError('Invalid skip', errors);
  return [...new Set(named.map(Date.parse))].sort((a, b) => a - b);
}
