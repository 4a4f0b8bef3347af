// Debounced manual triggers (issue 19 item 10): triggers of a job that arrive within S seconds of
// the one that opened the window coalesce into one run, due at the window's end and carrying the
// last trigger's payload. The window is fixed at its opening (decision 0131): a steady stream of
// triggers still gets a run every S seconds, never none. The window's run takes the trace of the
// trigger that opened it (decision 0111); a trigger that joins names its own trace on its line.
import { ConflictError } from '../core/errors';
import { logger } from '../core/logger';
import { debounceStep } from '../domain/debounce';
import type { Job } from '../domain/job';
import type { Run } from '../domain/run';
import { traceIdOf } from '../domain/trace-context';
import type { SchedulerDeps } from './deps';
import { planRun } from './plan-run';
import { sendPlannedRun } from './send-planned-run';
import type { RunPayload } from '../domain/payload';

/** Tries when racing triggers change the window between the read and the write. */
const WINDOW_TRIES = 4;

export interface DebouncedTrigger {
  readonly run: Run;
  /** True when this trigger joined an open window; false when it opened one. */
  readonly coalesced: boolean;
}

export async function triggerDebounced(
  deps: SchedulerDeps,
  job: Job,
  /** The trigger's payload, already stored when it is large (none: the job's). */
  payload: RunPayload | undefined,
  debounceSeconds: number,
  traceparent?: string,
): Promise<DebouncedTrigger> {
  for (let attempt = 0; attempt < WINDOW_TRIES; attempt++) {
    const now = deps.clock();
    const window = await deps.debounce.get(job.jobId);
    const step = debounceStep(window, now, debounceSeconds);
    if (step.kind === 'join') {
      // The run waits for the window's end (a lease is conditioned on it): until then it takes the
      // newest payload. A run already started, or ended, leaves the window closed: open a new one.
      if (await deps.debounce.carryPayload(step.runId, payload, now)) {
        const run = await deps.runs.get(step.runId);
        if (run) {
          const requestTraceId = traceIdOf(traceparent);
          logger.info('trigger coalesced into the open window', {
            jobId: job.jobId,
            tenantId: job.tenantId,
            runId: run.runId,
            traceId: traceIdOf(run.traceparent),
            // This request's own trace, when it is not the run's: where that trace went.
            ...(requestTraceId !== traceIdOf(run.traceparent) ? { requestTraceId } : {}),
          });
          return { run, coalesced: true };
        }
      }
    }
    const endsAt = step.kind === 'open' ? step.endsAt : now + debounceSeconds * 1000;
    const plan = planRun(
      deps.config,
      job,
      { scheduledFor: now, attempt: 1, trigger: 'manual', availableAt: endsAt, traceparent, ...(payload ? { payload } : {}) },
      now,
    );
    if (await deps.debounce.open(plan, endsAt, window)) {
      deps.telemetry.runCreated(plan.run);
      await sendPlannedRun(deps, plan, now);
      logger.info('debounce window opened', {
        jobId: job.jobId,
        tenantId: job.tenantId,
        runId: plan.run.runId,
        traceId: traceIdOf(plan.run.traceparent),
        endsAt: new Date(endsAt).toISOString(),
      });
      return { run: plan.run, coalesced: false };
    }
  }
  throw new ConflictError('Other triggers of this job changed its debounce window meanwhile; try again');
}
