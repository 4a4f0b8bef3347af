// How a run becomes an item of the runs table and back, and the attributes its writes set and read
// (the keys it carries are keys.ts's).
import type { NotifyEvent } from '../domain/notify';
import { NOTIFY_EVENTS } from '../domain/notify';
import type { PayloadRef, RunPayload } from '../domain/payload';
import type { Run } from '../domain/run';
import { RUN_FIELDS } from '../domain/run';
import { runExpiresAtEpoch } from '../domain/retention';
import { shardOf } from '../domain/time-gate';
import type { Item } from './keys';
import { gateKeyOf, jobSortAttributes, payloadRefOf, runKey, tenantRunSortOf } from './keys';

/** Fields of a run item that are bookkeeping rather than part of the Run. */
export interface RunItemExtras {
  /** A payload given to this run alone (manual trigger), overriding the job's: inline, or stored apart (decision 0162). */
  readonly payloadOverride?: unknown;
  readonly payloadOverrideRef?: PayloadRef;
  /** The run's entry in the time index: when to look at it (epoch ms), over how many shards. */
  readonly gate?: { readonly at: number; readonly shards: number };
  /** Under misfire policy backfill: how many more missed occurrences may run after this one. */
  readonly backfillRemaining?: number;
  /**
   * Since when the occurrence has waited behind the one before it (overlap buffer-one; epoch ms):
   * its wait is not a misfire. Set by the give-back, carried by an edit that plans it again.
   */
  readonly bufferedSince?: number;
  /** The attempt from which this occurrence's retry budget counts (a replay starts anew). */
  readonly budgetFrom?: number;
  /** The checkpoint an external worker saved on the previous attempt: the next claim hands it over. */
  readonly checkpoint?: unknown;
  /** A workflow step's context and its parents' results, kept with the run so every attempt and replay sees the same. */
  readonly inputs?: unknown;
  /**
   * A job's pending occurrence: the run its job pointed at when it was planned (null for none). A
   * worker that finds the job pointing elsewhere tells by it the chain's successor whose job write
   * never landed from an occurrence an edit of its job replaced (decision 0175).
   */
  readonly chainedFrom?: string | null;
  /**
   * A run of its job's creation occurrence (a run-now job's, its retries and replays): no byJob
   * index entry, as its job's listing finds it through the tenant's index (decision 0188).
   */
  readonly unlistedByJob?: boolean;
}

/** On a run given back by its keyed flow: the concurrency key's scope it waits for (decision 0187). */
export const KEY_WAIT_SCOPE_ATTRIBUTE = 'keyWaitScope';

/**
 * What a finished run removes: its entry in the time index (a check-back) and in the claimable
 * index (an offered run of an external target), and the key it waited for (decision 0187).
 * Removing an attribute a run does not have costs nothing; one left behind by a run that ended
 * offered kept its claim entry until the run expired, ahead of the runs waiting to be claimed.
 */
export const OPEN_RUN_ATTRIBUTES: readonly string[] = ['gateKey', 'gateAt', 'claimTenant', 'claimSort', KEY_WAIT_SCOPE_ATTRIBUTE];

/** Sort key of a run in the claimable index: its job type, when it became due, its id. */
export const claimSortOf = (run: Pick<Run, 'jobType' | 'availableAt' | 'runId'>): string => `${run.jobType}#${run.availableAt}#${run.runId}`;
export const runIdOfClaimSort = (claimSort: string): string => claimSort.slice(claimSort.lastIndexOf('#') + 1);

export function gateAttributes(runId: string, gateAt: number, shards: number): { gateKey: string; gateAt: string } {
  const at = new Date(gateAt).toISOString();
  return { gateKey: gateKeyOf(at, shardOf(runId, shards)), gateAt: at };
}

/**
 * What an external worker reports (progress, result) is stored as JSON text, as payloads and
 * checkpoints are: as a map its numbers would be DynamoDB numbers, which refuse integers the SDK
 * cannot hold exactly (beyond 2^53) and magnitudes beyond 1e125 or below 1e-130, and which made the
 * emulator fail every later read of the item.
 */
export const PROGRESS_ATTRIBUTE = 'progressJson';
export const RESULT_ATTRIBUTE = 'resultJson';
/** A result stored apart (decision 0163): the object's reference, in place of `resultJson`. */
export const RESULT_REF_ATTRIBUTE = 'resultRef';
/** On a finished run: the notification event its outcome raised (docs/notifications.md). */
export const NOTIFY_EVENT_ATTRIBUTE = 'notifyEvent';

export function runToItem(run: Run, extras: RunItemExtras = {}): Item {
  const { leaseExpiresAt, progress, result, ...rest } = run;
  return {
    ...runKey(run.runId),
    ...rest,
    ...(progress !== null && progress !== undefined ? { [PROGRESS_ATTRIBUTE]: JSON.stringify(progress) } : {}),
    ...(result !== undefined ? { [RESULT_ATTRIBUTE]: JSON.stringify(result) } : {}),
    // Numbers, so that the lease is computed and compared inside DynamoDB's expressions.
    leaseMs: run.leaseSeconds * 1000,
    leaseExpiresAtMs: leaseExpiresAt === null ? null : Date.parse(leaseExpiresAt),
    ...(extras.unlistedByJob ? {} : jobSortAttributes(run)),
    tenantRunSort: tenantRunSortOf(run),
    ...(extras.payloadOverrideRef
      ? { payloadOverrideRef: { ...extras.payloadOverrideRef } }
      : extras.payloadOverride !== undefined
        ? { payloadOverrideJson: JSON.stringify(extras.payloadOverride) }
        : {}),
    ...(extras.gate ? gateAttributes(run.runId, extras.gate.at, extras.gate.shards) : {}),
    ...(extras.backfillRemaining !== undefined ? { backfillRemaining: extras.backfillRemaining } : {}),
    ...(extras.bufferedSince !== undefined ? { bufferedSince: extras.bufferedSince } : {}),
    ...(extras.budgetFrom !== undefined ? { budgetFrom: extras.budgetFrom } : {}),
    ...(extras.checkpoint !== undefined ? { checkpointJson: JSON.stringify(extras.checkpoint) } : {}),
    ...(extras.inputs !== undefined ? { inputsJson: JSON.stringify(extras.inputs) } : {}),
    ...(extras.chainedFrom !== undefined ? { chainedFrom: extras.chainedFrom } : {}),
  };
}

