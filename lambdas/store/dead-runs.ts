// Dead runs: a run that ended DEAD enters its tenant's sparse dead-run index (written with its
// outcome, run-leases.ts) and leaves it when it is replayed.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Run } from '../domain/run';
import { absent, conditionExpressions, exists, IF_NEW, transact, updateExpressions } from './conditional';
import { MAX_ITEMS_READ_PER_PAGE, readFilteredPage } from './filtered-page';
import type { RunItemExtras } from './run-items';
import { encodeCursor, runKey } from './keys';
import { itemToRun, runToItem } from './run-items';
import type { Page } from './page';
import { decodeCursorWithin } from './page';
import { countAll } from './query-all';
import { RUNS_DEAD_INDEX } from './schema';

export interface DeadFilter {
  readonly jobId?: string;
  /** ISO instants bounding when the runs died. */
  readonly from?: string;
  readonly to?: string;
}

export class DeadRuns {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** How many DEAD runs of the tenant await a replay, counted up to `cap`. */
  async count(tenantId: string, cap: number): Promise<{ count: number; capped: boolean }> {
    return countAll(
      this.dynamo,
      {
        TableName: this.tableName,
        IndexName: RUNS_DEAD_INDEX,
        KeyConditionExpression: '#tenant = :tenant',
        ExpressionAttributeNames: { '#tenant': 'deadTenantId' },
        ExpressionAttributeValues: { ':tenant': tenantId },
      },
      cap,
    );
  }

  /**
   * The tenant's DEAD runs not yet replayed, newest first; optionally of one job or a time range.
   * A job filter is applied after DynamoDB's Limit, so pages are read until this one is full
   * (`readFilteredPage`, with its read budget); `nextCursor` is null when no further run matches.
   */
  async list(tenantId: string, limit: number, filter: DeadFilter = {}, cursor?: string, maxItemsRead = MAX_ITEMS_READ_PER_PAGE): Promise<Page<Run>> {
    const between = [filter.from ?? '0000', `${filter.to ?? '9999'}~`] as const;
    const page = await readFilteredPage(
      this.dynamo,
      {
        TableName: this.tableName,
        IndexName: RUNS_DEAD_INDEX,
        KeyConditionExpression: '#tenant = :tenant AND #sort BETWEEN :from AND :to',
        FilterExpression: filter.jobId ? '#jobId = :jobId' : undefined,
        ExpressionAttributeNames: { '#tenant': 'deadTenantId', '#sort': 'deadSort', ...(filter.jobId ? { '#jobId': 'jobId' } : {}) },
        ExpressionAttributeValues: {
          ':tenant': tenantId,
          ':from': between[0],
          ':to': between[1],
          ...(filter.jobId ? { ':jobId': filter.jobId } : {}),
        },
        ScanIndexForward: false,
      },
      limit,
      (item) => ({ pk: item.pk, sk: item.sk, deadTenantId: item.deadTenantId, deadSort: item.deadSort }),
      cursor ? decodeCursorWithin(cursor, { deadTenantId: tenantId }, 'deadSort', { between }, 'from/to') : undefined,
      maxItemsRead,
    );
    return { items: page.items.map(itemToRun), nextCursor: encodeCursor(page.next) };
  }

  /**
   * Writes the replay of a finished run; a DEAD run leaves the dead-run index in the same
   * transaction, so it is replayed once. False when it was replayed already, or is no longer stored
   * (its retention ended since it was read): an update of a key that is gone would write an item of
   * its own, a stub with no status and no expiry that would never leave.
   */
  async replay(original: Run, replay: { run: Run; extras: RunItemExtras }, now: number): Promise<boolean> {
    const result = await transact(this.dynamo, {
      mark: {
        Update: {
          TableName: this.tableName,
          Key: runKey(original.runId),
          ...updateExpressions({
            set: { replayedAs: replay.run.runId, updatedAt: new Date(now).toISOString() },
            remove: ['deadTenantId', 'deadSort'],
            if: { pk: exists, replayedAs: absent },
          }),
        },
      },
      replay: { Put: { TableName: this.tableName, Item: runToItem(replay.run, replay.extras), ...conditionExpressions(IF_NEW) } },
    });
    return result.committed;
  }
}
