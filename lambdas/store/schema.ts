// The shape of every table and queue, as plain data. The CDK stack and the local runtime both
// build their resources from these definitions, so the deployed and the local layouts cannot drift.

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
  /**
   * Indexes a release replaced or dropped, which nothing reads or needs any more. A stack deployed
   * before the change keeps those it names in stack config `keepReplacedIndexes` (or all, with
   * `true`) for a deploy, as DynamoDB adds or drops one index per table update: a new index is
   * added first, the old one dropped by a later deploy
   * (docs/operations.md#upgrading-a-stack-to-the-keys-only-jobs-index-and-the-status-less-time-index).
   */
  readonly replacedIndexes?: readonly IndexDefinition[];
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

/**
 * A tenant's jobs, newest first. Keys only (decision 0165): the listing reads the jobs by key, and a
 * job is rewritten at every occurrence of its schedule, which rewrote a copy of the whole item in the
 * `byTenant` index (projection ALL) it replaces.
 */
export const JOBS_BY_TENANT_INDEX = 'byTenantJobKeys';
/** Named for its projection: changing a projection means a new index (decision 0029). */
export const RUNS_BY_JOB_INDEX = 'byJobKeys';
/**
 * The time index without the run's status (decision 0171): a lease that keeps its run's check-back
 * (decision 0170) then writes no index entry at all. Replaces `timeIndex`, which projected it.
 */
export const RUNS_TIME_INDEX = 'timeIndexStatusless';
export const JOBS_NEXT_RUN_INDEX = 'byNextRun';
export const RUNS_DEAD_INDEX = 'deadByTenant';
export const RUNS_CLAIM_INDEX = 'claimable';
/** Finding jobs and runs (decision 0095): keys only, written when their keys change. */
export const JOBS_BY_NAME_INDEX = 'byTenantName';
export const JOBS_BY_STATUS_INDEX = 'byTenantStatus';
export const RUNS_BY_TENANT_INDEX = 'byTenantKeys';
/** Partitions of the jobs' byNextRun index. */
export const NEXT_RUN_SHARDS = 8;

/** Jobs, their name guards, idempotency records, API keys and scheduler state items. */
export const jobsTable: TableDefinition = {
  id: 'Jobs',
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  indexes: [
    { indexName: JOBS_BY_TENANT_INDEX, partitionKey: { name: 'tenantId', type: 'S' }, sortKey: { name: 'tenantSort', type: 'S' }, projection: 'keys' },
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
    { indexName: JOBS_BY_STATUS_INDEX, partitionKey: { name: 'tenantStatus', type: 'S' }, sortKey: { name: 'tenantSort', type: 'S' }, projection: 'keys' },
  ],
  replacedIndexes: [
    // The same keys as byTenantJobKeys, with a copy of every job (decision 0165).
    { indexName: 'byTenant', partitionKey: { name: 'tenantId', type: 'S' }, sortKey: { name: 'tenantSort', type: 'S' }, projection: 'all' },
    // A tenant's jobs by type: a write unit at every create; `?type=` reads the tenant's index (decision 0186).
    { indexName: 'byTenantType', partitionKey: { name: 'tenantType', type: 'S' }, sortKey: { name: 'tenantSort', type: 'S' }, projection: 'keys' },
    // A tenant's jobs by name: a write unit at every named create; the names' guards are in name
    // order in the tenant's names partition, and `?name=` reads them (decision 0192). Kept, the
    // functions read it and take the old guards too (`legacyNameGuards`), for an upgrade's first deploy.
    { indexName: JOBS_BY_NAME_INDEX, partitionKey: { name: 'tenantId', type: 'S' }, sortKey: { name: 'name', type: 'S' }, projection: 'keys' },
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
      // scans stay small, and nothing a lease or a heartbeat changes (decision 0171).
      indexName: RUNS_TIME_INDEX,
      partitionKey: { name: 'gateKey', type: 'S' },
      sortKey: { name: 'gateAt', type: 'S' },
      projection: ['runId', 'tenantId', 'jobId', 'jobType', 'availableAt'],
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
  // The same keys as timeIndexStatusless, with the run's status, which every lease rewrote (decision 0171).
  replacedIndexes: [
    {
      indexName: 'timeIndex',
      partitionKey: { name: 'gateKey', type: 'S' },
      sortKey: { name: 'gateAt', type: 'S' },
      projection: ['runId', 'tenantId', 'jobId', 'jobType', 'status', 'availableAt'],
    },
  ],
  // Finished runs leave RUN_RETENTION_DAYS after they finished (decision 0156).
  timeToLiveAttribute: 'expiresAtEpoch',
};

/** SQS allows 900 s of per-message delay; the time gate sends anything due sooner directly. */
export const MAX_SQS_DELAY_SECONDS = 900;

/** The lanes of a pool take their settings from this (lambdas/store/pools.ts), with the pool's own visibility timeout. */
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

/** How the worker consumes the dispatch queue, in AWS (event source mapping) and locally (poller). */
export const workerConsumer = {
  batchSize: 10,
  maxBatchingWindowSeconds: 0,
  functionTimeoutSeconds: 900,
  reportBatchItemFailures: true,
} as const;
