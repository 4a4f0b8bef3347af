// Every page of a DynamoDB query, mapped item by item: for the small partitions the store reads
// whole (a tenant's minute of roll-ups, the worker registry, a tenant's in-flight slots).
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
