// The one place that knows the key layout of both tables: partition and sort keys, index keys and
// cursors. How a job or a run becomes an item is job-items.ts's and run-items.ts's.
import type { Job } from '../domain/job';
import type { Run } from '../domain/run';
import type { PayloadRef } from '../domain/payload';
import { shardOf } from '../domain/time-gate';
import { parseScheduleJobId, parseStepJobId } from '../domain/workflow-jobs';
import { NEXT_RUN_SHARDS } from './schema';

export type Key = { readonly pk: string; readonly sk: string };
export type Item = Record<string, unknown>;

/** A job's item; a workflow's schedule job lives in its workflow's partition, out of the jobs' listings (decision 0147). */
export const jobKey = (jobId: string): Key => {
  const schedule = parseScheduleJobId(jobId);
  return schedule ? workflowScheduleKey(schedule.workflowId) : { pk: `JOB#${jobId}`, sk: 'JOB' };
};
/** Whether an item of the jobs table is a job: a job's own, or a workflow's schedule job. */
export const isJobItem = (item: Item): boolean => String(item.pk).startsWith('JOB#') || item.sk === WORKFLOW_SCHEDULE_SK;
/** Guards a job name within a tenant while the job is not deleted. */
/**
 * A job name's guard as written before decision 0192, one partition per name. A stack upgraded from
 * then reads it only during the upgrade (`legacyNameGuards`), and the name-entry backfill copies it.
 */
export const jobNameKey = (tenantId: string, name: string): Key => ({ pk: `JOBNAME#${tenantId}#${name}`, sk: 'JOBNAME' });
/**
 * A job name's guard since decision 0192: its entry in the tenant's names partition, which keeps the
 * name unique and is also how `?name=` and `?namePrefix=` find jobs (in name order), with no index.
 */
export const jobNameEntryKey = (tenantId: string, name: string): Key => ({ pk: jobNamesPartition(tenantId), sk: name });
export const jobNamesPartition = (tenantId: string): string => `JOBNAMES#${tenantId}`;
/**
 * A deleted job's entry beside its name's guard, so that `?name=` still finds it: `<name>#<jobId>`
 * sorts right after the name's guard and before any longer name (a name's characters all sort after `#`).
 */
