// The one place that knows the key layout of both tables and how domain objects become items.
import type { NotifyEvent } from '../domain/notify';
import { NOTIFY_EVENTS } from '../domain/notify';
import type { Job } from '../domain/job';
import { isUnnamed } from '../domain/job';
import type { PayloadRef, RunPayload } from '../domain/payload';
import type { Run } from '../domain/run';
import { RUN_FIELDS } from '../domain/run';
import { parseScheduleJobId, parseStepJobId } from '../domain/workflow-jobs';
import { runExpiresAtEpoch } from '../domain/retention';
import { shardOf } from '../domain/time-gate';
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
export const jobNameKey = (tenantId: string, name: string): Key => ({ pk: `JOBNAME#${tenantId}#${name}`, sk: 'JOBNAME' });
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
/** The runs waiting for a concurrency key's slot, in the order they became due (store/key-waiters.ts). */
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
function payloadRefOf(value: unknown): PayloadRef | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { key, bytes, sha256 } = value as Record<string, unknown>;
  return typeof key === 'string' && typeof bytes === 'number' && typeof sha256 === 'string' ? { key, bytes, sha256 } : undefined;
}

/** Fields of a run item that are bookkeeping rather than part of the Run. */
export interface RunItemExtras {
  /** A payload given to this run alone (manual trigger), overriding the job's: inline, or stored apart (decision 0162). */
  readonly payloadOverride?: unknown;
  readonly payloadOverrideRef?: PayloadRef;
  /** The run's entry in the time index: when to look at it (epoch ms), over how many shards. */
  readonly gate?: { readonly at: number; readonly shards: number };
  /** Under misfire policy backfill: how many more missed occurrences may run after this one. */
  readonly backfillRemaining?: number;
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

export function notifyEventOf(item: Item): NotifyEvent | undefined {
  const event = item[NOTIFY_EVENT_ATTRIBUTE];
  return typeof event === 'string' && (NOTIFY_EVENTS as readonly string[]).includes(event) ? (event as NotifyEvent) : undefined;
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
