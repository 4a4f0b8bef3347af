// The worker's path for a run it has leased: its job is read and the run admitted (the chain, the
// overlap and misfire policies), the message follows the lease, the delivery semantics are checked,
// and the target is called while a heartbeat extends the lease; the outcome is recorded under the
// lease's fencing version. A run of an external target is offered to external workers instead.
import { logger } from '../core/logger';
import type { Job } from '../domain/job';
import type { Run, RunError } from '../domain/run';
import { occurrenceKey } from '../domain/run';
import { EFFECT_KEPT_SLACK_MS } from '../domain/retention';
import { deliveryOf, fencingTokenOf } from '../domain/delivery';
import type { LeaseResult } from '../store/run-leases';
import type { TargetResult } from '../targets/target';
import { batchCoalesce } from './batch-coalesce';
import type { SchedulerDeps } from './deps';
import { deliveredPayload } from './payloads';
import { deliveredStepContext, resultLimitOf, stepDeliveryRefusal } from './step-results';
import type { RunPayload } from '../domain/payload';
import { PayloadMissingError } from '../store/payload-store';
import type { DispatchContext, ExecuteResult } from './execute-run';
import { admitRun } from './admit-run';
import { passKeyedFlow } from './keyed-flow';
import { recordOutcome } from './record-outcome';
import { runFields, traceAnnotationsOf, traceContextOfRun } from './run-log';
import { inSubsegment } from '../core/tracing';
import { resolveHeaders } from '../targets/header-secrets';
import { childSpanOf, formatTraceparent } from '../domain/trace-context';
import { continueWorkflow } from './workflow-progress';
import { startScheduledWorkflowRun } from './workflow-runs';
import { wakeBuffered } from './occurrence-chain';
import type { StepContext } from '../domain/workflow-jobs';
import { parseStepJobId, stepContextOf, workflowRunIdOf } from '../domain/workflow-jobs';
import { cancelStepRun, stepRunSuperseded } from './workflow-step-runs';
import { callRefusal } from './tenant-grants';

/** Seconds a received message stays invisible beyond its run's lease. */
export const VISIBILITY_SLACK_SECONDS = 1;

/** Executes a leased run; the message follows the lease from now on. */
export async function executeLeasedRun(
  deps: SchedulerDeps,
  lease: Extract<LeaseResult, { kind: 'leased' }>,
  receivedAt: number,
  message: DispatchContext,
): Promise<ExecuteResult> {
  const { run } = lease;
  const leasedAt = Date.parse(run.startedAt ?? run.updatedAt);
  // If this worker dies, the message comes back when the lease has expired, not an hour later. The
  // leases of one batch share a ChangeMessageVisibilityBatch request, made while the runs go on;
  // it is settled before the run's message is acknowledged (deleted) or handed back. A run handed
  // off by its parent's run has no message of its own (decision 0179).
  const followLease =
    message.receiptHandle && !message.handedOff
      ? deps.dispatch
          .setVisibility(message.receiptHandle, run.leaseSeconds + VISIBILITY_SLACK_SECONDS, message.queueUrl, { coalesce: batchCoalesce(deps.config) })
          .catch((error: unknown) =>
            logger.warn('could not tie the message to the lease; a lost worker is noticed at the queue timeout instead', { ...runFields(run), error }),
          )
      : undefined;
  try {
    // In X-Ray, a subsegment per run, found by the run's trace id (decision 0111).
    return await inSubsegment('run', { ...traceAnnotationsOf(run), leaseOwner: run.leaseOwner ?? undefined }, () =>
      executeLeased(deps, run, lease, leasedAt, receivedAt, message, followLease),
    );
  } finally {
    await followLease;
    deps.telemetry.released(run.runId);
  }
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
  const coalesce = batchCoalesce(deps.config);
  // A step run from its queue reads its workflow run with its job (decision 0190): a cancel of the
  // workflow run that stopped before it cancelled the steps' runs (a store error, its process gone)
  // is honoured, and so is a retry of it that started the step anew: the run is cancelled rather
  // than run. So is one handed off written QUEUED and leased now; one handed off written leased
  // was read by its taker just before. A replay asked for by name runs (`stepRunSuperseded`).
  const step = message.workflowRunRead ? null : parseStepJobId(run.jobId);
  const [job, workflowRun] = await Promise.all([
    deps.jobs.getAnyTenant(run.jobId, true, { coalesce }),
    step ? deps.workflowRuns.getRunShared(step.workflowId, workflowRunIdOf(step.workflowId, run.scheduledFor), coalesce) : null,
  ]);
  if (step && workflowRun && stepRunSuperseded(workflowRun, step.stepId, run)) return endCancelledStep(deps, run);
  if (!job) return endWithoutJob(deps, run, leasedAt);
  // Read before admission takes a slot, which a run that cannot be delivered would have to give back.
  const read = await payloadOrEnd(deps, job, run, lease.payloadOverride, leasedAt);
  if (!read.ok) return read.ended;
  const { payload } = read;
  // An external step's inputs are read by the claim that hands them over, not here.
  const context = job.target.kind === 'external' ? { ok: true as const } : await stepContextOrEnd(deps, job, run, lease.inputs, payload, leasedAt);
  if (!context.ok) return 'dead';
  const admission = await admitRun(deps, job, run, lease);
  if (admission.kind === 'stopped') return admission.outcome;
  const flow = await passKeyedFlow(deps, job, run, payload, message);
  if (flow.kind !== 'start') return flow.kind;
  try {
    return await executeAdmitted(deps, job, run, lease, leasedAt, receivedAt, message, followLease, admission.reason, payload, context.step);
  } finally {
    await flow.release();
  }
}

