// Backfills (domain/backfill.ts) in the jobs table: one item each in the BACKFILLS partition, which
// the ticker reads for the active ones. A backfill is written once (a repeated request finds it)
// and moved on only by compare-and-swap on its version, so two tickers never both count a page.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Backfill } from '../domain/backfill';
import { IF_NEW, conditionExpressions, ifHeld, updateIf } from './conditional';
import { BACKFILLS_PARTITION, backfillKey } from './keys';
import { queryAll } from './query-all';

/** A finished backfill's item is kept this long for its progress to be read, then expires. */
const DONE_RETENTION_SECONDS = 30 * 24 * 3600;

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

  /** Writes a new backfill; returns the stored one when the same range was asked for before. */
  async create(backfill: Backfill): Promise<{ readonly created: boolean; readonly backfill: Backfill }> {
    const written = await ifHeld(() =>
      this.dynamo.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...backfillKey(backfill.jobId, backfill.backfillId), ...backfill },
          ...conditionExpressions(IF_NEW),
        }),
      ),
    );
    if (written.held) return { created: true, backfill };
    const stored = await this.get(backfill.jobId, backfill.backfillId);
    if (!stored) throw new Error(`backfill ${backfill.backfillId} exists and cannot be read`);
    return { created: false, backfill: stored };
  }

  async get(jobId: string, backfillId: string): Promise<Backfill | null> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: backfillKey(jobId, backfillId), ConsistentRead: true }));
    return item ? itemToBackfill(item) : null;
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

  /** Records a released page, if the backfill is still as read (its version). */
  async advance(backfill: Backfill, page: { readonly cursor: number; readonly released: number; readonly done: boolean }, now: number): Promise<boolean> {
    return updateIf(this.dynamo, this.tableName, backfillKey(backfill.jobId, backfill.backfillId), {
      set: {
        cursor: page.cursor,
        released: backfill.released + page.released,
        status: page.done ? 'DONE' : 'ACTIVE',
        updatedAt: new Date(now).toISOString(),
        version: backfill.version + 1,
        ...(page.done ? { expiresAtEpoch: Math.floor(now / 1000) + DONE_RETENTION_SECONDS } : {}),
      },
      if: { version: backfill.version },
    });
  }
}
