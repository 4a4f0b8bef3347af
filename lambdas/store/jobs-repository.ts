// Jobs in DynamoDB: a job, the guard that keeps its name unique within the tenant, the record of an
// idempotent create, and the job's first run are written in one transaction, so a job never exists
// without its first occurrence and a name or key is never taken twice.
import { BATCH_GET_MAX_KEYS, batchGetConsistent } from './batch-get';
import { Coalescer } from './coalescer';
import { MAX_ITEMS_READ_PER_PAGE, readFilteredPage } from './filtered-page';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient, TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';

type TransactItems = NonNullable<TransactWriteCommandInput['TransactItems']>;
import { GetCommand, PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import type { Job, JobStatus } from '../domain/job';
import type { Run } from '../domain/run';
import type { RunItemExtras } from './keys';

export interface NewRun {
  readonly run: Run;
  readonly extras: RunItemExtras;
}
import { JOBS_BY_TENANT_INDEX, JOBS_NEXT_RUN_INDEX } from './schema';
import type { Page } from './page';
import { decodeCursorOrThrow } from './page';
import { createRateKey, encodeCursor, idempotencyKey, itemToJob, jobKey, jobNameKey, jobToItem, runToItem, tenantUsageKey } from './keys';

/** Jobs that count against a tenant's active-jobs limit. */
export const isLive = (status: JobStatus): boolean => status === 'ACTIVE' || status === 'PAUSED';

/** The tenant limits a create is checked against, in the same transaction. */
export interface CreateGuards {
  readonly maxActiveJobs: number | null;
  readonly createsPerSecond: number | null;
  readonly now: number;
}

/**
 * A create that DynamoDB keeps cancelling with TransactionConflict (one tenant's creates meet on its
 * usage and rate items; retries of one create meet on its idempotency record) is tried this many
 * times, waiting a random time under a doubling bound between tries (full jitter, so colliding
 * creates spread out). The bounds add up to 810 ms: the caller is answered well within a second.
 */
const MAX_INSERT_ATTEMPTS = 8;
const CONFLICT_BACKOFF_BASE_MS = 10;
const CONFLICT_BACKOFF_CAP_MS = 250;
/** When a create that still conflicted after every try may come back: its collisions are short-lived. */
const CONFLICT_RETRY_AFTER_MS = 1000;

/** The bound of the random wait after the given (1-based) conflicting try. */
function conflictBackoffBoundMs(attempt: number): number {
  return Math.min(CONFLICT_BACKOFF_CAP_MS, CONFLICT_BACKOFF_BASE_MS * 2 ** (attempt - 1));
}

export interface IdempotencyRecord {
  readonly key: string;
  /** Hash of the request body: the same key with another body is a conflict. */
  readonly requestHash: string;
  /** How long the record is kept (epoch seconds, DynamoDB TTL). */
  readonly expiresAtEpoch: number;
}

export type InsertResult =
  | { readonly kind: 'created' }
  | { readonly kind: 'name-taken' }
  | { readonly kind: 'too-many-active-jobs' }
  | { readonly kind: 'rate-limited'; readonly retryAfterMs: number }
  /** Cancelled with TransactionConflict on every try; nothing was written. */
  | { readonly kind: 'conflicted'; readonly retryAfterMs: number }
  | { readonly kind: 'idempotent-replay'; readonly jobId: string; readonly requestHash: string };

export interface JobFilter {
  readonly status?: JobStatus;
  readonly type?: string;
}

/** Options of a job read. */
export interface JobReadOptions {
  /** Share a BatchGetItem with the reads made around it (see `Coalescer`). Absent: read alone, now. */
  readonly coalesce?: { readonly quietMs: number; readonly capMs: number };
}

interface PendingJobRead {
  readonly jobId: string;
  readonly resolve: (job: Job | null) => void;
  readonly reject: (error: unknown) => void;
}


export class JobsRepository {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly jobsTable: string,
    private readonly runsTable: string,
  ) {}

  async insert(job: Job, firstRun: NewRun | null, idempotency?: IdempotencyRecord, guards?: CreateGuards, attempt = 1): Promise<InsertResult> {
    const notExists = 'attribute_not_exists(pk)';
    const items: TransactItems = [
      { Put: { TableName: this.jobsTable, Item: jobToItem(job), ConditionExpression: notExists } },
      {
        Put: {
          TableName: this.jobsTable,
          Item: { ...jobNameKey(job.tenantId, job.name), jobId: job.jobId },
          ConditionExpression: notExists,
        },
      },
      ...(idempotency
        ? [
            {
              Put: {
                TableName: this.jobsTable,
                Item: {
                  ...idempotencyKey(job.tenantId, idempotency.key),
                  jobId: job.jobId,
                  requestHash: idempotency.requestHash,
                  expiresAtEpoch: idempotency.expiresAtEpoch,
                },
                ConditionExpression: notExists,
              },
            },
          ]
        : []),
      ...(firstRun ? [{ Put: { TableName: this.runsTable, Item: runToItem(firstRun.run, firstRun.extras), ConditionExpression: notExists } }] : []),
    ];
    // The tenant's usage counter and this second's create count, checked and counted with the job.
    const usageIndex = guards && isLive(job.status) ? items.length : -1;
    if (usageIndex >= 0) items.push(this.countActive(job.tenantId, 1, guards?.maxActiveJobs ?? null));
    const second = guards ? Math.floor(guards.now / 1000) : 0;
    const rateIndex = guards && guards.createsPerSecond !== null ? items.length : -1;
    if (rateIndex >= 0 && guards?.createsPerSecond != null) {
      items.push({
        Update: {
          TableName: this.jobsTable,
          Key: createRateKey(job.tenantId, second),
          UpdateExpression: 'ADD #creates :one SET #expiresAtEpoch = :expires',
          ConditionExpression: 'attribute_not_exists(#creates) OR #creates < :limit',
          ExpressionAttributeNames: { '#creates': 'creates', '#expiresAtEpoch': 'expiresAtEpoch' },
          ExpressionAttributeValues: { ':one': 1, ':limit': guards.createsPerSecond, ':expires': second + 120 },
        },
      });
    }
    try {
      await this.dynamo.send(new TransactWriteCommand({ TransactItems: items }));
      return { kind: 'created' };
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const reasons = error.CancellationReasons ?? [];
      // Concurrent creates collide inside DynamoDB as TransactionConflict, which evaluates no
      // condition: tried again, the conditions decide (a retry of one create then meets the
      // winner's idempotency record and replays it). A cancelled transaction wrote nothing: after the
      // last try the caller is told to come back (a 429), never answered with a 500 (decision 0043).
      if (reasons.some((reason) => reason.Code === 'TransactionConflict')) {
        if (attempt >= MAX_INSERT_ATTEMPTS) return { kind: 'conflicted', retryAfterMs: CONFLICT_RETRY_AFTER_MS };
        await new Promise((resolve) => setTimeout(resolve, Math.random() * conflictBackoffBoundMs(attempt)));
        return this.insert(job, firstRun, idempotency, guards, attempt + 1);
      }
      const failed = (index: number): boolean => reasons[index]?.Code === 'ConditionalCheckFailed';
      // The idempotency record decides first: a replayed request may also collide on its name.
      if (idempotency && failed(2)) {
        const previous = await this.findIdempotencyRecord(job.tenantId, idempotency.key);
        if (previous) return { kind: 'idempotent-replay', ...previous };
      }
      if (failed(1)) return { kind: 'name-taken' };
      if (rateIndex >= 0 && failed(rateIndex)) return { kind: 'rate-limited', retryAfterMs: (second + 1) * 1000 - (guards?.now ?? 0) };
      if (usageIndex >= 0 && failed(usageIndex)) return { kind: 'too-many-active-jobs' };
      throw error;
    }
  }

  /**
   * Counts a request that creates a run outside a job's create (a manual trigger, a replay) in the
   * same per-second window as the tenant's creates. Refused (nothing counted) at `perSecond`;
   * `retryAfterMs` is then the time to the next second.
   */
  async countRunRequest(tenantId: string, perSecond: number | null, now: number): Promise<{ readonly allowed: true } | { readonly allowed: false; readonly retryAfterMs: number }> {
    if (perSecond === null) return { allowed: true };
    const second = Math.floor(now / 1000);
    try {
      await this.dynamo.send(
        new UpdateCommand({
          TableName: this.jobsTable,
          Key: createRateKey(tenantId, second),
          UpdateExpression: 'ADD #creates :one SET #expiresAtEpoch = :expires',
          ConditionExpression: 'attribute_not_exists(#creates) OR #creates < :limit',
          ExpressionAttributeNames: { '#creates': 'creates', '#expiresAtEpoch': 'expiresAtEpoch' },
          ExpressionAttributeValues: { ':one': 1, ':limit': perSecond, ':expires': second + 120 },
        }),
      );
      return { allowed: true };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return { allowed: false, retryAfterMs: (second + 1) * 1000 - now };
      throw error;
    }
  }

  /** An update of the tenant's active-jobs counter, refused past `max` when it adds. */
  private countActive(tenantId: string, delta: 1 | -1, max: number | null) {
    return {
      Update: {
        TableName: this.jobsTable,
        Key: tenantUsageKey(tenantId),
        UpdateExpression: 'ADD #activeJobs :delta',
        ...(delta > 0 && max !== null ? { ConditionExpression: 'attribute_not_exists(#activeJobs) OR #activeJobs < :max' } : {}),
        ExpressionAttributeNames: { '#activeJobs': 'activeJobs' },
        ExpressionAttributeValues: { ':delta': delta, ...(delta > 0 && max !== null ? { ':max': max } : {}) },
      },
    };
  }

  /** The job a create under this Idempotency-Key made, and the hash of its body; null when none did. */
  async findIdempotencyRecord(tenantId: string, key: string): Promise<{ jobId: string; requestHash: string } | null> {
    const { Item: item } = await this.dynamo.send(
      new GetCommand({ TableName: this.jobsTable, Key: idempotencyKey(tenantId, key), ConsistentRead: true }),
    );
    return item ? { jobId: String(item.jobId), requestHash: String(item.requestHash) } : null;
  }

  /** A job of the given tenant; another tenant's job is reported as missing. */
  async get(tenantId: string, jobId: string): Promise<Job | null> {
    const job = await this.getAnyTenant(jobId);
    return job && job.tenantId === tenantId ? job : null;
  }

  /**
   * For the scheduler's own paths (worker, ticker), which act for every tenant. With `coalesce`, a
   * strongly consistent read shares one BatchGetItem with the reads made around it (the runs of a
   * worker batch read their jobs within milliseconds of each other): one request for up to 100
   * jobs instead of one each, for the same read units.
   */
  async getAnyTenant(jobId: string, consistent = true, options: JobReadOptions = {}): Promise<Job | null> {
    if (options.coalesce && consistent) {
      this.reads ??= new Coalescer({ maxBatch: BATCH_GET_MAX_KEYS, ...options.coalesce }, (batch) => void this.readBatch(batch));
      const reads = this.reads;
      return new Promise<Job | null>((resolve, reject) => reads.add({ jobId, resolve, reject }));
    }
    const { Item: item } = await this.dynamo.send(
      new GetCommand({ TableName: this.jobsTable, Key: jobKey(jobId), ConsistentRead: consistent }),
    );
    return item ? itemToJob(item) : null;
  }

  private reads: Coalescer<PendingJobRead> | undefined;

  private async readBatch(pending: readonly PendingJobRead[]): Promise<void> {
    try {
      const jobs = await this.getManyAnyTenant(pending.map((read) => read.jobId));
      for (const read of pending) read.resolve(jobs.get(read.jobId) ?? null);
    } catch (error) {
      for (const read of pending) read.reject(error);
    }
  }

  /** Strongly consistent reads of jobs by id; a job missing from the answer does not exist. */
  private async getManyAnyTenant(jobIds: readonly string[]): Promise<Map<string, Job>> {
    const items = await batchGetConsistent(this.dynamo, this.jobsTable, [...new Set(jobIds)].map(jobKey));
    return new Map(items.map(itemToJob).map((job) => [job.jobId, job]));
  }

  /**
   * The tenant's jobs, newest first: up to `limit` jobs that match the filter (see
   * `readFilteredPage` for the read budget); `nextCursor` is null when no further job matches.
   */
  async list(tenantId: string, filter: JobFilter, limit: number, cursor?: string, maxItemsRead = MAX_ITEMS_READ_PER_PAGE): Promise<Page<Job>> {
    const names: Record<string, string> = { '#tenantId': 'tenantId' };
    const values: Record<string, unknown> = { ':tenantId': tenantId };
    const filters: string[] = [];
    if (filter.status) {
      names['#status'] = 'status';
      values[':status'] = filter.status;
      filters.push('#status = :status');
    }
    if (filter.type) {
      names['#type'] = 'type';
      values[':type'] = filter.type;
      filters.push('#type = :type');
    }
    const page = await readFilteredPage(
      this.dynamo,
      {
        TableName: this.jobsTable,
        IndexName: JOBS_BY_TENANT_INDEX,
        KeyConditionExpression: '#tenantId = :tenantId',
        FilterExpression: filters.length > 0 ? filters.join(' AND ') : undefined,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ScanIndexForward: false,
      },
      limit,
      (item) => ({ pk: item.pk, sk: item.sk, tenantId: item.tenantId, tenantSort: item.tenantSort }),
      cursor ? decodeCursorOrThrow(cursor, { tenantId }) : undefined,
      maxItemsRead,
    );
    return { items: page.items.map(itemToJob), nextCursor: encodeCursor(page.next) };
  }

  /**
   * Replaces a job if nobody changed it since it was read: its version and its pending occurrence
   * are the condition (a compare-and-swap). New runs and the release of the job's name are written
   * in the same transaction.
   */
  async replace(next: Job, expected: Pick<Job, 'version' | 'nextRunId' | 'status'>, extra: ReplaceExtras = {}): Promise<ReplaceResult> {
    const jobPut = {
      Put: {
        TableName: this.jobsTable,
        Item: jobToItem(next),
        ConditionExpression: '#version = :version AND #nextRunId = :nextRunId',
        ExpressionAttributeNames: { '#version': 'version', '#nextRunId': 'nextRunId' },
        ExpressionAttributeValues: { ':version': expected.version, ':nextRunId': expected.nextRunId },
      },
    };
    const runPuts = (extra.newRuns ?? []).map((newRun) => ({
      Put: { TableName: this.runsTable, Item: runToItem(newRun.run, newRun.extras), ConditionExpression: 'attribute_not_exists(pk)' },
    }));
    const nameDelete = extra.releaseName
      ? [{ Delete: { TableName: this.jobsTable, Key: jobNameKey(next.tenantId, next.name), ConditionExpression: '#jobId = :jobId', ExpressionAttributeNames: { '#jobId': 'jobId' }, ExpressionAttributeValues: { ':jobId': next.jobId } } }]
      : [];
    // A job that stops being live (COMPLETED, CANCELLED) frees its place under the tenant's limit;
    // one that becomes live again (a COMPLETED job given a new schedule) takes one, within it.
    const becomesLive = !isLive(expected.status) && isLive(next.status);
    const usage =
      isLive(expected.status) && !isLive(next.status)
        ? [this.countActive(next.tenantId, -1, null)]
        : becomesLive
          ? [this.countActive(next.tenantId, 1, extra.maxActiveJobs ?? null)]
          : [];
    try {
      if (runPuts.length === 0 && nameDelete.length === 0 && usage.length === 0) {
        await this.dynamo.send(new PutCommand(jobPut.Put));
      } else {
        await this.dynamo.send(new TransactWriteCommand({ TransactItems: [jobPut, ...runPuts, ...nameDelete, ...usage] }));
      }
      return 'replaced';
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return 'conflict';
      if (error instanceof TransactionCanceledException) {
        const reasons = error.CancellationReasons ?? [];
        if (reasons[0]?.Code === 'ConditionalCheckFailed') return 'conflict';
        if (reasons.slice(1, 1 + runPuts.length).some((reason) => reason.Code === 'ConditionalCheckFailed')) return 'run-exists';
        if (becomesLive && reasons.at(-1)?.Code === 'ConditionalCheckFailed') return 'too-many-active-jobs';
        // Nothing was written: the caller reads the job again and retries, as after a lost condition.
        if (reasons.some((reason) => reason.Code === 'TransactionConflict')) return 'conflict';
      }
      throw error;
    }
  }

  /** Active jobs whose pending occurrence was due before `before` (one shard of byNextRun). */
  async overdue(shard: number, before: number): Promise<string[]> {
    const jobIds: string[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.dynamo.send(
        new QueryCommand({
          TableName: this.jobsTable,
          IndexName: JOBS_NEXT_RUN_INDEX,
          KeyConditionExpression: '#shard = :shard AND #nextRunAt < :before',
          ExpressionAttributeNames: { '#shard': 'nextRunShard', '#nextRunAt': 'nextRunAt' },
          ExpressionAttributeValues: { ':shard': String(shard), ':before': new Date(before).toISOString() },
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) jobIds.push(String(item.jobId));
      start = page.LastEvaluatedKey;
    } while (start);
    return jobIds;
  }
}

export interface ReplaceExtras {
  readonly newRuns?: readonly NewRun[];
  /** Deletes the job's name guard, so that a new job may take the name (DELETE). */
  readonly releaseName?: boolean;
  /** The tenant's active-jobs limit, checked when the job becomes live again (null: none). */
  readonly maxActiveJobs?: number | null;
}

export type ReplaceResult = 'replaced' | 'conflict' | 'run-exists' | 'too-many-active-jobs';
