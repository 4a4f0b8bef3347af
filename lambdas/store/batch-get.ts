// Strongly consistent reads of many items by key, in BatchGetItem requests of up to 100. Keys
// DynamoDB leaves unprocessed are asked again (twice, after a short wait); any still unanswered
// are read one by one, so an item missing from the answer is one that does not exist, never one
// that was not read.
import type { BatchGetCommandOutput, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { BatchGetCommand, GetCommand } from '@aws-sdk/lib-dynamodb';

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
