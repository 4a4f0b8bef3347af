// Runs in DynamoDB. Every status change is a conditional UpdateItem; a lost condition is read back
// (ReturnValuesOnConditionCheckFailure) so callers learn why without a second request.
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { batchGetConsistent } from './batch-get';
import { MAX_ITEMS_READ_PER_PAGE, readFilteredPage } from './filtered-page';
import type { TransactWriteCommandInput, UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttemptOutcome, Run, RunError, RunStatus } from '../domain/run';
import { isTerminal } from '../domain/run';
import { LEASE_CHECK_SLACK_MS } from '../domain/time-gate';
import { ValidationError } from '../core/errors';
import { NO_JOB_TYPE } from '../core/metrics';
import { RUNS_BY_JOB_INDEX, RUNS_BY_TENANT_INDEX, RUNS_CLAIM_INDEX, RUNS_DEAD_INDEX, RUNS_TIME_INDEX } from './schema';
import { readIndexedPage } from './indexed-page';
import type { Item, RunItemExtras } from './keys';
import { backfillRemainingOf, budgetFromOf, checkpointOf, claimSortOf, deadAttributes, decodeCursor, effectKey, encodeCursor, gateAttributes, gateKeyOf, itemToRun, payloadOverrideOf, PROGRESS_ATTRIBUTE, RESULT_ATTRIBUTE, RUN_PK_PREFIX, runIdOfClaimSort, runKey, runToItem } from './keys';

/** Filters of a run listing: a status, and the occurrence time from (inclusive) to (exclusive), as UTC ISO instants. */
export interface RunFilter {
  readonly status?: RunStatus;
  readonly from?: string;
  readonly to?: string;
}

export interface DeadFilter {
  readonly jobId?: string;
  /** ISO instants bounding when the runs died. */
  readonly from?: string;
  readonly to?: string;
}

export interface TimeIndexEntry {
  readonly runId: string;
  readonly tenantId: string;
  readonly jobId: string;
  readonly jobType: string;
  readonly status: RunStatus;
  readonly availableAt: string;
  readonly gateAt: string;
}

export type LeaseResult =
  | {
      readonly kind: 'leased';
      readonly run: Run;
      readonly payloadOverride: unknown;
      readonly backfillRemaining?: number;
      /** The attempt from which the retry budget counts (a replay starts a new budget). */
      readonly budgetFrom: number;
    }
  /** No such run: a message for a run that was never written or has been deleted. */
  | { readonly kind: 'missing' }
  /** Not yet due: the message arrived early. */
  | { readonly kind: 'early'; readonly run: Run }
  /** Another worker holds a live lease. */
  | { readonly kind: 'held'; readonly run: Run }
  /** Running under a lease that expired: its worker was lost. The checkpoint it saved goes to the retry. */
  | { readonly kind: 'expired'; readonly run: Run; readonly budgetFrom: number; readonly checkpoint?: unknown }
  /** Already finished (or cancelled, skipped): a duplicate delivery. */
  | { readonly kind: 'finished'; readonly run: Run };

/** The ledger entry of an occurrence whose effect was recorded (exactly-once delivery). */
export interface EffectRecord {
  readonly occurrence: string;
  readonly runId: string;
  readonly attempt: number;
  readonly fencingToken: number;
  readonly recordedAt: string;
}

/** The conditional update that ends an attempt, alone or inside a transaction. */
interface FinishUpdate {
  readonly TableName: string;
  readonly Key: Record<string, unknown>;
  readonly UpdateExpression: string;
  readonly ConditionExpression: string;
  readonly ExpressionAttributeNames: Record<string, string>;
  readonly ExpressionAttributeValues: Record<string, unknown>;
}

export { LEASE_CHECK_SLACK_MS };

export interface LeaseRequest {
  readonly owner: string;
  readonly now: number;
  /** The lease's check-back in the time index (`leaseCheckAt`), by which the ticker finds a lost worker. */
  readonly checkBackAt: number;
  readonly shards: number;
}

export interface Page<T> {
  readonly items: T[];
  readonly nextCursor: string | null;
}

/** Tries of an outcome transaction that keeps meeting TransactionConflict before the error is the caller's. */
const OUTCOME_TRANSACTION_ATTEMPTS = 4;

export class RunsRepository {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async get(runId: string): Promise<Run | null> {
    const { Item: item } = await this.dynamo.send(
      new GetCommand({ TableName: this.tableName, Key: runKey(runId), ConsistentRead: true }),
    );
    return item ? itemToRun(item) : null;
  }

