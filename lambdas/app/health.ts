// GET /v1/health: is the scheduler keeping up, and what is it doing? Queues and the ticker are the
// deployment's (shared by every tenant); runs, lag and in-flight work are the caller's tenant's only.
// Run figures come from the workers' per-minute roll-ups; in-flight runs from the workers'
// registry, each checked against its run item, which is the truth.
import { logger } from '../core/logger';
import type { HealthQuery } from '../api/schemas';
import type { Histogram } from '../domain/histogram';
import { merge, percentile, totalOf } from '../domain/histogram';
import type { QueueDepth } from '../store/dispatch-queue';
import { DEFAULT_POOL_NAME } from '../store/pools';
import type { Counters, OutcomeCounter } from '../store/telemetry-store';
import { OUTCOME_COUNTERS } from '../store/telemetry-store';
import type { SchedulerDeps } from './deps';
import { minuteOf } from './telemetry';

/** The ticker runs every minute; past this without a completed tick it is reported as late. */
const TICKER_STALE_MS = 3 * 60_000;
/** The start-lag promise: p99 under 2 s. */
const START_LAG_TARGET_MS = 2_000;
/**
 * A lane whose oldest message is older than this is not consumed fast enough, or at all (its event
 * source mapping disabled, its worker failing at start): the stack's oldest-message alarms' default
 * thresholds. A delayed message waits 15 minutes at most, so an age past 20 is no delay.
 */
const OLDEST_MESSAGE_LIMIT_SECONDS = { high: 1_200, standard: 1_200, low: 3_600 } as const;
/** Workers whose registry entry is older than this are not consulted. */
const WORKER_HORIZON_MS = 60 * 60_000;
const DEAD_COUNT_CAP = 1_000;

export interface QueueHealth extends QueueDepth {
  /** From CloudWatch (AWS/SQS); null when the backend publishes no SQS metrics (moto). */
  readonly oldestMessageAgeSeconds: number | null;
}

export interface PoolHealth {
  readonly jobTypes: readonly string[];
  /** Normal runs (and high or low runs of a pool without those lanes). */
  readonly standard: QueueHealth;
  /** High runs; null when the pool has no high lane (its high runs share the standard lane). */
  readonly high: QueueHealth | null;
  /** Low runs; null when the pool has no low lane (its low runs share the standard lane). */
  readonly low: QueueHealth | null;
  readonly dlq: QueueHealth;
}

export interface InFlightRun {
  readonly runId: string;
  readonly jobId: string;
  readonly jobType: string;
  readonly attempt: number;
  readonly startedAt: string | null;
  readonly leaseOwner: string | null;
  readonly leaseExpiresAt: string | null;
  /** The lease has run out and no worker has taken the run over yet. */
  readonly leaseExpired: boolean;
}

export interface MinuteFigures {
  readonly minute: string;
  readonly started: number;
  readonly succeeded: number;
  readonly errors: number;
  /** Start lag percentiles of the runs leased in the minute; null when none was. */
  readonly startLagP50Ms: number | null;
  readonly startLagP99Ms: number | null;
}

export interface HealthReport {
  readonly status: 'ok' | 'degraded';
  readonly checkedAt: string;
  readonly problems: string[];
  readonly queues: {
    /** The default pool's standard lane and DLQ (as before pools). */
    readonly dispatch: QueueHealth;
    readonly dispatchDlq: QueueHealth;
    /** Every pool, the default one included: its lanes and its DLQ. */
    readonly pools: Record<string, PoolHealth>;
  };
  readonly ticker: {
    readonly lastCompletedAt: string | null;
    readonly sinceLastCompletionSeconds: number | null;
    readonly lastReport: Record<string, number> | null;
  };
  readonly runs: {
    readonly windowMinutes: number;
    /** RUNNING now; the other statuses: attempts that ended so in the window. */
    readonly byStatus: Record<'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'DEAD' | 'SKIPPED' | 'CANCELLED', number>;
    readonly started: number;
    readonly retried: number;
    readonly workerLost: number;
    /** Succeeded / (succeeded + failed + timed out + dead), in percent; null with no outcomes. */
    readonly successRate: number | null;
    readonly startLagMs: { readonly p50: number | null; readonly p95: number | null; readonly p99: number | null; readonly samples: number };
    /** External runs: due to claimed by an external worker. The pollers' wait: no problem of the scheduler's. */
    readonly claimWaitMs: { readonly p50: number | null; readonly p95: number | null; readonly p99: number | null; readonly samples: number };
    readonly perMinute: MinuteFigures[];
    /** DEAD runs waiting for a replay (all time), counted up to 1,000. */
    readonly deadAwaitingReplay: { readonly count: number; readonly capped: boolean };
  };
  readonly inFlight: InFlightRun[];
}

