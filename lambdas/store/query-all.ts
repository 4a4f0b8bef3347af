// Every page of a DynamoDB query, mapped item by item: for the small partitions the store reads
// whole (a tenant's minute of roll-ups, the worker registry, a tenant's in-flight slots); and the
// count of a query's matches, read page by page, optionally up to a cap.
import type { DynamoDBDocumentClient, QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';

export async function queryAll<T>(
  dynamo: DynamoDBDocumentClient,
  input: Omit<QueryCommandInput, 'ExclusiveStartKey'>,
  map: (item: Record<string, unknown>) => T,
): Promise<T[]> {
  const results: T[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await dynamo.send(new QueryCommand({ ...input, ExclusiveStartKey: start }));
    for (const item of page.Items ?? []) results.push(map(item));
    start = page.LastEvaluatedKey;
  } while (start);
  return results;
}

/**
 * How many items match the query, counted up to `cap` (every page when no cap is given).
 * `capped` says more than `cap` items match: the count reads one item past the cap to know.
 * A cap is applied as the query's Limit, which bounds the items read, not the matches: use it
 * only on queries without a filter.
 */
export async function countAll(
  dynamo: DynamoDBDocumentClient,
  input: Omit<QueryCommandInput, 'ExclusiveStartKey' | 'Select' | 'Limit'>,
  cap?: number,
): Promise<{ count: number; capped: boolean }> {
  let count = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const limit = cap === undefined ? undefined : cap + 1 - count;
    const page = await dynamo.send(new QueryCommand({ ...input, Select: 'COUNT', Limit: limit, ExclusiveStartKey: start }));
    count += page.Count ?? 0;
    start = page.LastEvaluatedKey;
  } while (start && (cap === undefined || count <= cap));
  if (cap !== undefined && count > cap) return { count: cap, capped: true };
  return { count, capped: false };
}
