// What the health endpoint reads, kept in the jobs table: per-minute roll-ups of each tenant's runs
// (one item per worker process and minute, overwritten with that worker's running totals) and a
// registry of workers with the runs they hold. Both expire by TTL. Workers write them at most once
// per batch, so they cost a fraction of a write per run, not a write per run.
import { queryAll } from './query-all';
import { absentOr, conditionExpressions, ifHeld, lessThan } from './conditional';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Histogram } from '../domain/histogram';
import { WORKERS_PARTITION, statsKey, statsPartition, workerKey } from './keys';

/** Counts of what happened to a tenant's runs in a minute, by what a health report shows. */
export const OUTCOME_COUNTERS = ['started', 'succeeded', 'failed', 'timedOut', 'dead', 'retried', 'skipped', 'cancelled', 'workerLost'] as const;
export type OutcomeCounter = (typeof OUTCOME_COUNTERS)[number];
export type Counters = Partial<Record<OutcomeCounter, number>>;

export interface MinuteRollup {
  readonly tenantId: string;
  /** The minute, as an ISO instant at its start. */
  readonly minute: string;
  readonly counts: Counters;
  readonly startLag: Histogram;
  /** External runs: due to claimed (Telemetry.runClaimed). */
  readonly claimWait: Histogram;
}

/**
 * A run a worker holds, as the registry keeps it: what the health report needs to find it (the run
 * item says the rest). Entries written before also named its job, attempt and start (decision 0177).
 */
export interface InFlightEntry {
  readonly runId: string;
  readonly tenantId: string;
}

export interface WorkerRecord {
  readonly workerId: string;
  readonly lastSeenAt: string;
  readonly runs: InFlightEntry[];
}

const ROLLUP_TTL_SECONDS = 24 * 3600;
const WORKER_TTL_SECONDS = 3600;

export class TelemetryStore {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /**
   * Writes this worker's running totals for a tenant's minute. `seq` grows with every write of the
   * process, so an older snapshot that arrives late cannot replace a newer one.
   */
  async putRollup(workerId: string, rollup: MinuteRollup, seq: number, now: number): Promise<void> {
    await ifHeld(() =>
      this.dynamo.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...statsKey(rollup.tenantId, rollup.minute, workerId),
            counts: rollup.counts,
            startLag: rollup.startLag,
            claimWait: rollup.claimWait,
            seq,
            expiresAtEpoch: Math.floor(now / 1000) + ROLLUP_TTL_SECONDS,
          },
          // A worker's later write wins; an earlier one arriving late changes nothing.
          ...conditionExpressions({ seq: absentOr(lessThan(seq)) }),
        }),
      ),
    );
  }

  /** Every worker's roll-up of a tenant's minute. */
  async rollupsOf(tenantId: string, minute: string): Promise<MinuteRollup[]> {
    return queryAll(
      this.dynamo,
      {
        TableName: this.tableName,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': 'pk' },
        ExpressionAttributeValues: { ':pk': statsPartition(tenantId, minute) },
      },
      (item) => ({ tenantId, minute, counts: item.counts ?? {}, startLag: (item.startLag ?? {}) as Histogram, claimWait: (item.claimWait ?? {}) as Histogram }),
    );
  }

  async putWorker(record: WorkerRecord, seq: number, now: number): Promise<void> {
    await ifHeld(() =>
      this.dynamo.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...workerKey(record.workerId), ...record, seq, expiresAtEpoch: Math.floor(now / 1000) + WORKER_TTL_SECONDS },
          // A worker's later write wins; an earlier one arriving late changes nothing.
          ...conditionExpressions({ seq: absentOr(lessThan(seq)) }),
        }),
      ),
    );
  }

  /** Workers seen since `since` (epoch ms), with the runs they last said they hold. */
  async workersSeenSince(since: number): Promise<WorkerRecord[]> {
    return queryAll(
      this.dynamo,
      {
        TableName: this.tableName,
        KeyConditionExpression: '#pk = :pk',
        FilterExpression: '#lastSeenAt >= :since',
        ExpressionAttributeNames: { '#pk': 'pk', '#lastSeenAt': 'lastSeenAt' },
        ExpressionAttributeValues: { ':pk': WORKERS_PARTITION, ':since': new Date(since).toISOString() },
      },
      (item) => ({ workerId: String(item.workerId), lastSeenAt: String(item.lastSeenAt), runs: (item.runs ?? []) as InFlightEntry[] }),
    );
  }
}
