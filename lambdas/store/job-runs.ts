// A job's runs, newest occurrence and attempt first (decision 0188). Most are in the keys-only
// `byJobKeys` index, sorted by `jobSort` (occurrence, then attempt). The runs of the occurrence at
// the job's own creation instant (a run-now job's one occurrence, its retries and replays) are not:
// they are found by their place in the tenant's index (`byTenantKeys`, sorted by occurrence and run
// id), where every run is, so that a run-now create writes one index entry less. A listing reads the
// index after that occurrence, then that occurrence's runs, then the index before it.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Job } from '../domain/job';
import type { Run, RunStatus } from '../domain/run';
import { PENDING_STATUSES } from '../domain/run';
import { occurrenceOfRunId } from '../domain/retention';
import { readIndexedPage } from './indexed-page';
import { encodeCursor, jobSortOf, RUN_PK_PREFIX, runKey } from './keys';
import type { Page } from './page';
import { decodeCursorWithin } from './page';
import { RUNS_BY_JOB_INDEX, RUNS_BY_TENANT_INDEX } from './schema';

type Item = Record<string, unknown>;

/** What finding a job's runs needs of the job. */
export type JobOfRuns = Pick<Job, 'jobId' | 'tenantId' | 'createdAt'>;

/** Filters of a run listing: a status, and the occurrence time from (inclusive) to (exclusive), as UTC ISO instants. */
export interface RunFilter {
  readonly status?: RunStatus;
  readonly from?: string;
  readonly to?: string;
}

/** Most run ids of one occurrence a listing orders (its attempts and replays, in practice a handful). */
const MAX_OCCURRENCE_RUNS = 10_000;
/** Runs read by key at a time when a status filter may leave some out. */
const FILTERED_READ = 100;

/**
 * Whether a run is one of its job's creation occurrence, kept out of the byJob index (decision
 * 0188): its occurrence is the instant its job was created.
 */
export const isCreationOccurrence = (job: Pick<Job, 'createdAt'>, scheduledFor: string): boolean => scheduledFor === job.createdAt;