/** A step run leased after its workflow run was cancelled or retried past it: cancelled, its target not called. */
async function endCancelledStep(deps: SchedulerDeps, run: Run): Promise<ExecuteResult> {
  const cancelled = await cancelStepRun(deps, run, deps.clock());
  logger.info('a step run its workflow run no longer runs (cancelled, or retried past it) was leased; cancelled, not run', { ...runFields(run), cancelled });
  return 'cancelled';
}

/**
 * The payload a leased (or claimed) run delivers; the run ended DEAD when its object is gone (a
 * trigger's payload past the bucket's lifecycle): no attempt can deliver it. Any other failure to
 * read it is the store's, and is thrown (the message comes back).
 */
export async function payloadOrEnd(
  deps: SchedulerDeps,
  job: Job,
  run: Run,
  own: RunPayload | undefined,
  leasedAt: number,
): Promise<{ readonly ok: true; readonly payload: unknown } | { readonly ok: false; readonly ended: 'dead' | 'cancelled' }> {
  try {
    return { ok: true, payload: await deliveredPayload(deps, job, own) };
  } catch (error) {
    if (!(error instanceof PayloadMissingError)) throw error;
    // The job's object, replaced by a PATCH since the job was read: the lifecycle rule counts its day
    // from when the object was stored, not tagged, so an old one can go at once. The job as it is now
    // names the payload to deliver.
    const now = own ? null : await deps.jobs.getAnyTenant(job.jobId);
    // Deleted since it was read (its delete released the object): the run ends as the delete would
    // have ended it, not called with no payload.
    if (now?.status === 'CANCELLED') {
      const reason = 'job deleted';
      if ((await deps.leases.complete(run.runId, run.version, { status: 'CANCELLED', now: deps.clock(), error: null, reason })) === 'recorded') {
        deps.telemetry.runEnded(run, 'CANCELLED', reason);
      }
      return { ok: false, ended: 'cancelled' };
    }
    if (now?.payloadRef?.key !== undefined && now.payloadRef.key !== job.payloadRef?.key) {
      return payloadOrEnd(deps, now, run, own, leasedAt);
    }
    if (now && !now.payloadRef && job.payloadRef) return { ok: true, payload: now.payload };
    await endUndeliverable(deps, run, leasedAt, { code: 'PAYLOAD_MISSING', message: error.message, retryable: false }, 'its payload is no longer stored');
    return { ok: false, ended: 'dead' };
  }
}

