// Executes one dispatch message: lease the run, call its target while heartbeating the lease,
// record the outcome under the lease's fencing version, and plan the retry that follows a
// retryable failure. A message that cannot lease its run is a duplicate, a stale message or an
// early one, and is acknowledged (the early one is sent again for its remaining delay); a message
// for a run whose worker was lost records that attempt as worker-lost and retries it.
import { logger } from '../core/logger';
import type { Job } from '../domain/job';
import { decideRetry } from '../domain/retry';
import type { AttemptOutcome, Run, RunError } from '../domain/run';
import { occurrenceKey } from '../domain/run';
import { fencingTokenOf } from '../domain/delivery';
import { leaseCheckAt } from '../domain/time-gate';
import type { LeaseResult } from '../store/runs-repository';
import type { TargetResult } from '../targets/target';
import type { SchedulerDeps } from './deps';
import type { SchedulerConfig } from '../config/config';
import { admitRun } from './admit-run';
import { planRun } from './plan-run';

/** A message that arrives this close to its run's time waits in the worker rather than in SQS. */
const MAX_IN_WORKER_WAIT_MS = 2_000;
/** Seconds a received message stays invisible beyond its run's lease. */
const VISIBILITY_SLACK_SECONDS = 1;
/**
 * A message for a run whose lease ends within this many milliseconds is kept for a recheck when the
 * lease has ended, not dropped: it may be the one message of a worker that is about to be found lost.
 */
const HELD_RECHECK_WINDOW_MS = 5_000;

export type ExecuteResult =
  | 'skipped'
  | 'cancelled'
  | 'waiting'
  | 'succeeded'
  | 'failed'
  | 'timed-out'
  | 'dead'
  | 'fenced'
  | 'missing'
  | 'duplicate'
  | 'held'
  /** Held under a lease that ends soon: the message must stay, to come back when it has ended. */
  | 'recheck'
  | 'worker-lost'
  | 'requeued'
  /** A run of an external target, handed to external workers to claim over the API. */
  | 'offered'
  /** The tenant is at its in-flight limit: the run waits, its message sent again with a delay. */
  | 'deferred';

export interface DispatchContext {
  /** The SQS receipt handle, so the message's visibility can follow the lease. */
  readonly receiptHandle?: string;
  /** The run's tenant, from the message: its in-flight limit applies before the lease. */
  readonly tenantId?: string;
  /** How often this run already waited for an in-flight slot. */
  readonly deferrals?: number;
  /** The queue the message came from (its pool and lane): receipt handles and deferrals use it. */
  readonly queueUrl?: string;
}

/**
 * How the calls the runs of a batch make right after their leases (the job read, the message's
 * visibility) wait for each other to share one request: until none has joined for 10 ms, and at
 * most 40 ms, by default. On AWS a batch's leases land within a few milliseconds; the cap bounds
 * what a run can lose before its call when they trickle in (decisions 0031, 0033).
 */
function batchCoalesce(config: SchedulerConfig): { readonly quietMs: number; readonly capMs: number } {
  return { quietMs: config.batchCoalesceQuietMs, capMs: config.batchCoalesceCapMs };
}

/** Longest wait of a deferred run before it tries for a slot again. */
const MAX_DEFERRAL_SECONDS = 16;
/** How long a tenant found at its in-flight limit is taken to be full, in this process. */
const FULL_MEMO_MS = 500;
/** Per tenant: full until when, and the slots this process gave back since (one try each). */
const tenantsFull = new Map<string, { until: number; freed: number[] }>();

/** Whether to try for a slot: yes, unless the tenant was found full a moment ago. The slot to try first. */
function mayTry(tenantId: string, now: number): { readonly try: boolean; readonly freed?: number } {
  const full = tenantsFull.get(tenantId);
  if (!full || full.until <= now) return { try: true };
  const freed = full.freed.shift();
  return freed === undefined ? { try: false } : { try: true, freed };
}

function markFull(tenantId: string, now: number): void {
  const full = tenantsFull.get(tenantId);
  if (full && full.until > now) return;
  tenantsFull.set(tenantId, { until: now + FULL_MEMO_MS, freed: [] });
}

