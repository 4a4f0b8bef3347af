// A set of slots (a tenant's in-flight limit, or a concurrency key's, by `keys`): `limit` small items, each held by at most one run
// while it is leased. Taking a slot is one conditional put; giving it back, one conditional delete.
// A slot whose run is no longer running (its worker died, it was cancelled) is taken over by the
// next run that finds no free slot, after checking that run's item: the run item is the truth, so
// a crash never leaks a slot for long.
//
// Several messages of one run (a duplicate, the ticker's resend) may each take the run's slot
// before one of them leases it, and none knows yet which. Each take is a hold of its own (a random
// token in the item, and a count): a message gives back its hold only, and the slot is free when the
// last hold goes, so the message that leases the run keeps the slot whichever message took it first.
import { createHash, randomUUID } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { absent, conditionExpressions, exists, greaterThan, ifHeld, updateExpressions } from './conditional';
import type { Item, SlotKeys } from './keys';
import { slotNumberOf, tenantSlotKeys } from './keys';
import { queryAll } from './query-all';

/** A slot taken this recently by a run that is not yet RUNNING is left alone: it is about to lease. */
export const SLOT_GRACE_MS = 10_000;
const SLOT_TTL_SECONDS = 24 * 3600;
const FREE_SLOT_TRIES = 3;
/** Tries at a write of a hold when another message of the run changes the item in between. */
const HOLD_TRIES = 4;
/**
 * The hold of an item written before holds were counted (a run id, no tokens): one, of its run's,
 * given back by run id (its writer's release). Counted, so that a message joining it and then giving
 * its own hold back does not free the slot under that writer's run.
 */
const UNCOUNTED_HOLD = 'uncounted';

