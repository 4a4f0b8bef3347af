// Use cases of the jobs API: create, read, list, and schedule previews. Each takes the caller's
// tenant from the authenticated request, never from the body.
import { createHash } from 'node:crypto';
import { ConflictError, NotFoundError, TooManyRequestsError, ValidationError } from '../core/errors';
import type { TenantGrants, TenantLimits } from '../domain/tenant';
import { newJobId } from '../core/ids';
import { logger } from '../core/logger';
import type { Job, JobSpec, JobTarget, Target } from '../domain/job';
import { MASKED_HEADER_VALUE, attemptTimeoutSeconds, isSecretReference } from '../domain/job';
import type { Run } from '../domain/run';
import type { Occurrence } from '../domain/schedule';
import { firstFireTime, settleLike, settleSchedule, upcomingFireTimes, upcomingOccurrences, validateSchedule } from '../domain/schedule';
import { isRecurring } from '../domain/schedule-series';
import type { ListJobsQuery, ListRunsQuery, PreviewRequest } from '../api/schemas';
import type { Page } from '../store/page';
import { urlRefusal } from '../targets/address-policy';
import { SUPPORTED_TARGET_KINDS } from '../targets/invoker';
import { SECRET_REFUSAL_MESSAGE, notifyDestinationRefusal, secretGranted, targetRefusal } from '../domain/target-allowlist';
import type { NotifySpec } from '../domain/notify';
import { admitRunRequest } from './create-rate';
import { deploymentAllowlist, namesGrantedArn } from './tenant-grants';
import type { SchedulerDeps } from './deps';
import { planRun } from './plan-run';
import { sendPlannedRun } from './send-planned-run';
import { checkPayload, discardPayload, withListedPayloads, withPayload, withStoredPayload } from './payloads';
import { withListedResults, withResult } from './step-results';

/** How long an Idempotency-Key is remembered. */
const IDEMPOTENCY_TTL_SECONDS = 24 * 3600;
const UPCOMING_RUNS = 5;

export interface JobView extends Omit<Job, 'payloadRef'> {
  readonly upcomingRuns: string[];
  /** Present when the payload is stored apart (decision 0162): its size. */
  readonly payloadStored?: { readonly bytes: number };
}

export interface CreateJobResult {
  readonly job: JobView;
  readonly nextRunAt: string | null;
  /** False when an Idempotency-Key replay returned the job the first request created. */
  readonly created: boolean;
}

