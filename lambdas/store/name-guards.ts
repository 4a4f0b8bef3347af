// The guard that keeps a job's name unique within its tenant, naming the job that holds it. Since
// decision 0192 it is the name's entry in the tenant's names partition (`JOBNAMES#<tenant>`, sorted
// by name), which `?name=` and `?namePrefix=` read instead of an index of the jobs; a stack upgraded
// from before keeps taking the old `JOBNAME#<tenant>#<name>` guard too until its names are copied
// (`legacyNameGuards`). A create without an Idempotency-Key takes it on its own, before the job's
// write, rather than in one transaction with it (decision 0173): a transaction bills each item
// twice. A create that fails between the two leaves a guard naming a job that was never written;
// the next create of that name takes it over once it is old enough that no create can still be
// writing its job, with or without an Idempotency-Key (whose transaction, refused on the guard, has
// `clearOrphan` decide and is tried once more).
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import type { TransactItem } from './conditional';
import { absent, conditionExpressions, IF_NEW } from './conditional';
import type { Job } from '../domain/job';
import type { Key } from './keys';
import { deletedJobNameKey, jobKey, jobNameEntryKey, jobNameKey } from './keys';

/**
 * How old a guard whose job does not exist must be before another create takes its name over. The
 * API function's timeout is 29 s: a create that wrote its guard and not yet its job is long ended
 * by then. A local runtime has no such bound; ten times it leaves a wide margin.
 */
export const ORPHANED_GUARD_AFTER_MS = 5 * 60_000;

/** The name's guard was taken for the job, or another job holds it. */
export type NameTake = 'taken' | 'held';

/**
 * What stands in the way of a job's name: nothing (no guard, or an orphaned one, deleted), the
 * job's own guard, or another job's live guard.
 */
export type NameWay = 'free' | 'own' | 'held';

type Holder = Pick<Job, 'tenantId' | 'name' | 'jobId'>;

/** The name of a guard's item in a create's transaction (`name`, and `name.legacy` during an upgrade). */
export const isGuardItemName = (name: string): boolean => name === 'name' || name.startsWith('name.');

