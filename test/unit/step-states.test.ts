// How a workflow run item keeps its steps' states (decision 0176): what cannot be derived, in either
// the compact form or the form written before.
import { describe, expect, it } from 'vitest';
import type { StepState } from '../../lambdas/domain/workflow-run';
import { stepRunIdOf } from '../../lambdas/domain/workflow-jobs';
import { stepStateFromItem, stepStatesFromItem, stepStatesToItem, stepStateToItem } from '../../lambdas/store/step-states';

const scope = { workflowId: 'wf_01m8a0b1c2d3e4f5g6h7j8k9m0', version: 3, scheduledFor: '2026-11-27T10:00:00.000Z' };
const started = '2026-11-27T10:00:01.113Z';
const finished = '2026-11-27T10:00:02.968Z';

describe('a step state as the workflow run item keeps it', () => {
  it("leaves out the step's deterministic run for its attempt, its nulls, and keeps its times as epoch milliseconds", () => {
    const state: StepState = {
      status: 'SUCCEEDED',
      attempt: 2,
      runId: stepRunIdOf(scope, 'load', 2),
      startedAt: started,
      finishedAt: finished,
      reason: null,
    };
    const item = stepStateToItem(scope, 'load', state);
    expect(item).toEqual({ status: 'SUCCEEDED', attempt: 2, s: Date.parse(started), f: Date.parse(finished) });
    expect(stepStateFromItem(scope, 'load', item)).toEqual(state);
  });

  it("keeps a run that is not the attempt's deterministic one (a replay's, kept by a retry), a null run and a reason", () => {
    const replayed: StepState = { status: 'SUCCEEDED', attempt: 1, runId: 'job_replay.mwyu93k0.4', startedAt: started, finishedAt: finished, reason: null };
    const ruledOut: StepState = { status: 'NOT_STARTED', attempt: 1, runId: null, startedAt: null, finishedAt: finished, reason: 'extract failed' };
    const waiting: StepState = { status: 'WAITING', attempt: 1, runId: null, startedAt: null, finishedAt: null, reason: null };
    const steps = { load: replayed, report: ruledOut, cleanup: waiting };
    const item = stepStatesToItem(scope, steps);
    expect(item.load).toMatchObject({ runId: 'job_replay.mwyu93k0.4' });
    expect(item.report).toEqual({ status: 'NOT_STARTED', attempt: 1, runId: null, f: Date.parse(finished), reason: 'extract failed' });
    expect(item.cleanup).toEqual({ status: 'WAITING', attempt: 1, runId: null });
    expect(stepStatesFromItem(scope, item)).toEqual(steps);
  });

  it('keeps a time that epoch milliseconds would not give back exactly as it is', () => {
    const state: StepState = { status: 'STARTED', attempt: 1, runId: null, startedAt: '2026-11-27T10:00:01Z', finishedAt: null, reason: null };
    expect(stepStateToItem(scope, 'load', state)).toMatchObject({ s: '2026-11-27T10:00:01Z' });
    expect(stepStateFromItem(scope, 'load', stepStateToItem(scope, 'load', state))).toEqual(state);
  });

  it('reads a state written before (every field by its full name, times as ISO text, nulls kept) as it was', () => {
    const before = {
      status: 'STARTED',
      attempt: 1,
      runId: stepRunIdOf(scope, 'load', 1),
      startedAt: started,
      finishedAt: null,
      reason: null,
    };
    expect(stepStateFromItem(scope, 'load', before)).toEqual(before);
    expect(stepStatesFromItem(scope, { load: before, extract: { ...before, runId: null, status: 'WAITING', startedAt: null } })).toEqual({
      load: before,
      extract: { ...before, runId: null, status: 'WAITING', startedAt: null },
    });
  });
});