export async function createJob(
  deps: SchedulerDeps,
  tenantId: string,
  spec: JobSpec,
  idempotencyKey?: string,
  limits: TenantLimits = deps.config.tenantDefaults,
  /** The request's W3C trace context, which the job's first run joins (a new trace without it). */
  traceparent?: string,
): Promise<CreateJobResult> {
  const now = deps.clock();
  // The hash is of the job as parsed (defaults filled in): two bodies that mean the same job match.
  const idempotency = idempotencyKey
    ? { key: idempotencyKey, requestHash: hashRequest(spec), expiresAtEpoch: Math.floor(now / 1000) + IDEMPOTENCY_TTL_SECONDS }
    : undefined;
  // A retry answers with the first result (API.md) even where the checks below, which depend on
  // the clock and the deployment, would now refuse the request: an `at` a minute past, say.
  if (idempotency) {
    const previous = await deps.jobs.findIdempotencyRecord(tenantId, idempotency.key);
    if (previous) return replayOf(deps, tenantId, previous, idempotency.requestHash);
  }
  validateSchedule(spec.schedule, now);
  const grants = await grantsToCheck(deps, tenantId, [spec.target], spec.notify);
  checkTarget(deps, spec.target, grants);
  checkPayload(deps, spec.payload, spec.target.kind);
  checkNotify(deps, spec.notify, grants);
  checkPoolTimeout(deps, spec);

  // What the schedule counts from (an interval's anchor, a counted cron's startAt) is fixed now.
  const schedule = settleSchedule(spec.schedule, now);
  const first = firstFireTime({ schedule }, now);
  const at = new Date(now).toISOString();
  const jobId = newJobId(now);
  const draft: Job = {
    ...spec,
    // Unnamed, it is named by its id: unique without a name guard (decision 0154).
    name: spec.name ?? jobId,
    schedule,
    jobId,
    tenantId,
    // A run-now job's one occurrence is queued by this create: there is nothing left to schedule,
    // so it is COMPLETED from the start (decision 0029) and its run needs no write to the job.
    status: first === null || spec.schedule.kind === 'now' ? 'COMPLETED' : 'ACTIVE',
    createdAt: at,
    updatedAt: at,
    version: 1,
    nextRunAt: null,
    nextRunId: null,
  };
  const plan =
    first === null ? null : planRun(deps.config, draft, { scheduledFor: first, attempt: 1, trigger: 'schedule', traceparent, chainedFrom: null }, now);
  const job: Job = plan ? { ...draft, nextRunAt: plan.run.scheduledFor, nextRunId: plan.run.runId } : draft;

  // Counted first and on its own, not in the create's transaction (decision 0155): a create refused
  // after it (a taken name) has used its place in the second, as a request over a rate limit does.
  await admitRunRequest(deps, tenantId, limits, now);
  // A large payload is stored before the job that names it (decision 0162); deleted again when the
  // job was certainly not written, as nothing else can name it. A store failure may have written
  // it: the object stays then (the sweep finds it if no job names it).
  const stored = await withStoredPayload(deps, job);
  const result = await deps.jobs.insert(stored, plan, idempotency, { maxActiveJobs: limits.maxActiveJobs });
  if (result.kind !== 'created') await discardPayload(deps, stored.payloadRef);
  if (result.kind === 'conflicted') {
    throw new TooManyRequestsError('Concurrent creates of this tenant conflicted and this one was not written; try again', result.retryAfterMs / 1000);
  }
  if (result.kind === 'too-many-active-jobs') {
    // Waiting helps only once jobs complete or are deleted: a minute is a fair first guess.
    throw new TooManyRequestsError(`This tenant has ${limits.maxActiveJobs} active or paused jobs, its limit; delete or complete some first`, 60);
  }
  if (result.kind === 'name-taken') {
    throw new ConflictError(`A job named "${spec.name}" already exists`, [{ path: 'name', message: 'is already used by another job' }]);
  }
  // A concurrent request under the same key wrote its record first.
  if (result.kind === 'idempotent-replay') return replayOf(deps, tenantId, result, idempotency?.requestHash);

  if (plan) deps.telemetry.runCreated(plan.run);
  // The create succeeded even if the send fails: the ticker sends the run then.
  await sendPlannedRun(deps, plan, now);
  logger.info('job created', { jobId, tenantId, jobType: job.type, scheduleKind: job.schedule.kind, nextRunAt: job.nextRunAt });
  return { job: viewOf({ ...stored, payload: job.payload }), nextRunAt: job.nextRunAt, created: true };
}

/** The first result of a create under an Idempotency-Key; another body under the same key is a conflict. */
async function replayOf(
  deps: SchedulerDeps,
  tenantId: string,
  previous: { readonly jobId: string; readonly requestHash: string },
  requestHash: string | undefined,
): Promise<CreateJobResult> {
  if (previous.requestHash !== requestHash) {
    throw new ConflictError('This Idempotency-Key was already used with a different request body', [
      { path: 'headers.Idempotency-Key', message: 'was already used with a different request body' },
    ]);
  }
  const existing = await deps.jobs.get(tenantId, previous.jobId);
  if (!existing) throw new ConflictError('This Idempotency-Key belongs to a job that no longer exists');
  return { job: await presentJob(deps, existing), nextRunAt: existing.nextRunAt, created: false };
}

/**
 * The tenant's grants (decision 0194) to check these targets and this notification destination
 * against: read (cached a minute per process, the read of its limits) only when one of them names an
 * ARN that grants cover; null otherwise, as no check then consults them.
 */