export class NameGuards {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly jobsTable: string,
    /**
     * Also the guards written before decision 0192 (`JOBNAME#<tenant>#<name>`): taken first, with the
     * entry, while an upgraded stack's names may be held there only (stack config `legacyNameGuards`).
     */
    private readonly legacy = false,
  ) {}

  /** The job's guards, in the order they are taken: the legacy one first, so that the old code's creates meet it. */
  private keysOf(job: Holder): { readonly item: string; readonly key: Key }[] {
    const entry = { item: 'name', key: jobNameEntryKey(job.tenantId, job.name) };
    return this.legacy ? [{ item: 'name.legacy', key: jobNameKey(job.tenantId, job.name) }, entry] : [entry];
  }

  /** Puts of the job's guards for a transaction (a create under an Idempotency-Key), by item name (`isGuardItemName`). */
  putItems(job: Holder): Record<string, TransactItem> {
    return Object.fromEntries(
      this.keysOf(job).map(({ item, key }) => [
        item,
        { Put: { TableName: this.jobsTable, Item: { ...key, jobId: job.jobId }, ...conditionExpressions(IF_NEW) } },
      ]),
    );
  }

  /** The job's guards (their item names, as `releaseItems` takes them) that name it, read consistently before its delete. */
  async heldBy(job: Holder): Promise<string[]> {
    const guards = await Promise.all(this.keysOf(job).map(async ({ item, key }) => ((await this.read(key))?.jobId === job.jobId ? [item] : [])));
    return guards.flat();
  }

  /**
   * Deletes of the guards `held` (`heldBy`) for the transaction that deletes the job, each only
   * while it is still the job's, and the deleted job's entry beside the name's guard. A guard that
   * names another job is not this job's to give back: a name split between two live jobs (an
   * upgrade run out of order) is freed by deleting either of them.
   */
  releaseItems(job: Holder, held: readonly string[]): Record<string, TransactItem> {
    return {
      ...Object.fromEntries(
        this.keysOf(job)
          .filter(({ item }) => held.includes(item))
          .map(({ item, key }) => [`release.${item}`, { Delete: { TableName: this.jobsTable, Key: key, ...conditionExpressions({ jobId: job.jobId }) } }]),
      ),
      // `?name=` finds the deleted jobs that had a name too (as the byTenantName index did).
      released: { Put: { TableName: this.jobsTable, Item: { ...deletedJobNameKey(job.tenantId, job.name, job.jobId), jobId: job.jobId } } },
    };
  }

  /**
   * Takes the job's name: a conditional put of each guard. A guard in the way that no longer holds
   * its name (`isOrphaned`: its job deleted, or never written and the guard older than
   * ORPHANED_GUARD_AFTER_MS at `now`, epoch ms) is deleted (on its job id and time, so two creates
   * cannot both take it over) and the put tried once more. Held at any guard, the ones taken before
   * it are given back.
   */
  async take(job: Holder, takenAt: string, now: number): Promise<NameTake> {
    const taken: Key[] = [];
    for (const { key } of this.keysOf(job)) {
      if ((await this.takeAt(key, job, takenAt, now)) === 'held') {
        await Promise.all(taken.map((held) => this.releaseAt(held, job)));
        return 'held';
      }
      taken.push(key);
    }
    return 'taken';
  }

  private async takeAt(key: Key, job: Holder, takenAt: string, now: number): Promise<NameTake> {
    if (await this.put(key, job, takenAt)) return 'taken';
    const way = await this.clearOrphanAt(key, job, now);
    // This create's own guard: a put tried again after its answer was lost had landed the first time.
    if (way === 'own') return 'taken';
    if (way === 'held') return 'held';
    // Released since (its job deleted) or taken over: the put decides once more.
    return (await this.put(key, job, takenAt)) ? 'taken' : 'held';
  }

  /**
   * After a write of the job's name's guards was refused, reads each guard in the way: one that is
   * orphaned (ORPHANED_GUARD_AFTER_MS at `now`, epoch ms, and no job) is deleted, on its job id and
   * time, so two creates cannot both take it over. `free` means the caller's write decides once
   * more; `held` that another job holds one of them. `take` uses it, and so does a create under an
   * Idempotency-Key, whose guards are written in its transaction.
   */
  async clearOrphan(job: Holder, now: number): Promise<NameWay> {
    const ways = await Promise.all(this.keysOf(job).map(({ key }) => this.clearOrphanAt(key, job, now)));
    if (ways.includes('held')) return 'held';
    return ways.includes('free') ? 'free' : 'own';
  }

  private async clearOrphanAt(key: Key, job: Holder, now: number): Promise<NameWay> {
    const guard = await this.read(key);
    if (guard === null) return 'free';
    if (guard.jobId === job.jobId) return 'own';
    if (!(await this.isOrphaned(guard, now))) return 'held';
    await this.deleteOrphan(key, guard);
    return 'free';
  }

  /** Gives the name back after a create that was refused: only while each guard is still this job's. Best effort. */
  async release(job: Holder): Promise<void> {
    await Promise.all(this.keysOf(job).map(({ key }) => this.releaseAt(key, job)));
  }

  private async releaseAt(key: Key, job: Holder): Promise<void> {
    try {
      await this.dynamo.send(new DeleteCommand({ TableName: this.jobsTable, Key: key, ...conditionExpressions({ jobId: job.jobId }) }));
    } catch {
      // Left in place: the next create of the name takes it over once it is old enough.
    }
  }

  /** Whether the guard was put: false when one is there already. */
  private async put(key: Key, job: Holder, takenAt: string): Promise<boolean> {
    try {
      await this.dynamo.send(new PutCommand({ TableName: this.jobsTable, Item: { ...key, jobId: job.jobId, takenAt }, ...conditionExpressions(IF_NEW) }));
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  private async deleteOrphan(key: Key, guard: { jobId: string; takenAt: string | null }): Promise<void> {
    try {
      await this.dynamo.send(
        new DeleteCommand({
          TableName: this.jobsTable,
          Key: key,
          ...conditionExpressions({ jobId: guard.jobId, takenAt: guard.takenAt ?? absent }),
        }),
      );
    } catch (error) {
      // Another create took it over first: the put decides.
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  private async read(key: Key): Promise<{ jobId: string; takenAt: string | null } | null> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.jobsTable, Key: key, ConsistentRead: true }));
    if (!item) return null;
    return { jobId: String(item.jobId), takenAt: typeof item.takenAt === 'string' ? item.takenAt : null };
  }

  /**
   * A guard that no longer holds its name: its job was deleted (CANCELLED, for good: the delete gave
   * the name back, and a guard naming it is one a race left behind, e.g. copied by the upgrade's
   * backfill as the job was deleted), or its create never wrote its job. Guards written in a
   * transaction with their job (all of them before decision 0173, and those of creates under an
   * Idempotency-Key) carry no time or always have their job: without a job they are never taken over.
   */
  private async isOrphaned(guard: { jobId: string; takenAt: string | null }, now: number): Promise<boolean> {
    const { Item: holder } = await this.dynamo.send(
      new GetCommand({
        TableName: this.jobsTable,
        Key: jobKey(guard.jobId),
        ConsistentRead: true,
        ProjectionExpression: '#status',
        ExpressionAttributeNames: { '#status': 'status' },
      }),
    );
    if (holder !== undefined) return holder.status === 'CANCELLED';
    if (guard.takenAt === null) return false;
    const age = now - Date.parse(guard.takenAt);
    return age >= ORPHANED_GUARD_AFTER_MS;
  }
}