export const deletedJobNameKey = (tenantId: string, name: string, jobId: string): Key => ({
  pk: jobNamesPartition(tenantId),
  sk: `${name}${DELETED_NAME_SEPARATOR}${jobId}`,
});
export const DELETED_NAME_SEPARATOR = '#';
/** Remembers the result of a create made with an Idempotency-Key. */
export const idempotencyKey = (tenantId: string, key: string): Key => ({ pk: `IDEMPOTENCY#${tenantId}#${key}`, sk: 'CREATE' });
export const apiKeyKey = (keyHash: string): Key => ({ pk: `APIKEY#${keyHash}`, sk: 'APIKEY' });
/** A tenant's profile (name, limits) and its usage counters, in one partition with its key records. */
export const tenantKey = (tenantId: string): Key => ({ pk: `TENANT#${tenantId}`, sk: 'PROFILE' });
export const tenantUsageKey = (tenantId: string): Key => ({ pk: `TENANT#${tenantId}`, sk: 'USAGE' });
export const tenantApiKeyKey = (tenantId: string, keyId: string): Key => ({ pk: `TENANT#${tenantId}`, sk: `KEY#${keyId}` });
export const tenantPartition = (tenantId: string): string => `TENANT#${tenantId}`;
/** The audit trail: a tenant's entries, and one object's (sort key `<at>#<auditId>`). */
export const auditTenantPartition = (tenantId: string): string => `AUDIT#${tenantId}`;
export const auditObjectPartition = (tenantId: string, objectId: string): string => `AUDIT#${tenantId}#${objectId}`;
export const auditSortOf = (at: string, auditId: string): string => `${at}#${auditId}`;
export const SIGNING_SECRET_PREFIX = 'SIGNING#';
export const signingSecretKey = (tenantId: string, secretId: string): Key => ({ pk: `TENANT#${tenantId}`, sk: `${SIGNING_SECRET_PREFIX}${secretId}` });
/** Which secret is the tenant's current one: the item every rotation changes, so two cannot both win. */
export const signingHeadKey = (tenantId: string): Key => ({ pk: `TENANT#${tenantId}`, sk: 'SIGNINGHEAD' });
/** Counts a tenant's job creates in one second (a fixed window; expires by TTL). */
export const createRateKey = (tenantId: string, epochSecond: number): Key => ({ pk: `RATE#${tenantId}#${epochSecond}`, sk: 'CREATES' });
/** One of a tenant's in-flight slots: held by one run while it is leased. */
export const inFlightSlotKey = (tenantId: string, slot: number): Key => ({ pk: `INFLIGHT#${tenantId}`, sk: `SLOT#${String(slot).padStart(6, '0')}` });
export const inFlightPartition = (tenantId: string): string => `INFLIGHT#${tenantId}`;
export const slotNumberOf = (sk: string): number => Number(sk.slice('SLOT#'.length));
/** How a set of slots is keyed: a tenant's in-flight slots, or the slots of one concurrency key. */
export interface SlotKeys {
  readonly partition: (scope: string) => string;
  readonly slot: (scope: string, slot: number) => Key;
}
export const tenantSlotKeys: SlotKeys = { partition: inFlightPartition, slot: inFlightSlotKey };
/** The scope of a concurrency or rate key: tenant-wide, so two tenants' equal keys never meet. */
export const flowScope = (tenantId: string, key: string): string => `${tenantId}#${key}`;
/** A concurrency key's slots, each held by one run while it is leased (jobs table). */
export const keyedSlotKeys: SlotKeys = {
  partition: (scope) => `KEYSLOT#${scope}`,
  slot: (scope, slot) => ({ pk: `KEYSLOT#${scope}`, sk: `SLOT#${String(slot).padStart(6, '0')}` }),
};
/** The runs waiting for a concurrency key's slot, by priority, then in the order they became due (store/key-waiters.ts). */
export const keyWaitPartition = (scope: string): string => `KEYWAIT#${scope}`;
export const keyWaitKey = (scope: string, sort: string): Key => ({ pk: keyWaitPartition(scope), sk: sort });
/** A rate key's start marks: when each of its `limit` marks was last used (jobs table). */
export const rateMarkPartition = (scope: string): string => `KEYRATE#${scope}`;
export const rateMarkKey = (scope: string, mark: number): Key => ({ pk: rateMarkPartition(scope), sk: `MARK#${String(mark).padStart(6, '0')}` });
export const rateMarkOf = (sk: string): number => Number(sk.slice('MARK#'.length));
/**
 * The active backfills, in one partition that the ticker reads every tick (domain/backfill.ts). An
 * ended backfill moves to its job's partition of ended ones, out of the ticker's read (decision 0182);
 * ones that ended before stay here, DONE, until they expire.
 */
export const BACKFILLS_PARTITION = 'BACKFILLS';
export const backfillKey = (jobId: string, backfillId: string): Key => ({ pk: BACKFILLS_PARTITION, sk: `${jobId}#${backfillId}` });
export const endedBackfillKey = (jobId: string, backfillId: string): Key => ({ pk: `BACKFILLS_ENDED#${jobId}`, sk: backfillId });
/** A job's debounce window: the run its manual triggers coalesce into (store/debounce-windows.ts). */
export const debounceKey = (jobId: string): Key => ({ pk: `DEBOUNCE#${jobId}`, sk: 'WINDOW' });
export const schedulerStateKey = (name: string): Key => ({ pk: `SCHEDULER#${name}`, sk: 'STATE' });
export const RUN_PK_PREFIX = 'RUN#';
export const runKey = (runId: string): Key => ({ pk: `${RUN_PK_PREFIX}${runId}`, sk: 'RUN' });
/** The exactly-once ledger: one item per occurrence whose effect was recorded (runs table). */
export const effectKey = (occurrence: string): Key => ({ pk: `EFFECT#${occurrence}`, sk: 'EFFECT' });
/** An outcome notification (jobs table): one per run and event, so none is made twice. */
export const NOTIFICATION_PREFIX = 'NOTIFY#';
export const notificationKey = (runId: string, event: string): Key => ({ pk: `${NOTIFICATION_PREFIX}${runId}`, sk: `EVENT#${event}` });
/** One worker's roll-up of a tenant's runs in one minute (many workers share the partition). */
export const statsKey = (tenantId: string, minute: string, workerId: string): Key => ({ pk: `STATS#${tenantId}#${minute}`, sk: `WORKER#${workerId}` });
export const statsPartition = (tenantId: string, minute: string): string => `STATS#${tenantId}#${minute}`;
/** The registry of live workers and the runs they hold (one partition, one item per worker). */
export const WORKERS_PARTITION = 'WORKERS';
export const workerKey = (workerId: string): Key => ({ pk: WORKERS_PARTITION, sk: `WORKER#${workerId}` });

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

