// Strongly consistent reads of many items by key, in BatchGetItem requests of up to 100. Keys
// DynamoDB leaves unprocessed are asked again (twice, after a short wait); any still unanswered
// are read one by one, so an item missing from the answer is one that does not exist, never one
// that was not read.
import type { BatchGetCommandOutput, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { BatchGetCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { Coalescer } from './coalescer';

/** DynamoDB's limit of keys in one BatchGetItem request. */
export const BATCH_GET_MAX_KEYS = 100;
const ROUNDS = 3;

export async function batchGetConsistent(
  dynamo: DynamoDBDocumentClient,
  tableName: string,
  keys: readonly Record<string, unknown>[],
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  for (let start = 0; start < keys.length; start += BATCH_GET_MAX_KEYS) {
    let pending: Record<string, unknown>[] | undefined = keys.slice(start, start + BATCH_GET_MAX_KEYS);
    for (let round = 0; pending && pending.length > 0 && round < ROUNDS; round++) {
      if (round > 0) await new Promise((resolve) => setTimeout(resolve, 20 * 2 ** round));
      const output: BatchGetCommandOutput = await dynamo.send(new BatchGetCommand({ RequestItems: { [tableName]: { Keys: pending, ConsistentRead: true } } }));
      items.push(...(output.Responses?.[tableName] ?? []));
      pending = output.UnprocessedKeys?.[tableName]?.Keys;
    }
    for (const key of pending ?? []) {
      const { Item: item } = await dynamo.send(new GetCommand({ TableName: tableName, Key: key, ConsistentRead: true }));
      if (item) items.push(item);
    }
  }
  return items;
}

interface PendingItemRead {
  readonly key: Record<string, unknown>;
  readonly resolve: (item: Record<string, unknown> | null) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Strongly consistent reads of single items that share one BatchGetItem with the reads made around
 * them (`Coalescer`'s quiet and cap): the runs of a worker batch read the same kind of item within
 * milliseconds of each other. An item the answer lacks does not exist (`batchGetConsistent`).
 */
export class CoalescedItemReads {
  private readonly reads: Coalescer<PendingItemRead>;

  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
    /** The item's key attributes, to match an answer to its read. */
    private readonly keyAttributes: readonly string[],
    options: { readonly quietMs: number; readonly capMs: number },
  ) {
    this.reads = new Coalescer({ maxBatch: BATCH_GET_MAX_KEYS, ...options }, (batch) => void this.readBatch(batch));
  }

  read(key: Record<string, unknown>): Promise<Record<string, unknown> | null> {
    return new Promise((resolve, reject) => this.reads.add({ key, resolve, reject }));
  }

  private async readBatch(pending: readonly PendingItemRead[]): Promise<void> {
    const idOf = (item: Record<string, unknown>): string => JSON.stringify(this.keyAttributes.map((name) => item[name]));
    try {
      // One key once, however many runs asked for it: BatchGetItem refuses a key given twice.
      const keys = [...new Map(pending.map((read) => [idOf(read.key), read.key])).values()];
      const items = new Map((await batchGetConsistent(this.dynamo, this.tableName, keys)).map((item) => [idOf(item), item]));
      for (const read of pending) read.resolve(items.get(idOf(read.key)) ?? null);
    } catch (error) {
      for (const read of pending) read.reject(error);
    }
  }
}
