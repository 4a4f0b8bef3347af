import { describe, expect, it } from 'vitest';
import type { StepState, WorkflowRun } from '../../lambdas/domain/workflow-run';
import { graphIssues, MAX_WORKFLOW_STEPS, workflowSpecSchema } from '../../lambdas/domain/workflow';
import { initialSteps, planProgress, stepsForRetry } from '../../lambdas/domain/workflow-run';
import { parseScheduleJobId, parseStepJobId, scheduleFieldsOf, scheduleJobIdOf, stepJobIdOf } from '../../lambdas/domain/workflow-jobs';

const s = (id: string, dependsOn: string[] = [], runIf: 'all-succeeded' | 'all-done' = 'all-succeeded') => ({ id, dependsOn, runIf });
const state = (status: StepState['status'], attempt = 1): StepState => ({
  status,
  attempt,
  runId: status === 'WAITING' || status === 'NOT_STARTED' ? null : `r-${attempt}`,
  startedAt: null,
  finishedAt: null,
  reason: null,
});
const runOf = (steps: Record<string, StepState>, status: WorkflowRun['status'] = 'RUNNING') => ({ status, steps });

describe('a workflow definition', () => {
  it('names the step of each graph error', () => {
    expect(graphIssues([s('a'), s('a')]).map((i) => i.message)).toEqual(['step a: the id is used twice (first at steps[0])']);
    expect(graphIssues([s('a', ['x'])]).map((i) => i.message)).toEqual(['step a: depends on unknown step x']);
    expect(graphIssues([s('a', ['a'])]).map((i) => i.message)).toEqual(['step a: is on a cycle (a -> a)']);
    expect(graphIssues([s('a', ['b']), s('b', ['a']), s('c', ['b']), s('d')]).map((i) => i.message)).toEqual([
      'step a: is on a cycle (a -> b -> a)',
      'step b: is on a cycle (b -> a -> b)',
      'step c: is unreachable: it depends on step b, which is on a cycle',
    ]);
    expect(graphIssues([s('a'), s('b', ['a']), s('c', ['a', 'b'])])).toEqual([]);
  });

  it(`takes up to ${MAX_WORKFLOW_STEPS} steps, with defaults`, () => {
    const steps = Array.from({ length: MAX_WORKFLOW_STEPS }, (_, i) => ({ id: `s${i}`, target: { kind: 'http', url: 'https://example.com' } }));
    const parsed = workflowSpecSchema.parse({ name: 'w', steps });
    expect(parsed.steps[0]).toMatchObject({ runIf: 'all-succeeded', dependsOn: [], delivery: 'at-least-once', timeoutSeconds: 300 });
    expect(workflowSpecSchema.safeParse({ name: 'w', steps: [...steps, { id: 'x', target: { kind: 'http', url: 'https://example.com' } }] }).success).toBe(
      false,
    );
    expect(workflowSpecSchema.safeParse({ name: 'w', steps: [{ id: 'a.b', target: { kind: 'http', url: 'https://example.com' } }] }).success).toBe(false);
  });

  it('takes a schedule of any kind a job takes, with its policies; the policies alone are refused', () => {
    const steps = [{ id: 'a', target: { kind: 'http', url: 'https://example.com' } }];
    for (const schedule of [
      { kind: 'now' },
      { kind: 'delay', seconds: 5 },
      { kind: 'at', at: '2030-01-01T00:00:00Z' },
      { kind: 'cron', expression: '0 9 * * MON', timezone: 'Europe/Paris', startAt: '2030-01-01T00:00:00Z', endAt: '2031-01-01T00:00:00Z' },
    ]) {
      expect(workflowSpecSchema.safeParse({ name: 'w', steps, schedule, overlapPolicy: 'skip', misfirePolicy: 'backfill', backfillLimit: 3 }).success).toBe(
        true,
      );
    }
    const alone = workflowSpecSchema.safeParse({ name: 'w', steps, misfirePolicy: 'skip' });
    expect(alone.success).toBe(false);
    expect(alone.error?.issues.map((issue) => issue.path.join('.'))).toEqual(['misfirePolicy']);
    // The job's own defaults for what the definition leaves out.
    const parsed = workflowSpecSchema.parse({ name: 'w', steps, schedule: { kind: 'cron', expression: '* * * * *' } });
    expect(scheduleFieldsOf(parsed)).toEqual({
      schedule: { kind: 'cron', expression: '* * * * *', timezone: 'UTC' },
      overlapPolicy: 'allow',
      misfirePolicy: 'fire-once',
      backfillLimit: 10,
      priority: 'normal',
      type: 'workflow',
      notify: null,
    });
    // Of the workflow's notifications, its schedule job raises only `skipped` (an occurrence a policy skipped).
    const destination = { kind: 'http', url: 'https://example.com/hook' } as const;
    expect(scheduleFieldsOf({ ...parsed, notify: { events: ['failed', 'skipped'], destination } })?.notify).toEqual({ events: ['skipped'], destination });
    expect(scheduleFieldsOf({ ...parsed, notify: { events: ['failed'], destination } })?.notify).toBeNull();
    expect(scheduleFieldsOf(workflowSpecSchema.parse({ name: 'w', steps }))).toBeNull();
    expect(parseScheduleJobId(scheduleJobIdOf('wf_01abc'))).toEqual({ workflowId: 'wf_01abc' });
    expect(parseStepJobId(scheduleJobIdOf('wf_01abc'))).toBeNull();
    expect(parseScheduleJobId(stepJobIdOf('wf_01abc', 1, 'schedule'))).toBeNull();
  });

  it('gives each step of a version a job id the store can read back', () => {
    expect(parseStepJobId(stepJobIdOf('wf_01abc', 3, 'load-db'))).toEqual({ workflowId: 'wf_01abc', version: 3, stepId: 'load-db' });
    expect(parseStepJobId('job_01abc')).toBeNull();
  });
});

