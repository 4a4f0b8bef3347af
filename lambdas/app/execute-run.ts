// Executes one dispatch message: lease the run, call its target, record the outcome under the
// lease's fencing version. A message that cannot lease its run is a duplicate, a stale message or
// an early one, and is acknowledged (the early one is sent again for its remaining delay).
import { logger } from '../core/logger';
import type { AttemptOutcome, Run, RunError } from '../domain/run';
import type { SchedulerDeps } from './deps';
import { admitRun } from './admit-run';

/** A message that arrives this close to its run's time waits in the worker rather than in SQS. */
const MAX_IN_WORKER_WAIT_MS = 2_000;

export type ExecuteResult =
  | 'skipped'
  | 'cancelled'
  | 'waiting'
  | 'succeeded'
  | 'failed'
  | 'timed-out'
  | 'fenced'
  | 'missing'
  | 'duplicate'
  | 'held'
  | 'requeued';

export async function executeRun(deps: SchedulerDeps, runId: string): Promise<ExecuteResult> {
  let lease = await deps.runs.lease(runId, { owner: deps.workerId, now: deps.clock() });
  // SQS delays are whole seconds (rounded down) and at most 900 s: a message may come a little
  // early. Wait out a short remainder here; send a longer one back to the queue.
  for (let round = 0; lease.kind === 'early'; round++) {
    const availableAt = Date.parse(lease.run.availableAt);
    const waitMs = availableAt - deps.clock();
    if (waitMs > MAX_IN_WORKER_WAIT_MS || round >= 3) {
      await deps.dispatch.send([{ runId, tenantId: lease.run.tenantId, availableAt }], deps.clock());
      logger.info('run not due yet; sent again for the remaining delay', { ...runFields(lease.run), waitMs });
      return 'requeued';
    }
    await sleep(Math.max(0, waitMs) + 1);
    lease = await deps.runs.lease(runId, { owner: deps.workerId, now: deps.clock() });
  }

  switch (lease.kind) {
    case 'missing':
      logger.warn('dispatch message for a run that does not exist; dropped', { runId });
      return 'missing';
    case 'finished':
      logger.info('duplicate dispatch message for a finished run; dropped', runFields(lease.run));
      return 'duplicate';
    case 'held':
      logger.info('run is leased by another worker; dropped this copy of its message', {
        ...runFields(lease.run),
        leaseOwner: lease.run.leaseOwner,
      });
      return 'held';
    case 'leased':
      break;
  }

  const { run } = lease;
  const leasedAt = Date.parse(run.startedAt ?? run.updatedAt);
  logger.info('run started', {
    ...runFields(run),
    status: run.status,
    leaseOwner: run.leaseOwner,
    fencingToken: run.version,
    startLagMs: leasedAt - Date.parse(run.scheduledFor),
  });

  const job = await deps.jobs.getAnyTenant(run.jobId);
  const admission = job ? await admitRun(deps, job, run, lease.backfillRemaining) : ({ kind: 'execute', reason: null } as const);
  if (admission.kind === 'stopped') return admission.outcome;

  const outcome = job
    ? await deps.targets.invoke({
        job,
        run,
        payload: lease.payloadOverride !== undefined ? lease.payloadOverride : job.payload,
        timeoutMs: (run.leaseSeconds - deps.config.leaseMarginSeconds) * 1000,
      })
    : ({
        ok: false,
        timedOut: false,
        error: { code: 'JOB_NOT_FOUND', message: `job ${run.jobId} no longer exists`, retryable: false },
      } as const);

  const status: AttemptOutcome = outcome.ok ? 'SUCCEEDED' : outcome.timedOut ? 'TIMED_OUT' : 'FAILED';
  const error: RunError | null = outcome.ok ? null : outcome.error;
  const finishedAt = deps.clock();
  const recorded = await deps.runs.complete(run.runId, run.version, { status, now: finishedAt, error, reason: admission.reason });
  if (recorded === 'fenced') {
    logger.warn('lease lost before the outcome was recorded; outcome discarded', { ...runFields(run), status, fencingToken: run.version });
    return 'fenced';
  }
  logger.info('run finished', {
    ...runFields(run),
    status,
    durationMs: finishedAt - leasedAt,
    errorCode: error?.code,
  });

  if (job?.overlapPolicy === 'buffer-one' && run.trigger === 'schedule') await wakeBuffered(deps, job.jobId, finishedAt);
  return status === 'SUCCEEDED' ? 'succeeded' : status === 'TIMED_OUT' ? 'timed-out' : 'failed';
}

/** Under buffer-one, the occurrence waiting behind this run may start now. */
async function wakeBuffered(deps: SchedulerDeps, jobId: string, now: number): Promise<void> {
  const job = await deps.jobs.getAnyTenant(jobId);
  const pending = job?.nextRunId ? await deps.runs.get(job.nextRunId) : null;
  if (pending?.status === 'QUEUED' && Date.parse(pending.availableAt) <= now) {
    await deps.dispatch.send([{ runId: pending.runId, tenantId: pending.tenantId, availableAt: now }], now);
  }
}

function runFields(run: Run): Record<string, unknown> {
  return { runId: run.runId, jobId: run.jobId, tenantId: run.tenantId, jobType: run.jobType, attempt: run.attempt };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
