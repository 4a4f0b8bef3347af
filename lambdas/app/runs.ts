// Use cases on runs: cancel, replay (one, or in bulk from the dead runs), and the dead-run list.
import { traceIdOf } from '../domain/trace-context';
import { ConflictError, NotFoundError, TooManyRequestsError } from '../core/errors';
import { logger } from '../core/logger';
import type { Run, RunStatus } from '../domain/run';
import { isTerminal, occurrenceKey } from '../domain/run';
import type { TenantLimits } from '../domain/tenant';
import { nextFireTimeAfter } from '../domain/schedule';
import type { Page } from '../store/page';
import type { BulkReplayRequest, DeadQuery } from '../api/schemas';
import type { SchedulerDeps } from './deps';
import { admitRunRequest } from './create-rate';
import { advanceChain } from './occurrence-chain';
import { discardPayload, ownCopyOf } from './payloads';
import { planRun } from './plan-run';
import { sendPlannedRun } from './send-planned-run';
import { continueWorkflow } from './workflow-progress';
import { EFFECT_KEPT_SLACK_MS } from '../domain/retention';

/** The tenant's run, or a 404 (another tenant's run is not found either). */
export async function tenantRun(deps: SchedulerDeps, tenantId: string, runId: string): Promise<Run> {
  const run = await deps.runs.get(runId);
  if (!run || run.tenantId !== tenantId) throw new NotFoundError(`No run ${runId}`);
  return run;
}

/**
 * A waiting run never starts; a running one is marked CANCELLED at once and its worker aborts the
 * target call at its next heartbeat (its outcome is fenced off). A finished run is a 409, and only a
 * finished one: a run that moved between waiting and running since it was read (a worker leased it,
 * or gave its lease back) is cancelled from where it is now.
 */
export async function cancelRun(deps: SchedulerDeps, tenantId: string, runId: string): Promise<Run> {
  return (await cancelRunOf(deps, tenantId, runId)).run;
}

/** A cancel that says whether it ended the run (`cancelled`) and the status it ended it from. */
export async function cancelRunOf(
  deps: SchedulerDeps,
  tenantId: string,
  runId: string,
): Promise<{ readonly run: Run; readonly cancelled: boolean; readonly previousStatus: RunStatus }> {
  const now = deps.clock();
  const reason = 'cancelled by request';
  // Read with what its occurrence carries: a pending catch-up run's backfill budget goes on to its successor.
  const read = await deps.runs.withOccurrenceState(runId);
  if (!read || read.run.tenantId !== tenantId) throw new NotFoundError(`No run ${runId}`);
  const { from: run, cancelled, after } = await cancelWhereItIs(deps, tenantId, read.run, now, reason);
  if (cancelled) {
    deps.telemetry.runEnded(run, 'CANCELLED', reason, { previousStatus: run.status });
    // A workflow step's run: its step ends CANCELLED and its dependants are decided.
    await continueWorkflow(deps, run, { status: 'CANCELLED', reason });
  }
  if (!cancelled && after.status !== 'CANCELLED') {
    if (!isTerminal(after.status)) throw new TooManyRequestsError(`The run kept changing status (${after.status} now) while being cancelled; try again`, 1);
    throw new ConflictError(`The run is ${after.status}; only a run that has not finished can be cancelled`);
  }
  // A cancelled pending occurrence must not stop the schedule: the chain moves on past it.
  if (cancelled && run.trigger === 'schedule' && run.status !== 'RUNNING') {
    // A workflow's schedule job too: a cancelled occurrence of a scheduled workflow moves its chain on.
    const job = await deps.jobs.getForRun(tenantId, run.jobId);
    if (job?.nextRunId === runId && job.status === 'ACTIVE') {
      const next = nextFireTimeAfter(job, Date.parse(run.scheduledFor));
      await advanceChain(deps, job, run, next === null ? null : { scheduledFor: next, ...budgetPassedOn(read.backfillRemaining, next, now) }, false, now);
    }
  }
  return { run: after, cancelled, previousStatus: run.status };
}

