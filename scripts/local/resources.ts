// Creates the local tables and queues from the definitions the CDK stack uses, and returns the
// scheduler configuration that points at them. Safe to call again: existing resources are kept.
import type { KMSClient } from '@aws-sdk/client-kms';
import {
  CreateAliasCommand,
  CreateKeyCommand,
  DeleteAliasCommand,
  DescribeKeyCommand,
  ListAliasesCommand,
  ScheduleKeyDeletionCommand,
} from '@aws-sdk/client-kms';
import type { S3Client } from '@aws-sdk/client-s3';
import { BucketAlreadyOwnedByYou, CreateBucketCommand, DeleteBucketCommand, DeleteObjectsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { TenantLimits } from '../../lambdas/domain/tenant';
import { DEFAULT_TENANT_LIMITS } from '../../lambdas/domain/tenant';
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import type { SchedulerConfig, Tuning } from '../../lambdas/config/config';
import { poolRoutesOf, readConfig, routingSettings, toEnvironment } from '../../lambdas/config/config';
import type { AwsClients } from '../../lambdas/store/aws';
import type { IndexDefinition, QueueDefinition, TableDefinition } from '../../lambdas/store/schema';
import { JOBS_BY_NAME_INDEX, jobsTable, runsTable } from '../../lambdas/store/schema';
import { backfillNameEntries } from '../ops/backfill-name-entries';
import type { Pool, PoolDefinition, PoolRoute } from '../../lambdas/store/pools';
import { defaultPool, lowLaneConcurrency, poolQueues, poolResourceNames, validatePools } from '../../lambdas/store/pools';

function projectionOf(definition: IndexDefinition) {
  const { projection } = definition;
  if (projection === 'all') return { ProjectionType: 'ALL' as const };
  if (projection === 'keys') return { ProjectionType: 'KEYS_ONLY' as const };
  return { ProjectionType: 'INCLUDE' as const, NonKeyAttributes: [...projection] };
}

export function createTableInput(name: string, definition: TableDefinition): CreateTableCommandInput {
  const keyAttributes = [
    definition.partitionKey,
    ...(definition.sortKey ? [definition.sortKey] : []),
    ...definition.indexes.flatMap((index) => [index.partitionKey, ...(index.sortKey ? [index.sortKey] : [])]),
  ];
  const unique = [...new Map(keyAttributes.map((attribute) => [attribute.name, attribute])).values()];
  return {
    TableName: name,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: unique.map((attribute) => ({ AttributeName: attribute.name, AttributeType: attribute.type })),
    KeySchema: [
      { AttributeName: definition.partitionKey.name, KeyType: 'HASH' },
      ...(definition.sortKey ? [{ AttributeName: definition.sortKey.name, KeyType: 'RANGE' as const }] : []),
    ],
    GlobalSecondaryIndexes: definition.indexes.map((index) => ({
      IndexName: index.indexName,
      KeySchema: [
        { AttributeName: index.partitionKey.name, KeyType: 'HASH' as const },
        ...(index.sortKey ? [{ AttributeName: index.sortKey.name, KeyType: 'RANGE' as const }] : []),
      ],
      Projection: projectionOf(index),
    })),
  };
}

async function ensureTable(dynamo: DynamoDBDocumentClient, name: string, definition: TableDefinition): Promise<void> {
  try {
    await dynamo.send(new CreateTableCommand(createTableInput(name, definition)));
    if (definition.timeToLiveAttribute) {
      await dynamo.send(
        new UpdateTimeToLiveCommand({
          TableName: name,
          TimeToLiveSpecification: { AttributeName: definition.timeToLiveAttribute, Enabled: true },
        }),
      );
    }
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  await waitActive(dynamo, name);
  // A table made by an older version of the scheduler gets the indexes added since.
  const { Table: table } = await dynamo.send(new DescribeTableCommand({ TableName: name }));
  const present = new Set((table?.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName));
  const wanted = createTableInput(name, definition);
  for (const index of wanted.GlobalSecondaryIndexes ?? []) {
    if (present.has(index.IndexName)) continue;
    await dynamo.send(
      new UpdateTableCommand({
        TableName: name,
        AttributeDefinitions: wanted.AttributeDefinitions,
        GlobalSecondaryIndexUpdates: [{ Create: index }],
      }),
    );
    await waitActive(dynamo, name);
  }
}

/**
 * A jobs table made before decision 0192 has the `byTenantName` index and its names' old guards. The
 * local runtime is one process, stopped before it is upgraded: its start copies the guards to the
 * names' entries (scripts/ops/backfill-name-entries.ts) before anything is served, then drops the index.
 */
async function retireNameIndex(dynamo: DynamoDBDocumentClient, name: string): Promise<void> {
  const { Table: table } = await dynamo.send(new DescribeTableCommand({ TableName: name }));
  if (!(table?.GlobalSecondaryIndexes ?? []).some((index) => index.IndexName === JOBS_BY_NAME_INDEX)) return;
  const counts = await backfillNameEntries(dynamo, name);
  if (counts.conflicting.length > 0 || counts.unresolved.length > 0) {
    throw new Error(`jobs table ${name}: names not copied to their entries: ${JSON.stringify([...counts.conflicting, ...counts.unresolved])}`);
  }
  await dynamo.send(new UpdateTableCommand({ TableName: name, GlobalSecondaryIndexUpdates: [{ Delete: { IndexName: JOBS_BY_NAME_INDEX } }] }));
  await waitActive(dynamo, name);
}

async function waitActive(dynamo: DynamoDBDocumentClient, name: string): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const { Table: table } = await dynamo.send(new DescribeTableCommand({ TableName: name }));
    if (table?.TableStatus === 'ACTIVE') return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`table ${name} did not become active`);
}

