// Workflow runs in the jobs table, in their workflow's partition: each run one item with its steps'
// states. Every change of a workflow run is a conditional write on that item, its expressions
// written with compact placeholders: a write that names every step of a 100-step run (steps ids of
// up to 64 characters) stays under DynamoDB's 4 KB per expression (test/unit/workflow-store-limits).
// A running one sits in the jobs' byNextRun index at a check-back time, for the ticker's repair.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { ValidationError } from '../core/errors';
import type { StepEnd, StepState, WorkflowRun, WorkflowRunStatus } from '../domain/workflow-run';
import type { NotifyEvent } from '../domain/notify';
import { workflowRunExpiresAtEpoch } from '../domain/retention';
import { absent, atMost, ifHeld, oneOf, putFresh, updateIf, updateReturning } from './conditional';
import { CoalescedItemReads } from './batch-get';
import { readFilteredPage } from './filtered-page';
import type { StepRunScope } from './step-states';
import { stepStatesFromItem, stepStatesToItem, stepStateToItem } from './step-states';
import type { Item } from './keys';
import { encodeCursor, workflowCheckBackAttributes, workflowKey, workflowRunKey, WORKFLOW_RUN_SK_PREFIX } from './keys';
import { NOTIFY_EVENT_ATTRIBUTE, notifyEventOf } from './run-items';
import type { Page } from './page';
import { decodeCursorOrThrow } from './page';

const RUN_FIELDS = ['workflowRunId', 'workflowId', 'tenantId', 'version', 'status', 'trigger', 'scheduledFor', 'createdAt', 'finishedAt', 'retries'] as const;
/** Fields a run may lack (written before they were): left out when absent, rather than null. */
const OPTIONAL_RUN_FIELDS = ['traceparent'] as const;

function itemToWorkflowRun(item: Item): WorkflowRun {
  const run = Object.fromEntries(RUN_FIELDS.map((field) => [field, item[field] ?? null])) as Record<string, unknown>;
  for (const field of OPTIONAL_RUN_FIELDS) if (typeof item[field] === 'string') run[field] = item[field];
  return {
    ...(run as unknown as WorkflowRun),
    failedSteps: Array.isArray(item.failedSteps) ? (item.failedSteps as string[]) : [],
    steps: stepStatesFromItem(run as unknown as StepRunScope, item.steps),
  };
}

export type WorkflowRunWrite = { readonly held: true; readonly run: WorkflowRun } | { readonly held: false; readonly run: WorkflowRun | null };

/** The run's identity and what names its steps' runs (written states leave those runs out, decision 0176). */
type RunScope = Pick<WorkflowRun, 'workflowId' | 'workflowRunId'> & StepRunScope;

/**
 * The run as the writer read it: its `retries`, which every retry moves on. A move or an end planned
 * from a read before a retry (the ticker's repair, a continuation, under way while a cancel and a
 * retry landed) would otherwise pass the other conditions of the retried run (RUNNING, its steps
 * WAITING again) and rule out its steps, or end it, by the old run's states. Every workflow run is
 * written with `retries` (0 at its start), so a plain comparison holds for all.
 */
type ReadRun = RunScope & Pick<WorkflowRun, 'retries'>;

/** A step's outcome is recorded once: the step is still STARTED, on an attempt no later than the run that ended. */
function stepEndCondition(ended: StepEnd | undefined): Record<string, unknown> {
  return ended ? { [`steps.${ended.stepId}.status`]: 'STARTED', [`steps.${ended.stepId}.attempt`]: atMost(ended.state.attempt) } : {};
}

