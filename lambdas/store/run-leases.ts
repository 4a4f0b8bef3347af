// Leases and outcomes: a worker leases a due run, keeps its lease alive, and records how the
// attempt ended, fenced by the lease's version. Every status change is a conditional UpdateItem
// whose status condition is the transition's `from` side in the domain's table (`sourcesOf`); a
// lost condition is read back (ReturnValuesOnConditionCheckFailure) so callers learn why without a
// second request.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { NotifyEvent } from '../domain/notify';
import type { AttemptOutcome, Run, RunError, RunStatus } from '../domain/run';
import { isTerminal, sourcesOf } from '../domain/run';
import { KEPT_CHECK_MIN_AHEAD_MS, LEASE_CHECK_SLACK_MS } from '../domain/time-gate';
import { effectExpiresAtEpoch, occurrenceOfRunId } from '../domain/retention';
import type { TransactItem, UpdateSpec } from './conditional';
import {
  absent,
  atMost,
  between,
  exists,
  greaterThan,
  IF_NEW,
  conditionExpressions,
  lessThan,
  oneOf,
  plus,
  transactRetryingConflicts,
  updateExpressions,
  updateIf,
  updateReturning,
} from './conditional';
import type { Item } from './keys';
import type { RunItemExtras } from './run-items';
import { effectKey, runKey } from './keys';
import {
  backfillRemainingOf,
  bufferedSinceOf,
  chainedFromOf,
  budgetFromOf,
  checkpointOf,
  inputsOf,
  deadAttributes,
  expiryAttributes,
  gateAttributes,
  itemToRun,
  KEY_WAIT_SCOPE_ATTRIBUTE,
  NOTIFY_EVENT_ATTRIBUTE,
  notifyEventOf,
  OPEN_RUN_ATTRIBUTES,
  payloadOverrideOf,
  RESULT_ATTRIBUTE,
  RESULT_REF_ATTRIBUTE,
  runToItem,
} from './run-items';

import type { RunPayload } from '../domain/payload';

export { LEASE_CHECK_SLACK_MS };

export type LeaseResult =
  | {
      readonly kind: 'leased';
      readonly run: Run;
      /** The run's own payload (a trigger's), when it has one. */
      readonly payloadOverride: RunPayload | undefined;
      readonly backfillRemaining?: number;
      /** A job's pending occurrence: the run its job pointed at when it was planned (decision 0175). */
      readonly chainedFrom?: string | null;
      /** When the occurrence was first given back to wait for the one before it (overlap buffer-one). */
      readonly bufferedSince?: number;
      /** The attempt from which the retry budget counts (a replay starts a new budget). */
      readonly budgetFrom: number;
      /** A workflow step's inputs, carried to its next attempt. */
      readonly inputs?: unknown;
    }
  /** No such run: a message for a run that was never written or has been deleted. */
  | { readonly kind: 'missing' }
  /** Not yet due: the message arrived early. */
  | { readonly kind: 'early'; readonly run: Run }
  /** Another worker holds a live lease. */
  | { readonly kind: 'held'; readonly run: Run }
  /** Running under a lease that expired: its worker was lost. The checkpoint it saved goes to the retry. */
  | {
      readonly kind: 'expired';
      readonly run: Run;
      readonly budgetFrom: number;
      readonly checkpoint?: unknown;
      readonly inputs?: unknown;
      /** The run's own payload (a trigger's), which its retry is delivered too. */
      readonly payloadOverride?: RunPayload;
    }
  /**
   * Already finished (or cancelled, skipped): a duplicate delivery. `notify`: the event its outcome
   * raised for a notification, which the redelivery makes sure exists.
   */
  | { readonly kind: 'finished'; readonly run: Run; readonly notify?: NotifyEvent };

/** The ledger entry of an occurrence whose effect was recorded (exactly-once delivery). */
export interface EffectRecord {
  readonly occurrence: string;
  readonly runId: string;
  readonly attempt: number;
  readonly fencingToken: number;
  readonly recordedAt: string;
}

export interface LeaseRequest {
  readonly owner: string;
  readonly now: number;
  /** The lease's check-back in the time index (`leaseCheckAt`), by which the ticker finds a lost worker. */
  readonly checkBackAt: number;
  readonly shards: number;
}

/** Tries of an outcome transaction that keeps meeting TransactionConflict before the error is the caller's. */
const OUTCOME_TRANSACTION_ATTEMPTS = 4;

/** A write fenced by a lease starts from RUNNING under the leased version. */
const LEASED: readonly ['RUNNING'] = ['RUNNING'];

