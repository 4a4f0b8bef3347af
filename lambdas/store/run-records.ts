// Runs as records: reading them, writing a new one, and ending one that has not started. Leases
// and outcomes (run-leases.ts), external workers' claims (run-claims.ts), the time index
// (time-index.ts) and dead runs (dead-runs.ts) are modules of their own over the same table.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { KeyWaitState } from '../domain/flow-control';
import type { Run } from '../domain/run';
import { PENDING_STATUSES, sourcesOf } from '../domain/run';
import { batchGetConsistent } from './batch-get';
import { conditionExpressions, ifHeld, IF_NEW, oneOf, updateIf } from './conditional';
import type { Item } from './keys';
import type { RunItemExtras } from './run-items';
import { encodeCursor, runKey } from './keys';
import {
  backfillRemainingOf,
  bufferedSinceOf,
  expiryAttributes,
  inputsOf,
  itemToRun,
  KEY_WAIT_SCOPE_ATTRIBUTE,
  NOTIFY_EVENT_ATTRIBUTE,
  notifyEventOf,
  OPEN_RUN_ATTRIBUTES,
  payloadOverrideOf,
  resultOf,
  runToItem,
} from './run-items';
import type { RunPayload } from '../domain/payload';
import type { NotifyEvent } from '../domain/notify';
import type { Page } from './page';
import { decodeCursorWithin } from './page';
import { RUNS_BY_TENANT_INDEX } from './schema';
import { readIndexedPage } from './indexed-page';
import type { JobOfRuns, RunFilter } from './job-runs';
import { JobRuns, runsOfEntries } from './job-runs';

export type { RunFilter } from './job-runs';

/** A job's pending run with what its occurrence carries (RunRecords.withOccurrenceState). */
export interface PendingOccurrence {
  readonly run: Run;
  readonly backfillRemaining?: number;
  readonly bufferedSince?: number;
}

