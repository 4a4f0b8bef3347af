// Runs as records: reading them, writing a new one, and ending one that has not started. Leases
// and outcomes (run-leases.ts), external workers' claims (run-claims.ts), the time index
// (time-index.ts) and dead runs (dead-runs.ts) are modules of their own over the same table.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Run } from '../domain/run';
import { PENDING_STATUSES, sourcesOf } from '../domain/run';
import { batchGetConsistent } from './batch-get';
import { conditionExpressions, ifHeld, IF_NEW, oneOf, updateIf } from './conditional';
import type { RunItemExtras } from './keys';
import { encodeCursor, itemToRun, RUN_PK_PREFIX, runKey, runToItem } from './keys';
import type { Page } from './page';
import { decodeCursorOrThrow } from './page';
import { RUNS_BY_JOB_INDEX } from './schema';

export class RunRecords {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async get(runId: string): Promise<Run | null> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: runKey(runId), ConsistentRead: true }));
    return item ? itemToRun(item) : null;
  }

  /** Several runs by id (any order; missing ones are left out). */
  async getMany(runIds: readonly string[]): Promise<Run[]> {
    return (await batchGetConsistent(this.dynamo, this.tableName, [...new Set(runIds)].map(runKey))).map(itemToRun);
  }

  /** Writes a new run once: false if a run with its id exists already. */
  async create(newRun: { run: Run; extras: RunItemExtras }): Promise<boolean> {
    const written = await ifHeld(() =>
      this.dynamo.send(new PutCommand({ TableName: this.tableName, Item: runToItem(newRun.run, newRun.extras), ...conditionExpressions(IF_NEW) })),
    );
    return written.held;
  }

  /** Ends a run that has not started (SCHEDULED or QUEUED): it will never be leased. */
  async retirePending(runId: string, status: 'SKIPPED' | 'CANCELLED', reason: string, now: number): Promise<boolean> {
    const at = new Date(now).toISOString();
    return updateIf(this.dynamo, this.tableName, runKey(runId), {
      set: { status, finishedAt: at, updatedAt: at, reason },
      remove: ['gateKey', 'gateAt'],
      if: { status: oneOf(sourcesOf(status, PENDING_STATUSES)) },
    });
  }

  /** Runs of a job that have not started yet (the newest hundred occurrences are looked at). */
  async pendingOfJob(jobId: string): Promise<Run[]> {
    // The byJob index holds keys only (a run's updates then never write to it), so the status is
    // read from the runs themselves.
    const { Items: keys = [] } = await this.dynamo.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: RUNS_BY_JOB_INDEX,
        KeyConditionExpression: '#jobId = :jobId',
        ExpressionAttributeNames: { '#jobId': 'jobId' },
        ExpressionAttributeValues: { ':jobId': jobId },
        ScanIndexForward: false,
        Limit: 100,
      }),
    );
    const runs = await this.inKeyOrder(keys);
    return runs.filter((run) => PENDING_STATUSES.includes(run.status));
  }

  /** The runs of a job, newest occurrence and attempt first. */
  async listByJob(jobId: string, limit: number, cursor?: string): Promise<Page<Run>> {
    const { Items: items = [], LastEvaluatedKey: last } = await this.dynamo.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: RUNS_BY_JOB_INDEX,
        KeyConditionExpression: '#jobId = :jobId',
        ExpressionAttributeNames: { '#jobId': 'jobId' },
        ExpressionAttributeValues: { ':jobId': jobId },
        ScanIndexForward: false,
        Limit: limit,
        ExclusiveStartKey: cursor ? decodeCursorOrThrow(cursor, { jobId }) : undefined,
      }),
    );
    return { items: await this.inKeyOrder(items), nextCursor: encodeCursor(last) };
  }

  /** The runs whose index entries are given, in the entries' order (runs deleted since are left out). */
  private async inKeyOrder(keys: readonly Record<string, unknown>[]): Promise<Run[]> {
    const runIds = keys.flatMap((key) => (typeof key.pk === 'string' && key.pk.startsWith(RUN_PK_PREFIX) ? [key.pk.slice(RUN_PK_PREFIX.length)] : []));
    const byId = new Map((await this.getMany(runIds)).map((run) => [run.runId, run]));
    return runIds.flatMap((runId) => {
      const run = byId.get(runId);
      return run ? [run] : [];
    });
  }
}