/**
 * The backfill budget a cancelled (or skipped on request) catch-up occurrence passes to the one
 * after it: the budget it had, unspent, as it did not run (decision 0012 caps the missed
 * occurrences that run), never more; without it the successor's admission would start a fresh
 * budget, and more than `backfillLimit` missed occurrences would run. Only while the successor is
 * missed too (due by `now`), as a catch-up run that starts passes it on (`decideStart`): past the
 * outage, a budget kept would cut short the catch-up of a later one.
 */
export function budgetPassedOn(backfillRemaining: number | undefined, next: number, now: number): { backfillRemaining?: number } {
  return backfillRemaining !== undefined && next <= now ? { backfillRemaining } : {};
}

/**
 * The cancel's write for the status the run was read in (running, or waiting), tried again from
 * where it is now while the write fails on a run that has not finished: a worker leased it, or gave
 * its lease back, in between. `from`: the run as read before the write that decided; `after`: as it is.
 */
async function cancelWhereItIs(
  deps: SchedulerDeps,
  tenantId: string,
  read: Run,
  now: number,
  reason: string,
): Promise<{ readonly from: Run; readonly cancelled: boolean; readonly after: Run }> {
  for (let tries = 1, from = read; ; tries++) {
    const cancelled =
      from.status === 'RUNNING'
        ? await deps.leases.cancelRunning(from.runId, now, reason)
        : await deps.runs.retirePending(from.runId, 'CANCELLED', reason, now);
    const after = await tenantRun(deps, tenantId, from.runId);
    if (cancelled || isTerminal(after.status) || tries >= CANCEL_TRIES) return { from, cancelled, after };
    from = after;
  }
}

/**
 * Writes a cancel tries before it answers a 429: a run that keeps moving between waiting and running
 * (each move a worker's lease or give-back) more than a few times within one cancel is contended.
 */
const CANCEL_TRIES = 4;

/** A new run of the same occurrence, with a fresh retry budget; counted against the tenant's create rate. */
export async function replayRun(
  deps: SchedulerDeps,
  tenantId: string,
  runId: string,
  limits: TenantLimits = deps.config.tenantDefaults,
  traceparent?: string,
): Promise<Run> {
  const original = await tenantRun(deps, tenantId, runId);
  if (!isTerminal(original.status)) throw new ConflictError(`The run is ${original.status}; only a finished run can be replayed`);
  const job = await deps.jobs.getForRun(tenantId, original.jobId);
  if (!job) throw new NotFoundError(`The job ${original.jobId} of this run no longer exists`);
  if (job.status === 'CANCELLED') throw new ConflictError('The job of this run is CANCELLED');
  // Replayed already: answered before the create rate is spent on it (a bulk replay meets such runs
  // in the dead-run index, which is read eventually).
  if (original.replayedAs) throw new ConflictError('The run was replayed already');
  const now = deps.clock();
  await admitRunRequest(deps, tenantId, limits, now);
  const attempt = original.attempt + 1;
  // A replay is given what the run was: a workflow step's inputs (its parents' results then), a
  // trigger's own payload.
  const { payload: givenPayload, ...given } = await deps.runs.givenTo(original.runId);
  const ownPayload = await ownCopyOf(deps, job, givenPayload);
  const plan = planRun(
    deps.config,
    job,
    {
      scheduledFor: Date.parse(original.scheduledFor),
      attempt,
      trigger: 'replay',
      availableAt: now,
      traceparent,
      ...given,
      ...(ownPayload !== undefined ? { payload: ownPayload } : {}),
    },
    now,
  );
  const replay = { ...plan, extras: { ...plan.extras, budgetFrom: attempt } };
  // Exactly-once: the occurrence's recorded effect is kept while this replay may run and be replayed
  // itself (a day's slack for its wait), so that it ends SKIPPED rather than call the target again.
  // The copy made for it is deleted when the replay was refused (nothing names it); after a store
  // error the replay may have been written (a timed-out request), and the copy stays (the bucket's
  // lifecycle takes it if nothing names it).
  const copy = ownPayload !== givenPayload && ownPayload && 'ref' in ownPayload ? ownPayload.ref : undefined;
  if (plan.run.delivery === 'exactly-once') await deps.leases.keepEffect(occurrenceKey(original.jobId, original.scheduledFor), now, EFFECT_KEPT_SLACK_MS);
  if (!(await deps.deadRuns.replay(original, replay, now))) {
    await discardPayload(deps, copy);
    // Gone since it was read (its retention ended): a 404, as for any run no longer stored.
    await tenantRun(deps, tenantId, runId);
    throw new ConflictError(`The run was replayed already`);
  }
  deps.telemetry.runCreated(plan.run);
  // The replay is written (and the original marked replayed): a failed send is the ticker's to
  // make good, not the client's to retry, whose retry would find the run replayed already.
  await sendPlannedRun(deps, plan, now);
  logger.info('run replayed', { runId, replayRunId: plan.run.runId, jobId: job.jobId, tenantId, traceId: traceIdOf(plan.run.traceparent) });
  return plan.run;
}