export async function grantsToCheck(
  deps: SchedulerDeps,
  tenantId: string,
  targets: readonly Target[],
  notify?: Pick<NotifySpec, 'destination'> | null,
): Promise<TenantGrants> {
  return targets.some(namesGrantedArn) || (notify && notify.destination.kind !== 'http') ? deps.tenantLimits.grantsOf(tenantId) : null;
}

/**
 * What the deployment can call for this tenant: a supported kind; for HTTP a scheme and host the
 * egress policy allows as far as can be told without DNS (literal addresses, `localhost`, metadata
 * names), which the worker checks again on every call, and secrets the stack granted; for Lambda,
 * SQS and EventBridge a resource the stack granted (stack property `targets`; any, in local mode),
 * as the worker's call to anything else would be denied. Secrets and resources must be in the
 * tenant's `grants` too when it has them (decision 0194): refused with the same path and message
 * whichever list leaves them out, so a refusal says nothing of what other tenants use.
 */
export function checkTarget(deps: SchedulerDeps, target: Target, grants: TenantGrants): void {
  if (!(SUPPORTED_TARGET_KINDS as readonly string[]).includes(target.kind)) {
    throw new ValidationError('Invalid job', [
      { path: 'target.kind', message: `${target.kind} targets are not supported by this deployment; use one of: ${SUPPORTED_TARGET_KINDS.join(', ')}` },
    ]);
  }
  if (target.kind === 'http') {
    const masked = Object.keys(target.headers).find((name) => target.headers[name] === MASKED_HEADER_VALUE);
    if (masked !== undefined) {
      throw new ValidationError('Invalid job', [
        { path: `target.headers.${masked}`, message: `is the masked value ${MASKED_HEADER_VALUE}; send the header's value` },
      ]);
    }
    // A secret the workers were not granted could never be read: refused now, not at every
    // attempt. Checked in both modes (locally against LOCAL_HEADER_SECRET_ARNS).
    const unlisted = Object.entries(target.headers).filter(
      ([, value]) => isSecretReference(value) && !(deps.config.headerSecretArns.includes(value.secretArn) && secretGranted(value.secretArn, grants)),
    );
    if (unlisted.length > 0) {
      throw new ValidationError(
        'Invalid job',
        unlisted.map(([name]) => ({ path: `target.headers.${name}.secretArn`, message: SECRET_REFUSAL_MESSAGE })),
      );
    }
    const refusal = urlRefusal(target.url, deps.egress.policy);
    if (refusal) throw new ValidationError('Invalid job', [{ path: 'target.url', message: refusal }]);
    return;
  }
  // AWS targets: only what the stack granted the workers (any, in local mode) and the tenant.
  const refusal = targetRefusal(target, deploymentAllowlist(deps), grants);
  if (refusal) throw new ValidationError('Invalid job', [refusal]);
}

/**
 * Where a job's notifications may go: an HTTP URL the egress policy allows as far as can be told
 * without DNS (the worker checks again on every try), an SNS topic or bus the stack granted (any, in
 * local mode) and the tenant's grants cover, as for targets.
 */
export function checkNotify(
  deps: SchedulerDeps,
  notify: Pick<NotifySpec, 'destination'> | null | undefined,
  grants: TenantGrants,
  title = 'Invalid job',
): void {
  if (!notify) return;
  const { destination } = notify;
  if (destination.kind === 'http') {
    const refusal = urlRefusal(destination.url, deps.egress.policy);
    if (refusal) throw new ValidationError(title, [{ path: 'notify.destination.url', message: refusal }]);
    return;
  }
  const refusal = notifyDestinationRefusal(destination, deploymentAllowlist(deps), grants);
  if (refusal) throw new ValidationError(title, [refusal]);
}

/** Seconds a pool's worker keeps beyond a run's timeout, to record the outcome before Lambda stops it. */
export const POOL_TIMEOUT_HEADROOM_SECONDS = 10;

