// Finding a tenant's jobs: by label, name or name prefix, status, or all of them, each through an
// index (or the label entries, or the names' guards: decision 0192) rather than a scan of the
// tenant's items (decision 0095). The jobs an
// index points at are read by key and every filter is checked on them, within the request's read
// budget: the type has no index of its own (decision 0186), and is kept from the jobs read.
import type { DynamoDBDocumentClient, QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import type { Job, JobStatus } from '../domain/job';
import { JOB_ID_PATTERN } from '../domain/job';
import { MAX_ITEMS_READ_PER_PAGE } from './filtered-page';
import { readIndexedPage } from './indexed-page';
import { DELETED_NAME_SEPARATOR, encodeCursor, jobLabelPartition, jobNamesPartition, labelPairsOf } from './keys';
import type { Page, SortKeyCondition } from './page';
import { decodeCursorOrThrow, decodeCursorWithin } from './page';
import { JOBS_BY_NAME_INDEX, JOBS_BY_STATUS_INDEX, JOBS_BY_TENANT_INDEX } from './schema';

export interface JobFilter {
  readonly status?: JobStatus;
  readonly type?: string;
  /** Exactly this name (a job created without a name: its id). */
  readonly name?: string;
  /** Names that start with this (the listing is then in name order); jobs created without a name have none to match. */
  readonly namePrefix?: string;
  /** Every one of these labels. */
  readonly labels?: readonly { readonly key: string; readonly value: string }[];
}

export class JobFinder {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly jobsTable: string,
    /** Jobs by id, of any tenant (JobsRepository's read). */
    private readonly getManyAnyTenant: (jobIds: readonly string[]) => Promise<Map<string, Job>>,
    /** Names are found through the `byTenantName` index (an upgrade's first deploy, `legacyNameGuards`), not their guards. */
    private readonly legacyNames = false,
  ) {}

  /**
   * The tenant's jobs matching every filter, newest first (in name order under `namePrefix`). The
   * most selective filter picks the index read (a label, the name, the status, else all the
   * tenant's jobs); the jobs it points at are read by key and the other filters (the type always,
   * decision 0186) kept from them, within the request's read budget (decision 0095): a page may then
   * hold fewer than `limit` jobs, with a cursor to go on. `nextCursor` is null when nothing follows.
   */
  async list(tenantId: string, filter: JobFilter, limit: number, cursor?: string, maxItemsRead = MAX_ITEMS_READ_PER_PAGE): Promise<Page<Job>> {
    // One key asked with two values (`label=team=a&label=team=b`): every label must match, and a job
    // has one value per key, so none does.
    const asked = filter.labels ?? [];
    if (asked.some(({ key, value }) => asked.some((other) => other.key === key && other.value !== value))) return { items: [], nextCursor: null };
    const labels = labelPairsOf(Object.fromEntries(asked.map(({ key, value }) => [key, value])));
    const keep = (job: Job): boolean =>
      job.tenantId === tenantId &&
      (filter.status === undefined || job.status === filter.status) &&
      (filter.type === undefined || job.type === filter.type) &&
      (filter.name === undefined || job.name === filter.name) &&
      (filter.namePrefix === undefined || job.name.startsWith(filter.namePrefix)) &&
      labels.every((label) => labelPairsOf(job.labels).includes(label));
    const read = (
      query: Omit<QueryCommandInput, 'ExclusiveStartKey' | 'Limit' | 'TableName'>,
      expect: Record<string, string>,
      sortKey: string,
      keyNames: readonly string[],
      condition?: SortKeyCondition,
      admit?: (entry: Record<string, unknown>, job: Job) => boolean,
    ) => this.listThrough(query, expect, sortKey, keyNames, condition, limit, keep, cursor, maxItemsRead, admit);
    const [firstLabel] = labels;
    if (firstLabel !== undefined) {
      const partition = jobLabelPartition(tenantId, firstLabel);
      return read(
        {
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': 'pk' },
          ExpressionAttributeValues: { ':pk': partition },
          ScanIndexForward: false,
        },
        { pk: partition },
        'sk',
        ['pk', 'sk'],
      );
    }
    if (filter.name !== undefined && JOB_ID_PATTERN.test(filter.name)) {
      // Only a job created without a name has a name of a job id's form (its id), and such a job
      // is in no name index (decision 0157): it is read by key, a page of one at most.
      if (cursor) decodeCursorOrThrow(cursor, { tenantId }, 'name');
      const job = cursor ? undefined : (await this.getManyAnyTenant([filter.name])).get(filter.name);
      return { items: job && keep(job) ? [job] : [], nextCursor: null };
    }
    if (filter.name !== undefined || filter.namePrefix !== undefined) {
      const exact = filter.name !== undefined;
      const name = filter.name ?? filter.namePrefix ?? '';
      if (!this.legacyNames) {
        // The names' guards are the tenant's names in order (decision 0192), each naming its job,
        // and each followed by the entries of the deleted jobs that had it (`<name>#<jobId>`).
        const partition = jobNamesPartition(tenantId);
        const last = `${name}${DELETED_NAME_SEPARATOR}\uffff`;
        return read(
          {
            KeyConditionExpression: exact ? '#pk = :pk AND #sk BETWEEN :name AND :last' : '#pk = :pk AND begins_with(#sk, :name)',
            ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk' },
            ExpressionAttributeValues: { ':pk': partition, ':name': name, ...(exact ? { ':last': last } : {}) },
          },
          { pk: partition },
          'sk',
          ['pk', 'sk'],
          exact ? { between: [name, last] } : { beginsWith: name },
          // A guard still naming a deleted job (a race's leftover, free to take) lists nothing: the
          // job's own `<name>#<jobId>` entry lists it once.
          (entry, job) => !(entry.sk === job.name && job.status === 'CANCELLED'),
        );
      }
      return read(
        {
          IndexName: JOBS_BY_NAME_INDEX,
          KeyConditionExpression: exact ? '#tenantId = :tenantId AND #name = :name' : '#tenantId = :tenantId AND begins_with(#name, :name)',
          ExpressionAttributeNames: { '#tenantId': 'tenantId', '#name': 'name' },
          ExpressionAttributeValues: { ':tenantId': tenantId, ':name': name },
        },
        { tenantId },
        'name',
        ['pk', 'sk', 'tenantId', 'name'],
        exact ? { equals: name } : { beginsWith: name },
      );
    }
    // COMPLETED jobs are in no status partition (decision 0166): they are most of a tenant's jobs,
    // and read from the tenant's index with the status kept from the jobs read. So is the type
    // (decision 0186): an index of its own cost every create a write.
    const [indexName, attribute, value] =
      filter.status !== undefined && filter.status !== 'COMPLETED'
        ? [JOBS_BY_STATUS_INDEX, 'tenantStatus', `${tenantId}#${filter.status}`]
        : [JOBS_BY_TENANT_INDEX, 'tenantId', tenantId];
    return read(
      {
        IndexName: indexName,
        KeyConditionExpression: '#partition = :partition',
        ExpressionAttributeNames: { '#partition': attribute },
        ExpressionAttributeValues: { ':partition': value },
        ScanIndexForward: false,
      },
      { [attribute]: value },
      'tenantSort',
      ['pk', 'sk', attribute, 'tenantSort'],
    );
  }

  private async listThrough(
    query: Omit<QueryCommandInput, 'ExclusiveStartKey' | 'Limit' | 'TableName'>,
    expect: Record<string, string>,
    sortKey: string,
    keyNames: readonly string[],
    /** The key condition on the sort key, if any: a cursor outside it was returned under another name filter. */
    condition: SortKeyCondition | undefined,
    limit: number,
    keep: (job: Job) => boolean,
    cursor: string | undefined,
    maxItemsRead: number,
    /** Whether an entry lists the job it names (all, when absent). */
    admit?: (entry: Record<string, unknown>, job: Job) => boolean,
  ): Promise<Page<Job>> {
    const page = await readIndexedPage<Job>(
      this.dynamo,
      { TableName: this.jobsTable, ...query },
      {
        limit,
        start: cursor
          ? condition
            ? decodeCursorWithin(cursor, expect, sortKey, condition, 'name or namePrefix')
            : decodeCursorOrThrow(cursor, expect, sortKey)
          : undefined,
        keyOf: (entry) => Object.fromEntries(keyNames.map((name) => [name, entry[name]])),
        load: async (entries) => {
          // Label entries and names' guards name their job; index entries are the job's own keys.
          const jobIds = entries.map((entry) => (typeof entry.jobId === 'string' ? entry.jobId : String(entry.pk).slice('JOB#'.length)));
          const jobs = await this.getManyAnyTenant(jobIds);
          return jobIds.map((jobId, index) => {
            const job = jobs.get(jobId) ?? null;
            return job && (admit === undefined || admit(entries[index]!, job)) ? job : null;
          });
        },
        keep,
        // Every listing is checked against the jobs read: an index is eventually consistent.
        filtered: true,
        maxItemsRead,
      },
    );
    return { items: page.items, nextCursor: encodeCursor(page.next) };
  }
}
