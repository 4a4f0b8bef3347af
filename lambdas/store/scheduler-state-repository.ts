// Small items the scheduler keeps about itself: the ticker's cursor over the time index and when
// it last completed a tick.
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { schedulerStateKey } from './keys';

export interface TickerState {
  /** Start (epoch ms) of the earliest minute bucket that may still hold work. */
  readonly cursor: number | null;
  readonly lastCompletedAt: string | null;
  readonly lastReport: Record<string, number> | null;
}

export class SchedulerStateRepository {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async ticker(): Promise<TickerState> {
    const { Item: item } = await this.dynamo.send(
      new GetCommand({ TableName: this.tableName, Key: schedulerStateKey('ticker'), ConsistentRead: true }),
    );
    return {
      cursor: typeof item?.cursor === 'number' ? item.cursor : null,
      lastCompletedAt: typeof item?.lastCompletedAt === 'string' ? item.lastCompletedAt : null,
      lastReport: (item?.lastReport as Record<string, number> | undefined) ?? null,
    };
  }

  /** Records a completed tick. The cursor only moves forward, so racing tickers cannot rewind it. */
  async recordTick(cursor: number, completedAt: number, report: Record<string, number>): Promise<void> {
    const names = { '#cursor': 'cursor', '#lastCompletedAt': 'lastCompletedAt', '#lastReport': 'lastReport' };
    const values = { ':cursor': cursor, ':at': new Date(completedAt).toISOString(), ':report': report };
    try {
      await this.dynamo.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: schedulerStateKey('ticker'),
          UpdateExpression: 'SET #cursor = :cursor, #lastCompletedAt = :at, #lastReport = :report',
          ConditionExpression: 'attribute_not_exists(#cursor) OR #cursor <= :cursor',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // Another ticker got further; still record that this one completed.
      await this.dynamo.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: schedulerStateKey('ticker'),
          UpdateExpression: 'SET #lastCompletedAt = :at, #lastReport = :report',
          ExpressionAttributeNames: { '#lastCompletedAt': 'lastCompletedAt', '#lastReport': 'lastReport' },
          ExpressionAttributeValues: { ':at': values[':at'], ':report': report },
        }),
      );
    }
  }
}