export async function executeRun(deps: SchedulerDeps, runId: string, message: DispatchContext = {}): Promise<ExecuteResult> {
  const { tenantId } = message;
  const limit = tenantId ? (await deps.tenantLimits.of(tenantId)).maxInFlightRuns : null;
  if (!tenantId || limit === null) return executeMessage(deps, runId, message);

  // A tenant found full a moment ago in this process is full still, except for the slots this
  // process gave back since (one try each): defer without asking DynamoDB, as a deep backlog would
  // otherwise cost a query and a write per message, per round.
  const attempt = mayTry(tenantId, deps.clock());
  const slot = attempt.try ? await deps.inFlight.acquire(tenantId, runId, limit, deps.clock(), (runIds) => liveness(deps, runIds), attempt.freed) : null;
  if (slot === null) markFull(tenantId, deps.clock());
  if (slot === null) {
    // Waits, never dropped: the message goes round again after a growing delay, with a fresh
    // receive count (a kept message would count towards the DLQ).
    const deferrals = (message.deferrals ?? 0) + 1;
    const delaySeconds = Math.min(MAX_DEFERRAL_SECONDS, 2 ** Math.min(deferrals - 1, 4)) + (deps.random() < 0.5 ? 0 : 1);
    await deps.dispatch.send([{ runId, tenantId, availableAt: deps.clock() + delaySeconds * 1000, deferrals, ...(message.queueUrl ? { queueUrl: message.queueUrl } : {}) }], deps.clock());
    deps.telemetry.runDeferred({ runId, tenantId }, deferrals, delaySeconds);
    return 'deferred';
  }
  let result: ExecuteResult | undefined;
  try {
    result = await executeMessage(deps, runId, message);
    return result;
  } finally {
    // Another worker runs this run (a duplicate message): the slot is its run's, and stays.
    if (result !== 'held' && result !== 'recheck') {
      await deps.inFlight.release(tenantId, slot, runId);
      tenantsFull.get(tenantId)?.freed.push(slot);
    }
  }
}

async function liveness(deps: SchedulerDeps, runIds: readonly string[]) {
  const runs = await deps.runs.getMany(runIds);
  return new Map(runs.map((run) => [run.runId, { running: run.status === 'RUNNING', leaseExpiresAt: run.leaseExpiresAt ? Date.parse(run.leaseExpiresAt) : null }]));
}

async function executeMessage(deps: SchedulerDeps, runId: string, message: DispatchContext): Promise<ExecuteResult> {
  const receivedAt = deps.clock();
  let lease = await leaseRun(deps, runId);
  // SQS delays are whole seconds (rounded down) and at most 900 s: a message may come a little
  // early. Wait out a short remainder here; send a longer one back to the queue.
  for (let round = 0; lease.kind === 'early'; round++) {
    const availableAt = Date.parse(lease.run.availableAt);
    const waitMs = availableAt - deps.clock();
    if (waitMs > MAX_IN_WORKER_WAIT_MS || round >= 3) {
      await deps.dispatch.send([{ runId, tenantId: lease.run.tenantId, availableAt, jobType: lease.run.jobType, priority: lease.run.priority }], deps.clock());
      logger.info('run not due yet; sent again for the remaining delay', { ...runFields(lease.run), waitMs });
      return 'requeued';
    }
    await sleep(Math.max(0, waitMs) + 1);
    lease = await leaseRun(deps, runId);
  }

  switch (lease.kind) {
    case 'missing':
      logger.warn('dispatch message for a run that does not exist; dropped', { runId });
      return 'missing';
    case 'finished':
      logger.info('duplicate dispatch message for a finished run; dropped', runFields(lease.run));
      return 'duplicate';
    case 'held': {
      const remainingMs = lease.run.leaseExpiresAt ? Date.parse(lease.run.leaseExpiresAt) - deps.clock() : Infinity;
      if (message.receiptHandle && remainingMs <= HELD_RECHECK_WINDOW_MS) {
        // Back just after the lease ends: if its worker is gone by then, this message recovers the run.
        await deps.dispatch.setVisibility(message.receiptHandle, Math.max(0, Math.ceil(remainingMs / 1000)) + VISIBILITY_SLACK_SECONDS, message.queueUrl);
        logger.info('run is leased by another worker until shortly; message kept for a recheck', { ...runFields(lease.run), leaseOwner: lease.run.leaseOwner, remainingMs });
        return 'recheck';
      }
      logger.info('run is leased by another worker; dropped this copy of its message', {
        ...runFields(lease.run),
        leaseOwner: lease.run.leaseOwner,
      });
      return 'held';
    }
    case 'expired':
      return recordWorkerLost(deps, lease.run, lease.budgetFrom, lease.checkpoint);
    case 'leased':
      break;
  }

  const { run } = lease;
  const leasedAt = Date.parse(run.startedAt ?? run.updatedAt);
  // If this worker dies, the message comes back when the lease has expired, not an hour later. The
  // leases of one batch share a ChangeMessageVisibilityBatch request, made while the runs go on;
  // it is settled before the run's message is acknowledged (deleted) or handed back.
  const followLease = message.receiptHandle
    ? deps.dispatch
        .setVisibility(message.receiptHandle, run.leaseSeconds + VISIBILITY_SLACK_SECONDS, message.queueUrl, { coalesce: batchCoalesce(deps.config) })
        .catch((error: unknown) => logger.warn('could not tie the message to the lease; a lost worker is noticed at the queue timeout instead', { runId: run.runId, error }))
    : undefined;
  try {
    return await executeLeased(deps, run, lease, leasedAt, receivedAt, message, followLease);
  } finally {
    await followLease;
    deps.telemetry.released(run.runId);
  }
}