export class WorkflowRunsRepository {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
    /** How long an ended workflow run is kept (RUN_RETENTION_DAYS; 0 keeps it forever, decision 0159). */
    private readonly retentionDays = 0,
    /** Coalesced reads of the jobs table, shared with the jobs' (decision 0190); made at the first such read without it. */
    private sharedReads?: CoalescedItemReads,
  ) {}

  /** Writes a new workflow run once (its id is its workflow and its time): false if it exists. */
  async createRun(run: WorkflowRun, checkBackAt: number): Promise<boolean> {
    const key = workflowRunKey(run.workflowId, run.workflowRunId);
    const item = { ...key, ...run, steps: stepStatesToItem(run, run.steps), ...workflowCheckBackAttributes(run.workflowRunId, checkBackAt) };
    // A retried put that meets its own first try is this create's (decision 0180); a run of the same
    // id made by another writer (a scheduled occurrence's, started twice) is not.
    const written = await ifHeld(() => putFresh(this.dynamo, { TableName: this.tableName, Item: item }, key, (stored) => stored.createdAt === run.createdAt));
    return written.held;
  }

  async getRun(workflowId: string, workflowRunId: string): Promise<WorkflowRun | null> {
    const { Item: item } = await this.dynamo.send(
      new GetCommand({ TableName: this.tableName, Key: workflowRunKey(workflowId, workflowRunId), ConsistentRead: true }),
    );
    return item ? itemToWorkflowRun(item) : null;
  }

  /**
   * As `getRun`, sharing one BatchGetItem with the reads made around it (`coalesce`): the step runs
   * of a worker batch each read their workflow run before they run (decision 0190).
   */
  async getRunShared(workflowId: string, workflowRunId: string, coalesce: { readonly quietMs: number; readonly capMs: number }): Promise<WorkflowRun | null> {
    this.sharedReads ??= new CoalescedItemReads(this.dynamo, this.tableName, ['pk', 'sk'], coalesce);
    const item = await this.sharedReads.read(workflowRunKey(workflowId, workflowRunId));
    return item ? itemToWorkflowRun(item) : null;
  }

  /**
   * A started step's outcome, once: the condition is that the step is still STARTED, on an attempt
   * no later than the run that ended (a replay of an older attempt does not end a newer one).
   */
  async recordStep(run: RunScope, stepId: string, state: StepState): Promise<WorkflowRunWrite> {
    return this.write(run, { set: { [`steps.${stepId}`]: stepStateToItem(run, stepId, state) }, if: stepEndCondition({ stepId, state }) });
  }

  /**
   * Moves waiting steps on: some never start (with the reason), some start (their runs are
   * written next, with deterministic ids). Each must still be WAITING, and the run RUNNING: of two
   * writers that both saw a step ready (its last two dependencies finishing at once), one wins.
   * The run's check-back stays where it is (decision 0158): the ticker looks at a run still running
   * a grace period after its start or its last look, finds nothing to repair in a healthy one, and
   * moves the check-back on then. Moving it with every step cost two index writes per step.
   * Conditioned on the `retries` read too: refused, the item is answered, and the writer plans again from it.
   */
  async moveSteps(run: ReadRun, moves: Readonly<Record<string, StepState>>, ended?: StepEnd): Promise<WorkflowRunWrite> {
    const set: Record<string, unknown> = {};
    const condition: Record<string, unknown> = { status: 'RUNNING', retries: run.retries, ...stepEndCondition(ended) };
    if (ended) set[`steps.${ended.stepId}`] = stepStateToItem(run, ended.stepId, ended.state);
    for (const [stepId, state] of Object.entries(moves)) {
      set[`steps.${stepId}`] = stepStateToItem(run, stepId, state);
      condition[`steps.${stepId}.status`] = 'WAITING';
    }
    return this.write(run, { set, if: condition });
  }

  /**
   * Ends a running workflow run: exactly one writer does (the condition is RUNNING), and only the run
   * it read (the same `retries`: an end planned before a retry does not end the retried run).
   */
  async finish(
    run: ReadRun,
    status: WorkflowRunStatus,
    failedSteps: readonly string[],
    now: number,
    steps: Readonly<Record<string, StepState>> = {},
    /**
     * The notification the end raises (decision 0148): marked on the run, which keeps a check-back in
     * the byNextRun index until `notified` clears it, so that the ticker makes a notification its
     * writer died before making.
     */
    notify?: { readonly event: NotifyEvent; readonly checkBackAt: number },
    ended?: StepEnd,
    /**
     * A check-back kept past the end: a cancel's, while its started steps' runs are still to be
     * cancelled (the ticker's repair finishes that should its writer stop), cleared by `settled`.
     */
    checkBackAt?: number,
  ): Promise<WorkflowRunWrite> {
    const checkBacks = [notify?.checkBackAt, checkBackAt].filter((at): at is number => at !== undefined);
    const set: Record<string, unknown> = {
      status,
      finishedAt: new Date(now).toISOString(),
      failedSteps,
      ...(notify ? { [NOTIFY_EVENT_ATTRIBUTE]: notify.event } : {}),
      ...(checkBacks.length > 0 ? workflowCheckBackAttributes(run.workflowRunId, Math.min(...checkBacks)) : {}),
      ...(ended ? { [`steps.${ended.stepId}`]: stepStateToItem(run, ended.stepId, ended.state) } : {}),
      ...this.expiry(run, now),
    };
    const condition: Record<string, unknown> = { status: 'RUNNING', retries: run.retries, ...stepEndCondition(ended) };
    for (const [stepId, state] of Object.entries(steps)) {
      set[`steps.${stepId}`] = stepStateToItem(run, stepId, state);
      condition[`steps.${stepId}.status`] = 'WAITING';
    }
    const result = await updateReturning(
      this.dynamo,
      this.tableName,
      workflowRunKey(run.workflowId, run.workflowRunId),
      { set, remove: checkBacks.length > 0 ? [] : ['nextRunShard', 'nextRunAt'], if: condition },
      'compact',
    );
    return result.held ? { held: true, run: itemToWorkflowRun(result.value) } : { held: false, run: result.item ? itemToWorkflowRun(result.item) : null };
  }

  /**
   * The end's notification is made: its mark and check-back go (unless the run was retried and runs
   * again). `keepCheckBack`: a cancelled run's steps still to be settled keep the ticker coming back.
   */
  async notified(run: Pick<WorkflowRun, 'workflowId' | 'workflowRunId' | 'retries'>, event: NotifyEvent, keepCheckBack = false): Promise<boolean> {
    return updateIf(
      this.dynamo,
      this.tableName,
      workflowRunKey(run.workflowId, run.workflowRunId),
      {
        remove: keepCheckBack ? [NOTIFY_EVENT_ATTRIBUTE] : [NOTIFY_EVENT_ATTRIBUTE, 'nextRunShard', 'nextRunAt'],
        // The end it was made for: a writer of an earlier end's clears no later end's mark.
        if: { [NOTIFY_EVENT_ATTRIBUTE]: event, status: oneOf(['SUCCEEDED', 'FAILED', 'CANCELLED']), retries: run.retries },
      },
      'compact',
    );
  }

  /**
   * A cancelled run's started steps are settled (their runs cancelled and recorded): the check-back
   * its cancel kept goes, unless its end's notification is still to be made (which clears it) or the
   * run was retried since.
   */
  async settled(run: Pick<WorkflowRun, 'workflowId' | 'workflowRunId' | 'retries'>): Promise<boolean> {
    return updateIf(
      this.dynamo,
      this.tableName,
      workflowRunKey(run.workflowId, run.workflowRunId),
      { remove: ['nextRunShard', 'nextRunAt'], if: { status: 'CANCELLED', retries: run.retries, [NOTIFY_EVENT_ATTRIBUTE]: absent } },
      'compact',
    );
  }

  /** A workflow run with the notification its end raised and not yet made (the ticker's repair reads it). */
  async getRunWithNotification(workflowId: string, workflowRunId: string): Promise<{ run: WorkflowRun; notify: NotifyEvent | undefined } | null> {
    const { Item: item } = await this.dynamo.send(
      new GetCommand({ TableName: this.tableName, Key: workflowRunKey(workflowId, workflowRunId), ConsistentRead: true }),
    );
    return item ? { run: itemToWorkflowRun(item), notify: notifyEventOf(item) } : null;
  }

  /** A finished run starts again from the given step states (under the retry's trace), if no one retried it first. */
  async retry(run: WorkflowRun, steps: Readonly<Record<string, StepState>>, checkBackAt: number, traceparent?: string): Promise<WorkflowRunWrite> {
    const result = await updateReturning(
      this.dynamo,
      this.tableName,
      workflowRunKey(run.workflowId, run.workflowRunId),
      {
        set: {
          status: 'RUNNING',
          finishedAt: null,
          failedSteps: [],
          steps: stepStatesToItem(run, steps),
          retries: run.retries + 1,
          traceparent,
          ...workflowCheckBackAttributes(run.workflowRunId, checkBackAt),
        },
        // Running again, it is kept until it ends again.
        remove: ['expiresAtEpoch'],
        if: { status: oneOf(['FAILED', 'CANCELLED']), retries: run.retries },
      },
      'compact',
    );
    return result.held ? { held: true, run: itemToWorkflowRun(result.value) } : { held: false, run: result.item ? itemToWorkflowRun(result.item) : null };
  }

  /** Moves a running workflow run's check-back on (the ticker found it passed, and looked). */
  async moveCheckBack(run: Pick<WorkflowRun, 'workflowId' | 'workflowRunId'>, at: number): Promise<boolean> {
    return updateIf(
      this.dynamo,
      this.tableName,
      workflowRunKey(run.workflowId, run.workflowRunId),
      { set: workflowCheckBackAttributes(run.workflowRunId, at), if: { status: 'RUNNING' } },
      'compact',
    );
  }

  /** A workflow's runs, newest first, optionally of one status (read on until the page is full). */
  async listRuns(workflowId: string, limit: number, status?: WorkflowRunStatus, cursor?: string): Promise<Page<WorkflowRun>> {
    const { pk } = workflowKey(workflowId);
    const start = cursor ? decodeCursorOrThrow(cursor, { pk }, 'sk') : undefined;
    // Only a run's key is inside the query's key condition: DynamoDB refuses any other start key (a 500).
    if (start && !String(start.sk).startsWith(WORKFLOW_RUN_SK_PREFIX))
      throw new ValidationError('Invalid cursor', [{ path: 'cursor', message: 'is not a cursor this listing returned' }]);
    // A page holds up to `limit` matches, read on within a budget (filtered-page.ts): DynamoDB
    // applies Limit before the status filter.
    const page = await readFilteredPage(
      this.dynamo,
      {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :runs)',
        ...(status ? { FilterExpression: '#status = :status', ExpressionAttributeNames: { '#status': 'status' } } : {}),
        ExpressionAttributeValues: { ':pk': pk, ':runs': WORKFLOW_RUN_SK_PREFIX, ...(status ? { ':status': status } : {}) },
        ScanIndexForward: false,
        ConsistentRead: true,
      },
      limit,
      (item) => ({ pk: item.pk, sk: item.sk }),
      start,
    );
    return { items: page.items.map(itemToWorkflowRun), nextCursor: page.next ? encodeCursor(page.next) : null };
  }

  /** An ended run's expiry: RUN_RETENTION_DAYS after it ended or after its time, whichever is later. */
  private expiry(run: Pick<WorkflowRun, 'scheduledFor'>, now: number): { expiresAtEpoch?: number } {
    const at = workflowRunExpiresAtEpoch(Date.parse(run.scheduledFor), now, this.retentionDays);
    return at === undefined ? {} : { expiresAtEpoch: at };
  }

  private async write(
    run: Pick<WorkflowRun, 'workflowId' | 'workflowRunId'>,
    spec: { set: Record<string, unknown>; if: Record<string, unknown> },
  ): Promise<WorkflowRunWrite> {
    const result = await updateReturning(this.dynamo, this.tableName, workflowRunKey(run.workflowId, run.workflowRunId), spec, 'compact');
    return result.held ? { held: true, run: itemToWorkflowRun(result.value) } : { held: false, run: result.item ? itemToWorkflowRun(result.item) : null };
  }
}