async function ensureQueue(sqs: SQSClient, name: string, definition: QueueDefinition, deadLetterArn?: string): Promise<{ url: string; arn: string }> {
  const { QueueUrl: url } = await sqs.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        VisibilityTimeout: String(definition.visibilityTimeoutSeconds),
        MessageRetentionPeriod: String(definition.retentionSeconds),
        MaximumMessageSize: String(definition.maxMessageSizeBytes),
        ...(deadLetterArn && definition.maxReceiveCount
          ? { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: deadLetterArn, maxReceiveCount: definition.maxReceiveCount }) }
          : {}),
      },
    }),
  );
  if (!url) throw new Error(`queue ${name} was not created`);
  const { Attributes: attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
  const arn = attributes?.QueueArn;
  if (!arn) throw new Error(`queue ${name} has no ARN`);
  return { url, arn };
}

/** The prefix's KMS key for signing secrets, found by its alias (a restarted runtime keeps its secrets readable). */
async function ensureSigningKey(kms: KMSClient, prefix: string): Promise<string> {
  const alias = `alias/${prefix}-signing`;
  try {
    const { KeyMetadata: existing } = await kms.send(new DescribeKeyCommand({ KeyId: alias }));
    if (existing?.KeyId) return existing.KeyId;
  } catch (error) {
    if (!(error instanceof Error && error.name === 'NotFoundException')) throw error;
  }
  const { KeyMetadata: created } = await kms.send(new CreateKeyCommand({ Description: `${prefix} webhook signing secrets` }));
  if (!created?.KeyId) throw new Error('the signing key was not created');
  await kms.send(new CreateAliasCommand({ AliasName: alias, TargetKeyId: created.KeyId }));
  return created.KeyId;
}

/** The prefix's payload bucket (decision 0162): a bucket name is lower case, 3 to 63 characters. */
export function localBucketName(prefix: string): string {
  return `${prefix.toLowerCase().replace(/[^a-z0-9-]/g, '-')}-payloads`.slice(-63).replace(/^-+/, '');
}

async function ensureBucket(s3: S3Client, name: string): Promise<string> {
  try {
    await s3.send(new CreateBucketCommand({ Bucket: name }));
  } catch (error) {
    if (!(error instanceof BucketAlreadyOwnedByYou || (error instanceof Error && error.name === 'BucketAlreadyOwnedByYou'))) throw error;
  }
  return name;
}

