// Workflows in the jobs table: one partition per workflow holds its head (name, newest version),
// its versions (never changed once written) and its runs (workflow-runs.ts); a list partition per
// tenant finds them, and a name guard keeps their names unique within the tenant.
import { readFilteredPage } from './filtered-page';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Workflow, WorkflowSpec, WorkflowVersion } from '../domain/workflow';
import { batchGetConsistent } from './batch-get';
import type { Item } from './keys';
import { encodeCursor, workflowKey, workflowNameKey, workflowVersionKey } from './keys';
import type { TransactItem } from './conditional';
import type { Job } from '../domain/job';
import type { JobsRepository, NewRun } from './jobs-repository';
import { absent, conditionExpressions, IF_NEW, transact, updateExpressions } from './conditional';
import type { Page } from './page';
import { ValidationError } from '../core/errors';
import { workflowListKeys, workflowListPartition, WORKFLOW_LIST_BY_NAME, WORKFLOW_LIST_BY_TIME } from './keys';
import { decodeCursorOrThrow } from './page';

const WORKFLOW_FIELDS = ['workflowId', 'tenantId', 'name', 'version', 'createdAt', 'updatedAt'] as const;

function itemToWorkflow(item: Item): Workflow {
  const workflow = Object.fromEntries(WORKFLOW_FIELDS.map((field) => [field, item[field]])) as unknown as Workflow;
  return typeof item.deletedAt === 'string' ? { ...workflow, deletedAt: item.deletedAt } : workflow;
}

export function itemToWorkflowVersion(item: Item): WorkflowVersion {
  return {
    workflowId: String(item.workflowId),
    tenantId: String(item.tenantId),
    version: Number(item.version),
    spec: JSON.parse(String(item.specJson)) as WorkflowSpec,
    createdAt: String(item.createdAt),
  };
}

/** A workflow's write: done, its name taken, it (or its schedule job) changed since read, or its schedule over the tenant's active jobs. */
export type WorkflowWrite =
  { readonly kind: 'written' } | { readonly kind: 'name-taken' } | { readonly kind: 'changed' } | { readonly kind: 'too-many-active-jobs' };

/** Items of another store's transaction, their names prefixed so that they keep apart from the workflow's own. */
function prefixed(prefix: string, items: Readonly<Record<string, TransactItem>>): Record<string, TransactItem> {
  return Object.fromEntries(Object.entries(items).map(([name, item]) => [`${prefix}.${name}`, item]));
}

/** A workflow's head as a listing shows it: with its newest version's step count (absent on workflows from before it was kept). */
export interface WorkflowHead extends Workflow {
  readonly stepCount?: number;
}

/** A new workflow's schedule job (decision 0147) and its first occurrence's run, written with the workflow. */
export interface NewSchedule {
  readonly job: Job;
  readonly firstRun: NewRun | null;
  /** The tenant's active-jobs limit, which a live schedule job counts against (null: none). */
  readonly maxActiveJobs: number | null;
}

/** A new version's change of its workflow's schedule job, written with the version. */
export type ScheduleChange =
  | ({ readonly kind: 'new' } & NewSchedule)
  | {
      readonly kind: 'replace';
      readonly next: Job;
      /** The schedule job as read: the compare-and-swap's condition. */
      readonly expected: Job;
      readonly newRuns: readonly NewRun[];
      readonly maxActiveJobs: number | null;
    };