/** Sort key of a job within its tenant (byTenant index): creation time, then id. */
export const tenantSortOf = (job: Pick<Job, 'createdAt' | 'jobId'>): string => `${job.createdAt}#${job.jobId}`;
/** A job's entry for one of its labels (jobs table): found by `tenant#key=value`, newest first. */
export const jobLabelKey = (tenantId: string, label: string, job: Pick<Job, 'createdAt' | 'jobId'>): Key => ({
  pk: jobLabelPartition(tenantId, label),
  sk: tenantSortOf(job),
});
export const jobLabelPartition = (tenantId: string, label: string): string => `JOBLABEL#${tenantId}#${label}`;
/** A job's labels as `key=value` strings (the form of a label filter and of its index key). */
export const labelPairsOf = (labels: Readonly<Record<string, string>> | undefined): string[] =>
  Object.entries(labels ?? {}).map(([key, value]) => `${key}=${value}`);
/** Sort key of a run within its tenant (byTenantKeys index): occurrence, then id. */
export const tenantRunSortOf = (run: Pick<Run, 'scheduledFor' | 'runId'>): string => `${run.scheduledFor}#${run.runId}`;
/** Sort key of a run within its job (byJob index): occurrence, then attempt. */
export const jobSortOf = (run: Pick<Run, 'scheduledFor' | 'attempt'>): string => `${run.scheduledFor}#${pad(run.attempt, 4)}`;
/**
 * A run's byJob index key, which makes it one of its job's listed runs; none for a workflow step's
 * run (decision 0174): its job is the step of a version, which no route lists (`/v1/jobs/{jobId}`
 * answers 404 for it), so the entry was written once per step run and never read.
 */
export const jobSortAttributes = (run: Pick<Run, 'jobId' | 'scheduledFor' | 'attempt'>): { jobSort?: string } =>
  parseStepJobId(run.jobId) ? {} : { jobSort: jobSortOf(run) };

/**
 * Partition of the sparse time index: the minute a run becomes due and a shard, so that no
 * partition of the index takes more than a slice of a minute's writes.
 */
export const gateKeyOf = (availableAt: string, shard: number): string => `${availableAt.slice(0, 16)}#${pad(shard, 3)}`;

/**
 * The byNextRun index's partition of jobs paused until a time: `resume#<shard>`, sorted by
 * `nextRunAt`, which holds the pause's end while the job is PAUSED (a paused job has no pending
 * occurrence, so the attribute is free). The ticker resumes those whose time has come.
 */
export const resumeShardOf = (shard: number): string => `resume#${shard}`;

/** Pagination cursors are the index's LastEvaluatedKey, opaque to callers. */
export function encodeCursor(key: Record<string, unknown> | undefined): string | null {
  return key ? Buffer.from(JSON.stringify(key), 'utf8').toString('base64url') : null;
}

/** The sort key of each index a listing pages through, by the index's partition key. */
const INDEX_SORT_KEY: Readonly<Record<string, string>> = { tenantId: 'tenantSort', jobId: 'jobSort', deadTenantId: 'deadSort' };

