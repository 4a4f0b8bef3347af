// Backfills by request (issue 19 item 6): POST /v1/jobs/{jobId}/backfill writes a backfill over a
// range of the job's cron fire times; the ticker releases each active one at a bounded rate, a page
// per tick, oldest first: it writes the page's runs (the chain's own run ids, each a conditional
// put, so an occurrence that has a run keeps it) and then moves the backfill's cursor by
// compare-and-swap. A ticker that dies between the two writes the same page again next tick, and
// the puts find their runs written. Every run a backfill releases joins the trace of the request
// that asked for it (decision 0118).
import { NotFoundError, ConflictError, TooManyRequestsError } from '../core/errors';
import { mapWithConcurrency } from '../core/concurrency';
import { logger } from '../core/logger';
import type { Backfill, BackfillView } from '../domain/backfill';
import { backfillIdOf, checkBackfillRange, nextFireTimes, releaseShare } from '../domain/backfill';
import type { Job } from '../domain/job';
import type { TenantLimits } from '../domain/tenant';
import type { RecurringSchedule } from '../domain/schedule-series';
import { earliestBackfillFrom, earliestReleasable } from '../domain/retention';
import { traceIdOf } from '../domain/trace-context';
import type { SchedulerDeps } from './deps';
import type { RunPlan } from './plan-run';
import { planRun } from './plan-run';

/** Run writes of one backfill page in flight at once. */
const WRITE_CONCURRENCY = 16;
/** A tick's released runs are spread over this long (the ticker's period), not sent in one burst. */
const SPREAD_MS = 60_000;

export interface BackfillRequest {
  readonly from: string;
  readonly to: string;
}

/** Writes a backfill (or finds the same range's); answers it with its count of fire times. */
export async function requestBackfill(
  deps: SchedulerDeps,
  tenantId: string,
  jobId: string,
  request: BackfillRequest,
  limits: TenantLimits = deps.config.tenantDefaults,
  traceparent?: string,
): Promise<{ created: boolean; backfill: Backfill }> {
  const job = await deps.jobs.get(tenantId, jobId);
  if (!job) throw new NotFoundError(`No job ${jobId}`);
  const from = Date.parse(request.from);
  const to = Date.parse(request.to);
  const backfillId = backfillIdOf(jobId, from, to);
  const existing = await deps.backfills.get(jobId, backfillId);
  if (existing) return { created: false, backfill: existing };
  if (job.status === 'CANCELLED' || job.status === 'PAUSED') throw new ConflictError(`The job is ${job.status}; its backfilled runs would not run`);

  const now = deps.clock();
  const { maxActiveBackfills } = limits;
  if (maxActiveBackfills !== null && (await deps.backfills.activeCount(tenantId)) >= maxActiveBackfills) {
    throw new TooManyRequestsError(`This tenant has ${maxActiveBackfills} active backfills, its limit; wait for one to end`, 60);
  }
  const { total } = checkBackfillRange(job.schedule, from, to, frontierOf(job, now), earliestBackfillFrom(now, deps.config.runRetentionDays));
  const at = new Date(now).toISOString();
  const backfill: Backfill = {
    backfillId,
    jobId,
    tenantId,
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    schedule: job.schedule as RecurringSchedule,
    total,
    released: 0,
    cursor: from - 1,
    status: total === 0 ? 'DONE' : 'ACTIVE',
    createdAt: at,
    updatedAt: at,
    version: 0,
    ...(traceparent ? { traceparent } : {}),
  };
  const result = await deps.backfills.create(backfill, now);
  if (result.created) {
    logger.info('backfill requested', { jobId, tenantId, backfillId, traceId: traceIdOf(traceparent), from: backfill.from, to: backfill.to, total });
  }
  return result;
}

export async function getBackfill(deps: SchedulerDeps, tenantId: string, jobId: string, backfillId: string): Promise<Backfill> {
  const backfill = await deps.backfills.get(jobId, backfillId);
  if (!backfill || backfill.tenantId !== tenantId) throw new NotFoundError(`No backfill ${backfillId} of job ${jobId}`);
  return backfill;
}

/**
 * The earliest occurrence the job's chain may still write: its pending occurrence, the one a
 * paused job resumes from, or now. Backfilled runs end before it, so the chain's compare-and-swap
 * never finds a successor it did not write.
 */
function frontierOf(job: Job, now: number): number {
  const pending = job.nextRunAt ?? job.pausedPending?.scheduledFor;
  return Math.min(now, pending ? Date.parse(pending) : now);
}

