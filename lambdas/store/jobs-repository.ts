// Jobs in DynamoDB: reads, listings (job-finder.ts), a job's changes as a compare-and-swap with the
// runs they write, and the byNextRun index's views for the ticker. A create is job-inserts.ts's.
import { batchGetConsistent, CoalescedItemReads } from './batch-get';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { TransactionResult, TransactItem } from './conditional';
import { absentOr, atMost, conditionExpressions, IF_NEW, ifHeld, transact, updateReturning } from './conditional';
import { RateAllowance } from '../domain/rate-allowance';
import type { Job } from '../domain/job';
import { isUnnamed } from '../domain/job';
import type { CreateGuards, IdempotencyRecord, InsertResult, NewRun } from './job-inserts';
import { activeJobsCount, isLive, JobInserts } from './job-inserts';

export type { CreateGuards, IdempotencyRecord, InsertResult, NewRun } from './job-inserts';
export { isLive, writesRunAhead } from './job-inserts';
import { JOBS_NEXT_RUN_INDEX } from './schema';
import type { Page } from './page';
import type { JobFilter } from './job-finder';
import { JobFinder } from './job-finder';

export type { JobFilter } from './job-finder';
import { isWorkflowJobId, parseStepJobId, stepJobOf } from '../domain/workflow-jobs';
import { itemToWorkflowVersion } from './workflows';
import { isJobItem, workflowVersionKey, WORKFLOW_PK_PREFIX, WORKFLOW_RUN_SK_PREFIX } from './keys';

/** What the byNextRun index finds overdue: a job whose chain stopped, or a workflow run whose progress did. */
export type Overdue =
  { readonly kind: 'job'; readonly jobId: string } | { readonly kind: 'workflow-run'; readonly workflowId: string; readonly workflowRunId: string };
import { createRateKey, jobKey, jobLabelKey, labelPairsOf, resumeShardOf } from './keys';
import { NameGuards } from './name-guards';
import { itemToJob, jobToItem } from './job-items';
import { runToItem } from './run-items';

/** Options of a job read. */
export interface JobReadOptions {
  /** Share a BatchGetItem with the reads made around it (see `Coalescer`). Absent: read alone, now. */
  readonly coalesce?: { readonly quietMs: number; readonly capMs: number };
}

