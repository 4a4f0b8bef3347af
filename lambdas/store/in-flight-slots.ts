// A set of slots (a tenant's in-flight limit, or a concurrency key's, by `keys`): `limit` small items, each held by at most one run
// while it is leased. Taking a slot is one conditional put; giving it back, one conditional delete.
// A slot whose run is no longer running (its worker died, it was cancelled) is taken over by the
// next run that finds no free slot, after checking that run's item: the run item is the truth, so
// a crash never leaks a slot for long.
import { createHash } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { absentOr, conditionExpressions, ifHeld } from './conditional';
import type { SlotKeys } from './keys';
import { slotNumberOf, tenantSlotKeys } from './keys';
import { queryAll } from './query-all';

/** A slot taken this recently by a run that is not yet RUNNING is left alone: it is about to lease. */
export const SLOT_GRACE_MS = 10_000;
const SLOT_TTL_SECONDS = 24 * 3600;
const FREE_SLOT_TRIES = 3;

export interface SlotHolder {
  readonly slot: number;
  readonly runId: string;
  readonly acquiredAt: number;
}

/** What the slot store needs to know about a run to tell whether its slot is still in use. */
export type RunLiveness = (runIds: readonly string[]) => Promise<Map<string, { running: boolean; leaseExpiresAt: number | null }>>;

export class InFlightSlots {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
    /** A tenant's in-flight slots by default; a concurrency key's slots reuse the same machinery. */
    private readonly keys: SlotKeys = tenantSlotKeys,
  ) {}

  /** Takes a slot for the run, or returns null when all `limit` slots are held by live runs. */
  async acquire(scope: string, runId: string, limit: number, now: number, liveness: RunLiveness, freed?: number): Promise<number | null> {
    return (await this.acquireSlot(scope, runId, limit, now, liveness, freed))?.slot ?? null;
  }

  /**
   * As `acquire`, saying whether the slot was the run's already (`own`): a message for a run that
   * another worker runs (a duplicate) may take a slot of its own, which is not the run's to keep.
   */
  async acquireSlot(
    scope: string,
    runId: string,
    limit: number,
    now: number,
    liveness: RunLiveness,
    freed?: number,
  ): Promise<{ readonly slot: number; readonly own: boolean } | null> {
    // A slot this process has just given back, if any, then the run's own slot: one write in the
    // common case, and a redelivered message finds the slot its run already holds.
    if (freed !== undefined && freed < limit) {
      const taken = await this.take(scope, freed, runId, now, null);
      if (taken) return { slot: freed, own: taken === 'own' };
    }
    const home = homeSlot(runId, limit);
    if (home !== freed) {
      const taken = await this.take(scope, home, runId, now, null);
      if (taken) return { slot: home, own: taken === 'own' };
    }

    const holders = await this.holders(scope);
    const mine = holders.find((holder) => holder.runId === runId && holder.slot < limit);
    if (mine) return { slot: mine.slot, own: true };
    const held = new Set(holders.map((holder) => holder.slot));
    const free = Array.from({ length: limit }, (_, slot) => slot).filter((slot) => !held.has(slot));
    for (const slot of pick(free, FREE_SLOT_TRIES, runId)) {
      const taken = await this.take(scope, slot, runId, now, null);
      if (taken) return { slot, own: taken === 'own' };
    }

    // Every slot is held: take over one whose run is not running any more.
    const suspects = holders.filter((holder) => holder.slot < limit && holder.acquiredAt < now - SLOT_GRACE_MS);
    if (suspects.length === 0) return null;
    const live = await liveness(suspects.map((holder) => holder.runId));
    for (const holder of suspects) {
      const state = live.get(holder.runId);
      const stale = !state || !state.running || (state.leaseExpiresAt !== null && state.leaseExpiresAt < now);
      if (stale && (await this.take(scope, holder.slot, runId, now, holder))) return { slot: holder.slot, own: false };
    }
    return null;
  }

  /** Gives the slot back, if this run still holds it. */
  async release(scope: string, slot: number, runId: string): Promise<void> {
    await ifHeld(() =>
      this.dynamo.send(new DeleteCommand({ TableName: this.tableName, Key: this.keys.slot(scope, slot), ...conditionExpressions({ runId }) })),
    );
  }

  async holders(scope: string): Promise<SlotHolder[]> {
    return queryAll(
      this.dynamo,
      {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': this.keys.partition(scope) },
        ConsistentRead: true,
      },
      (item) => ({ slot: slotNumberOf(String(item.sk)), runId: String(item.runId), acquiredAt: Number(item.acquiredAt) }),
    );
  }

  /**
   * Puts the run in the slot if it is free (`new`), already the run's (`own`), or still held by
   * `replacing` (`new`); null when another run holds it.
   */
  private async take(scope: string, slot: number, runId: string, now: number, replacing: SlotHolder | null): Promise<'new' | 'own' | null> {
    // Every slot item holds a run id: one without is a free slot.
    const condition = replacing ? { runId: replacing.runId, acquiredAt: replacing.acquiredAt } : { runId: absentOr(runId) };
    const taken = await ifHeld(() =>
      this.dynamo.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...this.keys.slot(scope, slot), runId, acquiredAt: now, expiresAtEpoch: Math.floor(now / 1000) + SLOT_TTL_SECONDS },
          ...conditionExpressions(condition),
          ReturnValues: 'ALL_OLD',
        }),
      ),
    );
    if (!taken.held) return null;
    return taken.value.Attributes?.runId === runId ? 'own' : 'new';
  }
}

export function homeSlot(runId: string, limit: number): number {
  return createHash('sha256').update(runId).digest().readUInt32BE(0) % limit;
}

/** Up to `count` of the candidates, spread by the run id so that racing runs try different ones. */
function pick(candidates: number[], count: number, runId: string): number[] {
  if (candidates.length <= count) return candidates;
  const offset = homeSlot(runId, candidates.length);
  return Array.from({ length: count }, (_, i) => candidates[(offset + i * Math.ceil(candidates.length / count)) % candidates.length]!);
}