export async function createLocalResources(
  clients: AwsClients,
  prefix: string,
  tuning: Partial<Tuning> = {},
  tenantDefaults: Partial<TenantLimits> = {},
  pools: readonly PoolDefinition[] = [],
): Promise<SchedulerConfig> {
  // Locally a pool may have one poller (AWS's event source mapping needs two).
  validatePools(pools, { minConcurrency: 1 });
  const jobs = `${prefix}-jobs`;
  const runs = `${prefix}-runs`;
  const [signingKeyId, payloadBucket] = await Promise.all([
    ensureSigningKey(clients.kms, prefix),
    ensureBucket(clients.s3, localBucketName(prefix)),
    ensureTable(clients.dynamo, jobs, jobsTable).then(() => retireNameIndex(clients.dynamo, jobs)),
    ensureTable(clients.dynamo, runs, runsTable),
  ]);
  // Every pool's lanes and DLQ, the default pool's included, from the same definitions as the
  // stack's (every lane redrives to the DLQ). The default pool's lanes are uncapped locally too.
  const routes: PoolRoute[] = await Promise.all(
    [defaultPool(), ...pools].map(async (pool: Pool): Promise<PoolRoute> => {
      const queues = poolQueues(pool);
      const base = `${prefix}-${poolResourceNames(pool.name).local}`;
      const dlq = await ensureQueue(clients.sqs, `${base}-dlq`, queues.dlq);
      const [standard, high, low] = await Promise.all([
        ensureQueue(clients.sqs, base, queues.standard, dlq.arn),
        ensureQueue(clients.sqs, `${base}-high`, queues.high, dlq.arn),
        ensureQueue(clients.sqs, `${base}-low`, queues.low, dlq.arn),
      ]);
      return {
        ...pool,
        ...(pool.maxConcurrency !== undefined ? { lowMaxConcurrency: lowLaneConcurrency(pool.maxConcurrency, 1, pool.lowMaxConcurrency) } : {}),
        queueUrl: standard.url,
        highQueueUrl: high.url,
        lowQueueUrl: low.url,
        dlqUrl: dlq.url,
      };
    }),
  );
  // The configuration a function would read from the same resources in its environment.
  return readConfig({
    ...toEnvironment({ ...tuning, tenantDefaults: { ...DEFAULT_TENANT_LIMITS, ...tenantDefaults } }),
    ...toEnvironment({
      jobsTable: jobs,
      runsTable: runs,
      signingKeyId,
      payloadBucket,
      ...routingSettings(routes),
      localMode: true,
      // Local mode already calls loopback (see egressPolicyOf); other private addresses stay refused.
      allowPrivateTargets: false,
    }),
  });
}

/** Deletes a prefix's signing key's aliases and schedules the key's deletion (KMS's shortest wait, 7 days). */
async function deleteSigningKey(kms: KMSClient, keyId: string): Promise<void> {
  const { Aliases: aliases = [] } = await kms.send(new ListAliasesCommand({ KeyId: keyId }));
  await Promise.allSettled(aliases.flatMap((alias) => (alias.AliasName ? [kms.send(new DeleteAliasCommand({ AliasName: alias.AliasName }))] : [])));
  await kms.send(new ScheduleKeyDeletionCommand({ KeyId: keyId, PendingWindowInDays: 7 }));
}

/** Deletes a prefix's tables, queues, bucket and signing key: the emulator keeps everything in memory. */
export async function deleteLocalResources(clients: AwsClients, config: SchedulerConfig): Promise<void> {
  await Promise.allSettled([
    ...(config.signingKeyId ? [deleteSigningKey(clients.kms, config.signingKeyId)] : []),
    ...(config.payloadBucket ? [emptyAndDeleteBucket(clients.s3, config.payloadBucket)] : []),
    clients.dynamo.send(new DeleteTableCommand({ TableName: config.jobsTable })),
    clients.dynamo.send(new DeleteTableCommand({ TableName: config.runsTable })),
    ...poolRoutesOf(config)
      .flatMap((pool) => [pool.queueUrl, pool.dlqUrl, ...(pool.highQueueUrl ? [pool.highQueueUrl] : []), ...(pool.lowQueueUrl ? [pool.lowQueueUrl] : [])])
      .map((url) => clients.sqs.send(new DeleteQueueCommand({ QueueUrl: url }))),
  ]);
}

async function emptyAndDeleteBucket(s3: S3Client, bucket: string): Promise<void> {
  for (;;) {
    const { Contents: objects = [] } = await s3.send(new ListObjectsV2Command({ Bucket: bucket }));
    if (objects.length === 0) break;
    await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: objects.map((object) => ({ Key: object.Key })) } }));
  }
  await s3.send(new DeleteBucketCommand({ Bucket: bucket }));
}
