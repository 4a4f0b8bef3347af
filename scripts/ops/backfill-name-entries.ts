// Copies each job name's guard written before decision 0192 (`JOBNAME#<tenant>#<name>`) to its entry
// in the tenant's names partition (`JOBNAMES#<tenant>`), which guards the name and finds the job by
// it since. Run between an upgrade's two deploys (docs/operations.md): the first keeps
// `byTenantName`, and its creates take both guards, so no name can be taken twice while this runs;
// the second drops the index, and the functions read only the entries. An entry is put only where
// none is, so running it twice, or while the scheduler runs, is safe.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { jobKey, jobNameEntryKey } from '../../lambdas/store/keys';

export interface NameEntryCounts {
  /** Entries written. */
  readonly copied: number;
  /** Names whose entry was there already (taken since the upgrade's first deploy, or copied by an earlier run). */
  readonly present: number;
  /** Old guards whose job is gone (a create that failed before decision 0173's takeover): no entry; the name is free. */
  readonly orphaned: number;
  /** Names whose entry names another job than their old guard: left as they are, for an operator to look at. */
  readonly conflicting: readonly { readonly tenantId: string; readonly name: string; readonly guardJobId: string; readonly entryJobId: string }[];
}

async function* oldGuards(dynamo: DynamoDBDocumentClient, table: string): AsyncGenerator<Record<string, unknown>> {
  let start: Record<string, unknown> | undefined;
  do {
    const page = await dynamo.send(
      new ScanCommand({
        TableName: table,
        FilterExpression: 'begins_with(#pk, :prefix) AND #sk = :sk',
        ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk' },
        ExpressionAttributeValues: { ':prefix': 'JOBNAME#', ':sk': 'JOBNAME' },
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) yield item;
    start = page.LastEvaluatedKey;
  } while (start);
}

/** `now`: the time given to a copied guard that had none (one written in a transaction with its job), epoch ms. */
export async function backfillNameEntries(dynamo: DynamoDBDocumentClient, jobsTable: string, now = Date.now()): Promise<NameEntryCounts> {
  let copied = 0;
  let present = 0;
  let orphaned = 0;
  const conflicting: NameEntryCounts['conflicting'][number][] = [];
  for await (const guard of oldGuards(dynamo, jobsTable)) {
    const jobId = String(guard.jobId);
    // The name and tenant come from the job, not the guard's key: either may hold a '#'.
    const { Item: job } = await dynamo.send(
      new GetCommand({
        TableName: jobsTable,
        Key: jobKey(jobId),
        ConsistentRead: true,
        ProjectionExpression: '#tenantId, #name',
        ExpressionAttributeNames: { '#tenantId': 'tenantId', '#name': 'name' },
      }),
    );
    if (!job || typeof job.tenantId !== 'string' || typeof job.name !== 'string') {
      orphaned += 1;
      continue;
    }
    const key = jobNameEntryKey(job.tenantId, job.name);
    // Always a time: an entry whose job is deleted after it was read here is then taken over by the
    // next create of the name once it is old enough (NameGuards), like any guard whose create failed.
    const takenAt = typeof guard.takenAt === 'string' ? guard.takenAt : new Date(now).toISOString();
    try {
      await dynamo.send(new PutCommand({ TableName: jobsTable, Item: { ...key, jobId, takenAt }, ConditionExpression: 'attribute_not_exists(pk)' }));
      copied += 1;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const { Item: entry } = await dynamo.send(new GetCommand({ TableName: jobsTable, Key: key, ConsistentRead: true }));
      if (entry === undefined || entry.jobId === jobId) present += 1;
      else conflicting.push({ tenantId: job.tenantId, name: job.name, guardJobId: jobId, entryJobId: String(entry.jobId) });
    }
  }
  return { copied, present, orphaned, conflicting };
}