export class JobsRepository {
  private readonly finder: JobFinder;
  private readonly inserts: JobInserts;
  private readonly names: NameGuards;
  /** This process's places in its tenants' per-second create windows (decision 0169). */
  private readonly allowance = new RateAllowance();

  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly jobsTable: string,
    private readonly runsTable: string,
    /**
     * How far before its pending occurrence an active job's byNextRun entry may sit (decision 0161):
     * less than the redelivery grace, so that the ticker never looks at a healthy chain. 0: exact.
     */
    private readonly checkBackWindowMs = 0,
    /**
     * Coalesced reads of the jobs table, shared with the workflow runs' (decision 0190): a step run's
     * job (its version item) and its workflow run share one BatchGetItem. Made at the first such read without it.
     */
    private sharedReads?: CoalescedItemReads,
    /**
     * Names are also guarded by the items written before decision 0192, and found through the
     * `byTenantName` index, while an upgraded stack's names are copied (stack config `legacyNameGuards`).
     */
    legacyNameGuards = false,
  ) {
    this.names = new NameGuards(dynamo, jobsTable, legacyNameGuards);
    this.finder = new JobFinder(dynamo, jobsTable, (jobIds) => this.getManyAnyTenant(jobIds), legacyNameGuards);
    this.inserts = new JobInserts(dynamo, jobsTable, runsTable, this.names, checkBackWindowMs);
  }

  /** Writes a new job with its guards and first run (job-inserts.ts). */
  insert(job: Job, firstRun: NewRun | null, idempotency?: IdempotencyRecord, guards?: CreateGuards): Promise<InsertResult> {
    return this.inserts.insert(job, firstRun, idempotency, guards);
  }

  /**
   * Counts a create, a manual trigger, a replay or a resend in the tenant's per-second window.
   * Refused (nothing counted) at `perSecond`; `retryAfterMs` is then the time to the next second.
   * A place this process reserved earlier in the second is spent without a write (decision 0169).
   */
  async countRunRequest(
    tenantId: string,
    perSecond: number | null,
    now: number,
  ): Promise<{ readonly allowed: true } | { readonly allowed: false; readonly retryAfterMs: number }> {
    if (perSecond === null) return { allowed: true };
    const second = Math.floor(now / 1000);
    const taken = await this.allowance.take(tenantId, perSecond, now, async (count) => {
      const counted = await updateReturning(this.dynamo, this.jobsTable, createRateKey(tenantId, second), {
        add: { creates: count },
        set: { expiresAtEpoch: second + 120 },
        if: { creates: absentOr(atMost(perSecond - count)) },
      });
      return counted.held ? { granted: true } : { granted: false, counted: Number(counted.item?.creates ?? 0) };
    });
    return taken ? { allowed: true } : { allowed: false, retryAfterMs: (second + 1) * 1000 - now };
  }

  /** The job a create under this Idempotency-Key made, and the hash of its body; null when none did. */
  findIdempotencyRecord(tenantId: string, key: string): Promise<{ jobId: string; requestHash: string } | null> {
    return this.inserts.findIdempotencyRecord(tenantId, key);
  }

  /**
   * A job of the given tenant, as the jobs API sees it; another tenant's job is reported as missing,
   * and so are a workflow's steps and schedule, which are not jobs there (`getForRun` reads them).
   */
  async get(tenantId: string, jobId: string): Promise<Job | null> {
    if (isWorkflowJobId(jobId)) return null;
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
    const step = parseStepJobId(jobId);
    const key = step ? workflowVersionKey(step.workflowId, step.version) : jobKey(jobId);
    const item =
      options.coalesce && consistent
        ? await (this.sharedReads ??= new CoalescedItemReads(this.dynamo, this.jobsTable, ['pk', 'sk'], options.coalesce)).read(key)
        : (await this.dynamo.send(new GetCommand({ TableName: this.jobsTable, Key: key, ConsistentRead: consistent }))).Item;
    if (!item) return null;
    return step ? stepJobOf(itemToWorkflowVersion(item), step.stepId) : itemToJob(item);
  }

  /**
   * The job of a run, for the API's run operations (a replay, a cancel): the tenant's job, the step
   * of a workflow version its run belongs to, or a workflow's schedule job.
   */
  async getForRun(tenantId: string, jobId: string): Promise<Job | null> {
    const job = await this.getAnyTenant(jobId);
    return job?.tenantId === tenantId ? job : null;
  }

  /** Strongly consistent reads of jobs by id; a job missing from the answer does not exist. */
  /** Jobs by id, of any tenant (the caller checks the tenant). */
  async getManyAnyTenant(jobIds: readonly string[]): Promise<Map<string, Job>> {
    // A workflow step's job is its version's step: one read of the version serves all its steps.
    const ids = [...new Set(jobIds)];
    const steps = ids.flatMap((jobId) => {
      const step = parseStepJobId(jobId);
      return step ? [{ jobId, ...step }] : [];
    });
    const versionKeys = [...new Map(steps.map((step) => [`${step.workflowId}#${step.version}`, workflowVersionKey(step.workflowId, step.version)])).values()];
    const items = await batchGetConsistent(this.dynamo, this.jobsTable, [...ids.filter((jobId) => !parseStepJobId(jobId)).map(jobKey), ...versionKeys]);
    const jobs = new Map(
      items
        .filter(isJobItem)
        .map(itemToJob)
        .map((job) => [job.jobId, job]),
    );
    const versions = new Map(
      items
        .filter((item) => String(item.pk).startsWith(WORKFLOW_PK_PREFIX) && !isJobItem(item))
        .map(itemToWorkflowVersion)
        .map((version) => [`${version.workflowId}#${version.version}`, version]),
    );
    for (const step of steps) {
      const version = versions.get(`${step.workflowId}#${step.version}`);
      const job = version ? stepJobOf(version, step.stepId) : null;
      if (job) jobs.set(step.jobId, job);
    }
    return jobs;
  }

  /** The tenant's jobs matching every filter (job-finder.ts, decision 0095). */
  list(tenantId: string, filter: JobFilter, limit: number, cursor?: string, maxItemsRead?: number): Promise<Page<Job>> {
    return this.finder.list(tenantId, filter, limit, cursor, maxItemsRead);
  }

  /**
   * Replaces a job if nobody changed it since it was read: its version and its pending occurrence
   * are the condition (a compare-and-swap). New runs and the release of the job's name are written
   * in the same transaction.
   */
  async replace(
    next: Job,
    expected: Pick<Job, 'version' | 'nextRunId' | 'status'> & { readonly labels?: Job['labels'] },
    extra: ReplaceExtras = {},
  ): Promise<ReplaceResult> {
    // A delete gives back the name's guards the job still holds, read first (NameGuards.heldBy).
    const releasing = extra.releaseName && !isUnnamed(next) ? this.names.releaseItems(next, await this.names.heldBy(next)) : {};
    const items = { ...this.replaceItems(next, expected, extra), ...releasing };
    if (Object.keys(items).length === 1) {
      const put = await ifHeld(() => this.dynamo.send(new PutCommand(items.job!.Put!)));
      return put.held ? 'replaced' : 'conflict';
    }
    const result = await transact(this.dynamo, items);
    const outcome = replaceResultOf(result, extra.newRuns?.length ?? 0, !isLive(expected.status) && isLive(next.status));
    if (outcome === null && !result.committed) throw result.error;
    return outcome ?? 'replaced';
  }

  /**
   * The items of a replace (named `job`, `run:<i>`, `usage`, `label±<i>`; a delete's release of the job's name is `replace`'s), for a
   * transaction of the caller's that writes more (a workflow's new version with its schedule job's
   * change); `replaceResultOf` reads the outcome.
   */
  replaceItems(
    next: Job,
    expected: Pick<Job, 'version' | 'nextRunId' | 'status'> & { readonly labels?: Job['labels'] },
    extra: ReplaceExtras = {},
  ): Record<string, TransactItem> {
    const jobPut = {
      TableName: this.jobsTable,
      Item: jobToItem(next, { checkBackWindowMs: this.checkBackWindowMs }),
      // The pending run is `pendingRunId` (decision 0168), `nextRunId` on an item written before it:
      // an item has exactly one of them, and the one it has must be as read.
      ...conditionExpressions({
        version: expected.version,
        pendingRunId: absentOr(expected.nextRunId),
        nextRunId: absentOr(expected.nextRunId),
      }),
    };
    const items: Record<string, TransactItem> = { job: { Put: jobPut } };
    const newRuns = extra.newRuns ?? [];
    newRuns.forEach((newRun, index) => {
      items[`run:${index}`] = { Put: { TableName: this.runsTable, Item: runToItem(newRun.run, newRun.extras), ...conditionExpressions(IF_NEW) } };
    });
    // A job that stops being live (COMPLETED, CANCELLED) frees its place under the tenant's limit;
    // one that becomes live again (a COMPLETED job given a new schedule) takes one, within it.
    const becomesLive = !isLive(expected.status) && isLive(next.status);
    if (isLive(expected.status) && !isLive(next.status)) items.usage = activeJobsCount(this.jobsTable, next.tenantId, -1, null);
    else if (becomesLive) items.usage = activeJobsCount(this.jobsTable, next.tenantId, 1, extra.maxActiveJobs ?? null);
    // Label entries follow the job's labels (decision 0095): new ones written, dropped ones deleted.
    const before = new Set(labelPairsOf(expected.labels));
    const after = new Set(labelPairsOf(next.labels));
    [...after]
      .filter((label) => !before.has(label))
      .forEach((label, index) => {
        items[`label+${index}`] = { Put: { TableName: this.jobsTable, Item: { ...jobLabelKey(next.tenantId, label, next), jobId: next.jobId } } };
      });
    [...before]
      .filter((label) => !after.has(label))
      .forEach((label, index) => {
        items[`label-${index}`] = { Delete: { TableName: this.jobsTable, Key: jobLabelKey(next.tenantId, label, next) } };
      });
    return items;
  }

  /**
   * The items that write a new job without a name of its own (a workflow's schedule job, whose name
   * is its workflow's) and its first run, counted against the tenant's active jobs while live: named
   * `job`, `firstRun` and `usage`, for the caller's transaction.
   */
  newJobItems(job: Job, firstRun: NewRun | null, maxActiveJobs: number | null): Record<string, TransactItem> {
    const ifNew = conditionExpressions(IF_NEW);
    return {
      job: { Put: { TableName: this.jobsTable, Item: jobToItem(job, { checkBackWindowMs: this.checkBackWindowMs }), ...ifNew } },
      ...(firstRun ? { firstRun: { Put: { TableName: this.runsTable, Item: runToItem(firstRun.run, firstRun.extras), ...ifNew } } } : {}),
      ...(isLive(job.status) ? { usage: activeJobsCount(this.jobsTable, job.tenantId, 1, maxActiveJobs) } : {}),
    };
  }

  /** Jobs paused until a time at or before `before` (one shard of byNextRun's `resume#` partitions). */
  async dueResumes(shard: number, before: number): Promise<string[]> {
    const jobIds: string[] = [];
    for await (const item of this.byNextRun(resumeShardOf(shard), '<=', before)) jobIds.push(String(item.jobId));
    return jobIds;
  }

  /** The items of one partition of the byNextRun index whose `nextRunAt` is before (or at) `before`, page by page. */
  private async *byNextRun(partition: string, comparison: '<' | '<=', before: number): AsyncGenerator<Record<string, unknown>> {
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.dynamo.send(
        new QueryCommand({
          TableName: this.jobsTable,
          IndexName: JOBS_NEXT_RUN_INDEX,
          KeyConditionExpression: `#shard = :shard AND #nextRunAt ${comparison} :before`,
          ExpressionAttributeNames: { '#shard': 'nextRunShard', '#nextRunAt': 'nextRunAt' },
          ExpressionAttributeValues: { ':shard': partition, ':before': new Date(before).toISOString() },
          ExclusiveStartKey: start,
        }),
      );
      yield* page.Items ?? [];
      start = page.LastEvaluatedKey;
    } while (start);
  }

  /** Active jobs whose pending occurrence was due before `before` (one shard of byNextRun). */
  async overdue(shard: number, before: number): Promise<Overdue[]> {
    const found: Overdue[] = [];
    for await (const item of this.byNextRun(String(shard), '<', before)) {
      const pk = String(item.pk);
      const sk = String(item.sk);
      // Running workflow runs share the index (their check-back: last progress), keyed in their workflow's partition.
      if (pk.startsWith(WORKFLOW_PK_PREFIX) && sk.startsWith(WORKFLOW_RUN_SK_PREFIX)) {
        found.push({ kind: 'workflow-run', workflowId: pk.slice(WORKFLOW_PK_PREFIX.length), workflowRunId: sk.slice(WORKFLOW_RUN_SK_PREFIX.length) });
      } else found.push({ kind: 'job', jobId: String(item.jobId) });
    }
    return found;
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

/** What a transaction with a replace's items (`replaceItems`) came to; null when its cancellation is none of a replace's. */
export function replaceResultOf(result: TransactionResult, newRuns: number, becomesLive: boolean): ReplaceResult | null {
  if (result.committed) return 'replaced';
  if (result.failed.has('job')) return 'conflict';
  if (Array.from({ length: newRuns }, (_, index) => `run:${index}`).some((name) => result.failed.has(name))) return 'run-exists';
  if (becomesLive && result.failed.has('usage')) return 'too-many-active-jobs';
  // Nothing was written: the caller reads the job again and retries, as after a lost condition.
  if (result.conflict) return 'conflict';
  return null;
}