export class RunLeases {
  /** `retentionDays`: how long a run is kept once it ends (RUN_RETENTION_DAYS; 0 keeps it forever). */
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly retentionDays = 0,
  ) {}

  /**
   * Takes the lease on a due run: it becomes RUNNING under `owner` until the lease expires, and its
   * fencing version grows by one. Succeeds for a run that is waiting and due; fails for anything
   * else, saying why (a run under an expired lease: its worker was lost). The run keeps an entry in
   * the time index by the lease's check-back: the ticker finds a lost worker there whatever became
   * of its message, and every outcome removes it. A queued check-back already there, not yet near,
   * is kept (decision 0170): the entry's key does not change, so the lease writes no index entry (a
   * key that changed would be billed as a delete and a put of it). Otherwise it is moved there, with
   * a second write.
   */
  async lease(runId: string, request: LeaseRequest): Promise<LeaseResult> {
    const now = new Date(request.now).toISOString();
    const lease = {
      status: 'RUNNING',
      leaseOwner: request.owner,
      // The lease length lives on the run, so the lease is one write with no read before it.
      leaseExpiresAtMs: plus('leaseMs', request.now),
      startedAt: now,
      updatedAt: now,
      version: plus('version', 1),
    };
    const waitingAndDue = { pk: exists, status: oneOf(sourcesOf('RUNNING')), availableAt: atMost(now) };
    const keepFrom = new Date(request.now + KEPT_CHECK_MIN_AHEAD_MS).toISOString();
    let result = await updateReturning(this.dynamo, this.tableName, runKey(runId), {
      set: lease,
      if: { ...waitingAndDue, gateAt: between(keepFrom, new Date(request.checkBackAt).toISOString()) },
    });
    if (!result.held && isWaitingAndDue(result.item, now)) {
      const gate = gateAttributes(runId, request.checkBackAt, request.shards);
      result = await updateReturning(this.dynamo, this.tableName, runKey(runId), {
        set: { ...lease, gateKey: gate.gateKey, gateAt: gate.gateAt },
        if: waitingAndDue,
      });
    }
    if (!result.held) return whyNotLeased(result.item, now, request.now);
    const item = result.value;
    return {
      kind: 'leased',
      run: itemToRun(item),
      payloadOverride: payloadOverrideOf(item),
      backfillRemaining: backfillRemainingOf(item),
      chainedFrom: chainedFromOf(item),
      ...(bufferedSinceOf(item) !== undefined ? { bufferedSince: bufferedSinceOf(item) } : {}),
      budgetFrom: budgetFromOf(item),
      inputs: inputsOf(item),
    };
  }

  /**
   * Extends a live lease (a heartbeat); false when the lease was lost, the run cancelled, or the
   * lease has lapsed at `now` (the heartbeating worker's clock). A lapsed lease is dead to everyone
   * else already: an in-flight or key slot it held is taken over, and the ticker may be recovering
   * the run (its retry planned). Extended, it would revive a run that another now runs beside, or
   * past its limit; refused, its worker stops as on any lost lease, recording nothing.
   */
  async heartbeat(runId: string, version: number, now: number): Promise<boolean> {
    return updateIf(this.dynamo, this.tableName, runKey(runId), {
      set: { leaseExpiresAtMs: plus('leaseMs', now), updatedAt: new Date(now).toISOString() },
      if: { status: 'RUNNING', version, leaseExpiresAtMs: greaterThan(now) },
    });
  }

  /**
   * At-most-once: records the attempt as consumed before its target is called, fenced by the
   * leased version and by the lease being live at `now` (the consuming worker's clock). Once
   * consumed, the attempt is never called again (a lost worker's run ends instead of being retried).
   * A lease that lapsed may be recovered at any moment by a worker that read the attempt as
   * unconsumed and plans its retry: consumed now, it would be called by both. False when the lease
   * was lost or has lapsed, or the run was cancelled: its target is not called.
   */
  async consume(runId: string, version: number, now: number): Promise<boolean> {
    const at = new Date(now).toISOString();
    return updateIf(this.dynamo, this.tableName, runKey(runId), {
      set: { consumedAt: at, updatedAt: at },
      if: { status: 'RUNNING', version, leaseExpiresAtMs: greaterThan(now), consumedAt: absent },
    });
  }

  /**
   * Gives a lease back before anything ran (overlap policy buffer-one, a key's slot or rate): the run
   * waits QUEUED again, with a check-back in the time index. Fenced like every write after a lease.
   * `admitted`: an occurrence its job's chain has moved on from (it waits for a slot after its
   * admission) forgets the run its job pointed at when it was planned, so that leased again it runs
   * as it is rather than being taken for one an edit replaced (decision 0175).
   */
  async giveBack(
    runId: string,
    version: number,
    now: number,
    checkBackAt: number,
    shards: number,
    reason: string,
    options: {
      readonly admitted?: boolean;
      readonly bufferedSince?: number;
      /** The concurrency key scope the run waits for (decision 0187; NO_KEY_SCOPE for none): its queue entries' stale check reads it. */
      readonly keyWaitScope?: string;
    } = {},
  ): Promise<boolean> {
    const gate = gateAttributes(runId, checkBackAt, shards);
    return updateIf(this.dynamo, this.tableName, runKey(runId), {
      set: {
        status: 'QUEUED',
        updatedAt: new Date(now).toISOString(),
        reason,
        gateKey: gate.gateKey,
        gateAt: gate.gateAt,
        ...(options.bufferedSince !== undefined ? { bufferedSince: options.bufferedSince } : {}),
        ...(options.keyWaitScope !== undefined ? { [KEY_WAIT_SCOPE_ATTRIBUTE]: options.keyWaitScope } : {}),
      },
      remove: options.admitted ? ['leaseExpiresAtMs', 'chainedFrom'] : ['leaseExpiresAtMs'],
      if: { status: oneOf(sourcesOf('QUEUED', LEASED)), version },
    });
  }

  /**
   * Records the outcome of an attempt, fenced by the version the worker leased: a worker whose
   * lease was taken over (or whose run was cancelled) writes nothing.
   */
  async complete(
    runId: string,
    version: number,
    outcome: {
      status: AttemptOutcome | 'SKIPPED' | 'CANCELLED';
      now: number;
      error: RunError | null;
      reason?: string | null;
      /** The notification event this outcome raises, if its job asks for one. */
      notify?: NotifyEvent | null;
    },
  ): Promise<'recorded' | 'fenced'> {
    const now = new Date(outcome.now).toISOString();
    const recorded = await updateIf(this.dynamo, this.tableName, runKey(runId), {
      // A reason given now replaces the one the run was created with; none keeps it.
      set: {
        status: outcome.status,
        finishedAt: now,
        updatedAt: now,
        error: outcome.error,
        reason: outcome.reason ?? undefined,
        [NOTIFY_EVENT_ATTRIBUTE]: outcome.notify ?? undefined,
        ...expiryAttributes(runId, outcome.now, this.retentionDays),
      },
      remove: [...OPEN_RUN_ATTRIBUTES],
      if: { status: oneOf(sourcesOf(outcome.status, LEASED)), version },
    });
    return recorded ? 'recorded' : 'fenced';
  }

  /** Cancels a running run whatever its lease: its worker notices at its next heartbeat. */
  async cancelRunning(runId: string, now: number, reason: string): Promise<boolean> {
    const at = new Date(now).toISOString();
    return updateIf(this.dynamo, this.tableName, runKey(runId), {
      set: { status: 'CANCELLED', finishedAt: at, updatedAt: at, reason, ...expiryAttributes(runId, now, this.retentionDays) },
      remove: [...OPEN_RUN_ATTRIBUTES],
      if: { status: oneOf(sourcesOf('CANCELLED', LEASED)) },
    });
  }

  /**
   * Ends an attempt and, in the same transaction, writes the retry that follows it (if any). Fenced
   * by the leased version; for a lost worker also by the lease having expired, and (`unconsumed`)
   * by the attempt not having been consumed since it was read. A DEAD outcome
   * enters the tenant's dead-run index. With an effect, the occurrence's entry in the effect ledger
   * is written with the outcome; when another attempt recorded the occurrence's effect first, the
   * outcome is recorded alone ('effect-exists'): the ledger keeps one effect per occurrence.
   */
  async finishAttempt(
    run: Run,
    outcome: {
      status: AttemptOutcome;
      now: number;
      error: RunError | null;
      reason?: string | null;
      /** A step's result: kept in the item, or stored apart and named by it (decision 0163). */
      result?: RunPayload;
      notify?: NotifyEvent | null;
    },
    retry: { run: Run; extras: RunItemExtras } | null,
    options: { leaseExpiredBefore?: number; unconsumed?: boolean; effect?: EffectRecord } = {},
  ): Promise<'recorded' | 'fenced' | 'effect-exists'> {
    const now = new Date(outcome.now).toISOString();
    const dead = outcome.status === 'DEAD' ? deadAttributes(run.tenantId, now, run.runId) : null;
    const finish: UpdateSpec = {
      set: {
        status: outcome.status,
        finishedAt: now,
        updatedAt: now,
        error: outcome.error,
        reason: outcome.reason ?? run.reason ?? null,
        [RESULT_ATTRIBUTE]: outcome.result && 'inline' in outcome.result ? JSON.stringify(outcome.result.inline) : undefined,
        [RESULT_REF_ATTRIBUTE]: outcome.result && 'ref' in outcome.result ? { ...outcome.result.ref } : undefined,
        [NOTIFY_EVENT_ATTRIBUTE]: outcome.notify ?? undefined,
        ...(dead ?? {}),
        ...expiryAttributes(run.runId, outcome.now, this.retentionDays),
      },
      // A leased run carries a lease check-back in the time index (and an offered one, a claim
      // entry): a finished run leaves them.
      remove: [...OPEN_RUN_ATTRIBUTES],
      if: {
        status: oneOf(sourcesOf(outcome.status, LEASED)),
        version: run.version,
        ...(options.leaseExpiredBefore === undefined ? {} : { leaseExpiresAtMs: lessThan(options.leaseExpiredBefore) }),
        ...(options.unconsumed ? { consumedAt: absent } : {}),
      },
    };
    const alone = async (): Promise<boolean> => updateIf(this.dynamo, this.tableName, runKey(run.runId), finish);
    const second: Record<string, TransactItem> | null = options.effect
      ? { effect: this.put({ ...effectKey(options.effect.occurrence), ...options.effect, ...this.effectExpiry(run.runId, outcome.now) }) }
      : retry
        ? { retry: this.put(runToItem(retry.run, retry.extras)) }
        : null;
    if (!second) return (await alone()) ? 'recorded' : 'fenced';
    const result = await transactRetryingConflicts(
      this.dynamo,
      { finish: { Update: { TableName: this.tableName, Key: runKey(run.runId), ...updateExpressions(finish) } }, ...second },
      OUTCOME_TRANSACTION_ATTEMPTS,
    );
    if (result.committed) return 'recorded';
    if (result.failed.has('finish')) return 'fenced';
    // The retry exists already (a racing recorder wrote it): the outcome is recorded alone.
    if (result.failed.has('retry')) return (await alone()) ? 'recorded' : 'fenced';
    if (result.failed.has('effect')) return (await alone()) ? 'effect-exists' : 'fenced';
    throw result.error;
  }

  /** The ledger's entry leaves with the occurrence's runs, which a replay would need (decision 0159). */
  private effectExpiry(runId: string, now: number): { expiresAtEpoch?: number } {
    const at = effectExpiresAtEpoch(occurrenceOfRunId(runId)?.at ?? now, now, this.retentionDays);
    return at === undefined ? {} : { expiresAtEpoch: at };
  }

  /**
   * Keeps an occurrence's recorded effect at least as long as a run of it made or ended `at` (a
   * replay, a run the ledger ended SKIPPED), plus `slackMs`: each such run can be replayed until it
   * leaves, and a replay must still find the effect (decision 0159, amended). Never shortens it;
   * nothing when none is recorded or runs are kept forever.
   */
  async keepEffect(occurrence: string, at: number, slackMs = 0): Promise<boolean> {
    const until = effectExpiresAtEpoch(at + slackMs, at + slackMs, this.retentionDays);
    if (until === undefined) return false;
    return updateIf(this.dynamo, this.tableName, effectKey(occurrence), {
      set: { expiresAtEpoch: until },
      if: { pk: exists, expiresAtEpoch: lessThan(until) },
    });
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

  private put(item: Item): TransactItem {
    return { Put: { TableName: this.tableName, Item: item, ...conditionExpressions(IF_NEW) } };
  }
}

