// A tenant's workflow and its versions as the workflow use cases read them: versions never change once
// written, so a process keeps the ones it read.
import { ConflictError, NotFoundError } from '../core/errors';
import type { Workflow, WorkflowVersion } from '../domain/workflow';
import type { WorkflowRun } from '../domain/workflow-run';
import { traceIdOf } from '../domain/trace-context';
import type { SchedulerDeps } from './deps';

/** The tenant's workflow, deleted or not (its reads go on showing it); a 404 when it has none of that id. */
export async function tenantWorkflow(deps: SchedulerDeps, tenantId: string, workflowId: string): Promise<Workflow> {
  const workflow = await deps.workflows.get(tenantId, workflowId);
  if (!workflow) throw new NotFoundError(`No workflow ${workflowId}`);
  return workflow;
}

/** The tenant's workflow to change or run: a 409 once it was deleted (decision 0149). */
export async function liveWorkflow(deps: SchedulerDeps, tenantId: string, workflowId: string): Promise<Workflow> {
  const workflow = await tenantWorkflow(deps, tenantId, workflowId);
  if (workflow.deletedAt) throw new ConflictError(`The workflow ${workflowId} was deleted at ${workflow.deletedAt}; create a new one`);
  return workflow;
}

/** The versions this process has read, by workflow and number. */
const versions = new Map<string, WorkflowVersion>();
export async function versionOf(deps: SchedulerDeps, workflowId: string, version: number): Promise<WorkflowVersion | null> {
  const key = `${workflowId}#${version}`;
  const known = versions.get(key);
  if (known) return known;
  const read = await deps.workflows.getVersion(workflowId, version);
  if (read) {
    if (versions.size >= 500) versions.delete(versions.keys().next().value ?? '');
    versions.set(key, read);
  }
  return read;
}

/** The fields that name a workflow run in a log line, its trace id among them (as `runFields` for a run). */
export function workflowRunFields(run: Pick<WorkflowRun, 'workflowRunId' | 'workflowId' | 'tenantId' | 'traceparent'>): Record<string, unknown> {
  return { workflowRunId: run.workflowRunId, workflowId: run.workflowId, tenantId: run.tenantId, traceId: traceIdOf(run.traceparent) };
}