/**
 * A job must fit in its pool's worker: a run that outlasted the function's timeout would be cut off
 * and retried as a lost worker, again and again. Pools without a known timeout (the default pool,
 * 900 s against runs of at most 840 s) need no check.
 */
export function checkPoolTimeout(deps: SchedulerDeps, spec: Pick<JobSpec, 'type' | 'timeoutSeconds' | 'target'>): void {
  // An external worker runs outside the pool's function; the function only offers the run.
  if (spec.target.kind === 'external') return;
  const pool = deps.dispatch.poolOf(spec.type);
  if (pool.timeoutSeconds === undefined) return;
  const limit = pool.timeoutSeconds - POOL_TIMEOUT_HEADROOM_SECONDS;
  if (attemptTimeoutSeconds(spec) > limit) {
    throw new ValidationError('Invalid job', [
      {
        path: 'timeoutSeconds',
        message: `must be at most ${limit} for job type ${spec.type}: its worker pool ${pool.name} stops after ${pool.timeoutSeconds} s`,
      },
    ]);
  }
}

/** Canonical JSON (sorted keys), so that the same body sent twice hashes the same. */
function hashRequest(body: unknown): string {
  const canonical = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(canonical);
    if (value && typeof value === 'object') {
      return Object.fromEntries(
        Object.entries(value as Record<string, unknown>)
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([k, v]) => [k, canonical(v)]),
      );
    }
    return value;
  };
  return createHash('sha256')
    .update(JSON.stringify(canonical(body)))
    .digest('hex');
}

/**
 * A target as responses show it: header values are write-only (they often carry credentials). A
 * reference to a Secrets Manager secret is shown: it names the secret and is not its value.
 */
export function maskedTarget<T extends JobTarget>(target: T): T;
export function maskedTarget(target: JobTarget): JobTarget {
  if (target.kind !== 'http') return target;
  return {
    ...target,
    headers: Object.fromEntries(Object.entries(target.headers).map(([name, value]) => [name, isSecretReference(value) ? value : MASKED_HEADER_VALUE])),
  };
}

/** A job as the API shows it: header values masked, its upcoming fire times added. */
export function viewOf(job: Job): JobView {
  let upcomingRuns: string[] = [];
  if (job.status === 'ACTIVE' && job.nextRunAt) {
    upcomingRuns = isRecurring(job.schedule)
      ? [job.nextRunAt, ...upcomingFireTimes(job, Date.parse(job.nextRunAt), UPCOMING_RUNS - 1).map(iso)]
      : [job.nextRunAt];
  }
  // A PATCH's `notify: null` removes the notifications: the view shows none. A payload stored apart
  // shows its size (its key stays inside).
  const { notify, payloadRef, ...rest } = job;
  return {
    ...rest,
    ...(notify ? { notify } : {}),
    labels: job.labels ?? {},
    target: maskedTarget(job.target),
    upcomingRuns,
    ...(payloadRef ? { payloadStored: { bytes: payloadRef.bytes } } : {}),
  };
}

/**
 * A stored job as its audit entries compare it (`changesBetween`): as shown, but with its target's
 * header values (the audit shows which changed, never what to) and its payload as stored, so that
 * a payload kept apart is compared by its object, not loaded.
 */
export function auditedJob(job: Job): JobView {
  return { ...viewOf(job), target: job.target, payload: job.payloadRef ? { stored: job.payloadRef.key } : job.payload };
}

/** A job as the API's single-job answers show it: with its payload, wherever it is stored. */
export async function presentJob(deps: SchedulerDeps, job: Job): Promise<JobView> {
  return viewOf(await withPayload(deps, job));
}

const iso = (ms: number): string => new Date(ms).toISOString();

export async function getJob(deps: SchedulerDeps, tenantId: string, jobId: string): Promise<JobView & { recentRuns: Run[] }> {
  const job = await deps.jobs.get(tenantId, jobId);
  if (!job) throw new NotFoundError(`No job ${jobId}`);
  const recent = await deps.runs.listByJob(job, 10);
  return { ...(await presentJob(deps, job)), recentRuns: (await withListedResults(deps, recent)).items };
}

