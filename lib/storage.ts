// The long-lived resources: the jobs and runs tables and the dispatch queue with its DLQ, built
// from the same definitions the local runtime uses (lambdas/store/schema.ts). The tables, the
// payload bucket and every pool's DLQ are kept when the stack is deleted; the lanes are not.
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import type { AttributeType, IndexDefinition, QueueDefinition, TableDefinition } from '../lambdas/store/schema';
import { jobsTable, runsTable } from '../lambdas/store/schema';
import type { Pool, PoolLanes } from '../lambdas/store/pools';
import { DEFAULT_POOL_NAME, poolQueues } from '../lambdas/store/pools';
import { RUN_PAYLOAD_PREFIX, SUPERSEDED_TAG } from '../lambdas/store/payload-layout';

export interface StorageProps {
  readonly warmThroughput?: dynamodb.WarmThroughput;
  /** Every pool, the default one included (lambdas/store/pools.ts); each gets its own lanes and DLQ. */
  readonly pools: readonly Pool[];
  /** How long finished runs are kept (0: forever): a trigger's payload stored apart outlives its run by as long again. */
  readonly runRetentionDays: number;
  /** Keeps the indexes releases replaced (all, or those named), for the deploys of an upgrade (TableDefinition.replacedIndexes). */
  readonly keepReplacedIndexes?: boolean | readonly string[];
}

/** The queues of one worker pool: every lane redrives into its DLQ. */
export type PoolQueues = Pick<Pool, 'name' | 'jobTypes'> & PoolLanes<sqs.Queue>;

const attributeType = (type: AttributeType): dynamodb.AttributeType => (type === 'S' ? dynamodb.AttributeType.STRING : dynamodb.AttributeType.NUMBER);

function index(definition: IndexDefinition): dynamodb.GlobalSecondaryIndexPropsV2 {
  const { projection } = definition;
  return {
    indexName: definition.indexName,
    partitionKey: { name: definition.partitionKey.name, type: attributeType(definition.partitionKey.type) },
    sortKey: definition.sortKey && { name: definition.sortKey.name, type: attributeType(definition.sortKey.type) },
    projectionType:
      projection === 'all' ? dynamodb.ProjectionType.ALL : projection === 'keys' ? dynamodb.ProjectionType.KEYS_ONLY : dynamodb.ProjectionType.INCLUDE,
    nonKeyAttributes: typeof projection === 'string' ? undefined : [...projection],
  };
}

/** The replaced indexes of a table that `keep` keeps. */
export function keptIndexes(definition: TableDefinition, keep: boolean | readonly string[] | undefined): readonly IndexDefinition[] {
  const replaced = definition.replacedIndexes ?? [];
  if (keep === undefined || typeof keep === 'boolean') return keep ? replaced : [];
  return replaced.filter((index) => keep.includes(index.indexName));
}

/** Refuses a `keepReplacedIndexes` list that names an index no table replaced: a typo would drop the index it meant to keep. */
export function checkKeptIndexes(definitions: readonly TableDefinition[], keep: boolean | readonly string[] | undefined): void {
  if (keep === undefined || typeof keep === 'boolean') return;
  const given: unknown = keep;
  if (!Array.isArray(given) || given.some((name) => typeof name !== 'string')) {
    throw new Error('keepReplacedIndexes: true, false or a list of index names');
  }
  const replaced = definitions.flatMap((definition) => (definition.replacedIndexes ?? []).map((index) => index.indexName));
  const unknown = keep.filter((name) => !replaced.includes(name));
  if (unknown.length > 0) {
    throw new Error(`keepReplacedIndexes names ${unknown.join(', ')}, which no release replaced; replaced indexes: ${replaced.join(', ')}`);
  }
}

function table(scope: Construct, definition: TableDefinition, props: StorageProps): dynamodb.TableV2 {
  return new dynamodb.TableV2(scope, definition.id, {
    partitionKey: { name: definition.partitionKey.name, type: attributeType(definition.partitionKey.type) },
    sortKey: definition.sortKey && { name: definition.sortKey.name, type: attributeType(definition.sortKey.type) },
    billing: dynamodb.Billing.onDemand(),
    encryption: dynamodb.TableEncryptionV2.awsManagedKey(),
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    globalSecondaryIndexes: [...definition.indexes, ...keptIndexes(definition, props.keepReplacedIndexes)].map(index),
    timeToLiveAttribute: definition.timeToLiveAttribute,
    warmThroughput: props.warmThroughput,
    deletionProtection: true,
    removalPolicy: RemovalPolicy.RETAIN,
  });
}

