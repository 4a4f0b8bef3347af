// The fields that name a run in the worker's log lines, its trace id among them, so every line of
// a run's processing can be found by its trace (decision 0111).
import type { Run } from '../domain/run';
import type { TraceContext } from '../domain/trace-context';
import { newTraceContext, parseTraceparent, traceIdOf } from '../domain/trace-context';

export function runFields(run: Run): Record<string, unknown> {
  return {
    runId: run.runId,
    jobId: run.jobId,
    tenantId: run.tenantId,
    jobType: run.jobType,
    attempt: run.attempt,
    ...(run.traceparent ? { traceId: parseTraceparent(run.traceparent)?.traceId } : {}),
  };
}

/** The run's trace: the one it was made under, or (a run from before traces) a new one for this attempt. */
export function traceContextOfRun(run: Pick<Run, 'traceparent'>, now = Date.now()): TraceContext {
  return parseTraceparent(run.traceparent) ?? newTraceContext(now);
}

/** What a run's X-Ray subsegments are annotated with: its trace id first, to find them all by it. */
export function traceAnnotationsOf(run: Run): Record<string, string | number | undefined> {
  return { traceId: traceIdOf(run.traceparent), runId: run.runId, jobId: run.jobId, attempt: run.attempt };
}
