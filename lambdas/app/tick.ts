// The ticker: once a minute it walks the time index from its cursor to the horizon. Runs waiting
// far ahead (SCHEDULED) that fall inside the horizon are sent with their exact remaining delay
// and marked QUEUED; queued runs still unleased after the redelivery grace had their message lost
// and are sent again; external workers' runs whose lease ended unrenewed are sent for recovery. Every write is conditional, so two tickers at once change nothing more than one.
import { logger } from '../core/logger';
import { checkBackAt, minuteBuckets } from '../domain/time-gate';
import type { SchedulerDeps } from './deps';
import { repairChain } from './job-lifecycle';
import { NEXT_RUN_SHARDS } from '../store/schema';

/** When the ticker has no cursor yet, it starts this far back. */
const FIRST_LOOKBACK_MS = 15 * 60_000;
const QUERY_CONCURRENCY = 8;

export interface TickReport {
  readonly buckets: number;
  readonly released: number;
  readonly redelivered: number;
  readonly repairedJobs: number;
  readonly lagMs: number;
}

export async function tick(deps: SchedulerDeps, scheduledAt?: number): Promise<TickReport> {
  const now = deps.clock();
  const { config } = deps;
  const horizon = now + config.tickerHorizonSeconds * 1000;
  const state = await deps.state.ticker();
  const from = state.cursor ?? now - FIRST_LOOKBACK_MS;

  const buckets = minuteBuckets(from, horizon);
  const partitions = buckets.flatMap((bucket) =>
    Array.from({ length: config.timeIndexShards }, (_, shard) => ({ bucket, shard })),
  );
  const entries = (
    await mapWithConcurrency(partitions, QUERY_CONCURRENCY, ({ bucket, shard }) => deps.runs.dueInTimeIndex(bucket, shard, horizon))
  ).flat();

  let released = 0;
  let redelivered = 0;
  const toRelease = entries.filter((entry) => entry.status === 'SCHEDULED');
  const lost = entries.filter((entry) => entry.status === 'QUEUED' && Date.parse(entry.gateAt) <= now);
  // The time index carries the job type (the pool) but not the priority (the lane): read it from the runs.
  const priorities = await prioritiesOf(deps, [...toRelease, ...lost].map((entry) => entry.runId));
  const dispatchOf = (entry: (typeof entries)[number]) => ({
    runId: entry.runId,
    tenantId: entry.tenantId,
    availableAt: Date.parse(entry.availableAt),
    jobType: entry.jobType,
    priority: priorities.get(entry.runId),
  });
  if (toRelease.length > 0) {
    await deps.dispatch.send(toRelease.map(dispatchOf), now);
    for (const entry of toRelease) {
      const next = checkBackAt(Date.parse(entry.availableAt), now, config);
      if (await deps.runs.markQueued(entry.runId, now, next, config.timeIndexShards)) {
        released++;
        deps.telemetry.runQueued(entry);
      }
    }
  }

  for (const entry of lost) {
    // Claim the redelivery first so that a second ticker does not send it again.
    const next = now + config.redeliveryGraceSeconds * 1000;
    if (await deps.runs.moveCheckBack(entry.runId, entry.gateAt, next, config.timeIndexShards)) {
      await deps.dispatch.send([dispatchOf(entry)], now);
      logger.warn('queued run was not leased within the grace; message sent again', {
        runId: entry.runId,
        jobId: entry.jobId,
        tenantId: entry.tenantId,
      });
      redelivered++;
    }
  }

  // External workers' leases that ended without a heartbeat: a message to the dispatch queue lets a
  // worker find the lease expired and record the attempt as lost (and retry it with its checkpoint).
  const lapsed = entries.filter((entry) => entry.status === 'RUNNING' && Date.parse(entry.gateAt) <= now);
  for (const entry of lapsed) {
    const next = now + config.redeliveryGraceSeconds * 1000;
    if (await deps.runs.moveLeaseCheck(entry.runId, entry.gateAt, next, config.timeIndexShards)) {
      await deps.dispatch.send([{ ...dispatchOf(entry), availableAt: now }], now);
      logger.warn("an external worker's lease ended without a heartbeat; sent for recovery", { runId: entry.runId, jobId: entry.jobId, tenantId: entry.tenantId });
      redelivered++;
    }
  }

  // Recurring jobs whose pending occurrence is long overdue and whose run is gone or ended
  // without starting the next one: resume the chain.
  const overdueBefore = now - config.redeliveryGraceSeconds * 1000;
  const overdue = (
    await mapWithConcurrency(Array.from({ length: NEXT_RUN_SHARDS }, (_, shard) => shard), QUERY_CONCURRENCY, (shard) =>
      deps.jobs.overdue(shard, overdueBefore),
    )
  ).flat();
  let repairedJobs = 0;
  for (const jobId of overdue) if (await repairChain(deps, jobId, overdueBefore)) repairedJobs++;

  // Everything before the current minute has been handled; entries in this minute not yet due
  // (check-backs) are seen again next tick.
  const cursor = Math.floor(now / 60_000) * 60_000;
  const lagMs = scheduledAt === undefined ? 0 : now - scheduledAt;
  const report: TickReport = { buckets: buckets.length, released, redelivered, repairedJobs, lagMs };
  await deps.state.recordTick(cursor, deps.clock(), { ...report });
  logger.info('tick completed', { ...report });
  return report;
}

/** The priorities of runs that have one other than normal (runs are read 100 at a time). */
async function prioritiesOf(deps: SchedulerDeps, runIds: readonly string[]): Promise<Map<string, 'high' | 'normal' | 'low'>> {
  const priorities = new Map<string, 'high' | 'normal' | 'low'>();
  for (let start = 0; start < runIds.length; start += 100) {
    for (const run of await deps.runs.getMany(runIds.slice(start, start + 100))) if (run.priority) priorities.set(run.runId, run.priority);
  }
  return priorities;
}

async function mapWithConcurrency<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index] as T);
    }
  });
  await Promise.all(workers);
  return results;
}
