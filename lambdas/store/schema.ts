// The shape of every table and queue, as plain data. The CDK stack and the local runtime both
// build their resources from these definitions, so the deployed and the local layouts cannot drift.
import { jobTypeSchema } from '../domain/job';

export type AttributeType = 'S' | 'N';

export interface IndexDefinition {
  readonly indexName: string;
  readonly partitionKey: { readonly name: string; readonly type: AttributeType };
  readonly sortKey?: { readonly name: string; readonly type: AttributeType };
  /** Attributes projected besides the keys; `all` projects the whole item. */
  readonly projection: 'all' | 'keys' | readonly string[];
}

export interface TableDefinition {
  /** Logical name: the CDK construct id and the suffix of the local table name. */
  readonly id: string;
  readonly partitionKey: { readonly name: string; readonly type: AttributeType };
  readonly sortKey?: { readonly name: string; readonly type: AttributeType };
  readonly indexes: readonly IndexDefinition[];
  readonly timeToLiveAttribute?: string;
}

export interface QueueDefinition {
  readonly id: string;
  readonly visibilityTimeoutSeconds: number;
  readonly retentionSeconds: number;
  readonly maxMessageSizeBytes: number;
  /** Receives before SQS moves a message to the dead-letter queue. */
  readonly maxReceiveCount?: number;
}

export const JOBS_BY_TENANT_INDEX = 'byTenant';
/** Named for its projection: changing a projection means a new index (decision 0029). */
export const RUNS_BY_JOB_INDEX = 'byJobKeys';
export const RUNS_TIME_INDEX = 'timeIndex';
export const JOBS_NEXT_RUN_INDEX = 'byNextRun';
export const RUNS_DEAD_INDEX = 'deadByTenant';
export const RUNS_CLAIM_INDEX = 'claimable';
/** Finding jobs and runs (decision 0095): keys only, written when their keys change. */
export const JOBS_BY_NAME_INDEX = 'byTenantName';
export const JOBS_BY_STATUS_INDEX = 'byTenantStatus';
export const JOBS_BY_TYPE_INDEX = 'byTenantType';
export const RUNS_BY_TENANT_INDEX = 'byTenantKeys';
/** Partitions of the jobs' byNextRun index. */
export const NEXT_RUN_SHARDS = 8;

/** Jobs, their name guards, idempotency records, API keys and scheduler state items. */
export const jobsTable: TableDefinition = {
  id: 'Jobs',
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  indexes: [
    {
      indexName: JOBS_BY_TENANT_INDEX,
      partitionKey: { name: 'tenantId', type: 'S' },
      sortKey: { name: 'tenantSort', type: 'S' },
      projection: 'all',
    },
    {
      // Sparse: only active jobs with a pending occurrence. The ticker finds jobs whose pending
      // occurrence is long overdue (its run was lost or ended without starting the next one).
      indexName: JOBS_NEXT_RUN_INDEX,
      partitionKey: { name: 'nextRunShard', type: 'S' },
      sortKey: { name: 'nextRunAt', type: 'S' },
      projection: ['jobId', 'nextRunId'],
    },
    // Finding a tenant's jobs (decision 0095). Keys only: a job is rewritten at every occurrence
    // (its nextRunAt), and a keys-only index is written only when its own keys change.
    { indexName: JOBS_BY_NAME_INDEX, partitionKey: { name: 'tenantId', type: 'S' }, sortKey: { name: 'name', type: 'S' }, projection: 'keys' },
    { indexName: JOBS_BY_STATUS_INDEX, partitionKey: { name: 'tenantStatus', type: 'S' }, sortKey: { name: 'tenantSort', type: 'S' }, projection: 'keys' },
    { indexName: JOBS_BY_TYPE_INDEX, partitionKey: { name: 'tenantType', type: 'S' }, sortKey: { name: 'tenantSort', type: 'S' }, projection: 'keys' },
  ],
  timeToLiveAttribute: 'expiresAtEpoch',
};