/**
 * The lease, with its check-back in the time index: should this worker die before its message
 * follows the lease (or with it), the ticker finds the lease expired there and has it recovered.
 */
function leaseRun(deps: SchedulerDeps, runId: string): Promise<LeaseResult> {
  const now = deps.clock();
  return deps.runs.lease(runId, { owner: deps.workerId, now, checkBackAt: leaseCheckAt(now, deps.config), shards: deps.config.timeIndexShards });
}

async function executeLeased(
  deps: SchedulerDeps,
  run: Run,
  lease: Extract<LeaseResult, { kind: 'leased' }>,
  leasedAt: number,
  receivedAt: number,
  message: DispatchContext,
  followLease: Promise<unknown> | undefined,
): Promise<ExecuteResult> {
  const job = await deps.jobs.getAnyTenant(run.jobId, true, { coalesce: batchCoalesce(deps.config) });
  if (!job) {
    const error: RunError = { code: 'JOB_NOT_FOUND', message: `job ${run.jobId} no longer exists`, retryable: false };
    const now = deps.clock();
    if ((await deps.runs.finishAttempt(run, { status: 'DEAD', now, error, reason: 'the job no longer exists' }, null)) === 'recorded') {
      deps.telemetry.runFinished(run, 'DEAD', now - leasedAt, false);
      logger.info('run finished', { ...runFields(run), status: 'DEAD', durationMs: now - leasedAt, errorCode: error.code });
    }
    return 'dead';
  }
  const admission = await admitRun(deps, job, run, lease.backfillRemaining);
  if (admission.kind === 'stopped') return admission.outcome;

  deps.telemetry.runStarted(run, receivedAt);
  logger.info('run started', {
    ...runFields(run),
    status: run.status,
    leaseOwner: run.leaseOwner,
    fencingToken: fencingTokenOf(run),
    delivery: job.delivery,
    startLagMs: leasedAt - Date.parse(run.availableAt),
    schedulingLagMs: receivedAt - Date.parse(run.availableAt),
  });

  if (job.target.kind === 'external') return offerToExternalWorkers(deps, job, run);
  // The message must follow the lease before the target can act: a worker that dies after the call
  // would otherwise leave its message invisible for the queue's timeout (90 min), not lease + 1 s,
  // and the second call at-least-once promises would come that late (decision 0064). The batch's
  // visibility change is on its way since the lease; this waits for the rest of it.
  await followLease;
  const gate = await passDeliveryGate(deps, job, run);
  if (gate !== 'call') return gate;

  const result = await invokeWithHeartbeat(deps, job, run, lease.payloadOverride !== undefined ? lease.payloadOverride : job.payload, message);
  if (result === 'lease-lost') {
    const now = await deps.runs.get(run.runId);
    logger.warn('lease lost or run cancelled during the call; outcome discarded', { ...runFields(run), status: now?.status });
    if (now?.status === 'CANCELLED') return 'cancelled';
    deps.telemetry.leaseExpired(run, false);
    return 'fenced';
  }

  const finishedAt = deps.clock();
  const outcome = await recordOutcome(deps, job, run, lease.budgetFrom, result, finishedAt, admission.reason);
  if (outcome.recorded === 'fenced') {
    logger.warn('lease lost before the outcome was recorded; outcome discarded', { ...runFields(run), fencingToken: run.version });
    deps.telemetry.leaseExpired(run, false);
    return 'fenced';
  }
  logger.info('run finished', {
    ...runFields(run),
    status: outcome.status,
    durationMs: finishedAt - leasedAt,
    errorCode: result.ok ? undefined : result.error.code,
    retryRunId: outcome.retry?.runId,
  });
  deps.telemetry.runFinished(run, outcome.status, finishedAt - leasedAt, outcome.retry !== undefined);
  if (job.overlapPolicy === 'buffer-one' && run.trigger === 'schedule') await wakeBuffered(deps, job.jobId, finishedAt);
  return outcome.status === 'SUCCEEDED' ? 'succeeded' : outcome.status === 'DEAD' ? 'dead' : outcome.status === 'TIMED_OUT' ? 'timed-out' : 'failed';
}