/**
 * A step run's context as its target receives it, its parents' stored results read (decision 0163);
 * none for other runs. The run ended DEAD when no attempt can deliver it: its payload and inputs are
 * over what its target takes, or a result's object is gone.
 */
export async function stepContextOrEnd(
  deps: SchedulerDeps,
  job: Job,
  run: Run,
  inputs: unknown,
  payload: unknown,
  leasedAt: number,
): Promise<{ readonly ok: true; readonly step?: StepContext } | { readonly ok: false }> {
  const context = stepContextOf(run, inputs);
  if (!context) return { ok: true };
  const refusal = stepDeliveryRefusal(payload, context, job.target.kind);
  if (refusal) {
    await endUndeliverable(deps, run, leasedAt, { code: 'INPUTS_TOO_LARGE', message: refusal, retryable: false }, 'its inputs are more than its target takes');
    return { ok: false };
  }
  try {
    return { ok: true, step: await deliveredStepContext(deps, context) };
  } catch (error) {
    if (!(error instanceof PayloadMissingError)) throw error;
    await endUndeliverable(
      deps,
      run,
      leasedAt,
      { code: 'PAYLOAD_MISSING', message: error.message, retryable: false },
      "a dependency's result is no longer stored",
    );
    return { ok: false };
  }
}

/** Why a run whose job is not there ends CANCELLED. */
export const JOB_NEVER_WRITTEN_REASON = 'its job does not exist: the create that wrote this run did not finish';

/**
 * A run whose job is not there. Job items are never deleted: a run-now job's create writes its run
 * before the job (decision 0167), so such a run is one whose create failed or was refused after
 * the run's write, and was never answered as created. It ends CANCELLED, not DEAD: nothing failed
 * that a replay could retry (a replay needs the job), and no alarm is owed. A workflow step's run
 * (its "job" is the workflow's version) still ends DEAD, failing its workflow run.
 */
async function endWithoutJob(deps: SchedulerDeps, run: Run, leasedAt: number): Promise<ExecuteResult> {
  const error: RunError = { code: 'JOB_NOT_FOUND', message: `job ${run.jobId} does not exist`, retryable: false };
  if (parseStepJobId(run.jobId)) return endUndeliverable(deps, run, leasedAt, error, 'the workflow version of this step no longer exists');
  const now = deps.clock();
  if ((await deps.leases.complete(run.runId, run.version, { status: 'CANCELLED', now, error, reason: JOB_NEVER_WRITTEN_REASON })) === 'fenced') return 'fenced';
  deps.telemetry.runEnded(run, 'CANCELLED', JOB_NEVER_WRITTEN_REASON);
  logger.warn('run ended: its job does not exist', { ...runFields(run), status: 'CANCELLED' });
  return 'cancelled';
}

/** Ends a leased (or claimed) run DEAD that no attempt can deliver (its step's version or its payload is gone, its inputs too large). */
export async function endUndeliverable(deps: SchedulerDeps, run: Run, leasedAt: number, error: RunError, reason: string): Promise<ExecuteResult> {
  const now = deps.clock();
  if ((await deps.leases.finishAttempt(run, { status: 'DEAD', now, error, reason }, null)) === 'recorded') {
    await continueWorkflow(deps, run, { status: 'DEAD', error, reason });
    deps.telemetry.runFinished(run, 'DEAD', now - leasedAt, false);
    logger.info('run finished', { ...runFields(run), status: 'DEAD', durationMs: now - leasedAt, errorCode: error.code });
  }
  return 'dead';
}

