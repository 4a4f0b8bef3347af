// Every item of a table a filtered scan finds, page by page: for the one-off backfills of an upgrade.
import type { DynamoDBDocumentClient, ScanCommandInput } from '@aws-sdk/lib-dynamodb';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';

export async function* scanAll(dynamo: DynamoDBDocumentClient, input: Omit<ScanCommandInput, 'ExclusiveStartKey'>): AsyncGenerator<Record<string, unknown>> {
  let start: Record<string, unknown> | undefined;
  do {
    const page = await dynamo.send(new ScanCommand({ ...input, ExclusiveStartKey: start }));
    for (const item of page.Items ?? []) yield item;
    start = page.LastEvaluatedKey;
  } while (start);
}