/**
 * What the job's delivery semantics ask before the target is called. Exactly-once: an occurrence
 * whose effect is in the ledger already (a replay, a duplicate attempt) is not called again, and the
 * run ends SKIPPED naming the run that recorded it. At-most-once: the attempt is recorded as consumed
 * first; a lease lost before that write means another worker owns the run, and nothing is called.
 * At-least-once asks nothing (no request).
 */
async function passDeliveryGate(deps: SchedulerDeps, job: Job, run: Run): Promise<'call' | ExecuteResult> {
  if (job.delivery === 'exactly-once') return effectGate(deps, run);
  if (job.delivery === 'at-most-once') {
    if (await deps.runs.consume(run.runId, run.version, deps.clock())) return 'call';
    const now = await deps.runs.get(run.runId);
    logger.warn('at-most-once: lease lost before the attempt was consumed; target not called', { ...runFields(run), status: now?.status });
    return now?.status === 'CANCELLED' ? 'cancelled' : 'fenced';
  }
  return 'call';
}

/** Exactly-once: an occurrence whose effect the ledger holds ends SKIPPED, naming the run that recorded it. */
async function effectGate(deps: SchedulerDeps, run: Run): Promise<'call' | ExecuteResult> {
  const effect = await deps.runs.effectOf(occurrenceKey(run.jobId, run.scheduledFor));
  if (!effect) return 'call';
  const reason = `exactly-once: the effect of this occurrence was recorded by run ${effect.runId} (attempt ${effect.attempt}); the target is not called again`;
  const recorded = await deps.runs.complete(run.runId, run.version, { status: 'SKIPPED', now: deps.clock(), error: null, reason });
  if (recorded === 'fenced') return 'fenced';
  deps.telemetry.runEnded(run, 'SKIPPED', reason);
  return 'skipped';
}

/**
 * A run of an external target is not called: after admission it is offered to external workers
 * (RUNNING -> QUEUED with an entry in the claimable index), who claim it over the API. Exactly-once
 * still checks the ledger first; at-most-once consumes the attempt at the claim.
 */
async function offerToExternalWorkers(deps: SchedulerDeps, job: Job, run: Run): Promise<ExecuteResult> {
  if (job.delivery === 'exactly-once') {
    const gate = await effectGate(deps, run);
    if (gate !== 'call') return gate;
  }
  if (!(await deps.runs.offer(run, deps.clock()))) return 'fenced';
  logger.info('run offered to external workers', { ...runFields(run), fencingToken: fencingTokenOf(run) });
  return 'offered';
}