export class JobRuns {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
    /** Runs by id, any order, missing ones left out. */
    private readonly getMany: (runIds: readonly string[]) => Promise<Run[]>,
  ) {}

  /**
   * The runs of a job, newest occurrence and attempt first; `from`/`to` bound the occurrence time,
   * `status` is kept from the runs read (decision 0095). A page holds up to `limit` runs and
   * `nextCursor` is null exactly when nothing follows, unless a read budget ran out first.
   */
  async list(job: JobOfRuns, limit: number, cursor?: string, filter: RunFilter = {}): Promise<Page<Run>> {
    // Sort keys start with the occurrence time: `to` is exclusive, so the bound stops before it.
    const between = [filter.from ?? '0000', filter.to ?? '9999~'] as const;
    const start = cursor ? decodeCursorWithin(cursor, { jobId: job.jobId }, 'jobSort', { between }, 'from/to') : undefined;
    const after = start === undefined ? undefined : String(start.jobSort);
    // The creation occurrence's runs sort between these two (jobSort is `<occurrence>#<attempt>`).
    const bandLow = `${job.createdAt}#`;
    const bandHigh = `${job.createdAt}#~`;
    const inBand = between[0] <= job.createdAt && job.createdAt < (filter.to ?? '9999~');
    const found: Run[] = [];
    const keyOf = (run: Run): Item => ({ ...runKey(run.runId), jobId: job.jobId, jobSort: jobSortOf(run) });
    // One more than the page: if it exists, a next page does.
    const need = () => limit + 1 - found.length;
    const full = () => found.length > limit;
    const page = (next: Item | undefined): Page<Run> =>
      full() ? { items: found.slice(0, limit), nextCursor: encodeCursor(keyOf(found[limit - 1] as Run)) } : { items: found, nextCursor: encodeCursor(next) };

    // The index after the creation occurrence.
    if (after === undefined || after > bandHigh) {
      const low = between[0] > bandHigh ? between[0] : bandHigh;
      const read = await this.indexRange(job.jobId, low, between[1], need(), start, filter);
      found.push(...read.items);
      if (read.next && !full()) return page(read.next);
    }
    // The creation occurrence's runs: ordered by their ids, and only those the page shows read.
    if (!full() && inBand && (after === undefined || after > bandLow)) {
      const runIds = await this.creationRunIds(job, after);
      for (let next = 0; next < runIds.length && !full();) {
        const chunk = runIds.slice(next, next + (filter.status === undefined ? need() : Math.max(need(), FILTERED_READ)));
        next += chunk.length;
        const byId = new Map((await this.getMany(chunk)).map((run) => [run.runId, run]));
        for (const runId of chunk) {
          const run = byId.get(runId);
          if (run && (filter.status === undefined || run.status === filter.status) && !full()) found.push(run);
        }
      }
    }
    // The index before it.
    if (!full()) {
      const high = between[1] < bandLow ? between[1] : bandLow;
      const read = await this.indexRange(job.jobId, between[0], high, need(), after !== undefined && after < bandLow ? start : undefined, filter);
      found.push(...read.items);
      if (read.next && !full()) return page(read.next);
    }
    return page(undefined);
  }

  /** Runs of a job that have not started yet (the newest hundred occurrences and its creation occurrence are looked at). */
  async pending(job: JobOfRuns): Promise<Run[]> {
    // The byJob index holds keys only (a run's updates then never write to it), so the status is
    // read from the runs themselves.
    const { Items: keys = [] } = await this.dynamo.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: RUNS_BY_JOB_INDEX,
        KeyConditionExpression: '#jobId = :jobId',
        ExpressionAttributeNames: { '#jobId': 'jobId' },
        ExpressionAttributeValues: { ':jobId': job.jobId },
        ScanIndexForward: false,
        Limit: 100,
      }),
    );
    const indexed = (await runsOfEntries(this.getMany, keys)).filter((run): run is Run => run !== null);
    const listed = new Set(indexed.map((run) => run.runId));
    // The newest hundred attempts of its creation occurrence, likewise.
    const createdIds = (await this.creationRunIds(job, undefined)).filter((runId) => !listed.has(runId)).slice(0, 100);
    const created = await this.getMany(createdIds);
    return [...indexed, ...created].filter((run) => PENDING_STATUSES.includes(run.status));
  }

  /** The job's runs in the byJob index between `low` and `high` (sort keys, inclusive), newest first. */
  private async indexRange(jobId: string, low: string, high: string, limit: number, start: Item | undefined, filter: RunFilter) {
    if (low > high) return { items: [], next: undefined };
    return readIndexedPage(
      this.dynamo,
      {
        TableName: this.tableName,
        IndexName: RUNS_BY_JOB_INDEX,
        KeyConditionExpression: '#jobId = :jobId AND #sort BETWEEN :low AND :high',
        ExpressionAttributeNames: { '#jobId': 'jobId', '#sort': 'jobSort' },
        ExpressionAttributeValues: { ':jobId': jobId, ':low': low, ':high': high },
        ScanIndexForward: false,
      },
      {
        limit,
        start,
        keyOf: (entry) => ({ pk: entry.pk, sk: entry.sk, jobId: entry.jobId, jobSort: entry.jobSort }),
        load: (entries) => runsOfEntries(this.getMany, entries),
        keep: (run: Run) => filter.status === undefined || run.status === filter.status,
        filtered: filter.status !== undefined,
      },
    );
  }

  /**
   * The ids of the runs of the job's creation occurrence, newest attempt first, those sorting
   * before `after` (a byJob sort key) when given: found in the tenant's index by their occurrence
   * and their ids (`<jobId>.<occurrence>.<attempt>`), and ordered by the attempt each id names,
   * with no run read.
   */
  private async creationRunIds(job: JobOfRuns, after: string | undefined): Promise<string[]> {
    const found: { readonly runId: string; readonly sort: string }[] = [];
    let next: Item | undefined;
    let seen = 0;
    do {
      const read = await this.dynamo.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: RUNS_BY_TENANT_INDEX,
          KeyConditionExpression: '#tenantId = :tenantId AND begins_with(#sort, :prefix)',
          ExpressionAttributeNames: { '#tenantId': 'tenantId', '#sort': 'tenantRunSort' },
          ExpressionAttributeValues: { ':tenantId': job.tenantId, ':prefix': `${job.createdAt}#${job.jobId}.` },
          ExclusiveStartKey: next,
        }),
      );
      for (const entry of read.Items ?? []) {
        seen += 1;
        const runId = String(entry.pk).slice(RUN_PK_PREFIX.length);
        // Another job's id could start with this one's and a dot; the run id names its job.
        if (occurrenceOfRunId(runId)?.jobId !== job.jobId) continue;
        const attempt = Number(runId.slice(runId.lastIndexOf('.') + 1));
        if (!Number.isSafeInteger(attempt)) continue;
        const sort = jobSortOf({ scheduledFor: job.createdAt, attempt });
        if (after === undefined || sort < after) found.push({ runId, sort });
      }
      next = read.LastEvaluatedKey;
    } while (next && seen < MAX_OCCURRENCE_RUNS);
    return found.sort((a, b) => (a.sort < b.sort ? 1 : a.sort > b.sort ? -1 : 0)).map(({ runId }) => runId);
  }
}

/**
 * The runs an index's entries name (keys-only entries: the runs' own keys), in the entries' order,
 * read in one batch; null where a run has left since.
 */
export async function runsOfEntries(getMany: (runIds: readonly string[]) => Promise<Run[]>, entries: readonly Item[]): Promise<(Run | null)[]> {
  const runIdOf = (entry: Item): string | null =>
    typeof entry.pk === 'string' && entry.pk.startsWith(RUN_PK_PREFIX) ? entry.pk.slice(RUN_PK_PREFIX.length) : null;
  const runIds = entries.map(runIdOf);
  const byId = new Map((await getMany(runIds.filter((runId): runId is string => runId !== null))).map((run) => [run.runId, run]));
  return runIds.map((runId) => (runId === null ? null : (byId.get(runId) ?? null)));
}
