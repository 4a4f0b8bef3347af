// Small items the scheduler keeps about itself: the ticker's cursor over the time index and when
// it last completed a tick.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { absentOr, atMost, updateExpressions, updateIf } from './conditional';
import { schedulerStateKey } from './keys';

export interface TickerState {
  /** Start (epoch ms) of the earliest minute bucket that may still hold work. */
  readonly cursor: number | null;
  readonly lastCompletedAt: string | null;
  readonly lastReport: Record<string, number> | null;
  /**
   * The most shards per minute the time index has been written with (TIME_INDEX_SHARDS may be
   * lowered, and entries written before keep their shard): the ticker reads that many.
   */
  readonly shards: number | null;
}

export class SchedulerStateRepository {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async ticker(): Promise<TickerState> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: schedulerStateKey('ticker'), ConsistentRead: true }));
    return {
      cursor: typeof item?.cursor === 'number' ? item.cursor : null,
      lastCompletedAt: typeof item?.lastCompletedAt === 'string' ? item.lastCompletedAt : null,
      lastReport: (item?.lastReport as Record<string, number> | undefined) ?? null,
      shards: typeof item?.shards === 'number' ? item.shards : null,
    };
  }

  /** Records a completed tick. The cursor only moves forward, so racing tickers cannot rewind it. */
  async recordTick(cursor: number, completedAt: number, report: Record<string, number>, shards?: number): Promise<void> {
    const at = new Date(completedAt).toISOString();
    const moved = await updateIf(this.dynamo, this.tableName, schedulerStateKey('ticker'), {
      set: { cursor, lastCompletedAt: at, lastReport: report, ...(shards !== undefined ? { shards } : {}) },
      if: { cursor: absentOr(atMost(cursor)) },
    });
    if (moved) return;
    // Another ticker got further; still record that this one completed.
    await this.dynamo.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: schedulerStateKey('ticker'),
        ...updateExpressions({ set: { lastCompletedAt: at, lastReport: report } }),
      }),
    );
  }
}