/** A slot taken for one message of a run. */
export interface SlotTaken {
  readonly slot: number;
  /** The slot was the run's already: another message of the run holds it too. */
  readonly own: boolean;
  /** This take's hold: `release` with it gives back this hold only (the slot goes free with the last). */
  readonly token: string;
}

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

  /**
   * Takes a slot for the run, or returns null when all `limit` slots are held by live runs. For a
   * caller that takes one per run (after its lease, as a concurrency key's): it gives the slot back
   * by run id.
   */
  async acquire(scope: string, runId: string, limit: number, now: number, liveness: RunLiveness, freed?: number): Promise<number | null> {
    return (await this.acquireSlot(scope, runId, limit, now, liveness, freed))?.slot ?? null;
  }

  /**
   * As `acquire`, for one message of the run, before its lease: another message of the run (a
   * duplicate) may hold the slot too, and either may turn out to be the one that leases the run. The
   * take is a hold of the message's own (`token`), which it gives back whatever became of the run;
   * `own` says whether the slot was the run's already.
   */
  async acquireSlot(scope: string, runId: string, limit: number, now: number, liveness: RunLiveness, freed?: number): Promise<SlotTaken | null> {
    const token = randomUUID();
    const taking = async (slot: number, replacing: SlotHolder | null = null): Promise<SlotTaken | null> => {
      const taken = await this.take(scope, slot, runId, now, replacing, token);
      return taken ? { slot, own: taken === 'own', token } : null;
    };
    // A slot this process has just given back, if any, then the run's own slot: one write in the
    // common case, and a redelivered message finds the slot its run already holds.
    if (freed !== undefined && freed < limit) {
      const taken = await taking(freed);
      if (taken) return taken;
    }
    const home = homeSlot(runId, limit);
    if (home !== freed) {
      const taken = await taking(home);
      if (taken) return taken;
    }

    const holders = await this.holders(scope);
    // The run holds a slot other than its home: this message holds it too.
    const mine = holders.find((holder) => holder.runId === runId && holder.slot < limit);
    if (mine) {
      const taken = await taking(mine.slot);
      if (taken) return taken;
    }
    const held = new Set(holders.map((holder) => holder.slot));
    const free = Array.from({ length: limit }, (_, slot) => slot).filter((slot) => !held.has(slot));
    for (const slot of pick(free, FREE_SLOT_TRIES, runId)) {
      const taken = await taking(slot);
      if (taken) return taken;
    }

    // Every slot is held: take over one whose run is not running any more.
    const suspects = holders.filter((holder) => holder.slot < limit && holder.acquiredAt < now - SLOT_GRACE_MS);
    if (suspects.length === 0) return null;
    const live = await liveness(suspects.map((holder) => holder.runId));
    for (const holder of suspects) {
      const state = live.get(holder.runId);
      const stale = !state || !state.running || (state.leaseExpiresAt !== null && state.leaseExpiresAt < now);
      if (stale) {
        const taken = await taking(holder.slot, holder);
        if (taken) return taken;
      }
    }
    return null;
  }

  /**
   * Gives back a hold of the run's on the slot; true when the slot went free. With the hold's token
   * (`acquireSlot`), that hold only: the slot stays while another message of the run holds it (the
   * one that leased the run, or one about to), and goes free with the last hold. Without one, the
   * slot, if the run still holds it (`acquire`, and items written before holds were counted).
   */
  async release(scope: string, slot: number, runId: string, token?: string): Promise<boolean> {
    const Key = this.keys.slot(scope, slot);
    if (token === undefined) {
      const released = await ifHeld(() => this.dynamo.send(new DeleteCommand({ TableName: this.tableName, Key, ...conditionExpressions({ runId }) })));
      return released.held;
    }
    const hold = `holds.${token}`;
    for (let tries = 0; tries < HOLD_TRIES; tries++) {
      // The last hold, the common case: one delete.
      const last = await ifHeld(() =>
        this.dynamo.send(
          new DeleteCommand({
            TableName: this.tableName,
            Key,
            ...conditionExpressions({ [hold]: exists, holdCount: 1 }),
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        ),
      );
      if (last.held) return true;
      // Given back already (the store client's retry of a delete that landed), or taken over as stale.
      if (!holdsToken(last.item, token)) return false;
      // Other messages of the run hold it too: this hold goes, the slot stays theirs.
      const one = await ifHeld(() =>
        this.dynamo.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key,
            ...updateExpressions({ remove: [hold], add: { holdCount: -1 }, if: { [hold]: exists, holdCount: greaterThan(1) } }),
          }),
        ),
      );
      if (one.held) return false;
      // Another hold was given back in between: this one may be the last now.
    }
    return false;
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
   * Puts a hold of the run's in the slot: a new item if the slot is free (`new`), or the one still
   * held by `replacing` (`new`, its holds dropped); a hold added to the run's own slot (`own`); null
   * when another run holds it.
   */
  private async take(scope: string, slot: number, runId: string, now: number, replacing: SlotHolder | null, token: string): Promise<'new' | 'own' | null> {
    const Key = this.keys.slot(scope, slot);
    const expiresAtEpoch = Math.floor(now / 1000) + SLOT_TTL_SECONDS;
    for (let tries = 0; tries < HOLD_TRIES; tries++) {
      // Every slot item holds a run id: one without is a free slot.
      const put = await ifHeld(() =>
        this.dynamo.send(
          new PutCommand({
            TableName: this.tableName,
            Item: { ...Key, runId, acquiredAt: now, expiresAtEpoch, holds: { [token]: now }, holdCount: 1 },
            ...conditionExpressions(replacing ? { runId: replacing.runId, acquiredAt: replacing.acquiredAt } : { runId: absent }),
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        ),
      );
      // The item there holding this token is this put's, landed before the store client tried it again.
      if (put.held || holdsToken(put.item, token)) return 'new';
      const found = put.item;
      if (replacing || !found || found.runId !== runId) return null;

      // The run's own slot: another message of the run holds it, and this one adds its hold. An item
      // written before holds were counted gets its counted form, its writer's hold among them.
      const counted = found.holdCount !== undefined;
      const joined = await ifHeld(() =>
        this.dynamo.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key,
            ...updateExpressions(
              counted
                ? {
                    set: { [`holds.${token}`]: now, acquiredAt: now, expiresAtEpoch },
                    add: { holdCount: 1 },
                    if: { runId, holdCount: exists, [`holds.${token}`]: absent },
                  }
                : {
                    set: { holds: { [UNCOUNTED_HOLD]: Number(found.acquiredAt), [token]: now }, holdCount: 2, acquiredAt: now, expiresAtEpoch },
                    if: { runId, holdCount: absent },
                  },
            ),
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        ),
      );
      // Held, or landed before a retry (the token is there): the hold is this message's.
      if (joined.held || holdsToken(joined.item, token)) return 'own';
      // The slot changed in between (its last hold given back, or it was taken over): look again.
    }
    return null;
  }
}

/** Whether the slot item holds the hold of this token. */
function holdsToken(item: Item | undefined, token: string): boolean {
  const holds: unknown = item?.holds;
  return typeof holds === 'object' && holds !== null && Object.hasOwn(holds, token);
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
