// A step's newest run, found by its deterministic ids: the look past the recorded attempt reads on
// while the runs it finds reach the end of what it read (replays of replays add attempts without
// bound), and stops at the first attempt not written.
import { describe, expect, it } from 'vitest';
import type { SchedulerDeps } from '../../lambdas/app/deps';
import { newestStepRuns } from '../../lambdas/app/workflow-step-runs';
import type { Run } from '../../lambdas/domain/run';
import type { StepState, WorkflowRun } from '../../lambdas/domain/workflow-run';
import { stepJobIdOf, stepRunIdOf } from '../../lambdas/domain/workflow-jobs';

const workflowRun = { workflowId: 'wf_01abc', version: 1, scheduledFor: '2026-11-29T00:00:00.000Z' } as WorkflowRun;
const state = (attempt: number): StepState => ({
  status: 'DEAD',
  attempt,
  runId: stepRunIdOf(workflowRun, 'a', attempt),
  startedAt: null,
  finishedAt: null,
  reason: null,
});

/** Deps whose runs store holds the step runs of `attempts` for each step named, and counts its batch reads. */
function storeWith(attempts: Record<string, number[]>): { deps: SchedulerDeps; reads: string[][] } {
  const stored = new Map<string, Run>();
  for (const [stepId, list] of Object.entries(attempts)) {
    for (const attempt of list) {
      const runId = stepRunIdOf(workflowRun, stepId, attempt);
      stored.set(runId, { runId, jobId: stepJobIdOf(workflowRun.workflowId, workflowRun.version, stepId), attempt, status: 'DEAD' } as Run);
    }
  }
  const reads: string[][] = [];
  const runs = {
    getMany: (ids: readonly string[]) => {
      reads.push([...ids]);
      return Promise.resolve(ids.flatMap((id) => (stored.has(id) ? [stored.get(id)!] : [])));
    },
  };
  return { deps: { runs } as unknown as SchedulerDeps, reads };
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, index) => from + index);

describe("a step's newest run", () => {
  it('is found in one read when it is under 20 attempts past the recorded one (one at the 20th has the look read on, and find none)', async () => {
    const { deps, reads } = storeWith({ a: range(1, 20) });
    expect((await newestStepRuns(deps, workflowRun, [['a', state(1)]])).get('a')?.attempt).toBe(20);
    expect(reads).toHaveLength(1);
    const edge = storeWith({ a: range(1, 21) });
    expect((await newestStepRuns(edge.deps, workflowRun, [['a', state(1)]])).get('a')?.attempt).toBe(21);
    expect(edge.reads).toHaveLength(2);
  });

  it('is followed past the first 20 attempts when runs reach the end of what was read (replays of replays), for each step on its own', async () => {
    // `a` was replayed until attempt 26 (25 past its recorded one); `b` has 3 runs.
    const { deps, reads } = storeWith({ a: range(1, 26), b: range(1, 3) });
    const newest = await newestStepRuns(deps, workflowRun, [
      ['a', state(1)],
      ['b', { ...state(1), runId: stepRunIdOf(workflowRun, 'b', 1) }],
    ]);
    // Before, the look stopped at attempt 21: a retry then planned attempt 22, whose run exists.
    expect(newest.get('a')?.attempt).toBe(26);
    expect(newest.get('b')?.attempt).toBe(3);
    expect(reads).toHaveLength(2);
    // The second read is of `a` alone, from the attempt after the first read's last.
    expect(reads[1]![0]).toBe(stepRunIdOf(workflowRun, 'a', 22));
    expect(reads[1]!.every((id) => id.includes('.a.'))).toBe(true);
  });

  it('is followed up to 1,000 attempts past the recorded one, no further', async () => {
    const { deps } = storeWith({ a: range(5, 1_200) });
    expect((await newestStepRuns(deps, workflowRun, [['a', state(5)]])).get('a')?.attempt).toBe(1_005);
  });
});