async function executeAdmitted(
  deps: SchedulerDeps,
  job: Job,
  run: Run,
  lease: Extract<LeaseResult, { kind: 'leased' }>,
  leasedAt: number,
  receivedAt: number,
  message: DispatchContext,
  followLease: Promise<unknown> | undefined,
  admissionReason: string | null,
  payload: unknown,
  step: StepContext | undefined,
): Promise<ExecuteResult> {
  deps.telemetry.runStarted(run, receivedAt);
  logger.info('run started', {
    ...runFields(run),
    status: run.status,
    leaseOwner: run.leaseOwner,
    fencingToken: fencingTokenOf(run),
    delivery: deliveryOf(run, job),
    startLagMs: leasedAt - Date.parse(run.availableAt),
    schedulingLagMs: receivedAt - Date.parse(run.availableAt),
  });

  if (job.target.kind === 'external') return offerToExternalWorkers(deps, job, run);
  // The message must follow the lease before the target can act: a worker that dies after the call
  // would otherwise leave its message invisible for the queue's timeout (90 min), not lease + 1 s,
  // and the second call at-least-once promises would come that late (decision 0064). The batch's
  // visibility change is on its way since the lease; this waits for the rest of it.
  await followLease;
  // What the call needs is read before the delivery gate: an at-most-once attempt is consumed only
  // when its target is about to be called, so one that fails here is retried as any other.
  const prepared = await prepareCall(deps, job, run);
  const gate = 'failed' in prepared ? 'call' : await passDeliveryGate(deps, job, run);
  if (gate !== 'call') return gate;

  // A workflow's schedule calls no target: its occurrence starts a workflow run (decision 0147).
  const result =
    'failed' in prepared
      ? prepared.failed
      : job.target.kind === 'workflow'
        ? await startScheduledWorkflowRun(deps, job, run)
        : await invokeWithHeartbeat(deps, job, run, payload, message, step, prepared);
  if (result === 'lease-lost') {
    const now = await deps.runs.get(run.runId);
    logger.warn('lease lost or run cancelled during the call; outcome discarded', { ...runFields(run), status: now?.status });
    if (now?.status === 'CANCELLED') return 'cancelled';
    deps.telemetry.leaseExpired(run, false);
    return 'fenced';
  }

  const finishedAt = deps.clock();
  const outcome = await recordOutcome(deps, job, run, lease.budgetFrom, result, finishedAt, admissionReason, {
    ...(result.ok && result.result !== undefined ? { result: result.result } : {}),
    ...(lease.inputs !== undefined ? { inputs: lease.inputs } : {}),
    ...(lease.payloadOverride !== undefined ? { payload: lease.payloadOverride } : {}),
  });
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
  // A workflow's occurrence waits for its workflow run instead, which wakes it when it ends.
  if (job.overlapPolicy === 'buffer-one' && run.trigger === 'schedule' && job.target.kind !== 'workflow') await wakeBuffered(deps, job.jobId, finishedAt);
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
  const delivery = deliveryOf(run, job);
  if (delivery === 'exactly-once') return effectGate(deps, run);
  if (delivery === 'at-most-once') {
    if (await deps.leases.consume(run.runId, run.version, deps.clock())) return 'call';
    const now = await deps.runs.get(run.runId);
    logger.warn('at-most-once: lease lost before the attempt was consumed; target not called', { ...runFields(run), status: now?.status });
    return now?.status === 'CANCELLED' ? 'cancelled' : 'fenced';
  }
  return 'call';
}

/** Exactly-once: an occurrence whose effect the ledger holds ends SKIPPED, naming the run that recorded it. */
async function effectGate(deps: SchedulerDeps, run: Run): Promise<'call' | ExecuteResult> {
  const effect = await deps.leases.effectOf(occurrenceKey(run.jobId, run.scheduledFor));
  if (!effect) return 'call';
  const reason = `exactly-once: the effect of this occurrence was recorded by run ${effect.runId} (attempt ${effect.attempt}); the target is not called again`;
  const now = deps.clock();
  // This SKIPPED run can be replayed until it leaves with the retention: the effect stays as long.
  await deps.leases.keepEffect(occurrenceKey(run.jobId, run.scheduledFor), now, EFFECT_KEPT_SLACK_MS);
  const recorded = await deps.leases.complete(run.runId, run.version, { status: 'SKIPPED', now, error: null, reason });
  if (recorded === 'fenced') return 'fenced';
  deps.telemetry.runEnded(run, 'SKIPPED', reason);
  await continueWorkflow(deps, run, { status: 'SKIPPED', reason });
  return 'skipped';
}