export async function listDeadRuns(deps: SchedulerDeps, tenantId: string, query: DeadQuery): Promise<Page<Run>> {
  return deps.deadRuns.list(tenantId, query.limit, { jobId: query.jobId, from: query.from, to: query.to }, query.cursor);
}

/**
 * Replays the tenant's dead runs of a job and/or a time range, up to `limit` per call. Each replay
 * counts against the tenant's create rate: past it the call stops with what it replayed and
 * `remaining: true`, or answers 429 when it could replay none. An error of the store after some
 * replays stops it the same way: those are written, and the answer (with their audit entries) must
 * name them; the caller's next call goes on. `replayedFrom[i]` is the dead run `replayed[i]`
 * replays (for the audit; the API answers without it).
 */
export async function replayDeadRuns(
  deps: SchedulerDeps,
  tenantId: string,
  request: BulkReplayRequest,
  limits: TenantLimits = deps.config.tenantDefaults,
  traceparent?: string,
): Promise<{ replayed: Run[]; replayedFrom: string[]; remaining: boolean; until: string }> {
  // Only runs that died before the call (or before the first call of a loop, passed back as `to`):
  // a replay that died again since would be taken again, newest first, and the older dead runs
  // never reached.
  const until = new Date(Math.min(deps.clock(), request.to ? Date.parse(request.to) : Infinity)).toISOString();
  const filter = { jobId: request.jobId, from: request.from, to: until };
  const replayed: Run[] = [];
  const replayedFrom: string[] = [];
  // Dead runs that cannot be replayed (their job deleted) stay in the index: the call reads on past
  // them, a bounded number of pages, rather than stop at the first page with nothing replayed.
  let cursor: string | undefined;
  try {
    for (let pages = 0; pages < BULK_REPLAY_MAX_PAGES; pages++) {
      const page = await deps.deadRuns.list(tenantId, BULK_REPLAY_PAGE_SIZE, filter, cursor);
      for (const dead of page.items) {
        if (replayed.length >= request.limit) return { replayed, replayedFrom, remaining: true, until };
        try {
          replayed.push(await replayRun(deps, tenantId, dead.runId, limits, traceparent));
          replayedFrom.push(dead.runId);
        } catch (error) {
          // Replayed meanwhile, or its job deleted: leave it.
          if (!(error instanceof ConflictError || error instanceof NotFoundError)) throw error;
        }
      }
      if (page.nextCursor === null) return { replayed, replayedFrom, remaining: false, until };
      cursor = page.nextCursor;
    }
  } catch (error) {
    // Past the create rate (a 429), or the store failing: with nothing replayed, the error is the answer.
    if (replayed.length === 0) throw error;
    if (!(error instanceof TooManyRequestsError)) {
      logger.warn('bulk replay stopped by an error; answering with the runs it replayed', {
        tenantId,
        replayed: replayed.length,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
  return { replayed, replayedFrom, remaining: true, until };
}

/** Dead runs a bulk replay reads per page, and pages per call (1,000 runs at most). */
const BULK_REPLAY_PAGE_SIZE = 100;
const BULK_REPLAY_MAX_PAGES = 10;