  /**
   * Takes the lease on a due run: it becomes RUNNING under `owner` until the lease expires, and its
   * fencing version grows by one. Succeeds for a run that is waiting and due; fails for anything
   * else, saying why (a run under an expired lease: its worker was lost). The run's entry in the
   * time index moves to the lease's check-back: the ticker finds a lost worker there whatever
   * became of its message, and every outcome removes it.
   */
  async lease(runId: string, request: LeaseRequest): Promise<LeaseResult> {
    const now = new Date(request.now).toISOString();
    const gate = gateAttributes(runId, request.checkBackAt, request.shards);
    try {
      const { Attributes: item } = await this.dynamo.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: runKey(runId),
          UpdateExpression:
            // The lease length lives on the run, so the lease is one write with no read before it.
            'SET #status = :running, #leaseOwner = :owner, #leaseExpiresAtMs = #leaseMs + :nowMs, #startedAt = :now, ' +
            '#updatedAt = :now, #version = #version + :one, #gateKey = :gateKey, #gateAt = :gateAt',
          ConditionExpression: 'attribute_exists(#pk) AND #status IN (:scheduled, :queued) AND #availableAt <= :now',
          ExpressionAttributeNames: {
            '#pk': 'pk',
            '#status': 'status',
            '#leaseOwner': 'leaseOwner',
            '#leaseExpiresAtMs': 'leaseExpiresAtMs',
            '#leaseMs': 'leaseMs',
            '#startedAt': 'startedAt',
            '#updatedAt': 'updatedAt',
            '#version': 'version',
            '#availableAt': 'availableAt',
            '#gateKey': 'gateKey',
            '#gateAt': 'gateAt',
          },
          ExpressionAttributeValues: {
            ':running': 'RUNNING',
            ':scheduled': 'SCHEDULED',
            ':queued': 'QUEUED',
            ':owner': request.owner,
            ':now': now,
            ':nowMs': request.now,
            ':one': 1,
            ':gateKey': gate.gateKey,
            ':gateAt': gate.gateAt,
          },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      if (!item) throw new Error(`lease of ${runId} returned no attributes`);
      return {
        kind: 'leased',
        run: itemToRun(item),
        payloadOverride: payloadOverrideOf(item),
        backfillRemaining: backfillRemainingOf(item),
        budgetFrom: budgetFromOf(item),
      };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // The document client does not translate the item carried by the exception.
      return whyNotLeased(error.Item ? unmarshall(error.Item) : undefined, now, request.now);
    }
  }

  /**
   * Records the outcome of an attempt, fenced by the version the worker leased: a worker whose
   * lease was taken over (or whose run was cancelled) writes nothing.
   */
  async complete(
    runId: string,
    version: number,
    outcome: { status: AttemptOutcome | 'SKIPPED' | 'CANCELLED'; now: number; error: RunError | null; reason?: string | null },
  ): Promise<'recorded' | 'fenced'> {
    const now = new Date(outcome.now).toISOString();
    // A reason given now replaces the one the run was created with; none keeps it.
    const withReason = outcome.reason !== undefined && outcome.reason !== null;
    const recorded = await this.conditionalUpdate({
      Key: runKey(runId),
      UpdateExpression: `SET #status = :outcome, #finishedAt = :now, #updatedAt = :now, #error = :error${withReason ? ', #reason = :reason' : ''} REMOVE #gateKey, #gateAt`,
      ConditionExpression: '#status = :running AND #version = :version',
      ExpressionAttributeNames: {
        '#status': 'status',
        '#finishedAt': 'finishedAt',
        '#updatedAt': 'updatedAt',
        '#error': 'error',
        '#version': 'version',
        '#gateKey': 'gateKey',
        '#gateAt': 'gateAt',
        ...(withReason ? { '#reason': 'reason' } : {}),
      },
      ExpressionAttributeValues: {
        ':outcome': outcome.status,
        ':now': now,
        ':error': outcome.error,
        ':running': 'RUNNING',
        ':version': version,
        ...(withReason ? { ':reason': outcome.reason } : {}),
      },
    });
    return recorded ? 'recorded' : 'fenced';
  }