/**
 * A run of an external target is not called: after admission it is offered to external workers
 * (RUNNING -> QUEUED with an entry in the claimable index), who claim it over the API. Exactly-once
 * still checks the ledger first; at-most-once consumes the attempt at the claim.
 */
async function offerToExternalWorkers(deps: SchedulerDeps, job: Job, run: Run): Promise<ExecuteResult> {
  if (deliveryOf(run, job) === 'exactly-once') {
    const gate = await effectGate(deps, run);
    if (gate !== 'call') return gate;
  }
  if (!(await deps.claims.offer(run, deps.clock()))) return 'fenced';
  logger.info('run offered to external workers', { ...runFields(run), fencingToken: fencingTokenOf(run) });
  return 'offered';
}

/**
 * What a call needs read before it (an HTTP target's secret headers and signing secrets), or the
 * failure that ends the attempt uncalled (among them, an ARN the tenant is no longer granted).
 */
type PreparedCall =
  { readonly headers?: Record<string, string>; readonly signingSecrets?: readonly string[] } | { readonly failed: Extract<TargetResult, { ok: false }> };

async function prepareCall(deps: SchedulerDeps, job: Job, run: Run): Promise<PreparedCall> {
  // What the job names must still be the tenant's (decision 0194): a grant narrowed since the job
  // was written stops its calls here, before a secret is read or the target called.
  const refused = await callRefusal(deps, run.tenantId, job.target, runFields(run));
  if (refused) return { failed: { ok: false, timedOut: false, error: refused, notCalled: true } };
  if (job.target.kind !== 'http') return {};
  // Secret header values are read before anything else: a secret that cannot be read fails the
  // attempt (retryably) and the target is not called with a header missing.
  const resolved = await resolveHeaders(job.target.headers, deps.headerSecrets);
  if (!resolved.ok) {
    logger.warn('a header secret could not be read; attempt failed before the call', {
      ...runFields(run),
      errorCode: resolved.error.code,
      error: resolved.error.message,
    });
    return { failed: { ok: false, timedOut: false, error: resolved.error, notCalled: true } };
  }
  // An HTTP delivery is signed with the tenant's live secrets; unsigned is never the fallback of a
  // tenant that has one, so a failed read fails the attempt (retryable) before any call.
  try {
    return { headers: resolved.headers, signingSecrets: await deps.signingCache.of(run.tenantId) };
  } catch (error) {
    logger.warn('signing secrets unreadable; attempt failed before the call', {
      ...runFields(run),
      error: error instanceof Error ? error.message : String(error),
    });
    return {
      failed: {
        ok: false,
        timedOut: false,
        error: { code: 'SIGNING_UNAVAILABLE', message: 'the signing secrets could not be read; the target was not called', retryable: true },
        notCalled: true,
      },
    };
  }
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
  step: StepContext | undefined,
  { headers, signingSecrets }: { readonly headers?: Record<string, string>; readonly signingSecrets?: readonly string[] },
): Promise<TargetResult | 'lease-lost'> {
  const cancel = new AbortController();
  let lost = false;
  const intervalMs = Math.max(1_000, Math.min(60_000, Math.floor((run.leaseSeconds * 1000) / 3)));
  const timer = setInterval(() => {
    void (async () => {
      try {
        const alive = await deps.leases.heartbeat(run.runId, run.version, deps.clock());
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
    const result = await inSubsegment(`target call (${job.target.kind})`, traceAnnotationsOf(run), () =>
      deps.targets.invoke({
        job,
        run,
        payload,
        timeoutMs: (run.leaseSeconds - deps.config.leaseMarginSeconds) * 1000,
        signal: cancel.signal,
        egress: deps.egress,
        ...(signingSecrets?.length ? { signingSecrets } : {}),
        ...(headers ? { headers } : {}),
        traceparent: formatTraceparent(childSpanOf(traceContextOfRun(run))),
        ...(step ? { step, resultLimitBytes: resultLimitOf(deps) } : {}),
      }),
    );
    return lost ? 'lease-lost' : result;
  } finally {
    clearInterval(timer);
  }
}