describe('the progress of a workflow run', () => {
  const diamond = { steps: [s('A'), s('B', ['A']), s('C', ['A']), s('D', ['B', 'C'])] };

  it('starts the steps without dependencies first, and a step once all its dependencies succeeded', () => {
    expect(planProgress(diamond, runOf(initialSteps(diamond)))).toEqual({ start: ['A'], notStarted: [], finished: null });
    const afterA = { ...initialSteps(diamond), A: state('SUCCEEDED') };
    expect(planProgress(diamond, runOf(afterA)).start).toEqual(['B', 'C']);
    expect(planProgress(diamond, runOf({ ...afterA, B: state('SUCCEEDED'), C: state('STARTED') })).start).toEqual([]);
    expect(planProgress(diamond, runOf({ ...afterA, B: state('SUCCEEDED'), C: state('SUCCEEDED') })).start).toEqual(['D']);
  });

  it('records the dependants of a failed step as not started, with the reason, down the graph', () => {
    const graph = { steps: [s('A'), s('B', ['A']), s('C', ['B']), s('cleanup', ['B'], 'all-done')] };
    const plan = planProgress(graph, runOf({ A: state('SUCCEEDED'), B: state('DEAD'), C: state('WAITING'), cleanup: state('WAITING') }));
    expect(plan).toEqual({ start: ['cleanup'], notStarted: [{ stepId: 'C', reason: 'dependency B ended DEAD' }], finished: null });
    const chain = { steps: [s('A'), s('B', ['A']), s('C', ['B'])] };
    expect(planProgress(chain, runOf({ A: state('CANCELLED'), B: state('WAITING'), C: state('WAITING') })).notStarted).toEqual([
      { stepId: 'B', reason: 'dependency A ended CANCELLED' },
      { stepId: 'C', reason: 'dependency B did not start' },
    ]);
  });

  it('ends SUCCEEDED when every step succeeded, FAILED naming the failed steps otherwise, and moves nothing once ended', () => {
    const graph = { steps: [s('A'), s('B', ['A']), s('cleanup', ['A'], 'all-done')] };
    expect(planProgress(graph, runOf({ A: state('SUCCEEDED'), B: state('SUCCEEDED'), cleanup: state('SUCCEEDED') })).finished).toEqual({
      status: 'SUCCEEDED',
      failedSteps: [],
    });
    expect(planProgress(graph, runOf({ A: state('DEAD'), B: state('NOT_STARTED'), cleanup: state('SUCCEEDED') })).finished).toEqual({
      status: 'FAILED',
      failedSteps: ['A'],
    });
    expect(planProgress(graph, runOf(initialSteps(graph), 'CANCELLED'))).toEqual({ start: [], notStarted: [], finished: null });
  });

  it('a FAILED run names a step that did not start for a reason of its own (a dependency’s run had left), not the dependants of a failed step', () => {
    // B's dependency A succeeded, but its run had left (RUN_RETENTION_DAYS): B never started, and
    // nothing else failed. Before, the run ended FAILED with `failedSteps: []`.
    const graph = { steps: [s('A'), s('B', ['A']), s('C', ['B']), s('cleanup', ['A'], 'all-done')] };
    expect(
      planProgress(graph, runOf({ A: state('SUCCEEDED'), B: state('NOT_STARTED'), C: state('NOT_STARTED'), cleanup: state('SUCCEEDED') })).finished,
    ).toEqual({ status: 'FAILED', failedSteps: ['B'] });
    // A cleanup step (all-done) not started is not explained by its dependency's failure: named too.
    expect(planProgress(graph, runOf({ A: state('DEAD'), B: state('NOT_STARTED'), C: state('NOT_STARTED'), cleanup: state('NOT_STARTED') })).finished).toEqual({
      status: 'FAILED',
      failedSteps: ['A', 'cleanup'],
    });
  });

  it('a retry keeps succeeded steps and starts the others at their next attempt', () => {
    const retried = stepsForRetry({ steps: { A: state('SUCCEEDED'), B: state('DEAD', 2), C: state('NOT_STARTED') } });
    expect(retried.A).toEqual(state('SUCCEEDED'));
    expect(retried.B).toMatchObject({ status: 'WAITING', attempt: 3, runId: null });
    expect(retried.C).toMatchObject({ status: 'WAITING', attempt: 1, runId: null });
  });

  it("a retry takes a dead step's replay as the step's own: succeeded, under way, or ended (the next attempt comes after it)", () => {
    const seen = (status: 'SUCCEEDED' | 'RUNNING' | 'DEAD', attempt: number) => ({ runId: `r-${attempt}`, attempt, status, startedAt: 'S', finishedAt: 'F' });
    const steps = { A: state('DEAD', 1), B: state('DEAD', 1), C: state('DEAD', 1), D: state('DEAD', 2), E: state('NOT_STARTED') };
    const retried = stepsForRetry({ steps }, { A: seen('SUCCEEDED', 2), B: seen('RUNNING', 2), C: seen('DEAD', 4), D: seen('DEAD', 2) });
    expect(retried.A).toMatchObject({ status: 'SUCCEEDED', attempt: 2, runId: 'r-2', finishedAt: 'F' });
    expect(retried.B).toMatchObject({ status: 'STARTED', attempt: 2, runId: 'r-2', finishedAt: null });
    expect(retried.C).toMatchObject({ status: 'WAITING', attempt: 5, runId: null });
    // The newest run is the step's own last attempt: no replay, the next attempt as before.
    expect(retried.D).toMatchObject({ status: 'WAITING', attempt: 3, runId: null });
    expect(retried.E).toMatchObject({ status: 'WAITING', attempt: 1 });
  });

  it('a retry takes a started step whose own run succeeded (its outcome never recorded) as succeeded, and runs it again otherwise', () => {
    const seen = (status: 'SUCCEEDED' | 'DEAD', attempt: number) => ({ runId: `r-${attempt}`, attempt, status, startedAt: 'S', finishedAt: 'F' });
    const retried = stepsForRetry({ steps: { A: state('STARTED', 1), B: state('STARTED', 1) } }, { A: seen('SUCCEEDED', 1), B: seen('DEAD', 1) });
    expect(retried.A).toMatchObject({ status: 'SUCCEEDED', attempt: 1, runId: 'r-1', finishedAt: 'F' });
    expect(retried.B).toMatchObject({ status: 'WAITING', attempt: 2, runId: null });
  });
});