/**
 * Calls the target while a heartbeat extends the lease and the message's visibility together. A
 * heartbeat that finds the lease gone (cancelled, or taken over) aborts the call.
 */
async function invokeWithHeartbeat(
  deps: SchedulerDeps,
  job: Job,
  run: Run,
  payload: unknown,
  message: DispatchContext,
): Promise<TargetResult | 'lease-lost'> {
  const cancel = new AbortController();
  let lost = false;
  const intervalMs = Math.max(1_000, Math.min(60_000, Math.floor((run.leaseSeconds * 1000) / 3)));
  const timer = setInterval(() => {
    void (async () => {
      try {
        const alive = await deps.runs.heartbeat(run.runId, run.version, deps.clock());
        if (!alive) {
          lost = true;
          cancel.abort();
          return;
        }
        if (message.receiptHandle) await deps.dispatch.setVisibility(message.receiptHandle, run.leaseSeconds + VISIBILITY_SLACK_SECONDS, message.queueUrl);
      } catch (error) {
        // A missed beat is not fatal: the lease has two more intervals to run.
        logger.warn('heartbeat failed', { ...runFields(run), error: error instanceof Error ? error.message : String(error) });
      }
    })();
  }, intervalMs);
  try {
    const result = await deps.targets.invoke({
      job,
      run,
      payload,
      timeoutMs: (run.leaseSeconds - deps.config.leaseMarginSeconds) * 1000,
      signal: cancel.signal,
      egress: deps.egress,
    });
    return lost ? 'lease-lost' : result;
  } finally {
    clearInterval(timer);
  }
}

/**
 * Records an attempt's outcome; a retryable failure with budget left plans the next attempt, which
 * receives the attempt's checkpoint (external workers). Used by the worker and by the external
 * workers' complete and fail calls.
 */
export async function recordOutcome(
  deps: SchedulerDeps,
  job: Job,
  run: Run,
  budgetFrom: number,
  result: TargetResult,
  now: number,
  reason: string | null,
  carried: { readonly checkpoint?: unknown; readonly result?: unknown } = {},
): Promise<{ status: AttemptOutcome; recorded: 'recorded' | 'fenced'; retry?: Run }> {
  if (result.ok) {
    const effect =
      job.delivery === 'exactly-once'
        ? { occurrence: occurrenceKey(run.jobId, run.scheduledFor), runId: run.runId, attempt: run.attempt, fencingToken: fencingTokenOf(run), recordedAt: new Date(now).toISOString() }
        : undefined;
    const recorded = await deps.runs.finishAttempt(run, { status: 'SUCCEEDED', now, error: null, reason, result: carried.result }, null, effect ? { effect } : {});
    if (recorded === 'effect-exists') logger.warn('exactly-once: another attempt recorded this occurrence\'s effect first; one effect kept', runFields(run));
    return { status: 'SUCCEEDED', recorded: recorded === 'fenced' ? 'fenced' : 'recorded' };
  }
  // At-most-once: the target may have acted on a failed call, so it is never called again.
  const decision =
    job.delivery === 'at-most-once'
      ? { retry: false as const, delayMs: 0, why: 'at-most-once: a failed attempt is not retried' }
      : decideRetry(job.retryPolicy, { retryable: result.error.retryable, retryAfterSeconds: result.retryAfterSeconds }, run.attempt - budgetFrom + 1, deps.random);
  if (!decision.retry) {
    const recorded = (await deps.runs.finishAttempt(run, { status: 'DEAD', now, error: result.error, reason: decision.why }, null)) === 'fenced' ? 'fenced' : 'recorded';
    return { status: 'DEAD', recorded };
  }
  const status: AttemptOutcome = result.timedOut ? 'TIMED_OUT' : 'FAILED';
  const retry = planRetry(deps, job, run, budgetFrom, now + decision.delayMs, now, carried.checkpoint);
  const recorded = (await deps.runs.finishAttempt(run, { status, now, error: result.error, reason }, retry)) === 'fenced' ? 'fenced' : 'recorded';
  if (recorded === 'recorded') {
    deps.telemetry.runCreated(retry.run);
    await sendPlanned(deps, retry, now);
  }
  return { status, recorded, retry: retry.run };
}

