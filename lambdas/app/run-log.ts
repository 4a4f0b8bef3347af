// The fields that name a run in the worker's log lines.
import type { Run } from '../domain/run';

export function runFields(run: Run): Record<string, unknown> {
  return { runId: run.runId, jobId: run.jobId, tenantId: run.tenantId, jobType: run.jobType, attempt: run.attempt };
}