  /**
   * Ends an attempt and, in the same transaction, writes the retry that follows it (if any). Fenced
   * by the leased version; for a lost worker also by the lease having expired. A DEAD outcome
   * enters the tenant's dead-run index.
   */
  async finishAttempt(
    run: Run,
    outcome: { status: AttemptOutcome; now: number; error: RunError | null; reason?: string | null; result?: unknown },
    retry: { run: Run; extras: RunItemExtras } | null,
    options: { leaseExpiredBefore?: number; effect?: EffectRecord } = {},
  ): Promise<'recorded' | 'fenced' | 'effect-exists'> {
    const now = new Date(outcome.now).toISOString();
    const dead = outcome.status === 'DEAD' ? deadAttributes(run.tenantId, now, run.runId) : null;
    const names: Record<string, string> = {
      '#status': 'status',
      '#finishedAt': 'finishedAt',
      '#updatedAt': 'updatedAt',
      '#error': 'error',
      '#version': 'version',
      '#reason': 'reason',
    };
    const values: Record<string, unknown> = {
      ':outcome': outcome.status,
      ':now': now,
      ':error': outcome.error,
      ':running': 'RUNNING',
      ':version': run.version,
      ':reason': outcome.reason ?? run.reason ?? null,
    };
    let update = 'SET #status = :outcome, #finishedAt = :now, #updatedAt = :now, #error = :error, #reason = :reason';
    let condition = '#status = :running AND #version = :version';
    if (outcome.result !== undefined) {
      names['#result'] = RESULT_ATTRIBUTE;
      values[':result'] = JSON.stringify(outcome.result);
      update += ', #result = :result';
    }
    if (dead) {
      names['#deadTenantId'] = 'deadTenantId';
      names['#deadSort'] = 'deadSort';
      values[':deadTenantId'] = dead.deadTenantId;
      values[':deadSort'] = dead.deadSort;
      update += ', #deadTenantId = :deadTenantId, #deadSort = :deadSort';
    }
    // A leased run carries a lease check-back in the time index: a finished run leaves it.
    names['#gateKey'] = 'gateKey';
    names['#gateAt'] = 'gateAt';
    update += ' REMOVE #gateKey, #gateAt';
    if (options.leaseExpiredBefore !== undefined) {
      names['#leaseExpiresAtMs'] = 'leaseExpiresAtMs';
      values[':expiredBefore'] = options.leaseExpiredBefore;
      condition += ' AND #leaseExpiresAtMs < :expiredBefore';
    }
    const finish: FinishUpdate = {
      TableName: this.tableName,
      Key: runKey(run.runId),
      UpdateExpression: update,
      ConditionExpression: condition,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    };
    if (options.effect) return this.finishWithEffect(finish, options.effect);
    if (!retry) return (await this.conditionalUpdate(finish)) ? 'recorded' : 'fenced';
    try {
      await this.transact([
        { Update: finish },
        { Put: { TableName: this.tableName, Item: runToItem(retry.run, retry.extras), ConditionExpression: 'attribute_not_exists(pk)' } },
      ]);
      return 'recorded';
    } catch (error) {
      if (error instanceof TransactionCanceledException) {
        const [first, second] = error.CancellationReasons ?? [];
        if (first?.Code === 'ConditionalCheckFailed') return 'fenced';
        if (second?.Code === 'ConditionalCheckFailed') {
          // The retry exists already (a racing recorder wrote it): record the outcome alone.
          return (await this.conditionalUpdate(finish)) ? 'recorded' : 'fenced';
        }
      }
      throw error;
    }
  }

  /**
   * The outcome and the occurrence's entry in the effect ledger, together. When another attempt
   * recorded the occurrence's effect first, the outcome is recorded alone ('effect-exists'): the
   * ledger keeps one effect per occurrence.
   */
  private async finishWithEffect(finish: FinishUpdate, effect: EffectRecord): Promise<'recorded' | 'fenced' | 'effect-exists'> {
    const put = {
      Put: { TableName: this.tableName, Item: { ...effectKey(effect.occurrence), ...effect }, ConditionExpression: 'attribute_not_exists(pk)' },
    };
    try {
      await this.transact([{ Update: finish }, put]);
      return 'recorded';
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const [first, second] = error.CancellationReasons ?? [];
      if (first?.Code === 'ConditionalCheckFailed') return 'fenced';
      if (second?.Code === 'ConditionalCheckFailed') return (await this.conditionalUpdate(finish)) ? 'effect-exists' : 'fenced';
      throw error;
    }
  }

