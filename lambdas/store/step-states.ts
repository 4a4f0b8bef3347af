// How a workflow run item keeps its steps' states (decision 0176). The item is rewritten at every
// step's outcome and billed on its whole size (1 write unit per KB), so each state keeps only what
// cannot be derived:
//
// - `status` and `attempt` as they are (the conditions of every write name them);
// - `runId` only when it is not the step's deterministic run for its attempt (a replay's run, kept
//   by a retry) or is null; absent, it is that deterministic run;
// - `s` and `f`, the start and the end, as epoch milliseconds, absent when not yet set;
// - `reason` only when set.
//
// States written before (every field under its full name, times as ISO strings, nulls kept) read
// the same: a reader takes either form, and a write replaces a step's whole state.
import type { StepState, StepStatus, WorkflowRun } from '../domain/workflow-run';
import { stepRunIdOf } from '../domain/workflow-jobs';

/** What names a step's deterministic runs: the workflow run's workflow, version and time. */
export type StepRunScope = Pick<WorkflowRun, 'workflowId' | 'version' | 'scheduledFor'>;

export function stepStateToItem(scope: StepRunScope, stepId: string, state: StepState): Record<string, unknown> {
  const item: Record<string, unknown> = { status: state.status, attempt: state.attempt };
  if (state.runId === null || state.runId !== stepRunIdOf(scope, stepId, state.attempt)) item.runId = state.runId;
  if (state.startedAt !== null) item.s = compactTime(state.startedAt);
  if (state.finishedAt !== null) item.f = compactTime(state.finishedAt);
  if (state.reason !== null) item.reason = state.reason;
  return item;
}

export function stepStatesToItem(scope: StepRunScope, steps: Readonly<Record<string, StepState>>): Record<string, Record<string, unknown>> {
  return Object.fromEntries(Object.entries(steps).map(([stepId, state]) => [stepId, stepStateToItem(scope, stepId, state)]));
}

export function stepStateFromItem(scope: StepRunScope, stepId: string, item: Record<string, unknown>): StepState {
  const attempt = typeof item.attempt === 'number' ? item.attempt : Number(item.attempt ?? 1);
  return {
    status: item.status as StepStatus,
    attempt,
    runId: 'runId' in item ? ((item.runId as string | null | undefined) ?? null) : stepRunIdOf(scope, stepId, attempt),
    startedAt: timeOf(item.s ?? item.startedAt),
    finishedAt: timeOf(item.f ?? item.finishedAt),
    reason: typeof item.reason === 'string' ? item.reason : null,
  };
}

export function stepStatesFromItem(scope: StepRunScope, steps: unknown): Record<string, StepState> {
  if (typeof steps !== 'object' || steps === null) return {};
  return Object.fromEntries(
    Object.entries(steps as Record<string, unknown>).map(([stepId, item]) => [
      stepId,
      stepStateFromItem(scope, stepId, typeof item === 'object' && item !== null ? (item as Record<string, unknown>) : {}),
    ]),
  );
}

/** An ISO time as epoch milliseconds when that keeps it exactly (8 bytes instead of 24), else as it is. */
function compactTime(iso: string): number | string {
  const ms = Date.parse(iso);
  return Number.isFinite(ms) && new Date(ms).toISOString() === iso ? ms : iso;
}

function timeOf(value: unknown): string | null {
  if (typeof value === 'number' && Number.isFinite(value)) return new Date(value).toISOString();
  return typeof value === 'string' ? value : null;
}
