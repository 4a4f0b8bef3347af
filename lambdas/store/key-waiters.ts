// The runs waiting for a concurrency key's slot, by priority and then in the order they became due
// (decisions 0130, 0191): one small item per waiting run, keyed by its priority's rank, its due time
// and its id, so a listing is the queue, high runs first and oldest first within a priority.
// A run joins when it finds no slot it may take and leaves when it takes one; an entry whose run no
// longer waits (cancelled, finished, or its leave lost in a crash) is removed by whoever finds it.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DeleteCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Priority } from './dispatch-queue';
import { keyWaitKey, keyWaitPartition } from './keys';

/** A waiting run and what its wake-up message needs. */
export interface KeyWaiter {
  readonly runId: string;
  /** The queue's order (`waiterSortOf`): the run's priority, its due time, then its id. */
  readonly sort: string;
  readonly tenantId: string;
  readonly jobType: string;
  readonly priority: Priority;
  /** The run's trace, for its wake-up message (decision 0117). */
  readonly traceparent?: string;
}

const WAITER_TTL_SECONDS = 24 * 3600;

export class KeyWaiters {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** The first `count` waiters of the key, in the queue's order. */
  async first(scope: string, count: number): Promise<KeyWaiter[]> {
    const { Items: items = [] } = await this.dynamo.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': keyWaitPartition(scope) },
        ConsistentRead: true,
        Limit: count,
      }),
    );
    return items.map((item) => ({
      runId: String(item.runId),
      sort: String(item.sk),
      tenantId: String(item.tenantId),
      jobType: String(item.jobType),
      priority: item.priority as Priority,
      ...(typeof item.traceparent === 'string' ? { traceparent: item.traceparent } : {}),
    }));
  }

  /** Puts the run in the queue (again: the same item, since its place is its due time and id). */
  async join(scope: string, waiter: KeyWaiter, now: number): Promise<void> {
    await this.dynamo.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { ...keyWaitKey(scope, waiter.sort), ...waiter, expiresAtEpoch: Math.floor(now / 1000) + WAITER_TTL_SECONDS },
      }),
    );
  }

  async leave(scope: string, sort: string): Promise<void> {
    await this.dynamo.send(new DeleteCommand({ TableName: this.tableName, Key: keyWaitKey(scope, sort) }));
  }
}

/** A priority's rank in a key's queue: high runs first, then normal, then low (decision 0191). */
const PRIORITY_RANK: Readonly<Record<Priority, string>> = { high: '0', normal: '1', low: '2' };

/**
 * A run's place in its key's queue: its priority's rank, then when it became due, then its id
 * (decision 0191). Entries written before the rank (`<due>#<id>`) sort after every ranked one.
 */
export const waiterSortOf = (run: { readonly availableAt: string; readonly runId: string; readonly priority?: Priority | null }): string =>
  `${PRIORITY_RANK[run.priority ?? 'normal']}#${run.availableAt}#${run.runId}`;
