// A job's create in DynamoDB: the job, the record of an idempotent create, its label entries, the
// tenant's active-jobs count and the job's first run, written in one transaction, so that a job
// never exists without its first occurrence and a key is never taken twice. A run-now job's run is
// written just before it instead, on its own (decision 0167), and so is the guard that keeps its
// name unique within the tenant, unless the create has an Idempotency-Key (decision 0173).
// JobsRepository's `insert` is this module's.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import type { TransactionResult, TransactItem } from './conditional';
import { absentOr, conditionExpressions, IF_NEW, lessThan, putFresh, transactRetryingConflicts, updateExpressions } from './conditional';
import type { Job, JobStatus } from '../domain/job';
import { isUnnamed } from '../domain/job';
import type { Run } from '../domain/run';
import type { RunItemExtras } from './run-items';
import { idempotencyKey, jobLabelKey, labelPairsOf, runKey, tenantUsageKey } from './keys';
import { jobToItem } from './job-items';
import { runToItem } from './run-items';
import type { NameGuards } from './name-guards';
import { isGuardItemName } from './name-guards';

/** A run to write with a job (its first) or a job's change (re-planned occurrences). */
export interface NewRun {
  readonly run: Run;
  readonly extras: RunItemExtras;
}

/**
 * Whether a create writes its first run ahead of the job, on its own, rather than in one transaction
 * with it (decision 0167): a run-now job (COMPLETED from its create, so no active-jobs count) whose
 * run is queued, and whose target is not an external worker's (whose claims read the runs table
 * directly). Its message is sent only after the job is written, and its first check-back (about
 * 32 s on, decision 0170) sends nothing within the redelivery grace: no worker meets the run before
 * its job is decided. A run whose
 * create then failed is deleted, or, if that fails too, ends CANCELLED when its check-back brings
 * it to a worker, which finds no job.
 */
export function writesRunAhead(job: Pick<Job, 'status' | 'schedule' | 'target'>, run: Pick<Run, 'status'>): boolean {
  return job.schedule.kind === 'now' && job.status === 'COMPLETED' && job.target.kind !== 'external' && run.status === 'QUEUED';
}

/** Whether an item found under a fresh key is the one written there (the same creation instant). */
const sameCreation = (stored: Record<string, unknown>, written: Record<string, unknown>): boolean => stored.createdAt === written.createdAt;

/** A create's transaction refused on one of its name's guards (`isGuardItemName`). */
const refusedOnName = (result: TransactionResult): boolean => !result.committed && [...result.failed].some((name) => isGuardItemName(name));
/** A keyed create's transaction refused on its name's guard and not on its key's record. */
const refusedOnNameNotKey = (result: TransactionResult): boolean => !result.committed && refusedOnName(result) && !result.failed.has('idempotency');

/** Jobs that count against a tenant's active-jobs limit. */
export const isLive = (status: JobStatus): boolean => status === 'ACTIVE' || status === 'PAUSED';

/** The tenant limit a create is checked against, in the same transaction (its create rate is counted before: decision 0155). */
export interface CreateGuards {
  readonly maxActiveJobs: number | null;
}

/**
 * A create that DynamoDB keeps cancelling with TransactionConflict (one tenant's creates of live jobs
 * meet on its usage item; retries of one create meet on its idempotency record) is tried this many
 * times under the store's conflict-retry policy (`transactRetryingConflicts`). Its waits' bounds
 * add up to 810 ms: the caller is answered well within a second.
 */
const MAX_INSERT_ATTEMPTS = 8;
/** When a create that still conflicted after every try may come back: its collisions are short-lived. */
const CONFLICT_RETRY_AFTER_MS = 1000;

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
  /** Cancelled with TransactionConflict on every try; nothing was written. */
  | { readonly kind: 'conflicted'; readonly retryAfterMs: number }
  | { readonly kind: 'idempotent-replay'; readonly jobId: string; readonly requestHash: string };

/** An update of the tenant's active-jobs counter, refused past `max` when it adds. */
export function activeJobsCount(jobsTable: string, tenantId: string, delta: 1 | -1, max: number | null): TransactItem {
  const limited = delta > 0 && max !== null;
  return {
    Update: {
      TableName: jobsTable,
      Key: tenantUsageKey(tenantId),
      ...updateExpressions({ add: { activeJobs: delta }, ...(limited ? { if: { activeJobs: absentOr(lessThan(max)) } } : {}) }),
    },
  };
}

