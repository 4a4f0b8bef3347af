// The ticker: once a minute it walks the time index from its cursor to the horizon. Runs waiting
// far ahead (SCHEDULED) that fall inside the horizon are sent with their exact remaining delay
// and marked QUEUED; queued runs still unleased after the redelivery grace had their message lost
// and are sent again; leased runs whose lease ended unrenewed (a lost worker, whatever became of
// its message) are sent for recovery, and those whose lease heartbeats extended have their
// check-back moved to the lease's end. Every write is conditional, so two tickers at once change
// nothing more than one.
import { traceIdOf } from '../domain/trace-context';
import { runFields } from './run-log';
import { mapWithConcurrency } from '../core/concurrency';
import { logger } from '../core/logger';
import { checkLease, firstCheckAt, minuteBuckets, queuedCheck } from '../domain/time-gate';
import type { SchedulerDeps } from './deps';
import { releaseBackfills } from './backfills';
import { repairChain } from './occurrence-chain';
import { resumeWhenDue } from './pause-resume';
import { repairWorkflowRun } from './workflow-repair';
import { NEXT_RUN_SHARDS } from '../store/schema';
import type { TimeIndexEntry } from '../store/time-index';
import type { Run, RunStatus } from '../domain/run';

/** When the ticker has no cursor yet, it starts this far back. */
const FIRST_LOOKBACK_MS = 15 * 60_000;
const QUERY_CONCURRENCY = 8;
/** Conditional writes of one page in flight at once (markQueued, check-back moves). */
const WRITE_CONCURRENCY = 16;
/**
 * How long a tick may spend releasing before it stops taking new pages. The ticker function's
 * timeout is 50 s; the rest is for the page in hand, the chain repairs and recording the tick.
 */
const RELEASE_BUDGET_MS = 30_000;
/** Backfills release until this long into the tick, leaving time to record it within the timeout. */
const BACKFILL_DEADLINE_MS = 40_000;
/**
 * Chain and workflow repairs and timed resumes start until this long into the tick: the jobs the
 * byNextRun index finds overdue include healthy ones that wait long (behind a running occurrence,
 * for a slot or a key), each read at every tick, and thousands of them must not keep the tick from
 * recording its cursor. Resumes go first; repairs start from a random place in the list, so that
 * those not reached by one tick are reached by the ticks after it.
 */
const REPAIR_DEADLINE_MS = 38_000;
/** Repairs (and resumes) in flight at once: each reads a job and its run before it writes anything. */
const REPAIR_CONCURRENCY = 8;

export interface TickReport {
  readonly buckets: number;
  readonly released: number;
  /** Messages sent again: for queued runs whose message was lost, and for lapsed leases. */
  readonly redelivered: number;
  /** Of those, leases found ended unrenewed (lost workers), sent for recovery. */
  readonly lapsedLeases: number;
  /** Lease check-backs found early (heartbeats extended the lease) and moved to the lease's end. */
  readonly leaseChecksMoved: number;
  /** Jobs whose chain, and workflow runs whose progress, had stopped and were repaired. */
  readonly repairedJobs: number;
  /** Fire times of backfills released by this tick (issue 19 item 6). */
  readonly backfilled: number;
  /** Jobs paused until a time that had come, resumed by this tick (issue 19 item 7). */
  readonly resumed: number;
  /** Chain and workflow run repairs and resumes that threw: logged, skipped, tried again next tick. */
  readonly failedRepairs: number;
  readonly lagMs: number;
  /** False when the release budget ran out: the cursor stays, and the next tick goes on from it. */
  readonly complete: boolean;
  /**
   * Partitions of the time index that could not be worked through (an item the store fails to
   * return, or a store error while releasing): skipped, logged and counted; the cursor stays at the
   * earliest, so nothing in them is passed over.
   */
  readonly unreadable: number;
}

export interface TickOptions {
  /** The release budget (tests make it small). */
  readonly budgetMs?: number;
  /** Entries per page of the time index (DynamoDB's 1 MB when absent). */
  readonly pageSize?: number;
  /** How long into the tick repairs and resumes may start (tests make it small). */
  readonly repairBudgetMs?: number;
}