/** A lease refused with the run still waiting and due: only its check-back was not where it could stay. */
function isWaitingAndDue(item: Item | undefined, now: string): boolean {
  return item !== undefined && sourcesOf('RUNNING').includes(item.status as RunStatus) && typeof item.availableAt === 'string' && item.availableAt <= now;
}

function whyNotLeased(item: Item | undefined, now: string, nowMs: number): LeaseResult {
  if (!item) return { kind: 'missing' };
  const run = itemToRun(item);
  if (isTerminal(run.status)) {
    const notify = notifyEventOf(item);
    return notify ? { kind: 'finished', run, notify } : { kind: 'finished', run };
  }
  if (run.status === 'RUNNING') {
    const expiresAt = typeof item.leaseExpiresAtMs === 'number' ? item.leaseExpiresAtMs : Infinity;
    return expiresAt < nowMs
      ? {
          kind: 'expired',
          run,
          budgetFrom: budgetFromOf(item),
          checkpoint: checkpointOf(item),
          inputs: inputsOf(item),
          payloadOverride: payloadOverrideOf(item),
        }
      : { kind: 'held', run };
  }
  if (run.availableAt > now) return { kind: 'early', run };
  // Waiting and due, yet the condition failed: it changed between the read and the write.
  return { kind: 'held', run };
}
