// Backfills (domain/backfill.ts) in the jobs table. An active one is an item in the BACKFILLS
// partition, which the ticker reads every tick; an ended one moves to its job's partition of ended
// backfills, so the ticker's read holds the active ones only, however many have ended (decision
// 0182). A backfill is written once (a repeated request finds it, active or ended) and moved on
// only by compare-and-swap on its version, so two tickers never both count a page.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Backfill } from '../domain/backfill';
import { IF_NEW, absent, conditionExpressions, ifHeld, transactRetryingConflicts, updateIf } from './conditional';
import { BACKFILLS_PARTITION, backfillKey, endedBackfillKey } from './keys';
import type { Key } from './keys';
import { countAll, queryAll } from './query-all';

/** A finished backfill's item is kept this long for its progress to be read, then expires. */
const DONE_RETENTION_SECONDS = 30 * 24 * 3600;
/** Tries of a transaction that meets another on its items (a create and an end of the same backfill). */
const TRANSACTION_ATTEMPTS = 3;

const FIELDS = [
  'backfillId',
  'jobId',
  'tenantId',
  'from',
  'to',
  'schedule',
  'total',
  'released',
  'cursor',
  'status',
  'createdAt',
  'updatedAt',
  'version',
  'traceparent',
] as const;

function itemToBackfill(item: Record<string, unknown>): Backfill {
  // A backfill written before traces has no traceparent: the field is left out, not undefined.
  return Object.fromEntries(FIELDS.flatMap((field) => (item[field] === undefined ? [] : [[field, item[field]]]))) as unknown as Backfill;
}

export class Backfills {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /**
   * Writes a new backfill (one with nothing to release is written ended); returns the stored one
   * when the same range was asked for before, whether it is still active or has ended.
   */
  async create(backfill: Backfill, now: number): Promise<{ readonly created: boolean; readonly backfill: Backfill }> {
    const { jobId, backfillId } = backfill;
    let created: boolean;
    if (backfill.status === 'ACTIVE') {
      // Not active already (the put's condition), and not ended either: in one transaction, so a
      // backfill that ends meanwhile is found, not started again.
      const result = await transactRetryingConflicts(
        this.dynamo,
        {
          ended: { ConditionCheck: { TableName: this.tableName, Key: endedBackfillKey(jobId, backfillId), ...conditionExpressions({ pk: absent }) } },
          active: { Put: { TableName: this.tableName, Item: { ...backfillKey(jobId, backfillId), ...backfill }, ...conditionExpressions(IF_NEW) } },
        },
        TRANSACTION_ATTEMPTS,
      );
      if (!result.committed && result.failed.size === 0) throw result.error;
      created = result.committed;
    } else {
      const written = await ifHeld(() =>
        this.dynamo.send(new PutCommand({ TableName: this.tableName, Item: this.endedItem(backfill, now), ...conditionExpressions(IF_NEW) })),
      );
      created = written.held;
    }
    if (created) return { created: true, backfill };
    const stored = await this.get(jobId, backfillId);
    if (!stored) throw new Error(`backfill ${backfillId} exists and cannot be read`);
    return { created: false, backfill: stored };
  }

  /** A backfill, active or ended. */
  async get(jobId: string, backfillId: string): Promise<Backfill | null> {
    return (await this.read(backfillKey(jobId, backfillId))) ?? (await this.read(endedBackfillKey(jobId, backfillId)));
  }

  /** How many of a tenant's backfills are active (read from the active ones, which the limit keeps few). */
  async activeCount(tenantId: string): Promise<number> {
    const { count } = await countAll(this.dynamo, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      FilterExpression: '#status = :active AND #tenantId = :tenantId',
      ExpressionAttributeNames: { '#status': 'status', '#tenantId': 'tenantId' },
      ExpressionAttributeValues: { ':pk': BACKFILLS_PARTITION, ':active': 'ACTIVE', ':tenantId': tenantId },
      ConsistentRead: true,
    });
    return count;
  }

  private async read(key: Key): Promise<Backfill | null> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: key, ConsistentRead: true }));
    return item ? itemToBackfill(item) : null;
  }

  private endedItem(backfill: Backfill, now: number): Record<string, unknown> {
    return { ...endedBackfillKey(backfill.jobId, backfill.backfillId), ...backfill, expiresAtEpoch: Math.floor(now / 1000) + DONE_RETENTION_SECONDS };
  }

  /** The backfills still releasing, every tenant's. */
  async active(): Promise<Backfill[]> {
    return queryAll(
      this.dynamo,
      {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk',
        FilterExpression: '#status = :active',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':pk': BACKFILLS_PARTITION, ':active': 'ACTIVE' },
        ConsistentRead: true,
      },
      itemToBackfill,
    );
  }

  /**
   * Records a released page, if the backfill is still as read (its version). The last page moves
   * the backfill to its job's ended ones, in one transaction with the same condition.
   */
  async advance(backfill: Backfill, page: { readonly cursor: number; readonly released: number; readonly done: boolean }, now: number): Promise<boolean> {
    const key = backfillKey(backfill.jobId, backfill.backfillId);
    const moved = { cursor: page.cursor, released: backfill.released + page.released, updatedAt: new Date(now).toISOString(), version: backfill.version + 1 };
    if (!page.done) return updateIf(this.dynamo, this.tableName, key, { set: { ...moved, status: 'ACTIVE' }, if: { version: backfill.version } });
    const ended: Backfill = { ...backfill, ...moved, status: 'DONE' };
    const result = await transactRetryingConflicts(
      this.dynamo,
      {
        active: { Delete: { TableName: this.tableName, Key: key, ...conditionExpressions({ version: backfill.version }) } },
        ended: { Put: { TableName: this.tableName, Item: this.endedItem(ended, now) } },
      },
      TRANSACTION_ATTEMPTS,
    );
    if (!result.committed && result.failed.size === 0) throw result.error;
    return result.committed;
  }
}
