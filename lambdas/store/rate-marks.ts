// A rate key's start marks (decideRate in domain/flow-control.ts): `limit` small items per key, each
// holding when it was last used. A start takes a mark with one conditional put on the time it read,
// so two workers racing for the same mark cannot both win; nothing is ever given back, so a worker
// that dies after taking one leaves nothing to repair.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { absent, conditionExpressions, ifHeld } from './conditional';
import { rateMarkKey, rateMarkOf, rateMarkPartition } from './keys';
import { queryAll } from './query-all';

export class RateMarks {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** When each mark of the key was last used (epoch ms), by mark number. */
  async marks(scope: string): Promise<Map<number, number>> {
    const marks = await queryAll(
      this.dynamo,
      {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': rateMarkPartition(scope) },
        ConsistentRead: true,
      },
      (item) => [rateMarkOf(String(item.sk)), Number(item.usedAt)] as const,
    );
    return new Map(marks);
  }

  /** Takes the mark for a start now, if it is still as read (`lastUsedAt`, null for a mark never used). */
  async take(scope: string, mark: number, now: number, lastUsedAt: number | null, periodSeconds: number): Promise<boolean> {
    const taken = await ifHeld(() =>
      this.dynamo.send(
        new PutCommand({
          TableName: this.tableName,
          // Kept a day past its period: an expired mark reads as free, which it is by then.
          Item: { ...rateMarkKey(scope, mark), usedAt: now, expiresAtEpoch: Math.floor(now / 1000) + periodSeconds + 24 * 3600 },
          ...conditionExpressions(lastUsedAt === null ? { pk: absent } : { usedAt: lastUsedAt }),
        }),
      ),
    );
    return taken.held;
  }
}
