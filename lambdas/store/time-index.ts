// The time index: a run waiting for its time, a queued run's check-back and a lease's check-back
// are entries (gateKey, gateAt) in one sparse index that the ticker reads by time.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { RunStatus } from '../domain/run';
import { sourcesOf } from '../domain/run';
import { NO_JOB_TYPE } from '../core/metrics';
import { lessThan, oneOf, updateIf } from './conditional';
import { gateKeyOf, runKey } from './keys';
import { gateAttributes } from './run-items';
import { RUNS_TIME_INDEX } from './schema';

export interface TimeIndexEntry {
  readonly runId: string;
  readonly tenantId: string;
  readonly jobId: string;
  readonly jobType: string;
  /** The run's own time. An entry at it is a run waiting for it (SCHEDULED); every check-back is later. */
  readonly availableAt: string;
  readonly gateAt: string;
}

export class TimeIndex {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /**
   * Entries of one partition of the time index that are due by `horizon`, a page at a time
   * (`pageSize` entries, or DynamoDB's 1 MB), so that a partition of hundreds of thousands of
   * entries is worked through as it is read, not held whole.
   */
  async *duePages(bucket: number, shard: number, horizon: number, pageSize?: number): AsyncGenerator<TimeIndexEntry[]> {
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.dynamo.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: RUNS_TIME_INDEX,
          KeyConditionExpression: '#gateKey = :gateKey AND #gateAt <= :horizon',
          ExpressionAttributeNames: { '#gateKey': 'gateKey', '#gateAt': 'gateAt' },
          ExpressionAttributeValues: {
            ':gateKey': gateKeyOf(new Date(bucket).toISOString(), shard),
            ':horizon': new Date(horizon).toISOString(),
          },
          ExclusiveStartKey: start,
          ...(pageSize ? { Limit: pageSize } : {}),
        }),
      );
      const entries = (page.Items ?? []).map((item): TimeIndexEntry => ({
        runId: String(item.runId),
        tenantId: String(item.tenantId),
        jobId: String(item.jobId),
        jobType: typeof item.jobType === 'string' ? item.jobType : NO_JOB_TYPE,
        availableAt: String(item.availableAt),
        gateAt: String(item.gateAt),
      }));
      start = page.LastEvaluatedKey;
      if (entries.length > 0) yield entries;
    } while (start);
  }

  /** SCHEDULED -> QUEUED once the ticker has sent the run; its index entry becomes a check-back. */
  async markQueued(runId: string, now: number, checkBackAt: number, shards: number): Promise<boolean> {
    const gate = gateAttributes(runId, checkBackAt, shards);
    const at = new Date(now).toISOString();
    return updateIf(this.dynamo, this.tableName, runKey(runId), {
      set: { status: 'QUEUED', enqueuedAt: at, updatedAt: at, gateKey: gate.gateKey, gateAt: gate.gateAt },
      if: { status: oneOf(sourcesOf('QUEUED', ['SCHEDULED'])) },
    });
  }

  /** Moves a queued run's check-back, if nobody moved it since `previousGateAt` was read. */
  async moveCheckBack(runId: string, previousGateAt: string, checkBackAt: number, shards: number): Promise<boolean> {
    return this.move(runId, 'QUEUED', previousGateAt, checkBackAt, shards);
  }

  /**
   * The ticker found a lease's check-back passed: moves it (to the lease's end when the lease is
   * live, past the recovery when it lapsed), if the run still runs under the lease `version` and
   * nobody moved the check-back since `previousGateAt` was read. Of two tickers, one moves it.
   */
  async moveLeaseCheck(runId: string, version: number, previousGateAt: string, checkBackAt: number, shards: number): Promise<boolean> {
    return this.move(runId, 'RUNNING', previousGateAt, checkBackAt, shards, version);
  }

  /**
   * A queued run that waits for its tenant's in-flight slot (its message going round): its
   * check-back moved on to `checkBackAt`, never back (a later one, a key's wait, stays), so that the
   * ticker does not take it for lost and send a second message. False when it is no longer QUEUED.
   */
  async postponeQueuedCheck(runId: string, checkBackAt: number, shards: number): Promise<boolean> {
    const gate = gateAttributes(runId, checkBackAt, shards);
    return updateIf(this.dynamo, this.tableName, runKey(runId), {
      set: { gateKey: gate.gateKey, gateAt: gate.gateAt },
      if: { status: 'QUEUED', gateAt: lessThan(gate.gateAt) },
    });
  }

  /** Moves a run's entry, if it is in `status` (under `version`) and nobody moved it since `previousGateAt` was read. */
  private move(runId: string, status: RunStatus, previousGateAt: string, checkBackAt: number, shards: number, version?: number): Promise<boolean> {
    const gate = gateAttributes(runId, checkBackAt, shards);
    return updateIf(this.dynamo, this.tableName, runKey(runId), {
      set: { gateKey: gate.gateKey, gateAt: gate.gateAt },
      if: { status, gateAt: previousGateAt, ...(version === undefined ? {} : { version }) },
    });
  }
}