export class WorkflowsRepository {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
    /** The schedule jobs' items and their runs are the jobs store's to write. */
    private readonly jobs: JobsRepository,
  ) {}

  /**
   * The workflow, its name guard and its first version, together, with its schedule job and that
   * job's first run when it has a schedule.
   */
  async create(workflow: Workflow, version: WorkflowVersion, schedule?: NewSchedule): Promise<WorkflowWrite> {
    const extra = schedule ? prefixed('schedule', this.jobs.newJobItems(schedule.job, schedule.firstRun, schedule.maxActiveJobs)) : {};
    const result = await transact(this.dynamo, {
      ...extra,
      name: {
        Put: {
          TableName: this.tableName,
          Item: { ...workflowNameKey(workflow.tenantId, workflow.name), workflowId: workflow.workflowId },
          ...conditionExpressions(IF_NEW),
        },
      },
      head: {
        Put: {
          TableName: this.tableName,
          Item: { ...workflowKey(workflow.workflowId), ...workflow, stepCount: version.spec.steps.length, listed: true },
          ...conditionExpressions(IF_NEW),
        },
      },
      version: { Put: { TableName: this.tableName, Item: this.versionItem(version), ...conditionExpressions(IF_NEW) } },
      ...this.listItems(workflow),
    });
    if (result.committed) return { kind: 'written' };
    if (result.failed.has('name')) return { kind: 'name-taken' };
    if (result.failed.has('schedule.usage')) return { kind: 'too-many-active-jobs' };
    if (result.conflict) return { kind: 'changed' };
    throw result.error;
  }

  /**
   * A new version, if the newest is still `expected` (two updates at once: one wins), with its
   * schedule job's change (a compare-and-swap on the job as read) in the same transaction.
   */
  async addVersion(version: WorkflowVersion, expected: number, schedule?: ScheduleChange): Promise<WorkflowWrite> {
    const extra = !schedule
      ? {}
      : schedule.kind === 'new'
        ? prefixed('schedule', this.jobs.newJobItems(schedule.job, schedule.firstRun, schedule.maxActiveJobs))
        : prefixed('schedule', this.jobs.replaceItems(schedule.next, schedule.expected, { newRuns: schedule.newRuns, maxActiveJobs: schedule.maxActiveJobs }));
    const result = await transact(this.dynamo, {
      ...extra,
      head: {
        Update: {
          TableName: this.tableName,
          Key: workflowKey(version.workflowId),
          ...updateExpressions({
            set: { version: version.version, updatedAt: version.createdAt, stepCount: version.spec.steps.length },
            if: { version: expected, tenantId: version.tenantId, deletedAt: absent },
          }),
        },
      },
      version: { Put: { TableName: this.tableName, Item: this.versionItem(version), ...conditionExpressions(IF_NEW) } },
    });
    if (result.committed) return { kind: 'written' };
    // Another version, or a move of the schedule's chain (a worker, a pause) since the read: read again.
    if (result.failed.has('head') || result.failed.has('version') || result.failed.has('schedule.job') || result.conflict) return { kind: 'changed' };
    if (result.failed.has('schedule.usage')) return { kind: 'too-many-active-jobs' };
    if ([...result.failed].some((name) => name.startsWith('schedule.run:') || name === 'schedule.firstRun')) return { kind: 'changed' };
    throw result.error;
  }

  /**
   * Deletes a workflow (decision 0149): its head marked deleted if it is still at the version read and
   * not deleted, its name freed, its list entries removed, and its schedule job (when it has one not
   * CANCELLED) CANCELLED by a compare-and-swap on the job as read, all in one transaction. A new
   * version or a move of the schedule's chain since the read is `changed`: read again.
   */
  async delete(workflow: Workflow, at: string, schedule?: { readonly next: Job; readonly expected: Job }): Promise<'written' | 'changed'> {
    const keys = workflowListKeys(workflow);
    const extra = schedule ? prefixed('schedule', this.jobs.replaceItems(schedule.next, schedule.expected)) : {};
    const result = await transact(this.dynamo, {
      ...extra,
      head: {
        Update: {
          TableName: this.tableName,
          Key: workflowKey(workflow.workflowId),
          ...updateExpressions({
            set: { deletedAt: at, updatedAt: at, listed: false },
            if: { version: workflow.version, tenantId: workflow.tenantId, deletedAt: absent },
          }),
        },
      },
      name: {
        Delete: {
          TableName: this.tableName,
          Key: workflowNameKey(workflow.tenantId, workflow.name),
          ...conditionExpressions({ workflowId: workflow.workflowId }),
        },
      },
      listedByTime: { Delete: { TableName: this.tableName, Key: keys.byTime } },
      listedByName: { Delete: { TableName: this.tableName, Key: keys.byName } },
    });
    if (result.committed) return 'written';
    if (result.conflict || result.failed.size > 0) return 'changed';
    throw result.error;
  }

  /** The workflow's entries in its tenant's list, in creation and in name order (`workflowListKeys`). */
  private listItems(workflow: Workflow): Record<string, TransactItem> {
    const keys = workflowListKeys(workflow);
    return {
      listedByTime: { Put: { TableName: this.tableName, Item: { ...keys.byTime, workflowId: workflow.workflowId } } },
      listedByName: { Put: { TableName: this.tableName, Item: { ...keys.byName, workflowId: workflow.workflowId } } },
    };
  }

  /**
   * The tenant's workflows, newest first or in name order (from `namePrefix`), a page at a time:
   * their heads with the newest version's step count, in one query of the tenant's list and one
   * batch read.
   */
  async list(
    tenantId: string,
    query: { readonly limit: number; readonly order: 'newest' | 'name'; readonly namePrefix?: string; readonly cursor?: string },
  ): Promise<Page<WorkflowHead>> {
    const partition = workflowListPartition(tenantId);
    const prefix = query.order === 'name' ? `${WORKFLOW_LIST_BY_NAME}${query.namePrefix ?? ''}` : WORKFLOW_LIST_BY_TIME;
    const start = query.cursor ? decodeCursorOrThrow(query.cursor, { pk: partition }, 'sk') : undefined;
    if (start && !String(start.sk).startsWith(prefix))
      throw new ValidationError('Invalid cursor', [{ path: 'cursor', message: 'is not a cursor this listing returned' }]);
    // One more entry than the page (filtered-page.ts): the cursor is null exactly when none follows.
    const page = await readFilteredPage(
      this.dynamo,
      {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': partition, ':prefix': prefix },
        ScanIndexForward: query.order === 'name',
        ConsistentRead: true,
      },
      query.limit,
      (item) => ({ pk: item.pk, sk: item.sk }),
      start,
    );
    const ids = page.items.map((item) => String(item.workflowId));
    const heads = new Map(
      (await batchGetConsistent(this.dynamo, this.tableName, ids.map(workflowKey))).map((item) => [String(item.workflowId), item] as const),
    );
    const items = ids.flatMap((id) => {
      const head = heads.get(id);
      return head && head.tenantId === tenantId
        ? [{ ...itemToWorkflow(head), ...(typeof head.stepCount === 'number' ? { stepCount: head.stepCount } : {}) }]
        : [];
    });
    return { items, nextCursor: page.next ? encodeCursor(page.next) : null };
  }

  private versionItem(version: WorkflowVersion): Item {
    const { spec, ...rest } = version;
    return { ...workflowVersionKey(version.workflowId, version.version), ...rest, specJson: JSON.stringify(spec) };
  }

  async get(tenantId: string, workflowId: string): Promise<Workflow | null> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: workflowKey(workflowId), ConsistentRead: true }));
    return item && item.tenantId === tenantId ? itemToWorkflow(item) : null;
  }

  async getVersion(workflowId: string, version: number): Promise<WorkflowVersion | null> {
    const { Item: item } = await this.dynamo.send(
      new GetCommand({ TableName: this.tableName, Key: workflowVersionKey(workflowId, version), ConsistentRead: true }),
    );
    return item ? itemToWorkflowVersion(item) : null;
  }

  /** Several versions (any tenant: the caller checks), keyed `workflowId#version`. */
  async getVersions(keys: readonly { workflowId: string; version: number }[]): Promise<Map<string, WorkflowVersion>> {
    const items = await batchGetConsistent(
      this.dynamo,
      this.tableName,
      keys.map((key) => workflowVersionKey(key.workflowId, key.version)),
    );
    return new Map(items.map(itemToWorkflowVersion).map((version) => [`${version.workflowId}#${version.version}`, version]));
  }
}
