// The ticker's work when a burst of cron fires falls in one minute (600,000 by default), shard by
// shard: items per time-index partition, query pages and read units, send batches, conditional
// writes and the write rate they put on each index partition against DynamoDB's 1,000 write units
// per second per partition, and how long a tick takes given per-call latencies. Arithmetic over
// the code's own constants (lambdas/app/tick.ts, lambdas/store/keys.ts, schema.ts); no AWS call.
// It models two tickers:
//   current:  the code as it is (8 partitions at a time, each worked page by page: the page's
//             priorities read 100 at a time, 4 reads at once, its messages sent, its runs marked
//             16 writes at a time; no new page once the 30 s release budget is spent, the cursor
//             kept so that the next tick goes on), capped at the partition's write limit;
//   planned:  one worker per shard (fan-out), the priority projected into the time index (no
//             reads), each page sent and marked as it arrives with --write-concurrency writes in
//             flight per shard, capped at the partition's write limit.
//
//   npm run bench:capacity-sim -- [--burst 600000] [--shards 8,32,64] [--update-ms 6] [--send-ms 12]
//     [--query-page-ms 60] [--batch-get-ms 25] [--write-concurrency 16] [--steady-rate 10000]
import { parseArgs } from 'node:util';
import { DEFAULT_TUNING } from '../lambdas/config/config';

const { values } = parseArgs({
  options: {
    burst: { type: 'string', default: '600000' },
    shards: { type: 'string', default: `${DEFAULT_TUNING.timeIndexShards},32,64` },
    /** Latency of one conditional UpdateItem (ms). */
    'update-ms': { type: 'string', default: '6' },
    /** Latency of one SendMessageBatch of 10 (ms). */
    'send-ms': { type: 'string', default: '12' },
    /** Latency of one Query page of up to 1 MB (ms). */
    'query-page-ms': { type: 'string', default: '60' },
    /** Latency of one BatchGetItem of 100 items (ms). */
    'batch-get-ms': { type: 'string', default: '25' },
    /** Bytes of one time-index entry as the index stores it (keys and projected attributes). */
    'entry-bytes': { type: 'string', default: '260' },
    /** Concurrent sockets of the SDK's HTTP handler (its default: 50). */
    sockets: { type: 'string', default: '50' },
    'write-concurrency': { type: 'string', default: '16' },
    /** Executions per second already flowing when the burst comes (their index writes share the partitions). */
    'steady-rate': { type: 'string', default: '10000' },
    /** Executions per second the workers sustain (drains the burst once released). */
    'worker-rate': { type: 'string', default: '10000' },
    'tick-timeout-s': { type: 'string', default: '50' },
    /** Write units per second of the runs table the releases may use (the default on-demand table maximum). */
    'table-write-budget': { type: 'string', default: '40000' },
  },
});
const num = (name: keyof typeof values): number => {
  const value = Number(values[name]);
  if (!Number.isFinite(value) || value < 0) throw new Error(`--${name}: a number >= 0`);
  return value;
};

const PARTITION_WRITE_UNITS = 1000;
const PAGE_BYTES = 1024 * 1024;
/** An eventually consistent read unit covers 8 KB (4 KB strongly consistent, halved). */
const EVENTUAL_READ_BYTES = 8 * 1024;
/** tick.ts: QUERY_CONCURRENCY. */
const QUERY_CONCURRENCY = 8;
const burst = num('burst');
const updateMs = num('update-ms');
const sendMs = num('send-ms');
const pageMs = num('query-page-ms');
const batchGetMs = num('batch-get-ms');
const entryBytes = num('entry-bytes');
const sockets = num('sockets');
const writeConcurrency = num('write-concurrency');
const steadyRate = num('steady-rate');
const workerRate = num('worker-rate');
const timeoutS = num('tick-timeout-s');
const tableBudget = num('table-write-budget');
// Minute buckets a tick reads: from its cursor (the start of the last minute) to the horizon.
const buckets = 1 + Math.ceil(DEFAULT_TUNING.tickerHorizonSeconds / 60) + 1;

const fmt = (value: number, digits = 0): string => value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const seconds = (ms: number): string => (ms >= 100_000 ? `${fmt(ms / 1000)} s` : `${fmt(ms / 1000, 1)} s`);

/**
 * Write units of marking one released run QUEUED: the run item (1) and its time-index entry moved
 * to the check-back bucket (a delete and a put in the index: 2). byJobKeys holds keys only and its
 * keys do not change (decision 0029). Items under 1 KB.
 */
const MARK_WRITE_UNITS = 1 + 2;

interface ShardFigures {
  readonly shards: number;
  readonly itemsPerShard: number;
  readonly pagesPerShard: number;
  readonly readUnitsPerShard: number;
  readonly sendBatches: number;
  readonly steadyIndexWritesPerPartition: number;
}