export class JobInserts {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly jobsTable: string,
    private readonly runsTable: string,
    /** The names' guards (JobsRepository's). */
    private readonly names: NameGuards,
    /** The byNextRun entry's window (decision 0161), as JobsRepository's. */
    private readonly checkBackWindowMs = 0,
  ) {}

  async insert(job: Job, firstRun: NewRun | null, idempotency?: IdempotencyRecord, guards?: CreateGuards): Promise<InsertResult> {
    const ifNew = conditionExpressions(IF_NEW);
    const ahead = firstRun && writesRunAhead(job, firstRun.run) ? firstRun : null;
    const items: Record<string, TransactItem> = {
      job: { Put: { TableName: this.jobsTable, Item: jobToItem(job, { checkBackWindowMs: this.checkBackWindowMs }), ...ifNew } },
    };
    // A name's guard keeps it unique in the tenant; a job named by its id needs none (decision 0154).
    // It is taken on its own before the job's write (decision 0173), except under an
    // Idempotency-Key: a retry of the create must meet its first try's record, not its name.
    const guardAhead = !isUnnamed(job) && !idempotency;
    if (!isUnnamed(job) && !guardAhead) Object.assign(items, this.names.putItems(job));
    if (idempotency) {
      const record = {
        ...idempotencyKey(job.tenantId, idempotency.key),
        jobId: job.jobId,
        requestHash: idempotency.requestHash,
        expiresAtEpoch: idempotency.expiresAtEpoch,
      };
      items.idempotency = { Put: { TableName: this.jobsTable, Item: record, ...ifNew } };
    }
    if (firstRun && !ahead) items.firstRun = { Put: { TableName: this.runsTable, Item: runToItem(firstRun.run, firstRun.extras), ...ifNew } };
    // One entry per label, to find the job by it (decision 0095).
    labelPairsOf(job.labels).forEach((label, index) => {
      items[`label:${index}`] = { Put: { TableName: this.jobsTable, Item: { ...jobLabelKey(job.tenantId, label, job), jobId: job.jobId } } };
    });
    // The tenant's usage counter, checked and counted with the job. (Its create rate is counted
    // before, on its own: decision 0155.)
    if (guards && isLive(job.status)) items.usage = activeJobsCount(this.jobsTable, job.tenantId, 1, guards.maxActiveJobs);
    // Concurrent creates collide inside DynamoDB as TransactionConflict, which evaluates no
    // condition: tried again, the conditions decide (a retry of one create then meets the winner's
    // idempotency record and replays it). A cancelled transaction wrote nothing: after the last try
    // the caller is told to come back (a 429), never answered with a 500 (decision 0043).
    if (ahead) await putFresh(this.dynamo, { TableName: this.runsTable, Item: runToItem(ahead.run, ahead.extras) }, runKey(ahead.run.runId), sameCreation);
    if (guardAhead && (await this.names.take(job, job.createdAt, Date.parse(job.createdAt))) === 'held') {
      if (ahead) await this.discardRunAhead(ahead.run);
      return { kind: 'name-taken' };
    }
    let result = await this.writeNewJob(items, ahead?.run ?? null, guardAhead ? job : null);
    // Under an Idempotency-Key the guard is in the transaction. Refused on it (and not on the key's
    // record, which decides first), the guard in the way may be orphaned: NameGuards decides as for
    // a create without a key, deletes it if so, and the transaction is tried once more.
    if (items.name && refusedOnNameNotKey(result)) {
      const way = await this.names.clearOrphan(job, Date.parse(job.createdAt));
      if (way === 'free') result = await this.writeNewJob(items, ahead?.run ?? null, null);
    }
    if (result.committed) return { kind: 'created' };
    // Refused or still conflicting: nothing names the run written ahead, or holds the name's guard.
    if (ahead) await this.discardRunAhead(ahead.run);
    if (guardAhead) await this.names.release(job);
    if (result.conflict) return { kind: 'conflicted', retryAfterMs: CONFLICT_RETRY_AFTER_MS };
    // The idempotency record decides first: a replayed request may also collide on its name.
    if (idempotency && result.failed.has('idempotency')) {
      const previous = await this.findIdempotencyRecord(job.tenantId, idempotency.key);
      if (previous) return { kind: 'idempotent-replay', ...previous };
    }
    if (refusedOnName(result)) {
      // The guard was read outside the transaction: a concurrent request under the same key may
      // have taken the name over from the orphan and written its record since. Its job is the answer.
      const previous = idempotency && refusedOnNameNotKey(result) ? await this.findIdempotencyRecord(job.tenantId, idempotency.key) : null;
      return previous ? { kind: 'idempotent-replay', ...previous } : { kind: 'name-taken' };
    }
    if (result.failed.has('usage')) return { kind: 'too-many-active-jobs' };
    throw result.error;
  }

  /**
   * The job with its guards in one transaction; the job alone (a run-now job without an
   * Idempotency-Key or labels, its name's guard taken before) as one conditional put, at half a
   * transaction's write units.
   */
  private async writeNewJob(items: Record<string, TransactItem>, ahead: Run | null, named: Job | null): Promise<TransactionResult> {
    const { job, ...guards } = items;
    const put = job?.Put;
    if (Object.keys(guards).length > 0 || !put?.Item) return transactRetryingConflicts(this.dynamo, items, MAX_INSERT_ATTEMPTS);
    const item = put.Item;
    try {
      // A retried put that meets its own first try counts as made (`putFresh`): a job with its run
      // and name must never be left behind with both taken away.
      await putFresh(this.dynamo, { TableName: put.TableName, Item: item }, { pk: item.pk, sk: item.sk }, sameCreation);
      return { committed: true };
    } catch (error) {
      // Certainly not written (a job id taken, which a new id never is): the run and the name's
      // guard go too. Any other error may have written the job, and leaves the run to its
      // check-back and the guard to a later create's takeover.
      if (error instanceof ConditionalCheckFailedException) {
        if (ahead) await this.discardRunAhead(ahead);
        if (named) await this.names.release(named);
      }
      throw error;
    }
  }

  /**
   * Deletes the run a refused create wrote ahead of its job. Nothing else has seen it: its message
   * is sent only after the job, and its check-back sends nothing within the redelivery grace. If this delete
   * fails too, the check-back brings the run to a worker, which ends it CANCELLED (no job).
   */
  private async discardRunAhead(run: Run): Promise<void> {
    try {
      await this.dynamo.send(
        new DeleteCommand({
          TableName: this.runsTable,
          Key: runKey(run.runId),
          ...conditionExpressions({ status: run.status, version: run.version }),
        }),
      );
    } catch {
      // Left to its check-back, as above.
    }
  }

  /** The job a create under this Idempotency-Key made, and the hash of its body; null when none did. */
  async findIdempotencyRecord(tenantId: string, key: string): Promise<{ jobId: string; requestHash: string } | null> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.jobsTable, Key: idempotencyKey(tenantId, key), ConsistentRead: true }));
    return item ? { jobId: String(item.jobId), requestHash: String(item.requestHash) } : null;
  }
}