  /**
   * A transaction of a run's outcome. DynamoDB cancels one that meets another transaction on the
   * same item in flight (TransactionConflict: an external worker's complete racing the ticker's
   * recovery, or two completes at once) without evaluating its conditions; tried again, the
   * conditions decide, so the caller learns 'recorded' or 'fenced' rather than an error.
   */
  private async transact(items: NonNullable<TransactWriteCommandInput['TransactItems']>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.dynamo.send(new TransactWriteCommand({ TransactItems: items }));
        return;
      } catch (error) {
        const conflict = error instanceof TransactionCanceledException && (error.CancellationReasons ?? []).some((reason) => reason.Code === 'TransactionConflict');
        if (!conflict || attempt >= OUTCOME_TRANSACTION_ATTEMPTS) throw error;
        await new Promise((resolve) => setTimeout(resolve, 20 * attempt + Math.random() * 30));
      }
    }
  }

  /** The recorded effect of an occurrence (exactly-once delivery), or null when none was recorded. */
  async effectOf(occurrence: string): Promise<EffectRecord | null> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: effectKey(occurrence), ConsistentRead: true }));
    if (!item) return null;
    return {
      occurrence: String(item.occurrence),
      runId: String(item.runId),
      attempt: Number(item.attempt),
      fencingToken: Number(item.fencingToken),
      recordedAt: String(item.recordedAt),
    };
  }

  /**
   * At-most-once: records the attempt as consumed before its target is called, fenced by the
   * leased version. Once consumed, the attempt is never called again (a lost worker's run ends
   * instead of being retried). False when the lease was lost or the run cancelled.
   */
  async consume(runId: string, version: number, now: number): Promise<boolean> {
    return this.conditionalUpdate({
      Key: runKey(runId),
      UpdateExpression: 'SET #consumedAt = :now, #updatedAt = :now',
      ConditionExpression: '#status = :running AND #version = :version AND attribute_not_exists(#consumedAt)',
      ExpressionAttributeNames: { '#consumedAt': 'consumedAt', '#updatedAt': 'updatedAt', '#status': 'status', '#version': 'version' },
      ExpressionAttributeValues: { ':now': new Date(now).toISOString(), ':running': 'RUNNING', ':version': version },
    });
  }

  /**
   * Hands a leased run of an external target to external workers: RUNNING -> QUEUED (fenced by the
   * leased version) with an entry in the claimable index. It waits there, without a check-back (the
   * lease's leaves the time index: a QUEUED entry there would be sent and leased again), until a
   * worker claims it.
   */
  async offer(run: Run, now: number): Promise<boolean> {
    return this.conditionalUpdate({
      Key: runKey(run.runId),
      UpdateExpression: 'SET #status = :queued, #updatedAt = :now, #claimTenant = :tenant, #claimSort = :sort REMOVE #leaseExpiresAtMs, #gateKey, #gateAt',
      ConditionExpression: '#status = :running AND #version = :version',
      ExpressionAttributeNames: {
        '#status': 'status',
        '#updatedAt': 'updatedAt',
        '#claimTenant': 'claimTenant',
        '#claimSort': 'claimSort',
        '#leaseExpiresAtMs': 'leaseExpiresAtMs',
        '#version': 'version',
        '#gateKey': 'gateKey',
        '#gateAt': 'gateAt',
      },
      ExpressionAttributeValues: {
        ':queued': 'QUEUED',
        ':running': 'RUNNING',
        ':version': run.version,
        ':now': new Date(now).toISOString(),
        ':tenant': run.tenantId,
        ':sort': claimSortOf(run),
      },
    });
  }

  /** Run ids waiting for an external worker of this tenant (and job type), the longest-waiting first. */
  async claimable(tenantId: string, jobType: string | undefined, limit: number): Promise<{ runId: string; leaseMs: number }[]> {
    const { Items: items = [] } = await this.dynamo.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: RUNS_CLAIM_INDEX,
        KeyConditionExpression: jobType ? '#tenant = :tenant AND begins_with(#sort, :type)' : '#tenant = :tenant',
        ExpressionAttributeNames: { '#tenant': 'claimTenant', ...(jobType ? { '#sort': 'claimSort' } : {}) },
        ExpressionAttributeValues: { ':tenant': tenantId, ...(jobType ? { ':type': `${jobType}#` } : {}) },
        Limit: limit,
      }),
    );
    return items.map((item) => ({ runId: runIdOfClaimSort(String(item.claimSort)), leaseMs: Number(item.leaseMs) }));
  }

  /**
   * An external worker claims an offered run: RUNNING under `owner` with a secret lease token, a new
   * fencing version, and a check-back in the time index at the lease's end (moved by each heartbeat),
   * by which the ticker finds a worker that stopped beating. Null when another worker claimed it first.
   */
  async claim(runId: string, tenantId: string, claim: { owner: string; leaseToken: string; now: number; shards: number; leaseMs: number }): Promise<{ run: Run; payloadOverride: unknown; checkpoint: unknown } | null> {
    const gate = gateAttributes(runId, claim.now + claim.leaseMs + LEASE_CHECK_SLACK_MS, claim.shards);
    const now = new Date(claim.now).toISOString();
    try {
      const { Attributes: item } = await this.dynamo.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: runKey(runId),
          UpdateExpression:
            'SET #status = :running, #leaseOwner = :owner, #leaseToken = :token, #leaseExpiresAtMs = #leaseMs + :nowMs, #startedAt = :now, #updatedAt = :now, ' +
            '#version = #version + :one, #gateKey = :gateKey, #gateAt = :gateAt REMOVE #claimTenant, #claimSort',
          ConditionExpression: '#status = :queued AND #claimTenant = :tenant',
          ExpressionAttributeNames: {
            '#status': 'status',
            '#leaseOwner': 'leaseOwner',
            '#leaseToken': 'leaseToken',
            '#leaseExpiresAtMs': 'leaseExpiresAtMs',
            '#leaseMs': 'leaseMs',
            '#startedAt': 'startedAt',
            '#updatedAt': 'updatedAt',
            '#version': 'version',
            '#gateKey': 'gateKey',
            '#gateAt': 'gateAt',
            '#claimTenant': 'claimTenant',
            '#claimSort': 'claimSort',
          },
          ExpressionAttributeValues: {
            ':running': 'RUNNING',
            ':queued': 'QUEUED',
            ':owner': claim.owner,
            ':token': claim.leaseToken,
            ':nowMs': claim.now,
            ':now': now,
            ':one': 1,
            ':gateKey': gate.gateKey,
            ':gateAt': gate.gateAt,
            ':tenant': tenantId,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      if (!item) return null;
      return { run: itemToRun(item), payloadOverride: payloadOverrideOf(item), checkpoint: checkpointOf(item) };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return null;
      throw error;
    }
  }

  /**
   * An external worker's heartbeat: extends its lease (and moves the check-back with it), and
   * records progress and a checkpoint, if the token is still the run's. Otherwise says why.
   */
  async beat(
    runId: string,
    tenantId: string,
    beat: { leaseToken: string; now: number; shards: number; progress?: unknown; checkpoint?: unknown },
  ): Promise<{ kind: 'extended'; run: Run } | { kind: 'missing' } | { kind: 'stale'; status: string }> {
    const names: Record<string, string> = {
      '#status': 'status',
      '#leaseToken': 'leaseToken',
      '#leaseExpiresAtMs': 'leaseExpiresAtMs',
      '#leaseMs': 'leaseMs',
      '#updatedAt': 'updatedAt',
      '#tenantId': 'tenantId',
      '#gateKey': 'gateKey',
      '#gateAt': 'gateAt',
    };
    const values: Record<string, unknown> = {
      ':running': 'RUNNING',
      ':token': beat.leaseToken,
      ':tenant': tenantId,
      ':nowMs': beat.now,
      ':now': new Date(beat.now).toISOString(),
    };
    let update = 'SET #leaseExpiresAtMs = #leaseMs + :nowMs, #updatedAt = :now, #gateKey = :gateKey, #gateAt = :gateAt';
    if (beat.progress !== undefined) {
      names['#progress'] = PROGRESS_ATTRIBUTE;
      values[':progress'] = JSON.stringify(beat.progress);
      update += ', #progress = :progress';
    }
    if (beat.checkpoint !== undefined) {
      names['#checkpointJson'] = 'checkpointJson';
      values[':checkpoint'] = JSON.stringify(beat.checkpoint);
      update += ', #checkpointJson = :checkpoint';
    }
    // The lease's new end is only known inside DynamoDB (leaseMs lives on the run): read it first.
    const current = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: runKey(runId), ConsistentRead: true }));
    const item = current.Item;
    if (!item || item.tenantId !== tenantId) return { kind: 'missing' };
    if (item.status !== 'RUNNING' || item.leaseToken !== beat.leaseToken) return { kind: 'stale', status: String(item.status) };
    const gate = gateAttributes(runId, beat.now + Number(item.leaseMs) + LEASE_CHECK_SLACK_MS, beat.shards);
    values[':gateKey'] = gate.gateKey;
    values[':gateAt'] = gate.gateAt;
    try {
      const { Attributes: updated } = await this.dynamo.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: runKey(runId),
          UpdateExpression: update,
          ConditionExpression: '#status = :running AND #leaseToken = :token AND #tenantId = :tenant',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      if (!updated) throw new Error(`heartbeat of ${runId} returned no attributes`);
      return { kind: 'extended', run: itemToRun(updated) };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const old = error.Item ? unmarshall(error.Item) : undefined;
      return old ? { kind: 'stale', status: String(old.status) } : { kind: 'missing' };
    }
  }

  /** A run with what an external worker's call must match (its lease token) and what a retry carries. */
  async getLeased(runId: string): Promise<{ run: Run; leaseToken: string | null; budgetFrom: number; checkpoint: unknown } | null> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: runKey(runId), ConsistentRead: true }));
    if (!item) return null;
    const leaseToken = typeof item.leaseToken === 'string' ? item.leaseToken : null;
    return { run: itemToRun(item), leaseToken, budgetFrom: budgetFromOf(item), checkpoint: checkpointOf(item) };
  }

  /**
   * The ticker found a lease's check-back passed: moves it (to the lease's end when the lease is
   * live, past the recovery when it lapsed), if the run still runs under the lease `version` and
   * nobody moved the check-back since `previousGateAt` was read. Of two tickers, one moves it.
   */
  async moveLeaseCheck(runId: string, version: number, previousGateAt: string, checkBackAt: number, shards: number): Promise<boolean> {
    return this.moveGate(runId, 'RUNNING', previousGateAt, checkBackAt, shards, version);
  }

  /** Moves a run's entry in the time index, if it is in `status` (under `version`) and nobody moved it since `previousGateAt` was read. */
  private moveGate(runId: string, status: RunStatus, previousGateAt: string, checkBackAt: number, shards: number, version?: number): Promise<boolean> {
    const gate = gateAttributes(runId, checkBackAt, shards);
    return this.conditionalUpdate({
      Key: runKey(runId),
      UpdateExpression: 'SET #gateKey = :gateKey, #gateAt = :gateAt',
      ConditionExpression: `#status = :status AND #gateAt = :previous${version === undefined ? '' : ' AND #version = :version'}`,
      ExpressionAttributeNames: { '#status': 'status', '#gateKey': 'gateKey', '#gateAt': 'gateAt', ...(version === undefined ? {} : { '#version': 'version' }) },
      ExpressionAttributeValues: {
        ':status': status,
        ':previous': previousGateAt,
        ':gateKey': gate.gateKey,
        ':gateAt': gate.gateAt,
        ...(version === undefined ? {} : { ':version': version }),
      },
    });
  }

  /** Extends a live lease (a heartbeat); false when the lease was lost or the run cancelled. */
  async heartbeat(runId: string, version: number, now: number): Promise<boolean> {
    return this.conditionalUpdate({
      Key: runKey(runId),
      UpdateExpression: 'SET #leaseExpiresAtMs = #leaseMs + :nowMs, #updatedAt = :now',
      ConditionExpression: '#status = :running AND #version = :version',
      ExpressionAttributeNames: {
        '#leaseExpiresAtMs': 'leaseExpiresAtMs',
        '#leaseMs': 'leaseMs',
        '#updatedAt': 'updatedAt',
        '#status': 'status',
        '#version': 'version',
      },
      ExpressionAttributeValues: { ':nowMs': now, ':now': new Date(now).toISOString(), ':running': 'RUNNING', ':version': version },
    });
  }

  /** Cancels a running run whatever its lease: its worker notices at its next heartbeat. */
  async cancelRunning(runId: string, now: number, reason: string): Promise<boolean> {
    return this.conditionalUpdate({
      Key: runKey(runId),
      UpdateExpression: 'SET #status = :cancelled, #finishedAt = :now, #updatedAt = :now, #reason = :reason REMOVE #gateKey, #gateAt',
      ConditionExpression: '#status = :running',
      ExpressionAttributeNames: { '#status': 'status', '#finishedAt': 'finishedAt', '#updatedAt': 'updatedAt', '#reason': 'reason', '#gateKey': 'gateKey', '#gateAt': 'gateAt' },
      ExpressionAttributeValues: { ':cancelled': 'CANCELLED', ':running': 'RUNNING', ':now': new Date(now).toISOString(), ':reason': reason },
    });
  }

  /** Several runs by id (any order; missing ones are left out). */
  async getMany(runIds: readonly string[]): Promise<Run[]> {
    return (await batchGetConsistent(this.dynamo, this.tableName, [...new Set(runIds)].map(runKey))).map(itemToRun);
  }

  /** How many DEAD runs of the tenant await a replay, counted up to `cap`. */
  async countDead(tenantId: string, cap: number): Promise<{ count: number; capped: boolean }> {
    let count = 0;
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.dynamo.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: RUNS_DEAD_INDEX,
          KeyConditionExpression: '#tenant = :tenant',
          ExpressionAttributeNames: { '#tenant': 'deadTenantId' },
          ExpressionAttributeValues: { ':tenant': tenantId },
          Select: 'COUNT',
          Limit: cap - count,
          ExclusiveStartKey: start,
        }),
      );
      count += page.Count ?? 0;
      start = page.LastEvaluatedKey;
    } while (start && count < cap);
    return { count, capped: start !== undefined };
  }

  /**
   * The tenant's DEAD runs not yet replayed, newest first; optionally of one job or a time range.
   * A job filter is applied after DynamoDB's Limit, so pages are read until this one is full
   * (`readFilteredPage`, with its read budget); `nextCursor` is null when no further run matches.
   */
  async listDead(tenantId: string, limit: number, filter: DeadFilter = {}, cursor?: string, maxItemsRead = MAX_ITEMS_READ_PER_PAGE): Promise<Page<Run>> {
    const names: Record<string, string> = { '#tenant': 'deadTenantId', '#sort': 'deadSort' };
    const values: Record<string, unknown> = {
      ':tenant': tenantId,
      ':from': filter.from ?? '0000',
      ':to': `${filter.to ?? '9999'}~`,
    };
    let filterExpression: string | undefined;
    if (filter.jobId) {
      names['#jobId'] = 'jobId';
      values[':jobId'] = filter.jobId;
      filterExpression = '#jobId = :jobId';
    }
    const page = await readFilteredPage(
      this.dynamo,
      {
        TableName: this.tableName,
        IndexName: RUNS_DEAD_INDEX,
        KeyConditionExpression: '#tenant = :tenant AND #sort BETWEEN :from AND :to',
        FilterExpression: filterExpression,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ScanIndexForward: false,
      },
      limit,
      (item) => ({ pk: item.pk, sk: item.sk, deadTenantId: item.deadTenantId, deadSort: item.deadSort }),
      cursor ? decodeCursorOrThrow(cursor, { deadTenantId: tenantId }) : undefined,
      maxItemsRead,
    );
    return { items: page.items.map(itemToRun), nextCursor: encodeCursor(page.next) };
  }

  /**
   * Writes the replay of a finished run; a DEAD run leaves the dead-run index in the same
   * transaction, so it is replayed once. False when it was replayed already.
   */
  async replay(original: Run, replay: { run: Run; extras: RunItemExtras }, now: number): Promise<boolean> {
    const put = { Put: { TableName: this.tableName, Item: runToItem(replay.run, replay.extras), ConditionExpression: 'attribute_not_exists(pk)' } };
    const mark = {
      Update: {
        TableName: this.tableName,
        Key: runKey(original.runId),
        UpdateExpression: 'SET #replayedAs = :replay, #updatedAt = :now REMOVE #deadTenantId, #deadSort',
        ConditionExpression: 'attribute_not_exists(#replayedAs)',
        ExpressionAttributeNames: { '#replayedAs': 'replayedAs', '#updatedAt': 'updatedAt', '#deadTenantId': 'deadTenantId', '#deadSort': 'deadSort' },
        ExpressionAttributeValues: { ':replay': replay.run.runId, ':now': new Date(now).toISOString() },
      },
    };
    try {
      await this.dynamo.send(new TransactWriteCommand({ TransactItems: [mark, put] }));
      return true;
    } catch (error) {
      if (error instanceof TransactionCanceledException) return false;
      throw error;
    }
  }

  /**
   * Gives a lease back before anything ran (overlap policy buffer-one): the run waits QUEUED
   * again, with a check-back in the time index. Fenced like every write after a lease.
   */
  async giveBack(runId: string, version: number, now: number, checkBackAt: number, shards: number, reason: string): Promise<boolean> {
    const gate = gateAttributes(runId, checkBackAt, shards);
    return this.conditionalUpdate({
      Key: runKey(runId),
      UpdateExpression:
        'SET #status = :queued, #updatedAt = :now, #reason = :reason, #gateKey = :gateKey, #gateAt = :gateAt REMOVE #leaseExpiresAtMs',
      ConditionExpression: '#status = :running AND #version = :version',
      ExpressionAttributeNames: {
        '#status': 'status',
        '#updatedAt': 'updatedAt',
        '#reason': 'reason',
        '#gateKey': 'gateKey',
        '#gateAt': 'gateAt',
        '#leaseExpiresAtMs': 'leaseExpiresAtMs',
        '#version': 'version',
      },
      ExpressionAttributeValues: {
        ':queued': 'QUEUED',
        ':running': 'RUNNING',
        ':version': version,
        ':now': new Date(now).toISOString(),
        ':reason': reason,
        ':gateKey': gate.gateKey,
        ':gateAt': gate.gateAt,
      },
    });
  }

  /** Writes a new run once: false if a run with its id exists already. */
  async create(newRun: { run: Run; extras: RunItemExtras }): Promise<boolean> {
    try {
      await this.dynamo.send(
        new PutCommand({ TableName: this.tableName, Item: runToItem(newRun.run, newRun.extras), ConditionExpression: 'attribute_not_exists(pk)' }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /** Ends a run that has not started (SCHEDULED or QUEUED): it will never be leased. */
  async retirePending(runId: string, status: 'SKIPPED' | 'CANCELLED', reason: string, now: number): Promise<boolean> {
    return this.conditionalUpdate({
      Key: runKey(runId),
      UpdateExpression: 'SET #status = :status, #finishedAt = :now, #updatedAt = :now, #reason = :reason REMOVE #gateKey, #gateAt',
      ConditionExpression: '#status IN (:scheduled, :queued)',
      ExpressionAttributeNames: {
        '#status': 'status',
        '#finishedAt': 'finishedAt',
        '#updatedAt': 'updatedAt',
        '#reason': 'reason',
        '#gateKey': 'gateKey',
        '#gateAt': 'gateAt',
      },
      ExpressionAttributeValues: {
        ':status': status,
        ':now': new Date(now).toISOString(),
        ':reason': reason,
        ':scheduled': 'SCHEDULED',
        ':queued': 'QUEUED',
      },
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
    return runs.filter((run) => run.status === 'SCHEDULED' || run.status === 'QUEUED');
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

  /**
   * Entries of one partition of the time index that are due by `horizon`, a page at a time
   * (`pageSize` entries, or DynamoDB's 1 MB), so that a partition of hundreds of thousands of
   * entries is worked through as it is read, not held whole.
   */
  async *dueInTimeIndexPages(bucket: number, shard: number, horizon: number, pageSize?: number): AsyncGenerator<TimeIndexEntry[]> {
    let start: Record<string, unknown> | undefined;
    do {
      const entries: TimeIndexEntry[] = [];
      const page = await this.dynamo.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: RUNS_TIME_INDEX,
          KeyConditionExpression: '#gateKey = :gateKey AND #gateAt <= :horizon',
          ExpressionAttributeNames: { '#gateKey': 'gateKey', '#gateAt': 'gateAt' },
          ExpressionAttributeValues: {
            ':gateKey': gateKeyOf(new Date(bucket).toISOString(), shard),
            ':horizon': new Date(horizon).toISOString(),
          },
          ExclusiveStartKey: start,
          ...(pageSize ? { Limit: pageSize } : {}),
        }),
      );
      for (const item of page.Items ?? []) {
        entries.push({
          runId: String(item.runId),
          tenantId: String(item.tenantId),
          jobId: String(item.jobId),
          jobType: typeof item.jobType === 'string' ? item.jobType : NO_JOB_TYPE,
          status: item.status as RunStatus,
          availableAt: String(item.availableAt),
          gateAt: String(item.gateAt),
        });
      }
      start = page.LastEvaluatedKey;
      if (entries.length > 0) yield entries;
    } while (start);
  }

  /** SCHEDULED -> QUEUED once the ticker has sent the run; its index entry becomes a check-back. */
  async markQueued(runId: string, now: number, checkBackAt: number, shards: number): Promise<boolean> {
    const gate = gateAttributes(runId, checkBackAt, shards);
    return this.conditionalUpdate({
      Key: runKey(runId),
      UpdateExpression: 'SET #status = :queued, #enqueuedAt = :now, #updatedAt = :now, #gateKey = :gateKey, #gateAt = :gateAt',
      ConditionExpression: '#status = :scheduled',
      ExpressionAttributeNames: {
        '#status': 'status',
        '#enqueuedAt': 'enqueuedAt',
        '#updatedAt': 'updatedAt',
        '#gateKey': 'gateKey',
        '#gateAt': 'gateAt',
      },
      ExpressionAttributeValues: {
        ':queued': 'QUEUED',
        ':scheduled': 'SCHEDULED',
        ':now': new Date(now).toISOString(),
        ':gateKey': gate.gateKey,
        ':gateAt': gate.gateAt,
      },
    });
  }

  /** Moves a queued run's check-back, if nobody moved it since `previousGateAt` was read. */
  async moveCheckBack(runId: string, previousGateAt: string, checkBackAt: number, shards: number): Promise<boolean> {
    return this.moveGate(runId, 'QUEUED', previousGateAt, checkBackAt, shards);
  }

  private async conditionalUpdate(input: Omit<UpdateCommandInput, 'TableName'>): Promise<boolean> {
    try {
      await this.dynamo.send(new UpdateCommand({ TableName: this.tableName, ...input }));
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /**
   * The runs of a job, newest occurrence and attempt first; `from`/`to` bound the occurrence time
   * (the index's sort key), `status` is kept from the runs read (decision 0095).
   */
  async listByJob(jobId: string, limit: number, cursor?: string, filter: RunFilter = {}): Promise<Page<Run>> {
    return this.listThroughIndex(RUNS_BY_JOB_INDEX, 'jobId', jobId, 'jobSort', limit, filter, cursor);
  }

  /** The tenant's runs, newest occurrence first, filtered as listByJob's (decision 0095). */
  async listByTenant(tenantId: string, limit: number, filter: RunFilter = {}, cursor?: string): Promise<Page<Run>> {
    return this.listThroughIndex(RUNS_BY_TENANT_INDEX, 'tenantId', tenantId, 'tenantRunSort', limit, filter, cursor);
  }

  private async listThroughIndex(indexName: string, partitionKey: string, partition: string, sortKey: string, limit: number, filter: RunFilter, cursor?: string): Promise<Page<Run>> {
    const page = await readIndexedPage(
      this.dynamo,
      {
        TableName: this.tableName,
        IndexName: indexName,
        KeyConditionExpression: '#partition = :partition AND #sort BETWEEN :from AND :to',
        ExpressionAttributeNames: { '#partition': partitionKey, '#sort': sortKey },
        // Sort keys start with the occurrence time: `to` is exclusive, so the bound stops before it.
        ExpressionAttributeValues: { ':partition': partition, ':from': filter.from ?? '0000', ':to': filter.to ?? '9999~' },
        ScanIndexForward: false,
      },
      {
        limit,
        start: cursor ? decodeCursorOrThrow(cursor, { [partitionKey]: partition }, sortKey) : undefined,
        keyOf: (entry) => ({ pk: entry.pk, sk: entry.sk, [partitionKey]: entry[partitionKey], [sortKey]: entry[sortKey] }),
        load: async (entries) => {
          const runs = await this.inKeyOrder(entries);
          const byId = new Map(runs.map((run) => [`${RUN_PK_PREFIX}${run.runId}`, run]));
          return entries.map((entry) => byId.get(String(entry.pk)) ?? null);
        },
        keep: (run) => filter.status === undefined || run.status === filter.status,
        filtered: filter.status !== undefined,
      },
    );
    return { items: page.items, nextCursor: encodeCursor(page.next) };
  }
}

function whyNotLeased(item: Item | undefined, now: string, nowMs: number): LeaseResult {
  if (!item) return { kind: 'missing' };
  const run = itemToRun(item);
  if (isTerminal(run.status)) return { kind: 'finished', run };
  if (run.status === 'RUNNING') {
    const expiresAt = typeof item.leaseExpiresAtMs === 'number' ? item.leaseExpiresAtMs : Infinity;
    return expiresAt < nowMs ? { kind: 'expired', run, budgetFrom: budgetFromOf(item), checkpoint: checkpointOf(item) } : { kind: 'held', run };
  }
  if (run.availableAt > now) return { kind: 'early', run };
  // Waiting and due, yet the condition failed: it changed between the read and the write.
  return { kind: 'held', run };
}

export function decodeCursorOrThrow(cursor: string, expect: Record<string, string>, sortKey?: string): Record<string, unknown> {
  const key = decodeCursor(cursor, expect, sortKey);
  if (!key) throw new ValidationError('Invalid cursor', [{ path: 'cursor', message: 'is not a cursor this listing returned' }]);
  return key;
}