function shardFigures(shards: number): ShardFigures {
  const itemsPerShard = Math.ceil(burst / shards);
  const bytes = itemsPerShard * entryBytes;
  return {
    shards,
    itemsPerShard,
    pagesPerShard: Math.max(1, Math.ceil(bytes / PAGE_BYTES)),
    readUnitsPerShard: Math.ceil(bytes / EVENTUAL_READ_BYTES),
    sendBatches: Math.ceil(burst / 10),
    // Every run enters the time index when it is created, its check-back where its lease's would be
    // (about 31 s on, decision 0170), kept by a lease taken in time, and leaves it with its outcome:
    // a put and a delete per run, both in the partitions of the current minute.
    steadyIndexWritesPerPartition: (2 * steadyRate) / shards,
  };
}

interface CurrentTick {
  readonly entriesPerPage: number;
  readonly pageMs: number;
  readonly releasedPerTick: number;
  readonly ticksToRelease: number;
  /** Ticks between the first that sees the minute (horizon ahead) and the minute itself. */
  readonly ticksBeforeDue: number;
  readonly marksPerSecondPerPartition: number;
}

/** tick.ts: RELEASE_BUDGET_MS, WRITE_CONCURRENCY; the priority reads run 4 at a time. */
const RELEASE_BUDGET_MS = 30_000;
const TICK_WRITE_CONCURRENCY = 16;
const PRIORITY_READS_AT_ONCE = 4;

/** The code as it is: partitions 8 at a time, each page read, sent and marked before the next. */
function currentTick(figures: ShardFigures): CurrentTick {
  const entriesPerPage = Math.min(figures.itemsPerShard, Math.floor(PAGE_BYTES / entryBytes));
  // Marks: 16 in flight per partition, but a partition of the index takes 1,000 writes a second,
  // less what the steady traffic already writes there.
  const room = Math.max(0, PARTITION_WRITE_UNITS - figures.steadyIndexWritesPerPartition);
  const marksPerSecond = Math.min((TICK_WRITE_CONCURRENCY * 1000) / updateMs, room);
  const markMs = marksPerSecond > 0 ? (entriesPerPage / marksPerSecond) * 1000 : Number.POSITIVE_INFINITY;
  const priorityMs = Math.ceil(entriesPerPage / 100 / PRIORITY_READS_AT_ONCE) * batchGetMs;
  // A page's sends go out together, through the sockets the 8 partitions share.
  const sendAll = Math.ceil(Math.ceil(entriesPerPage / 10) / Math.max(1, Math.floor(sockets / QUERY_CONCURRENCY))) * sendMs;
  const perPageMs = pageMs + priorityMs + sendAll + markMs;
  // Pages are taken while the budget lasts; the page in hand is finished.
  const pagesPerWorker = Number.isFinite(perPageMs) ? Math.ceil(RELEASE_BUDGET_MS / perPageMs) : 0;
  const parallel = Math.min(QUERY_CONCURRENCY, figures.shards);
  const releasedPerTick = Math.min(burst, pagesPerWorker * parallel * entriesPerPage);
  return {
    entriesPerPage,
    pageMs: perPageMs,
    releasedPerTick,
    ticksToRelease: releasedPerTick > 0 ? Math.ceil(burst / releasedPerTick) : Number.POSITIVE_INFINITY,
    ticksBeforeDue: Math.floor(DEFAULT_TUNING.tickerHorizonSeconds / 60),
    marksPerSecondPerPartition: marksPerSecond,
  };
}

interface PlannedTick {
  /** Null when the steady traffic alone fills the index partitions: no room for releases. */
  readonly perShardMs: number | null;
  readonly marksPerSecondPerPartition: number;
  readonly limitedBy: 'writers' | 'partition' | 'table' | 'no room';
  readonly tableWriteUnitsPerSecond: number;
}

/** One worker per shard: pages streamed, sends and marks `writeConcurrency` at a time, under the partition and table caps. */
function plannedTick(figures: ShardFigures): PlannedTick {
  const byWriters = (writeConcurrency * 1000) / updateMs;
  // The burst's moves share the index partitions with the steady traffic's writes.
  const byPartition = PARTITION_WRITE_UNITS - figures.steadyIndexWritesPerPartition;
  const byTable = tableBudget / (figures.shards * MARK_WRITE_UNITS);
  if (byPartition <= 0) return { perShardMs: null, marksPerSecondPerPartition: 0, limitedBy: 'no room', tableWriteUnitsPerSecond: 0 };
  const marksPerSecond = Math.min(byWriters, byPartition, byTable);
  const limitedBy = marksPerSecond === byWriters ? 'writers' : marksPerSecond === byPartition ? 'partition' : 'table';
  const marksMs = (figures.itemsPerShard / marksPerSecond) * 1000;
  const sendsMs = (Math.ceil(figures.itemsPerShard / 10) / writeConcurrency) * sendMs;
  const queryMs = figures.pagesPerShard * pageMs;
  // Pages, sends and marks overlap; the slowest stage sets the pace (plus one page to start).
  return {
    perShardMs: Math.max(marksMs, sendsMs, queryMs) + pageMs,
    marksPerSecondPerPartition: marksPerSecond,
    limitedBy,
    tableWriteUnitsPerSecond: marksPerSecond * figures.shards * MARK_WRITE_UNITS,
  };
}