/** A backfill as the API shows it: its range and progress, not its bookkeeping. */
export function backfillView(backfill: Backfill): BackfillView {
  const { backfillId, jobId, from, to, total, released, status, createdAt, updatedAt } = backfill;
  return { backfillId, jobId, from, to, total, released, status, createdAt, updatedAt };
}

/** The ticker's part: each active backfill releases its share of the tick's budget. Returns how many fire times were released. */
export async function releaseBackfills(deps: SchedulerDeps, now: number, deadline = Number.POSITIVE_INFINITY): Promise<number> {
  const active = await deps.backfills.active();
  if (active.length === 0) return 0;
  const budget = deps.config.backfillReleasePerTick;
  const share = releaseShare(budget, active.length);
  // The tick's budget holds however many backfills are active: past it, a rotating set of them
  // releases this minute (each gets its turn in later minutes), and none past the deadline, which
  // leaves the tick time to record itself. One tenant's thousand backfills cannot stall the tick.
  const first = Math.floor(now / 60_000) % active.length;
  const turn = [...active.slice(first), ...active.slice(0, first)];
  let released = 0;
  for (const backfill of turn) {
    if (released >= budget || Date.now() >= deadline) break;
    try {
      released += await releasePage(deps, backfill, Math.min(share, budget - released), now);
    } catch (error) {
      // One backfill the store fails on must not hold up the others; its cursor stays.
      logger.error('a backfill page could not be released; tried again next tick', {
        backfillId: backfill.backfillId,
        jobId: backfill.jobId,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
  return released;
}

async function releasePage(deps: SchedulerDeps, backfill: Backfill, share: number, now: number): Promise<number> {
  const job = await deps.jobs.getAnyTenant(backfill.jobId);
  if (job?.status === 'PAUSED') return 0; // waits for the resume
  const fireTimes = job && job.status !== 'CANCELLED' ? nextFireTimes(backfill.schedule, backfill.cursor, Date.parse(backfill.to), share) : [];
  // A fire time as old as the runs' retention may have had its run already, gone since with the
  // retention: written again under its id, it would run a second time. The request refused such a
  // range; a backfill that waited since (its job paused) passes over what has aged past it.
  const earliest = earliestReleasable(now, deps.config.runRetentionDays) ?? Number.NEGATIVE_INFINITY;
  const releasable = fireTimes.filter((scheduledFor) => scheduledFor >= earliest);
  if (releasable.length < fireTimes.length) {
    logger.warn('backfill fire times aged past the runs retention while it waited; passed over', {
      backfillId: backfill.backfillId,
      jobId: backfill.jobId,
      tenantId: backfill.tenantId,
      passedOver: fireTimes.length - releasable.length,
    });
  }
  const plans = job
    ? releasable.map((scheduledFor, i) =>
        planRun(
          deps.config,
          job,
          {
            scheduledFor,
            attempt: 1,
            trigger: 'schedule',
            availableAt: now + Math.floor((i * SPREAD_MS) / Math.max(1, releasable.length)),
            reason: `backfill ${backfill.backfillId}`,
            // One trace for the backfill's runs, as for a bulk replay's; an older backfill without one gives each run its own.
            traceparent: backfill.traceparent,
          },
          now,
        ),
      )
    : [];
  const written = (await mapWithConcurrency(plans, WRITE_CONCURRENCY, async (plan) => ((await deps.runs.create(plan)) ? plan : null))).filter(
    (plan): plan is RunPlan => plan !== null,
  );
  // The runs are stored QUEUED with a check-back: a send lost here is sent again by a later tick.
  const dispatches = written.flatMap((plan) => (plan.dispatch ? [plan.dispatch] : []));
  // A message's delay counts from its send, not from the tick's start: this page is released well
  // into the tick (after the index's release, resumes, repairs and earlier pages), and a delay from
  // `now` would start each run that much late.
  for (let i = 0; i < dispatches.length; i += 10) await deps.dispatch.send(dispatches.slice(i, i + 10), deps.clock());
  for (const plan of written) deps.telemetry.runCreated(plan.run);

  const last = fireTimes[fireTimes.length - 1];
  // Done when the page fell short of its share (the range ran out) or the job is gone.
  const done = !job || job.status === 'CANCELLED' || fireTimes.length < share;
  const moved = await deps.backfills.advance(backfill, { cursor: last ?? backfill.cursor, released: releasable.length, done }, now);
  if (!moved) return 0; // another ticker recorded this page
  logger.info('backfill page released', {
    backfillId: backfill.backfillId,
    jobId: backfill.jobId,
    tenantId: backfill.tenantId,
    traceId: traceIdOf(backfill.traceparent),
    released: releasable.length,
    written: written.length,
    done,
  });
  return releasable.length;
}