/**
 * The tenant's jobs matching every filter given; each filter is read from an index (decision 0095),
 * newest first (in name order under `namePrefix`).
 */
export async function listJobs(deps: SchedulerDeps, tenantId: string, query: ListJobsQuery): Promise<Page<JobView>> {
  const page = await deps.jobs.list(
    tenantId,
    { status: query.status, type: query.type, name: query.name, namePrefix: query.namePrefix, labels: query.label },
    query.limit,
    query.cursor,
  );
  return { items: (await withListedPayloads(deps, page.items)).map((job) => viewOf(job)), nextCursor: page.nextCursor };
}

/** A job's runs, newest occurrence first, within `from`/`to` and of one status when given. */
export async function listJobRuns(deps: SchedulerDeps, tenantId: string, jobId: string, query: ListRunsQuery): Promise<Page<Run>> {
  const job = await deps.jobs.get(tenantId, jobId);
  if (!job) throw new NotFoundError(`No job ${jobId}`);
  return withListedResults(deps, await deps.runs.listByJob(job, query.limit, query.cursor, { status: query.status, from: query.from, to: query.to }));
}

/** The tenant's runs, newest occurrence first, within `from`/`to` and of one status when given. */
export async function listRuns(deps: SchedulerDeps, tenantId: string, query: ListRunsQuery): Promise<Page<Run>> {
  return withListedResults(deps, await deps.runs.listByTenant(tenantId, query.limit, { status: query.status, from: query.from, to: query.to }, query.cursor));
}

export async function getRun(deps: SchedulerDeps, tenantId: string, runId: string): Promise<Run> {
  const run = await deps.runs.get(runId);
  if (!run || run.tenantId !== tenantId) throw new NotFoundError(`No run ${runId}`);
  return withResult(deps, run);
}

export interface SchedulePreview {
  /** The fire times that fire (skipped ones left out), as before jitter. */
  readonly fireTimes: string[];
  /** Every occurrence of the series in order, skipped ones marked, each with when it starts. */
  readonly occurrences: Occurrence[];
}

/**
 * Fire times of a schedule from `from`. With `jobId`, an existing job's: its id seeds the jitter,
 * and its skipped occurrences show; the schedule is the one given, or the job's own.
 */
export async function previewSchedule(deps: SchedulerDeps, tenantId: string, request: PreviewRequest): Promise<SchedulePreview> {
  const job = request.jobId === undefined ? null : await deps.jobs.get(tenantId, request.jobId);
  if (request.jobId !== undefined && !job) throw new NotFoundError(`No job ${request.jobId}`);
  // A schedule given with a job is taken as a PATCH would take it: without an anchor (or a counted
  // cron's start) it keeps the job's, so the preview shows the fire times the change would have.
  const given = request.schedule && job ? settleLike(request.schedule, job.schedule) : request.schedule;
  const requested = given ?? job?.schedule;
  if (!requested) throw new ValidationError('Invalid preview', [{ path: 'schedule', message: 'is required without jobId' }]);
  const from = request.from ? Date.parse(request.from) : deps.clock();
  // Preview is about the future from `from`; the past-instant rule for `at` does not apply. A
  // schedule given here is settled as a create would settle it at `from`; the job's own already is.
  if (request.schedule) validateSchedule(requested, requested.kind === 'at' ? Math.min(from, Date.parse(requested.at)) : from);
  const schedule = request.schedule ? settleSchedule(requested, from) : requested;
  const timetable = { schedule, skippedOccurrences: request.schedule ? [] : (job?.skippedOccurrences ?? []) };
  const count = isRecurring(schedule) ? request.count : 1;
  return {
    fireTimes: upcomingFireTimes(timetable, from, count).map(iso),
    occurrences: upcomingOccurrences(timetable, from, count, job?.jobId ?? null),
  };
}