console.log(`Ticker work for ${fmt(burst)} cron fires due in one minute (all at second 0, as cron fires)`);
console.log(
  `per-call latencies: UpdateItem ${updateMs} ms, SendMessageBatch(10) ${sendMs} ms, Query page (1 MB) ${pageMs} ms, BatchGetItem(100) ${batchGetMs} ms; ` +
    `index entry ${entryBytes} B; SDK sockets ${sockets}; tick timeout ${timeoutS} s; horizon ${DEFAULT_TUNING.tickerHorizonSeconds} s; ` +
    `${buckets} minute buckets per tick; steady load ${fmt(steadyRate)} executions/s`,
);
console.log('');

const shardCounts = values.shards.split(',').map(Number);
const figures = shardCounts.map(shardFigures);

console.log('Per time-index shard (partition gateKey = minute#shard)');
console.log('shards  items/shard  pages/shard  read units/shard  send batches (all)  steady index writes/s per partition');
for (const f of figures) {
  console.log(
    [
      String(f.shards).padStart(6),
      fmt(f.itemsPerShard).padStart(11),
      fmt(f.pagesPerShard).padStart(11),
      fmt(f.readUnitsPerShard).padStart(16),
      fmt(f.sendBatches).padStart(18),
      `${fmt(f.steadyIndexWritesPerPartition)}${f.steadyIndexWritesPerPartition > PARTITION_WRITE_UNITS ? ' OVER 1,000' : ''}`.padStart(36),
    ].join('  '),
  );
}
console.log('');

console.log(`Current ticker (pages worked as read, ${fmt(RELEASE_BUDGET_MS / 1000)} s release budget per tick, one tick a minute)`);
console.log('shards  entries/page  per page  released per tick  ticks to release  ticks before due  marks/s per index partition  in time');
for (const f of figures) {
  const t = currentTick(f);
  console.log(
    [
      String(f.shards).padStart(6),
      fmt(t.entriesPerPage).padStart(12),
      (Number.isFinite(t.pageMs) ? seconds(t.pageMs) : '-').padStart(8),
      fmt(t.releasedPerTick).padStart(17),
      (Number.isFinite(t.ticksToRelease) ? fmt(t.ticksToRelease) : 'never').padStart(16),
      fmt(t.ticksBeforeDue).padStart(16),
      fmt(t.marksPerSecondPerPartition).padStart(27),
      (t.ticksToRelease <= t.ticksBeforeDue ? 'yes' : 'no').padStart(7),
    ].join('  '),
  );
}
console.log(
  '-> a tick that spends its budget moves its cursor only to the earliest minute it left unfinished; runs it marked have left the partition, so the next tick goes on where it stopped.',
);
console.log('');

console.log(
  `Planned ticker (a worker per shard, priority in the index, ${writeConcurrency} writes in flight per shard, ` +
    `under the partition limit and ${fmt(tableBudget)} table write units/s for releases)`,
);
console.log('shards  per shard  marks/s per index partition  limited by  table write units/s (3 per release)  fits the horizon');
// Released runs must be queued before they are due: the horizon less one tick period.
const releaseWindowMs = DEFAULT_TUNING.tickerHorizonSeconds * 1000 - 60_000;
for (const f of figures) {
  const p = plannedTick(f);
  console.log(
    [
      String(f.shards).padStart(6),
      (p.perShardMs === null ? '-' : seconds(p.perShardMs)).padStart(9),
      fmt(p.marksPerSecondPerPartition).padStart(27),
      p.limitedBy.padStart(10),
      fmt(p.tableWriteUnitsPerSecond).padStart(35),
      (p.perShardMs !== null && p.perShardMs <= releaseWindowMs ? 'yes' : 'no').padStart(16),
    ].join('  '),
  );
}
console.log('');

// Once released, every message comes due at second 0: the workers drain them at their rate.
const drainS = burst / workerRate;
console.log(
  `Workers: ${fmt(burst)} messages due at the same second drain in ${fmt(drainS, 1)} s at ${fmt(workerRate)} executions/s; ` +
    `start lag then runs from 0 to ${fmt(drainS, 1)} s (p50 ~${fmt(drainS / 2, 1)} s, p99 ~${fmt(drainS * 0.99, 1)} s). ` +
    `A p99 under 2 s for such a burst needs ${fmt((burst * 0.99) / 2)} executions/s, or the fires spread over the minute.`,
);