export async function tick(deps: SchedulerDeps, scheduledAt?: number, options: TickOptions = {}): Promise<TickReport> {
  const now = deps.clock();
  const startedAt = Date.now();
  const deadline = startedAt + (options.budgetMs ?? RELEASE_BUDGET_MS);
  const { config } = deps;
  const horizon = now + config.tickerHorizonSeconds * 1000;
  const state = await deps.state.ticker();
  const from = state.cursor ?? now - FIRST_LOOKBACK_MS;

  const buckets = minuteBuckets(from, horizon);
  // Every shard the index was ever written with: a lowered TIME_INDEX_SHARDS leaves entries in the
  // shards above it, which must still be read.
  const shards = Math.max(config.timeIndexShards, state.shards ?? 0);
  const partitions = buckets.flatMap((bucket) => Array.from({ length: shards }, (_, shard) => ({ bucket, shard })));

  let released = 0;
  let redelivered = 0;
  let lapsedLeases = 0;
  let leaseChecksMoved = 0;
  let pagesDone = 0;
  let complete = true;
  let unreadable = 0;
  let earliestUnreadable = Infinity;
  /** Partitions worked through to their end, empty ones included. */
  let partitionsDone = 0;
  /** The earliest minute with a partition this tick left unfinished (out of budget). */
  let earliestUnfinished = Infinity;

  // Each page is worked through as it is read: its runs sent, then marked. A page sent and not
  // yet marked when the function dies is sent again by the next tick, which the lease tolerates
  // (it accepts a SCHEDULED run once); marked runs have left the page's partition, so every tick
  // makes progress even when a minute holds more than one tick can release.
  const releasePage = async (entries: readonly TimeIndexEntry[]): Promise<void> => {
    // The index holds no status (decision 0171): an entry at its run's own time is a run waiting
    // for it, every check-back is later. Those and the check-backs that have come are read, and
    // handled by the run's status as read now (consistently): a lease may keep the entry a queued
    // run had (decision 0170). The read also gives the priority (the lane) and a lease's end.
    const toRead = entries.filter((entry) => entry.gateAt === entry.availableAt || Date.parse(entry.gateAt) <= now);
    const runs = await runsOf(
      deps,
      toRead.map((entry) => entry.runId),
    );
    const inStatus = (status: RunStatus) => (entry: TimeIndexEntry) => runs.get(entry.runId)?.status === status;
    const toRelease = toRead.filter(inStatus('SCHEDULED'));
    const checks = toRead.filter((entry) => Date.parse(entry.gateAt) <= now);
    const queued = checks.filter(inStatus('QUEUED'));
    const lapsed = checks.filter(inStatus('RUNNING'));
    const priorities = new Map([...runs].flatMap(([runId, run]) => (run.priority ? [[runId, run.priority] as const] : [])));
    const dispatchOf = (entry: TimeIndexEntry) => ({
      runId: entry.runId,
      tenantId: entry.tenantId,
      availableAt: Date.parse(entry.availableAt),
      jobType: entry.jobType,
      priority: priorities.get(entry.runId),
      // The run's trace goes with its message (X-Ray's AWSTraceHeader, decision 0111).
      traceparent: runs.get(entry.runId)?.traceparent,
    });
    if (toRelease.length > 0) {
      // Delayed from when they are sent, not from the tick's start: a page worked late in the tick
      // would arrive that much after its time.
      const sentAt = deps.clock();
      await deps.dispatch.send(toRelease.map(dispatchOf), sentAt);
      await mapWithConcurrency(toRelease, WRITE_CONCURRENCY, async (entry) => {
        const next = firstCheckAt(Date.parse(entry.availableAt), sentAt, config);
        if (await deps.timeIndex.markQueued(entry.runId, sentAt, next, config.timeIndexShards)) {
          released++;
          deps.telemetry.runQueued({ ...entry, traceparent: runs.get(entry.runId)?.traceparent });
        }
      });
    }

    await mapWithConcurrency(queued, WRITE_CONCURRENCY, async (entry) => {
      const check = queuedCheck(runs.get(entry.runId)!, now, config);
      if (check.kind === 'early') {
        // Its first check-back (decision 0170): queued for less than the grace, its message may still
        // be on its way. Looked at again when the grace ends; nothing is sent.
        await deps.timeIndex.moveCheckBack(entry.runId, entry.gateAt, check.checkAt, config.timeIndexShards);
        return;
      }
      // Claim the redelivery first so that a second ticker does not send it again.
      const next = now + config.redeliveryGraceSeconds * 1000;
      if (await deps.timeIndex.moveCheckBack(entry.runId, entry.gateAt, next, config.timeIndexShards)) {
        await deps.dispatch.send([dispatchOf(entry)], now);
        logger.warn('queued run was not leased within the grace; message sent again', {
          runId: entry.runId,
          jobId: entry.jobId,
          tenantId: entry.tenantId,
          traceId: traceIdOf(runs.get(entry.runId)?.traceparent),
        });
        redelivered++;
      }
    });

    // Leases whose check-back has passed (decision 0065). One that heartbeats extended gets its
    // check-back moved to its end, and nothing is sent. One that ended unrenewed had its worker
    // lost: the recovery is claimed by moving the check-back past it (so that a second ticker does
    // not send it too, and a lost message is sent again after the grace), then a message lets a
    // worker find the lease expired and record the attempt as lost (and retry it with its
    // checkpoint). Each write is fenced by the lease's version as read.
    await mapWithConcurrency(lapsed, WRITE_CONCURRENCY, async (entry) => {
      const run = runs.get(entry.runId);
      const check = checkLease(run, now);
      if (!run || check.kind === 'gone') return; // finished since the index was read; its outcome removed the entry
      if (check.kind === 'live') {
        if (await deps.timeIndex.moveLeaseCheck(entry.runId, run.version, entry.gateAt, check.checkAt, config.timeIndexShards)) leaseChecksMoved++;
        return;
      }
      const next = now + config.redeliveryGraceSeconds * 1000;
      if (await deps.timeIndex.moveLeaseCheck(entry.runId, run.version, entry.gateAt, next, config.timeIndexShards)) {
        await deps.dispatch.send([{ ...dispatchOf(entry), availableAt: now }], now);
        logger.warn('a lease ended unrenewed (its worker was lost); sent for recovery', {
          ...runFields(run),
          leaseOwner: run.leaseOwner,
          leaseExpiresAt: run.leaseExpiresAt,
        });
        redelivered++;
        lapsedLeases++;
      }
    });
  };

  const stop = (bucket: number): void => {
    complete = false;
    earliestUnfinished = Math.min(earliestUnfinished, bucket);
  };
  await mapWithConcurrency(partitions, QUERY_CONCURRENCY, async ({ bucket, shard }) => {
    // Out of budget: the partitions not yet begun wait for the next tick. The budget counts empty
    // partitions too: a tick after hours of backlog reads thousands of them (at least one partition
    // per tick, so that a tick always gets somewhere).
    if (!complete || (partitionsDone > 0 && Date.now() >= deadline)) {
      stop(bucket);
      return;
    }
    try {
      for await (const page of deps.timeIndex.duePages(bucket, shard, horizon, options.pageSize)) {
        await releasePage(page);
        pagesDone++;
        // At least one page per tick, so that a tick always gets somewhere.
        if (Date.now() >= deadline) {
          stop(bucket);
          return;
        }
      }
      partitionsDone++;
    } catch (error) {
      // One partition the store fails to read (an item it cannot return) must not stop the tick for
      // every tenant: the others are released, and this one is tried again by the next tick. What
      // of it was released stays released (every write is conditional).
      unreadable++;
      earliestUnreadable = Math.min(earliestUnreadable, bucket);
      logger.error('a partition of the time index could not be read; skipped by this tick', {
        bucket: new Date(bucket).toISOString(),
        shard,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  });
  if (!complete) {
    logger.warn('the tick ran out of its release budget; the next tick goes on from the same cursor', { released, redelivered, pagesDone });
  }

  // Recurring jobs whose pending occurrence is long overdue and whose run is gone or ended
  // without starting the next one: resume the chain.
  const overdueBefore = now - config.redeliveryGraceSeconds * 1000;
  const overdue = await everyNextRunShard((shard) => deps.jobs.overdue(shard, overdueBefore));
  // One job or workflow run the store fails on (or whose item cannot be read) must not stop the
  // repairs, resumes and backfills after it, nor the tick's record, for every tenant: it is logged
  // and counted, and the next tick tries it again.
  let failedRepairs = 0;
  const isolated = async (what: string, ids: Record<string, string>, work: () => Promise<boolean>): Promise<boolean> => {
    try {
      return await work();
    } catch (error) {
      failedRepairs++;
      logger.error(`${what} failed; tried again next tick`, { ...ids, error: error instanceof Error ? error.message : String(error) });
      return false;
    }
  };
  const repairDeadline = startedAt + (options.repairBudgetMs ?? REPAIR_DEADLINE_MS);
  let repairsLeft = 0;
  const beforeDeadline = (): boolean => {
    if (Date.now() < repairDeadline) return true;
    repairsLeft++;
    return false;
  };

  // Jobs paused until a time that has come resume by themselves, by their misfire policy: first,
  // as they are few and each is due, while the overdue jobs may be many healthy ones waiting long.
  const dueResumes = await everyNextRunShard((shard) => deps.jobs.dueResumes(shard, now));
  let resumed = 0;
  await mapWithConcurrency(dueResumes, REPAIR_CONCURRENCY, async (jobId) => {
    if (beforeDeadline() && (await isolated('a resume', { jobId }, () => resumeWhenDue(deps, jobId, now)))) resumed++;
  });

  // From a place that changes at every tick: the index lists the overdue oldest first, and healthy
  // jobs that wait long (read again at every tick) would otherwise take the budget of each tick
  // before the same later entries.
  let repairedJobs = 0;
  const firstRepair = overdue.length === 0 ? 0 : Math.floor(deps.random() * overdue.length);
  await mapWithConcurrency([...overdue.slice(firstRepair), ...overdue.slice(0, firstRepair)], REPAIR_CONCURRENCY, async (entry) => {
    if (!beforeDeadline()) return;
    const repaired =
      entry.kind === 'job'
        ? await isolated('a chain repair', { jobId: entry.jobId }, () => repairChain(deps, entry.jobId, overdueBefore))
        : await isolated('a workflow run repair', { workflowId: entry.workflowId, workflowRunId: entry.workflowRunId }, () =>
            repairWorkflowRun(deps, entry.workflowId, entry.workflowRunId),
          );
    if (repaired) repairedJobs++;
  });
  if (repairsLeft > 0) {
    logger.warn('the tick ran out of time for repairs and resumes; the next tick looks at the rest', { left: repairsLeft, overdue: overdue.length });
  }

  // Backfills: each active one releases its share of the tick's budget, oldest fire times first.
  const backfilled = await releaseBackfills(deps, now, startedAt + BACKFILL_DEADLINE_MS);

  // Everything before the current minute has been handled; entries in this minute not yet due
  // (check-backs) are seen again next tick. A tick that ran out of budget moves its cursor to the
  // earliest minute it left unfinished, so that ticks after a long backlog each get further (they
  // began again from the same minute, and one that could not pass it never recorded itself). An
  // unreadable partition holds the cursor at its minute.
  const cursor = Math.min(Math.floor(now / 60_000) * 60_000, earliestUnfinished, earliestUnreadable);
  const lagMs = scheduledAt === undefined ? 0 : now - scheduledAt;
  const report: TickReport = {
    buckets: buckets.length,
    released,
    redelivered,
    lapsedLeases,
    leaseChecksMoved,
    repairedJobs,
    backfilled,
    resumed,
    failedRepairs,
    lagMs,
    complete,
    unreadable,
  };
  await deps.state.recordTick(
    cursor,
    deps.clock(),
    {
      buckets: report.buckets,
      released,
      redelivered,
      lapsedLeases,
      leaseChecksMoved,
      repairedJobs,
      resumed,
      failedRepairs,
      lagMs,
      complete: complete ? 1 : 0,
      unreadable,
    },
    shards,
  );
  logger.info('tick completed', { ...report });
  return report;
}

/** The runs of the given ids, read consistently (100 at a time, 4 reads at once); missing ones are left out. */
async function runsOf(deps: SchedulerDeps, runIds: readonly string[]): Promise<Map<string, Run>> {
  const runs = new Map<string, Run>();
  const chunks = Array.from({ length: Math.ceil(runIds.length / 100) }, (_, index) => runIds.slice(index * 100, index * 100 + 100));
  await mapWithConcurrency(chunks, 4, async (chunk) => {
    for (const run of await deps.runs.getMany(chunk)) runs.set(run.runId, run);
  });
  return runs;
}

/** What `read` finds in each shard of the jobs' byNextRun index, read a few shards at a time. */
async function everyNextRunShard<T>(read: (shard: number) => Promise<T[]>): Promise<T[]> {
  return (
    await mapWithConcurrency(
      Array.from({ length: NEXT_RUN_SHARDS }, (_, shard) => shard),
      QUERY_CONCURRENCY,
      read,
    )
  ).flat();
}
