// How a job becomes an item of the jobs table and back (the keys it carries are keys.ts's).
import type { Job } from '../domain/job';
import { isUnnamed } from '../domain/job';
import { shardOf } from '../domain/time-gate';
import { parseScheduleJobId } from '../domain/workflow-jobs';
import type { Item } from './keys';
import { jobKey, payloadRefOf, resumeShardOf, tenantSortOf } from './keys';
import { NEXT_RUN_SHARDS } from './schema';

/**
 * Where an active job's entry in the byNextRun index sits: its pending occurrence's time rounded
 * down to a multiple of `windowMs` (decision 0161). The ticker finds a chain that stopped once the
 * entry is older than the redelivery grace; rounded down, it is found no later than by the exact
 * time, and a job firing more often than the window keeps its entry (a keys-only index: no write)
 * for several occurrences instead of moving it (two writes) at each. 0 keeps the exact time.
 */
export function chainCheckBackAt(nextRunAt: string, windowMs: number): string {
  if (windowMs <= 0) return nextRunAt;
  const at = Date.parse(nextRunAt);
  return new Date(at - (((at % windowMs) + windowMs) % windowMs)).toISOString();
}

/**
 * The keys of a job's finding indexes (decision 0095): its status's except when COMPLETED (decision
 * 0166). A run-now job is COMPLETED from its create, and most of a tenant's jobs end so: the status
 * index keeps the few live and stopped ones, and the COMPLETED jobs are listed from the tenant's
 * index, where they are most of what is read. The type has no index (decision 0186): an entry in one
 * cost every create a write unit, for a filter the jobs read from another index can apply. Items
 * written before keep a `tenantType`, which nothing reads.
 */
export function findingKeysOf(job: Pick<Job, 'tenantId' | 'status'>): { tenantStatus?: string } {
  return job.status === 'COMPLETED' ? {} : { tenantStatus: `${job.tenantId}#${job.status}` };
}

export function jobToItem(job: Job, options: { readonly checkBackWindowMs?: number } = {}): Item {
  // nextRunAt is a key of the byNextRun index, where DynamoDB refuses NULL: absent means none. A job
  // created without a name keeps none (its name is its id): it stays out of the byName index,
  // whose entry a create would otherwise write (decision 0157). An active job's index key is its
  // chain's check-back, at or before its pending occurrence, which `pendingAt` then keeps (0161).
  // The pending run's id is `pendingRunId`, not `nextRunId`, which the byNextRun index projects: the
  // chain changes it at every occurrence, and the index entry would be written each time (0168).
  const { payload, nextRunAt, name, payloadRef, nextRunId, ...rest } = job;
  const resumesAt = job.status === 'PAUSED' && job.pausedUntil ? job.pausedUntil : null;
  const checkBackAt = nextRunAt !== null && job.status === 'ACTIVE' ? chainCheckBackAt(nextRunAt, options.checkBackWindowMs ?? 0) : nextRunAt;
  return {
    ...jobKey(job.jobId),
    ...rest,
    pendingRunId: nextRunId,
    ...(isUnnamed(job) ? {} : { name }),
    ...(checkBackAt === null ? {} : { nextRunAt: checkBackAt }),
    ...(checkBackAt !== null && checkBackAt !== nextRunAt ? { pendingAt: nextRunAt } : {}),
    ...(resumesAt === null ? {} : { nextRunAt: resumesAt, nextRunShard: resumeShardOf(shardOf(job.jobId, NEXT_RUN_SHARDS)) }),
    // Stored as text: any JSON (top-level arrays, nulls, empty maps) round-trips exactly. A payload
    // stored apart is named instead (decision 0162).
    ...(payloadRef ? { payloadRef: { ...payloadRef } } : { payloadJson: JSON.stringify(payload) }),
    // Keys of the finding indexes (decision 0095); a workflow's schedule job is found through its workflow only.
    ...(parseScheduleJobId(job.jobId) ? {} : { tenantSort: tenantSortOf(job), ...findingKeysOf(job) }),
    // In the sparse byNextRun index only while the job is active with an occurrence pending.
    ...(job.status === 'ACTIVE' && job.nextRunAt ? { nextRunShard: String(shardOf(job.jobId, NEXT_RUN_SHARDS)) } : {}),
  };
}

export function itemToJob(item: Item): Job {
  const {
    pk: _pk,
    sk: _sk,
    payloadJson,
    payloadRef,
    tenantSort: _ts,
    nextRunShard: _nrs,
    tenantStatus: _tst,
    tenantType: _tty,
    pendingAt,
    pendingRunId,
    nextRunId: legacyNextRunId,
    ...rest
  } = item;
  const job = rest as unknown as Omit<Job, 'payload' | 'nextRunAt' | 'labels' | 'name' | 'payloadRef'> & {
    nextRunAt?: string;
    labels?: Record<string, string>;
    name?: string;
  };
  // Jobs written before labels have none; a paused job's nextRunAt attribute is its pause's end, an
  // active one's its chain's check-back when `pendingAt` holds the pending occurrence (decision
  // 0161); a job created without a name is named by its id.
  const nextRunAt = job.status === 'PAUSED' ? null : typeof pendingAt === 'string' ? pendingAt : (job.nextRunAt ?? null);
  const ref = payloadRefOf(payloadRef);
  // An item written before decision 0168 names its pending run `nextRunId`.
  const nextRunId = pendingRunId !== undefined ? pendingRunId : legacyNextRunId;
  return {
    ...job,
    nextRunId: typeof nextRunId === 'string' ? nextRunId : null,
    name: job.name ?? job.jobId,
    labels: job.labels ?? {},
    nextRunAt,
    ...(ref ? { payload: null, payloadRef: ref } : { payload: JSON.parse(String(payloadJson)) as unknown }),
  };
}

/** A payload reference as an item holds it (a map of key, bytes and sha256), or undefined. */