/** Runs: one item per attempt of an occurrence. */
export const runsTable: TableDefinition = {
  id: 'Runs',
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  indexes: [
    {
      // Keys only: a run is written three or more times (queued, leased, finished), and an index
      // that projects what changes would be written each time too. Listing reads the runs.
      indexName: RUNS_BY_JOB_INDEX,
      partitionKey: { name: 'jobId', type: 'S' },
      sortKey: { name: 'jobSort', type: 'S' },
      projection: 'keys',
    },
    {
      // Sparse: only runs not finished carry `gateKey` (SCHEDULED at their due time, QUEUED and
      // RUNNING at a check-back time, decision 0065). It projects just what the ticker needs, so its
      // scans stay small.
      indexName: RUNS_TIME_INDEX,
      partitionKey: { name: 'gateKey', type: 'S' },
      sortKey: { name: 'gateAt', type: 'S' },
      projection: ['runId', 'tenantId', 'jobId', 'jobType', 'status', 'availableAt'],
    },
    {
      // Sparse: DEAD runs not yet replayed, per tenant, newest first by when they died.
      indexName: RUNS_DEAD_INDEX,
      partitionKey: { name: 'deadTenantId', type: 'S' },
      sortKey: { name: 'deadSort', type: 'S' },
      projection: 'all',
    },
    {
      // Sparse: runs of external targets that are due and wait for an external worker to claim
      // them, per tenant, by job type and then due time (decision 0062).
      indexName: RUNS_CLAIM_INDEX,
      partitionKey: { name: 'claimTenant', type: 'S' },
      sortKey: { name: 'claimSort', type: 'S' },
      projection: ['leaseMs'],
    },
    {
      // A tenant's runs by occurrence time (decision 0095). Keys only, and its sort key is written
      // once, when the run is created: the run's later writes do not touch it.
      indexName: RUNS_BY_TENANT_INDEX,
      partitionKey: { name: 'tenantId', type: 'S' },
      sortKey: { name: 'tenantRunSort', type: 'S' },
      projection: 'keys',
    },
  ],
};

/** SQS allows 900 s of per-message delay; the time gate sends anything due sooner directly. */
export const MAX_SQS_DELAY_SECONDS = 900;

export const dispatchQueue: QueueDefinition = {
  id: 'Dispatch',
  // Six times the worker's function timeout, as the event source mapping requires. The worker
  // shortens each message's visibility to its run's lease when it takes one.
  visibilityTimeoutSeconds: 6 * 900,
  retentionSeconds: 4 * 24 * 3600,
  maxMessageSizeBytes: 1024 * 1024,
  maxReceiveCount: 5,
};

export const dispatchDeadLetterQueue: QueueDefinition = {
  id: 'DispatchDlq',
  visibilityTimeoutSeconds: 60,
  retentionSeconds: 14 * 24 * 3600,
  maxMessageSizeBytes: 1024 * 1024,
};

/**
 * A worker pool: the job types it runs, with its own queues (a lane per priority, a DLQ), its own
 * worker timeout and concurrency. Job types no pool lists run in the implicit `default` pool (the
 * dispatch queue above, workerConsumer's timeout).
 */
export interface PoolDefinition {
  /** Lower-case letters, digits and dashes; `default` is the implicit pool. */
  readonly name: string;
  readonly jobTypes: readonly string[];
  /** Concurrent batches of the high and standard lanes each: the event source mapping's maxConcurrency (2 to 1000 in AWS). */
  readonly maxConcurrency: number;
  /** Concurrent batches of the low lane; default lowLaneConcurrency(maxConcurrency). At most maxConcurrency. */
  readonly lowMaxConcurrency?: number;
  /** The pool's worker function timeout (its runs' timeoutSeconds must fit inside it). */
  readonly timeoutSeconds: number;
  /** Messages per batch; default workerConsumer.batchSize. */
  readonly batchSize?: number;
}

export const DEFAULT_POOL_NAME = 'default';

/** The low lane's concurrency in a pool whose lanes are uncapped (the default pool, unless configured). */
export const UNCAPPED_POOL_LOW_LANE_CONCURRENCY = 50;

/**
 * Concurrent batches of a pool's low lane (decision 0051): a quarter of the pool's lane
 * concurrency, at least `min` (the event source mapping takes 2 at least), unless set.
 */
export function lowLaneConcurrency(maxConcurrency: number | undefined, min: number, explicit?: number): number {
  if (explicit !== undefined) return explicit;
  if (maxConcurrency === undefined) return UNCAPPED_POOL_LOW_LANE_CONCURRENCY;
  return Math.min(maxConcurrency, Math.max(min, Math.ceil(maxConcurrency / 4)));
}