/** `sortKey`: the index's sort key, where its partition key does not say (INDEX_SORT_KEY). */
export function decodeCursor(cursor: string, expect: Record<string, string>, sortKey?: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
    const record = value as Record<string, unknown>;
    // A cursor must stay inside the caller's own partition (its tenant, its job).
    for (const [name, expected] of Object.entries(expect)) {
      if (record[name] !== expected) return null;
    }
    // Exactly the keys of a LastEvaluatedKey of that index, as non-empty strings: anything else
    // would reach DynamoDB as an invalid ExclusiveStartKey (a 500, not the 400 it deserves).
    const wanted = new Set(['pk', 'sk', ...Object.keys(expect).flatMap((name) => [name, sortKey ?? INDEX_SORT_KEY[name] ?? name])]);
    const keys = Object.keys(record);
    if (keys.length !== wanted.size || !keys.every((key) => wanted.has(key))) return null;
    if (!Object.values(record).every((v) => typeof v === 'string' && v.length > 0 && v.length <= 1024)) return null;
    return record;
  } catch {
    return null;
  }
}

// ---- Workflows: one partition per workflow holds its head, its versions and its runs -------------

export const WORKFLOW_PK_PREFIX = 'WF#';
export const workflowKey = (workflowId: string): Key => ({ pk: `${WORKFLOW_PK_PREFIX}${workflowId}`, sk: 'WORKFLOW' });
export const WORKFLOW_SCHEDULE_SK = 'SCHEDULE';
/** A workflow's schedule job (decision 0147): a job item in the workflow's partition. */
export const workflowScheduleKey = (workflowId: string): Key => ({ pk: `${WORKFLOW_PK_PREFIX}${workflowId}`, sk: WORKFLOW_SCHEDULE_SK });
export const workflowVersionKey = (workflowId: string, version: number): Key => ({
  pk: `${WORKFLOW_PK_PREFIX}${workflowId}`,
  sk: `V#${String(version).padStart(6, '0')}`,
});
/**
 * A tenant's workflows, listed (`GET /v1/workflows`): one partition per tenant, an entry per workflow
 * in creation order (`C#<createdAt>#<id>`) and one in name order (`N#<name>`); names never change.
 */
export const workflowListPartition = (tenantId: string): string => `WFLIST#${tenantId}`;
export const WORKFLOW_LIST_BY_TIME = 'C#';
export const WORKFLOW_LIST_BY_NAME = 'N#';
export const workflowListKeys = (workflow: { tenantId: string; workflowId: string; name: string; createdAt: string }): { byTime: Key; byName: Key } => ({
  byTime: { pk: workflowListPartition(workflow.tenantId), sk: `${WORKFLOW_LIST_BY_TIME}${workflow.createdAt}#${workflow.workflowId}` },
  byName: { pk: workflowListPartition(workflow.tenantId), sk: `${WORKFLOW_LIST_BY_NAME}${workflow.name}` },
});
/** Guards a workflow name within a tenant. */
export const workflowNameKey = (tenantId: string, name: string): Key => ({ pk: `WFNAME#${tenantId}#${name}`, sk: 'WFNAME' });
export const WORKFLOW_RUN_SK_PREFIX = 'RUN#';
export const workflowRunKey = (workflowId: string, workflowRunId: string): Key => ({
  pk: `${WORKFLOW_PK_PREFIX}${workflowId}`,
  sk: `${WORKFLOW_RUN_SK_PREFIX}${workflowRunId}`,
});
/**
 * A running workflow run sits in the jobs' byNextRun index at a check-back time, moved on by every
 * step of progress: the ticker finds one whose progress stopped (a worker died between a step's
 * outcome and its dependants' start) as it finds jobs whose chain stopped.
 */
export const workflowCheckBackAttributes = (workflowRunId: string, at: number): { nextRunShard: string; nextRunAt: string } => ({
  nextRunShard: String(shardOf(workflowRunId, NEXT_RUN_SHARDS)),
  nextRunAt: new Date(at).toISOString(),
});

/** A payload reference kept in an item (a job's or a run's payload stored apart, decision 0162), if the value is one. */
export function payloadRefOf(value: unknown): PayloadRef | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { key, bytes, sha256 } = value as Record<string, unknown>;
  return typeof key === 'string' && typeof bytes === 'number' && typeof sha256 === 'string' ? { key, bytes, sha256 } : undefined;
}