/**
 * A message for a run whose lease expired (the lost worker's own, back at the lease's end, or the
 * ticker's, sent when it found the lease's check-back passed): that attempt failed.
 */
async function recordWorkerLost(deps: SchedulerDeps, run: Run, budgetFrom: number, checkpoint?: unknown): Promise<ExecuteResult> {
  const now = deps.clock();
  const job = await deps.jobs.getAnyTenant(run.jobId);
  // At-most-once: a consumed attempt may have reached its target; it is never called again.
  const consumed = typeof run.consumedAt === 'string';
  const error: RunError = consumed
    ? { code: 'OUTCOME_UNKNOWN', message: `the lease of ${run.leaseOwner ?? 'its worker'} expired after the attempt was consumed; the target may or may not have been called`, retryable: false }
    : { code: 'WORKER_LOST', message: `the lease of ${run.leaseOwner ?? 'its worker'} expired before an outcome was recorded`, retryable: true };
  const decision = consumed
    ? { retry: false as const, delayMs: 0, why: 'at-most-once: the attempt was consumed before its worker was lost; it is not called again' }
    : job
      ? decideRetry(job.retryPolicy, { retryable: true }, run.attempt - budgetFrom + 1, deps.random)
      : null;
  const retry = job && decision?.retry ? planRetry(deps, job, run, budgetFrom, now + decision.delayMs, now, checkpoint) : null;
  const recorded = await deps.runs.finishAttempt(
    run,
    { status: retry ? 'FAILED' : 'DEAD', now, error, reason: decision?.why ?? 'the job no longer exists' },
    retry,
    { leaseExpiredBefore: now },
  );
  if (recorded === 'fenced') return 'held';
  deps.telemetry.leaseExpired(run, true);
  deps.telemetry.runFinished(run, retry ? 'FAILED' : 'DEAD', now - Date.parse(run.startedAt ?? run.updatedAt), retry !== null);
  if (retry) {
    deps.telemetry.runCreated(retry.run);
    await sendPlanned(deps, retry, now);
  }
  logger.warn('worker lost during a run; attempt recorded as failed', {
    ...runFields(run),
    status: retry ? 'FAILED' : 'DEAD',
    errorCode: error.code,
    leaseOwner: run.leaseOwner,
    retryRunId: retry?.run.runId,
  });
  return 'worker-lost';
}

function planRetry(deps: SchedulerDeps, job: Job, run: Run, budgetFrom: number, availableAt: number, now: number, checkpoint?: unknown) {
  const plan = planRun(deps.config, job, {
    scheduledFor: Date.parse(run.scheduledFor),
    attempt: run.attempt + 1,
    trigger: 'retry',
    availableAt,
    ...(checkpoint !== undefined ? { checkpoint } : {}),
  }, now);
  return { ...plan, extras: { ...plan.extras, budgetFrom } };
}

async function sendPlanned(deps: SchedulerDeps, plan: ReturnType<typeof planRetry>, now: number): Promise<void> {
  if (!plan.dispatch) return;
  try {
    await deps.dispatch.send([plan.dispatch], now);
    deps.telemetry.runQueued(plan.run);
  } catch (error) {
    logger.error('dispatch of a retry failed; the ticker will redeliver', { runId: plan.run.runId, error: error instanceof Error ? error.message : String(error) });
  }
}

/** Under buffer-one, the occurrence waiting behind this run may start now. */
async function wakeBuffered(deps: SchedulerDeps, jobId: string, now: number): Promise<void> {
  const job = await deps.jobs.getAnyTenant(jobId);
  const pending = job?.nextRunId ? await deps.runs.get(job.nextRunId) : null;
  if (pending?.status === 'QUEUED' && Date.parse(pending.availableAt) <= now) {
    await deps.dispatch.send([{ runId: pending.runId, tenantId: pending.tenantId, availableAt: now, jobType: pending.jobType, priority: pending.priority }], now);
  }
}

function runFields(run: Run): Record<string, unknown> {
  return { runId: run.runId, jobId: run.jobId, tenantId: run.tenantId, jobType: run.jobType, attempt: run.attempt };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