/** A finished run's TTL attribute (decision 0156): none when it is kept forever. */
export function expiryAttributes(runId: string, finishedAt: number, retentionDays: number): { expiresAtEpoch?: number } {
  const at = runExpiresAtEpoch(runId, finishedAt, retentionDays);
  return at === undefined ? {} : { expiresAtEpoch: at };
}

/** Fields of a run that are stored as they are shown; the others are stored in a form of their own. */
const STORED_AS_SHOWN = RUN_FIELDS.filter((field) => field !== 'leaseExpiresAt' && field !== 'progress' && field !== 'result' && field !== 'resultStored');

/**
 * A run from its item: the fields of a run (`RUN_FIELDS`) and nothing else, so that what the item
 * keeps beside them (an external worker's lease token, index keys, the lease in milliseconds) never
 * reaches a caller or the API.
 */
export function itemToRun(item: Item): Run {
  const run: Record<string, unknown> = {};
  for (const field of STORED_AS_SHOWN) if (Object.hasOwn(item, field)) run[field] = item[field];
  run.leaseExpiresAt = typeof item.leaseExpiresAtMs === 'number' ? new Date(item.leaseExpiresAtMs).toISOString() : null;
  // Items written before these were text keep their maps (`progress`, `result`), read as they are.
  run.progress = typeof item.progressJson === 'string' ? (JSON.parse(item.progressJson) as unknown) : (item.progress ?? null);
  if (typeof item.resultJson === 'string') run.result = JSON.parse(item.resultJson) as unknown;
  else if (Object.hasOwn(item, 'result')) run.result = item.result;
  const stored = payloadRefOf(item[RESULT_REF_ATTRIBUTE]);
  if (stored) run.resultStored = { bytes: stored.bytes };
  return run as unknown as Run;
}

/** A finished run's result as its item keeps it: inline, or stored apart; null when it has none. */
export function resultOf(item: Item): RunPayload | null {
  const ref = payloadRefOf(item[RESULT_REF_ATTRIBUTE]);
  if (ref) return { ref };
  if (typeof item.resultJson === 'string') return { inline: JSON.parse(item.resultJson) as unknown };
  return Object.hasOwn(item, 'result') ? { inline: item.result } : null;
}

export function budgetFromOf(item: Item): number {
  return typeof item.budgetFrom === 'number' ? item.budgetFrom : 1;
}

/** A DEAD run's entry in its tenant's dead-run index: when it died, then its id. */
export function deadAttributes(tenantId: string, finishedAt: string, runId: string): { deadTenantId: string; deadSort: string } {
  return { deadTenantId: tenantId, deadSort: `${finishedAt}#${runId}` };
}

export function backfillRemainingOf(item: Item): number | undefined {
  return typeof item.backfillRemaining === 'number' ? item.backfillRemaining : undefined;
}

/** The run a pending occurrence's job pointed at when it was planned (decision 0175); undefined on runs planned before it or by no job's write. */
/** When an occurrence was first given back to wait for the one before it (overlap buffer-one), in ms. */
export function bufferedSinceOf(item: Item): number | undefined {
  return typeof item.bufferedSince === 'number' ? item.bufferedSince : undefined;
}

export function chainedFromOf(item: Item): string | null | undefined {
  return item.chainedFrom === null || typeof item.chainedFrom === 'string' ? item.chainedFrom : undefined;
}

/** The checkpoint saved on a run (by an external worker's heartbeat, or carried from the attempt before). */
export function checkpointOf(item: Item): unknown {
  return typeof item.checkpointJson === 'string' ? (JSON.parse(item.checkpointJson) as unknown) : undefined;
}

/** A workflow step run's inputs (its context and its parents' results), as written with the run. */
export function inputsOf(item: Item): unknown {
  return typeof item.inputsJson === 'string' ? (JSON.parse(item.inputsJson) as unknown) : undefined;
}

/** A run's own payload (a trigger's), inline or stored apart; undefined when it delivers its job's. */
export function payloadOverrideOf(item: Item): RunPayload | undefined {
  const ref = payloadRefOf(item.payloadOverrideRef);
  if (ref) return { ref };
  return typeof item.payloadOverrideJson === 'string' ? { inline: JSON.parse(item.payloadOverrideJson) as unknown } : undefined;
}

/** The attributes that give a run its own payload, replacing the ones it had. */
export function payloadOverrideAttributes(payload: RunPayload): { set: Item; remove: string[] } {
  return 'ref' in payload
    ? { set: { payloadOverrideRef: { ...payload.ref } }, remove: ['payloadOverrideJson'] }
    : { set: { payloadOverrideJson: JSON.stringify(payload.inline) }, remove: ['payloadOverrideRef'] };
}

export function notifyEventOf(item: Item): NotifyEvent | undefined {
  const event = item[NOTIFY_EVENT_ATTRIBUTE];
  return typeof event === 'string' && (NOTIFY_EVENTS as readonly string[]).includes(event) ? (event as NotifyEvent) : undefined;
}