function queue(scope: Construct, definition: QueueDefinition, deadLetterQueue?: sqs.IQueue, removalPolicy?: RemovalPolicy): sqs.Queue {
  return new sqs.Queue(scope, definition.id, {
    removalPolicy,
    visibilityTimeout: Duration.seconds(definition.visibilityTimeoutSeconds),
    retentionPeriod: Duration.seconds(definition.retentionSeconds),
    maxMessageSizeBytes: definition.maxMessageSizeBytes,
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    deadLetterQueue: deadLetterQueue && definition.maxReceiveCount ? { queue: deadLetterQueue, maxReceiveCount: definition.maxReceiveCount } : undefined,
  });
}

/**
 * Payloads over 4 KiB (decision 0162): private, encrypted, TLS only, kept with the tables when the
 * stack is deleted (the jobs name their objects). The lifecycle rules delete what no item names: an
 * object tagged `superseded` (a payload a PATCH replaced) a day later, and a trigger's payload
 * (under `runs/`) twice the runs' retention plus a day after it was stored, by when its run and
 * any replay of it have ended and expired.
 */
function payloadBucket(scope: Construct, runRetentionDays: number): s3.Bucket {
  const bucket = new s3.Bucket(scope, 'Payloads', {
    encryption: s3.BucketEncryption.S3_MANAGED,
    blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
    enforceSSL: true,
    objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
    removalPolicy: RemovalPolicy.RETAIN,
    lifecycleRules: [
      { id: 'superseded', tagFilters: { [SUPERSEDED_TAG.Key]: SUPERSEDED_TAG.Value }, expiration: Duration.days(1) },
      ...(runRetentionDays > 0 ? [{ id: 'trigger-payloads', prefix: RUN_PAYLOAD_PREFIX, expiration: Duration.days(2 * runRetentionDays + 1) }] : []),
      { id: 'incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
    ],
  });
  NagSuppressions.addResourceSuppressions(bucket, [
    {
      id: 'AwsSolutions-S1',
      reason:
        "Server access logs would need a second bucket and a log of every worker's read. Only the scheduler's own roles reach this private bucket, each write follows an API request in the audit trail, and an operator who wants object-level records turns on CloudTrail data events for it (docs/operations.md).",
    },
  ]);
  return bucket;
}

export class SchedulerStorage extends Construct {
  readonly jobsTable: dynamodb.TableV2;
  readonly runsTable: dynamodb.TableV2;
  /** Payloads too large for their items (decision 0162). */
  readonly payloadBucket: s3.Bucket;
  /** The default pool's lanes and DLQ (the stack's outputs and the default pool's alarms name them). */
  readonly dispatchQueue: sqs.Queue;
  readonly dispatchHighQueue: sqs.Queue;
  readonly dispatchLowQueue: sqs.Queue;
  readonly dispatchDlq: sqs.Queue;
  /** Every pool, in the order given (the default one first). */
  readonly pools: readonly PoolQueues[];

  constructor(scope: Construct, id: string, props: StorageProps) {
    super(scope, id);
    checkKeptIndexes([jobsTable, runsTable], props.keepReplacedIndexes);
    this.jobsTable = table(this, jobsTable, props);
    this.runsTable = table(this, runsTable, props);
    this.payloadBucket = payloadBucket(this, props.runRetentionDays);
    this.pools = props.pools.map((pool) => {
      const definitions = poolQueues(pool);
      // A DLQ is kept when the stack is deleted or its pool removed, as the tables are: its messages
      // (up to 14 days of them) are the record of runs whose dispatch kept failing, and the only one
      // of a body no worker could read. The lanes go: the runs table holds every run they carry, and
      // the ticker redelivers a queued run whose message is lost. A kept DLQ keeps its retention, so
      // its messages still expire; delete it by hand once looked at (docs/operations.md#deploy).
      const dlq = queue(this, definitions.dlq, undefined, RemovalPolicy.RETAIN);
      return {
        name: pool.name,
        jobTypes: pool.jobTypes,
        standard: queue(this, definitions.standard, dlq),
        high: queue(this, definitions.high, dlq),
        low: queue(this, definitions.low, dlq),
        dlq,
      };
    });
    const fallback = this.pools.find((pool) => pool.name === DEFAULT_POOL_NAME);
    if (!fallback) throw new Error('the pools have no default pool');
    this.dispatchQueue = fallback.standard;
    this.dispatchHighQueue = fallback.high;
    this.dispatchLowQueue = fallback.low;
    this.dispatchDlq = fallback.dlq;
  }
}