export class RunRecords {
  /** `retentionDays`: how long a run is kept once it ends (RUN_RETENTION_DAYS; 0 keeps it forever). */
  private readonly jobRuns: JobRuns;

  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly retentionDays = 0,
  ) {
    this.jobRuns = new JobRuns(dynamo, tableName, (runIds) => this.getMany(runIds));
  }

  async get(runId: string): Promise<Run | null> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: runKey(runId), ConsistentRead: true }));
    return item ? itemToRun(item) : null;
  }

  /**
   * A run, and whether it waits for a key of its keyed flow: pending, with the key its give-back
   * recorded (`keyWaitScope`, decision 0187), which only a give-back after admission writes. The
   * overlap policies read it (decision 0195): an occurrence admitted and waiting for a key is running
   * to the next one. One read, as `get`.
   */
  async getWithKeyWait(runId: string): Promise<{ readonly run: Run; readonly waitsForKey: boolean } | null> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: runKey(runId), ConsistentRead: true }));
    if (!item) return null;
    const run = itemToRun(item);
    return { run, waitsForKey: PENDING_STATUSES.includes(run.status) && typeof item[KEY_WAIT_SCOPE_ATTRIBUTE] === 'string' };
  }

  /**
   * A run with what its occurrence carries, which a plan of the same occurrence carries on: its
   * backfill budget (a chain's catching up) and since when it has waited behind the occurrence
   * before it (overlap buffer-one), if it has them.
   */
  async withOccurrenceState(runId: string): Promise<PendingOccurrence | null> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: runKey(runId), ConsistentRead: true }));
    if (!item) return null;
    const backfillRemaining = backfillRemainingOf(item);
    const bufferedSince = bufferedSinceOf(item);
    return {
      run: itemToRun(item),
      ...(backfillRemaining !== undefined ? { backfillRemaining } : {}),
      ...(bufferedSince !== undefined ? { bufferedSince } : {}),
    };
  }

  /** The notification event a run's outcome raised (its mark), if any. */
  async notifyEventOf(runId: string): Promise<NotifyEvent | undefined> {
    const { Item: item } = await this.dynamo.send(
      new GetCommand({
        TableName: this.tableName,
        Key: runKey(runId),
        ConsistentRead: true,
        ProjectionExpression: '#event',
        ExpressionAttributeNames: { '#event': NOTIFY_EVENT_ATTRIBUTE },
      }),
    );
    return item ? notifyEventOf(item) : undefined;
  }

  /**
   * What a run was given besides its job: a workflow step run's inputs (its parents' results) and a
   * run's own payload (a trigger's), as written with it; each undefined when it has none.
   */
  async givenTo(runId: string): Promise<{ readonly inputs?: unknown; readonly payload?: RunPayload }> {
    const { Item: item } = await this.dynamo.send(
      new GetCommand({
        TableName: this.tableName,
        Key: runKey(runId),
        ConsistentRead: true,
        ProjectionExpression: 'inputsJson, payloadOverrideJson, payloadOverrideRef',
      }),
    );
    if (!item) return {};
    const inputs = inputsOf(item);
    const payload = payloadOverrideOf(item);
    return { ...(inputs !== undefined ? { inputs } : {}), ...(payload !== undefined ? { payload } : {}) };
  }

  /**
   * The results of several runs, by run id, as their items keep them (inline or stored apart; null
   * when a run has none). A run that is not stored (it has left) is not in the map.
   */
  async resultsOf(runIds: readonly string[]): Promise<Map<string, RunPayload | null>> {
    const items = await batchGetConsistent(this.dynamo, this.tableName, [...new Set(runIds)].map(runKey));
    return new Map(items.map((item) => [String(item.runId), resultOf(item)]));
  }

  /** What the runs' items say of their waits for concurrency keys (decision 0187), by run id; missing runs are left out. */
  async keyWaitStates(runIds: readonly string[]): Promise<Map<string, KeyWaitState>> {
    const items = await batchGetConsistent(this.dynamo, this.tableName, [...new Set(runIds)].map(runKey));
    return new Map(
      items.map((item) => {
        const run = itemToRun(item);
        const waitScope = item[KEY_WAIT_SCOPE_ATTRIBUTE];
        const state: KeyWaitState = {
          status: run.status,
          leaseExpiresAt: run.leaseExpiresAt === null ? null : Date.parse(run.leaseExpiresAt),
          startedAt: run.startedAt === null ? null : Date.parse(run.startedAt),
          ...(typeof waitScope === 'string' ? { waitScope } : {}),
        };
        return [run.runId, state];
      }),
    );
  }

  /** Several runs by id (any order; missing ones are left out). */
  async getMany(runIds: readonly string[]): Promise<Run[]> {
    return (await batchGetConsistent(this.dynamo, this.tableName, [...new Set(runIds)].map(runKey))).map(itemToRun);
  }

  /**
   * Writes a new run once: false if a run with its id exists already. A run written finished (a
   * skipped occurrence's record) gets its expiry. A refusal carries the item there (no read more):
   * the store client's retry of this put after its first try landed (its answer lost) meets this
   * put's own item, from the same creation and, for a run put leased, the same owner, and the put
   * is taken as made (decision 0180).
   */
  async create(newRun: { run: Run; extras: RunItemExtras }): Promise<boolean> {
    const { run } = newRun;
    const expiry = run.finishedAt ? expiryAttributes(run.runId, Date.parse(run.finishedAt), this.retentionDays) : {};
    const item = { ...runToItem(run, newRun.extras), ...expiry };
    const written = await ifHeld(() =>
      this.dynamo.send(
        new PutCommand({ TableName: this.tableName, Item: item, ...conditionExpressions(IF_NEW), ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }),
      ),
    );
    if (written.held) return true;
    const [stored, mine]: [Item | undefined, Item] = [written.item, item];
    return stored !== undefined && stored.createdAt === mine.createdAt && stored.leaseOwner === mine.leaseOwner;
  }

  /**
   * Deletes a run written ahead of the write that would have made it the job's (the chain's
   * successor, decision 0175), if it is still as written: nothing has seen it, as its message is
   * sent only after that write. False when it was not deleted; a worker that leases it then ends it
   * (its job's edit replaced it).
   */
  async discardUnstarted(run: Run): Promise<boolean> {
    const deleted = await ifHeld(() =>
      this.dynamo.send(
        new DeleteCommand({ TableName: this.tableName, Key: runKey(run.runId), ...conditionExpressions({ status: run.status, version: run.version }) }),
      ),
    );
    return deleted.held;
  }

  /** Ends a run that has not started (SCHEDULED or QUEUED): it will never be leased. */
  async retirePending(runId: string, status: 'SKIPPED' | 'CANCELLED', reason: string, now: number): Promise<boolean> {
    const at = new Date(now).toISOString();
    return updateIf(this.dynamo, this.tableName, runKey(runId), {
      set: { status, finishedAt: at, updatedAt: at, reason, ...expiryAttributes(runId, now, this.retentionDays) },
      remove: [...OPEN_RUN_ATTRIBUTES],
      if: { status: oneOf(sourcesOf(status, PENDING_STATUSES)) },
    });
  }

  /** Runs of a job that have not started yet (the newest hundred occurrences and its creation's are looked at). */
  pendingOfJob(job: JobOfRuns): Promise<Run[]> {
    return this.jobRuns.pending(job);
  }

  /**
   * The runs of a job, newest occurrence and attempt first; `from`/`to` bound the occurrence time,
   * `status` is kept from the runs read (decisions 0095, 0188).
   */
  listByJob(job: JobOfRuns, limit: number, cursor?: string, filter: RunFilter = {}): Promise<Page<Run>> {
    return this.jobRuns.list(job, limit, cursor, filter);
  }

  /** The tenant's runs, newest occurrence first, filtered as listByJob's (decision 0095). */
  async listByTenant(tenantId: string, limit: number, filter: RunFilter = {}, cursor?: string): Promise<Page<Run>> {
    return this.listThroughIndex(RUNS_BY_TENANT_INDEX, 'tenantId', tenantId, 'tenantRunSort', limit, filter, cursor);
  }

  private async listThroughIndex(
    indexName: string,
    partitionKey: string,
    partition: string,
    sortKey: string,
    limit: number,
    filter: RunFilter,
    cursor?: string,
  ): Promise<Page<Run>> {
    // Sort keys start with the occurrence time: `to` is exclusive, so the bound stops before it.
    const between = [filter.from ?? '0000', filter.to ?? '9999~'] as const;
    const page = await readIndexedPage(
      this.dynamo,
      {
        TableName: this.tableName,
        IndexName: indexName,
        KeyConditionExpression: '#partition = :partition AND #sort BETWEEN :from AND :to',
        ExpressionAttributeNames: { '#partition': partitionKey, '#sort': sortKey },
        ExpressionAttributeValues: { ':partition': partition, ':from': between[0], ':to': between[1] },
        ScanIndexForward: false,
      },
      {
        limit,
        start: cursor ? decodeCursorWithin(cursor, { [partitionKey]: partition }, sortKey, { between }, 'from/to') : undefined,
        keyOf: (entry) => ({ pk: entry.pk, sk: entry.sk, [partitionKey]: entry[partitionKey], [sortKey]: entry[sortKey] }),
        load: (entries) => runsOfEntries((runIds) => this.getMany(runIds), entries),
        keep: (run) => filter.status === undefined || run.status === filter.status,
        filtered: filter.status !== undefined,
      },
    );
    return { items: page.items, nextCursor: encodeCursor(page.next) };
  }
}
