// The guard item that keeps a job's name unique within its tenant (`JOBNAME#<tenant>#<name>`,
// naming the job that holds it). A create without an Idempotency-Key takes it on its own, before
// the job's write, rather than in one transaction with it (decision 0173): a transaction bills each
// item twice. A create that fails between the two leaves a guard naming a job that was never
// written; the next create of that name takes it over once it is old enough that no create can
// still be writing its job, with or without an Idempotency-Key (whose transaction, refused on the
// guard, has `clearOrphan` decide and is tried once more).
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { conditionExpressions, IF_NEW } from './conditional';
import type { Job } from '../domain/job';
import { jobKey, jobNameKey } from './keys';

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

export class NameGuards {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly jobsTable: string,
  ) {}

  private guardItem(job: Holder, takenAt: string): Record<string, unknown> {
    return { ...jobNameKey(job.tenantId, job.name), jobId: job.jobId, takenAt };
  }

  /**
   * Takes the job's name: a conditional put of its guard. A guard in the way whose job was never
   * written and that is older than ORPHANED_GUARD_AFTER_MS (at `now`, epoch ms) is deleted (on its
   * job id and time, so two creates cannot both take it over) and the put tried once more.
   */
  async take(job: Holder, takenAt: string, now: number): Promise<NameTake> {
    if (await this.put(job, takenAt)) return 'taken';
    const way = await this.clearOrphan(job, now);
    // This create's own guard: a put tried again after its answer was lost had landed the first time.
    if (way === 'own') return 'taken';
    if (way === 'held') return 'held';
    // Released since (its job deleted) or taken over: the put decides once more.
    return (await this.put(job, takenAt)) ? 'taken' : 'held';
  }

  /**
   * After a write of the job's name's guard was refused, reads the guard in the way: one that is
   * orphaned (ORPHANED_GUARD_AFTER_MS at `now`, epoch ms, and no job) is deleted, on its job id and
   * time, so two creates cannot both take it over. `free` means the caller's write decides once
   * more. `take` uses it, and so does a create under an Idempotency-Key, whose guard is written in
   * its transaction.
   */
  async clearOrphan(job: Holder, now: number): Promise<NameWay> {
    const guard = await this.read(job);
    if (guard === null) return 'free';
    if (guard.jobId === job.jobId) return 'own';
    if (!(await this.isOrphaned(guard, now))) return 'held';
    await this.deleteOrphan(job, guard);
    return 'free';
  }

  /** Gives the name back after a create that was refused: only while the guard is still this job's. Best effort. */
  async release(job: Holder): Promise<void> {
    try {
      await this.dynamo.send(
        new DeleteCommand({ TableName: this.jobsTable, Key: jobNameKey(job.tenantId, job.name), ...conditionExpressions({ jobId: job.jobId }) }),
      );
    } catch {
      // Left in place: the next create of the name takes it over once it is old enough.
    }
  }

  /** Whether the guard was put: false when one is there already. */
  private async put(job: Holder, takenAt: string): Promise<boolean> {
    try {
      await this.dynamo.send(new PutCommand({ TableName: this.jobsTable, Item: this.guardItem(job, takenAt), ...conditionExpressions(IF_NEW) }));
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  private async deleteOrphan(job: Holder, guard: { jobId: string; takenAt: string | null }): Promise<void> {
    try {
      await this.dynamo.send(
        new DeleteCommand({
          TableName: this.jobsTable,
          Key: jobNameKey(job.tenantId, job.name),
          ...conditionExpressions({ jobId: guard.jobId, takenAt: guard.takenAt }),
        }),
      );
    } catch (error) {
      // Another create took it over first: the put decides.
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  private async read(job: Holder): Promise<{ jobId: string; takenAt: string | null } | null> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.jobsTable, Key: jobNameKey(job.tenantId, job.name), ConsistentRead: true }));
    if (!item) return null;
    return { jobId: String(item.jobId), takenAt: typeof item.takenAt === 'string' ? item.takenAt : null };
  }

  /**
   * A guard whose create never wrote its job. Guards written in a transaction with their job (all
   * of them before decision 0173, and those of creates under an Idempotency-Key) carry no time or
   * always have their job: they are never taken over.
   */
  private async isOrphaned(guard: { jobId: string; takenAt: string | null }, now: number): Promise<boolean> {
    if (guard.takenAt === null) return false;
    const age = now - Date.parse(guard.takenAt);
    if (!(age >= ORPHANED_GUARD_AFTER_MS)) return false;
    const { Item: holder } = await this.dynamo.send(
      new GetCommand({ TableName: this.jobsTable, Key: jobKey(guard.jobId), ConsistentRead: true, ProjectionExpression: 'pk' }),
    );
    return holder === undefined;
  }
}
