// Backfills the keys of the finding indexes (decision 0095) on items written before them: a job's
// `tenantStatus` (none for a COMPLETED job: decision 0166; no type key since decision 0186) and its
// label entries, when it has labels, a run's `tenantRunSort`,
// a workflow's entries in its tenant's list (`WFLIST#`).
// Each item is updated only where the attribute is missing, so running it twice, or while the
// scheduler writes, is safe. A one-off after deploying the indexes to a stack with existing data.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { scanAll } from './scan';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { jobLabelKey, labelPairsOf, tenantRunSortOf, workflowListKeys, WORKFLOW_PK_PREFIX } from '../../lambdas/store/keys';
import { findingKeysOf, itemToJob } from '../../lambdas/store/job-items';

export interface BackfillCounts {
  readonly jobs: number;
  readonly runs: number;
  /** Workflows given their entries in their tenant's list (`GET /v1/workflows`), written before it existed. */
  readonly workflows: number;
}

const scan = (dynamo: DynamoDBDocumentClient, table: string, prefix: string, missing: string) =>
  scanAll(dynamo, {
    TableName: table,
    FilterExpression: 'begins_with(#pk, :prefix) AND attribute_not_exists(#missing)',
    ExpressionAttributeNames: { '#pk': 'pk', '#missing': missing },
    ExpressionAttributeValues: { ':prefix': prefix },
  });

async function setIfMissing(dynamo: DynamoDBDocumentClient, table: string, key: Record<string, unknown>, values: Record<string, string>): Promise<boolean> {
  const names = Object.fromEntries(Object.keys(values).map((name, i) => [`#a${i}`, name]));
  const placeholders = Object.fromEntries(Object.values(values).map((value, i) => [`:v${i}`, value]));
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: table,
        Key: key,
        UpdateExpression: `SET ${Object.keys(values)
          .map((_, i) => `#a${i} = :v${i}`)
          .join(', ')}`,
        ConditionExpression: `attribute_exists(pk) AND attribute_not_exists(#a0)`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: placeholders,
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

/** Puts an item unless one is there: read first, as a refused conditional put is billed a write (a rerun meets every entry). */
async function putIfMissing(dynamo: DynamoDBDocumentClient, table: string, item: Record<string, unknown>): Promise<boolean> {
  const { Item: existing } = await dynamo.send(new GetCommand({ TableName: table, Key: { pk: item.pk, sk: item.sk } }));
  if (existing) return false;
  try {
    await dynamo.send(new PutCommand({ TableName: table, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }));
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

export async function backfillFindingKeys(dynamo: DynamoDBDocumentClient, jobsTable: string, runsTable: string): Promise<BackfillCounts> {
  let jobs = 0;
  // A job without a status key: one from before the indexes, or a COMPLETED one, which has none
  // (decision 0166). Either may lack its label entries.
  for await (const item of scan(dynamo, jobsTable, 'JOB#', 'tenantStatus')) {
    const job = itemToJob(item);
    const keys = findingKeysOf(job);
    let given = Object.keys(keys).length > 0 && (await setIfMissing(dynamo, jobsTable, { pk: item.pk, sk: item.sk }, keys));
    for (const label of labelPairsOf(job.labels)) {
      given = (await putIfMissing(dynamo, jobsTable, { ...jobLabelKey(job.tenantId, label, job), jobId: job.jobId })) || given;
    }
    if (given) jobs += 1;
  }
  let runs = 0;
  for await (const item of scan(dynamo, runsTable, 'RUN#', 'tenantRunSort')) {
    if (typeof item.scheduledFor !== 'string' || typeof item.runId !== 'string') continue;
    if (
      await setIfMissing(
        dynamo,
        runsTable,
        { pk: item.pk, sk: item.sk },
        { tenantRunSort: tenantRunSortOf({ scheduledFor: item.scheduledFor, runId: item.runId }) },
      )
    )
      runs += 1;
  }
  let workflows = 0;
  for await (const item of scan(dynamo, jobsTable, WORKFLOW_PK_PREFIX, 'listed')) {
    if (item.sk !== 'WORKFLOW' || typeof item.workflowId !== 'string' || typeof item.tenantId !== 'string') continue;
    const keys = workflowListKeys({ tenantId: item.tenantId, workflowId: item.workflowId, name: String(item.name), createdAt: String(item.createdAt) });
    for (const key of [keys.byTime, keys.byName]) await dynamo.send(new PutCommand({ TableName: jobsTable, Item: { ...key, workflowId: item.workflowId } }));
    if (await setIfMissing(dynamo, jobsTable, { pk: item.pk, sk: item.sk }, { listed: 'true' })) workflows += 1;
  }
  return { jobs, runs, workflows };
}