/** The queues of a pool: `high` runs, `normal` runs (the standard lane), `low` runs, and the DLQ they share. */
export interface PoolQueueDefinitions {
  readonly standard: QueueDefinition;
  readonly high: QueueDefinition;
  readonly low: QueueDefinition;
  readonly dlq: QueueDefinition;
}

/** Construct ids and local name parts of a pool's queues. */
export function poolQueues(pool: Pick<PoolDefinition, 'name' | 'timeoutSeconds'>): PoolQueueDefinitions {
  if (pool.name === DEFAULT_POOL_NAME) {
    // The default pool keeps the ids it had before pools, so deployed queues are not replaced.
    return { standard: dispatchQueue, high: { ...dispatchQueue, id: 'DispatchHigh' }, low: { ...dispatchQueue, id: 'DispatchLow' }, dlq: dispatchDeadLetterQueue };
  }
  const id = `Pool${pool.name.split('-').map((part) => part.charAt(0).toUpperCase() + part.slice(1)).join('')}`;
  // Six times the pool's worker timeout, as the event source mapping requires.
  const lane = { ...dispatchQueue, visibilityTimeoutSeconds: 6 * pool.timeoutSeconds };
  return {
    standard: { ...lane, id: `${id}Dispatch` },
    high: { ...lane, id: `${id}DispatchHigh` },
    low: { ...lane, id: `${id}DispatchLow` },
    dlq: { ...dispatchDeadLetterQueue, id: `${id}DispatchDlq` },
  };
}

/** Checks a deployment's pools: names, job types listed once, limits the event source mapping accepts. */
export function validatePools(pools: readonly PoolDefinition[], { minConcurrency }: { minConcurrency: number }): void {
  const seenTypes = new Map<string, string>();
  const seenNames = new Set<string>();
  for (const pool of pools) {
    if (!/^[a-z][a-z0-9-]{0,31}$/.test(pool.name)) throw new Error(`pool name "${pool.name}": use lower-case letters, digits and dashes, starting with a letter (at most 32)`);
    if (pool.name === DEFAULT_POOL_NAME) throw new Error('pool name "default" is the implicit pool of every job type no pool lists');
    if (seenNames.has(pool.name)) throw new Error(`pool "${pool.name}" is defined twice`);
    seenNames.add(pool.name);
    if (pool.jobTypes.length === 0) throw new Error(`pool "${pool.name}" lists no job type`);
    for (const jobType of pool.jobTypes) {
      const refusal = jobTypeSchema.safeParse(jobType);
      if (!refusal.success) throw new Error(`pool "${pool.name}": job type "${jobType}": ${refusal.error.issues.map((issue) => issue.message).join('; ')}`);
      const other = seenTypes.get(jobType);
      if (other) throw new Error(`job type "${jobType}" is in pools "${other}" and "${pool.name}"`);
      seenTypes.set(jobType, pool.name);
    }
    if (!Number.isInteger(pool.maxConcurrency) || pool.maxConcurrency < minConcurrency || pool.maxConcurrency > 1000) {
      throw new Error(`pool "${pool.name}": maxConcurrency must be a whole number from ${minConcurrency} to 1000`);
    }
    if (pool.lowMaxConcurrency !== undefined && (!Number.isInteger(pool.lowMaxConcurrency) || pool.lowMaxConcurrency < minConcurrency || pool.lowMaxConcurrency > pool.maxConcurrency)) {
      throw new Error(`pool "${pool.name}": lowMaxConcurrency must be a whole number from ${minConcurrency} to its maxConcurrency (${pool.maxConcurrency})`);
    }
    if (!Number.isInteger(pool.timeoutSeconds) || pool.timeoutSeconds < 10 || pool.timeoutSeconds > 900) {
      throw new Error(`pool "${pool.name}": timeoutSeconds must be a whole number from 10 to 900 (a Lambda function's limit)`);
    }
    if (pool.batchSize !== undefined && (!Number.isInteger(pool.batchSize) || pool.batchSize < 1 || pool.batchSize > 10)) {
      throw new Error(`pool "${pool.name}": batchSize must be a whole number from 1 to 10`);
    }
  }
}

/** How the worker consumes the dispatch queue, in AWS (event source mapping) and locally (poller). */
export const workerConsumer = {
  batchSize: 10,
  maxBatchingWindowSeconds: 0,
  functionTimeoutSeconds: 900,
  reportBatchItemFailures: true,
} as const;
