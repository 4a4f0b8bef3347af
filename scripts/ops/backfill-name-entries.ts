// Copies each job name's guard written before decision 0192 (`JOBNAME#<tenant>#<name>`) to its entry
// in the tenant's names partition (`JOBNAMES#<tenant>`), which guards the name and finds the job by
// it since, and gives the jobs deleted before it their `<name>#<jobId>` entries. Run after an
// upgrade's first deploy (docs/operations.md), which keeps `byTenantName` and has every create take
// both guards, so no name can be taken twice while this runs; the next deploys move the functions
// to the entries alone, then drop the index. Safe to run twice, and while the scheduler runs.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { scanAll } from './scan';
import type { TransactItem } from '../../lambdas/store/conditional';
import { conditionExpressions, IF_NEW, transact } from '../../lambdas/store/conditional';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { deletedJobNameKey, jobKey, jobNameEntryKey } from '../../lambdas/store/keys';

export interface NameEntryCounts {
  /** Entries written. */
  readonly copied: number;
  /** Names whose entry was there already (taken since the upgrade's first deploy, or copied by an earlier run). */
  readonly present: number;
  /** Old guards whose job is gone or deleted (left by a failed create or a race), or deleted as this ran: no entry; the name is free. */
  readonly orphaned: number;
  /** Deleted named jobs given their entry beside their name's guard (written again on a rerun: a put of the same item). */
  readonly deleted: number;
  /** Names whose copy met other writes at every try: run the backfill again. */
  readonly unresolved: readonly { readonly tenantId: string; readonly name: string; readonly jobId: string }[];
  /** Names whose entry names another live job than their old guard: left as they are, for an operator to look at. */
  readonly conflicting: readonly { readonly tenantId: string; readonly name: string; readonly guardJobId: string; readonly entryJobId: string }[];
}

const oldGuards = (dynamo: DynamoDBDocumentClient, table: string) =>
  scanAll(dynamo, {
    TableName: table,
    FilterExpression: 'begins_with(#pk, :prefix) AND #sk = :sk',
    ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk' },
    ExpressionAttributeValues: { ':prefix': 'JOBNAME#', ':sk': 'JOBNAME' },
  });

/** Named jobs deleted (CANCELLED): `?name=` finds them by their entries beside the names' guards. */
const deletedNamedJobs = (dynamo: DynamoDBDocumentClient, table: string) =>
  scanAll(dynamo, {
    TableName: table,
    FilterExpression: 'begins_with(#pk, :prefix) AND #status = :cancelled AND attribute_exists(#name)',
    ExpressionAttributeNames: { '#pk': 'pk', '#status': 'status', '#name': 'name' },
    ExpressionAttributeValues: { ':prefix': 'JOB#', ':cancelled': 'CANCELLED' },
    ProjectionExpression: 'jobId, tenantId, #name',
  });

/** A job's status as an entry or guard sees it: null when the job item is gone. */
async function statusOf(dynamo: DynamoDBDocumentClient, jobsTable: string, jobId: string): Promise<string | null> {
  const { Item: job } = await dynamo.send(
    new GetCommand({
      TableName: jobsTable,
      Key: jobKey(jobId),
      ConsistentRead: true,
      ProjectionExpression: '#status',
      ExpressionAttributeNames: { '#status': 'status' },
    }),
  );
  return job ? String(job.status) : null;
}

/** `now`: the time given to a copied guard that had none (one written in a transaction with its job), epoch ms. */
export async function backfillNameEntries(dynamo: DynamoDBDocumentClient, jobsTable: string, now = Date.now()): Promise<NameEntryCounts> {
  let copied = 0;
  let present = 0;
  let orphaned = 0;
  const conflicting: NameEntryCounts['conflicting'][number][] = [];
  const unresolved: NameEntryCounts['unresolved'][number][] = [];
  for await (const guard of oldGuards(dynamo, jobsTable)) {
    const jobId = String(guard.jobId);
    // The name and tenant come from the job, not the guard's key: either may hold a '#'.
    const { Item: job } = await dynamo.send(
      new GetCommand({
        TableName: jobsTable,
        Key: jobKey(jobId),
        ConsistentRead: true,
        ProjectionExpression: '#tenantId, #name, #status',
        ExpressionAttributeNames: { '#tenantId': 'tenantId', '#name': 'name', '#status': 'status' },
      }),
    );
    // Gone, or deleted (a delete gives its name back): a guard a failed create or a race left behind.
    if (!job || typeof job.tenantId !== 'string' || typeof job.name !== 'string' || job.status === 'CANCELLED') {
      orphaned += 1;
      continue;
    }
    const key = jobNameEntryKey(job.tenantId, job.name);
    // Always a time, as a guard taken on its own has (NameGuards).
    const takenAt = typeof guard.takenAt === 'string' ? guard.takenAt : new Date(now).toISOString();
    const items: Record<string, TransactItem> = {
      // Only while the old guard still names the job: a delete that lands between the reads above
      // and this write removes the old guard, and must not leave an entry behind it.
      guard: { ConditionCheck: { TableName: jobsTable, Key: { pk: guard.pk, sk: guard.sk }, ...conditionExpressions({ jobId }) } },
      entry: { Put: { TableName: jobsTable, Item: { ...key, jobId, takenAt }, ...conditionExpressions(IF_NEW) } },
    };
    let outcome: 'copied' | 'present' | 'released' | 'unresolved' | { readonly entryJobId: string } = 'unresolved';
    // Three tries at most: an entry whose job is gone or deleted is stale, and is deleted before the copy is tried again.
    for (let attempt = 0; attempt < 3; attempt++) {
      const result = await transact(dynamo, items);
      if (result.committed) {
        outcome = 'copied';
        break;
      }
      if (result.failed.has('guard')) {
        outcome = 'released';
        break;
      }
      if (!result.failed.has('entry')) continue; // a conflict with another write: try again
      const { Item: entry } = await dynamo.send(new GetCommand({ TableName: jobsTable, Key: key, ConsistentRead: true }));
      if (entry === undefined) continue;
      const entryJobId = String(entry.jobId);
      if (entryJobId === jobId) {
        outcome = 'present';
        break;
      }
      outcome = { entryJobId };
      const entryStatus = await statusOf(dynamo, jobsTable, entryJobId);
      if (entryStatus !== null && entryStatus !== 'CANCELLED') break;
      try {
        await dynamo.send(new DeleteCommand({ TableName: jobsTable, Key: key, ...conditionExpressions({ jobId: entryJobId }) }));
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }
    }
    if (outcome === 'copied') copied += 1;
    else if (outcome === 'present') present += 1;
    else if (outcome === 'released') orphaned += 1;
    else if (outcome === 'unresolved') unresolved.push({ tenantId: job.tenantId, name: job.name, jobId });
    else conflicting.push({ tenantId: job.tenantId, name: job.name, guardJobId: jobId, entryJobId: outcome.entryJobId });
  }
  // The jobs deleted before: `?name=` finds them by their entries beside the names' guards.
  let deleted = 0;
  for await (const job of deletedNamedJobs(dynamo, jobsTable)) {
    const item = { ...deletedJobNameKey(String(job.tenantId), String(job.name), String(job.jobId)), jobId: String(job.jobId) };
    await dynamo.send(new PutCommand({ TableName: jobsTable, Item: item }));
    deleted += 1;
  }
  return { copied, present, orphaned, conflicting, unresolved, deleted };
}