export async function checkHealth(deps: SchedulerDeps, tenantId: string, query: HealthQuery = { minutes: 15 }): Promise<HealthReport> {
  const { minutes } = query;
  const now = deps.clock();
  const minuteStarts = Array.from({ length: minutes }, (_, i) => minuteOf(now - i * 60_000)).reverse();

  const queueHealth = async (queueUrl: string): Promise<QueueHealth> => {
    const [depth, age] = await Promise.all([deps.dispatch.queue(queueUrl).depth(), oldestAge(deps, queueUrl, now)]);
    return { ...depth, oldestMessageAgeSeconds: age };
  };
  const [pools, ticker, rollups, workers, dead] = await Promise.all([
    Promise.all(
      deps.dispatch.pools.map(async (pool): Promise<[string, PoolHealth]> => {
        const [standard, high, low, dlq] = await Promise.all([
          queueHealth(pool.queueUrl),
          pool.highQueueUrl ? queueHealth(pool.highQueueUrl) : null,
          pool.lowQueueUrl ? queueHealth(pool.lowQueueUrl) : null,
          queueHealth(pool.dlqUrl),
        ]);
        return [pool.name, { jobTypes: pool.jobTypes, standard, high, low, dlq }];
      }),
    ).then((entries) => Object.fromEntries(entries)),
    deps.state.ticker(),
    Promise.all(minuteStarts.map((minute) => deps.telemetryStore.rollupsOf(tenantId, minute))),
    deps.telemetryStore.workersSeenSince(now - WORKER_HORIZON_MS),
    deps.deadRuns.count(tenantId, DEAD_COUNT_CAP),
  ]);

  const totals: Counters = {};
  const lag: Histogram = {};
  const claimWait: Histogram = {};
  const perMinute: MinuteFigures[] = minuteStarts.map((minute, index) => {
    const minuteCounts: Counters = {};
    const minuteLag: Histogram = {};
    for (const rollup of rollups[index] ?? []) {
      for (const counter of OUTCOME_COUNTERS) add(minuteCounts, counter, rollup.counts[counter] ?? 0);
      merge(lag, rollup.startLag);
      merge(minuteLag, rollup.startLag);
      merge(claimWait, rollup.claimWait);
    }
    for (const counter of OUTCOME_COUNTERS) add(totals, counter, minuteCounts[counter] ?? 0);
    return {
      minute,
      started: minuteCounts.started ?? 0,
      succeeded: minuteCounts.succeeded ?? 0,
      errors: (minuteCounts.failed ?? 0) + (minuteCounts.timedOut ?? 0) + (minuteCounts.dead ?? 0),
      startLagP50Ms: percentile(minuteLag, 50),
      startLagP99Ms: percentile(minuteLag, 99),
    };
  });

  // The registry says which runs to look at; the run items say whether they are still running.
  const held = workers.flatMap((worker) => worker.runs.filter((entry) => entry.tenantId === tenantId).map((entry) => entry.runId));
  const running = (await deps.runs.getMany(held)).filter((run) => run.status === 'RUNNING' && run.tenantId === tenantId);
  const inFlight: InFlightRun[] = running
    .map((run) => ({
      runId: run.runId,
      jobId: run.jobId,
      jobType: run.jobType,
      attempt: run.attempt,
      startedAt: run.startedAt,
      leaseOwner: run.leaseOwner,
      leaseExpiresAt: run.leaseExpiresAt,
      leaseExpired: run.leaseExpiresAt !== null && Date.parse(run.leaseExpiresAt) < now,
    }))
    .sort((a, b) => (a.startedAt ?? '').localeCompare(b.startedAt ?? ''));

  const succeeded = totals.succeeded ?? 0;
  const outcomes = succeeded + (totals.failed ?? 0) + (totals.timedOut ?? 0) + (totals.dead ?? 0);
  const p99 = percentile(lag, 99);
  const since = ticker.lastCompletedAt ? now - Date.parse(ticker.lastCompletedAt) : null;

  const problems: string[] = [];
  for (const [name, pool] of Object.entries(pools)) {
    if (pool.dlq.visible + pool.dlq.inFlight > 0)
      problems.push(name === DEFAULT_POOL_NAME ? 'the dispatch dead-letter queue holds messages' : `the dead-letter queue of pool ${name} holds messages`);
    for (const lane of ['high', 'standard', 'low'] as const) {
      const age = pool[lane]?.oldestMessageAgeSeconds ?? null;
      const limit = OLDEST_MESSAGE_LIMIT_SECONDS[lane];
      if (age !== null && age > limit) {
        problems.push(
          `the ${lane} lane of ${name === DEFAULT_POOL_NAME ? 'the default pool' : `pool ${name}`} has a message ${Math.round(age)} s old ` +
            `(over ${limit} s): its workers do not keep up, or do not consume it`,
        );
      }
    }
  }
  if (since === null || since > TICKER_STALE_MS) problems.push('the ticker has not completed a tick in the last 3 minutes');
  if (p99 !== null && p99 > START_LAG_TARGET_MS)
    problems.push(`start lag p99 is ${p99} ms over the last ${minutes} minutes (target: under ${START_LAG_TARGET_MS} ms)`);
  if (inFlight.some((run) => run.leaseExpired)) problems.push('runs hold expired leases (their workers were lost; the next tick sends them for recovery)');

  return {
    status: problems.length === 0 ? 'ok' : 'degraded',
    checkedAt: new Date(now).toISOString(),
    problems,
    queues: { dispatch: pools[DEFAULT_POOL_NAME]!.standard, dispatchDlq: pools[DEFAULT_POOL_NAME]!.dlq, pools },
    ticker: {
      lastCompletedAt: ticker.lastCompletedAt,
      sinceLastCompletionSeconds: since === null ? null : Math.round(since / 1000),
      lastReport: ticker.lastReport,
    },
    runs: {
      windowMinutes: minutes,
      byStatus: {
        RUNNING: inFlight.length,
        SUCCEEDED: succeeded,
        FAILED: totals.failed ?? 0,
        TIMED_OUT: totals.timedOut ?? 0,
        DEAD: totals.dead ?? 0,
        SKIPPED: totals.skipped ?? 0,
        CANCELLED: totals.cancelled ?? 0,
      },
      started: totals.started ?? 0,
      retried: totals.retried ?? 0,
      workerLost: totals.workerLost ?? 0,
      successRate: outcomes === 0 ? null : Math.round((succeeded / outcomes) * 10_000) / 100,
      startLagMs: { p50: percentile(lag, 50), p95: percentile(lag, 95), p99, samples: totalOf(lag) },
      claimWaitMs: { p50: percentile(claimWait, 50), p95: percentile(claimWait, 95), p99: percentile(claimWait, 99), samples: totalOf(claimWait) },
      perMinute,
      deadAwaitingReplay: dead,
    },
    inFlight,
  };
}

function add(counters: Counters, counter: OutcomeCounter, n: number): void {
  if (n) counters[counter] = (counters[counter] ?? 0) + n;
}

async function oldestAge(deps: SchedulerDeps, queueUrl: string, now: number): Promise<number | null> {
  try {
    return await deps.queueMetrics.oldestMessageAgeSeconds(queueUrl, now);
  } catch (error) {
    // CloudWatch unavailable (or not emulated): the rest of the report still stands.
    logger.warn('could not read the oldest message age', { queueUrl, error: error instanceof Error ? error.message : String(error) });
    return null;
  }
}
