// A planned run's message is delayed from when it is sent, not from when it was planned.
import { describe, expect, it } from 'vitest';
import type { SchedulerDeps } from '../../lambdas/app/deps';
import type { RunPlan } from '../../lambdas/app/plan-run';
import { sendPlannedRun } from '../../lambdas/app/send-planned-run';
import type { Dispatch } from '../../lambdas/store/dispatch-queue';

describe('sendPlannedRun', () => {
  const dispatch: Dispatch = { runId: 'run-1', tenantId: 't', availableAt: 12_000, jobType: 'test' };
  const plan = { run: { runId: 'run-1' }, dispatch } as unknown as Pick<RunPlan, 'run' | 'dispatch'>;
  const depsAt = (clock: number, sent: number[]) =>
    ({
      clock: () => clock,
      dispatch: { send: (_dispatches: readonly Dispatch[], now: number) => Promise.resolve(void sent.push(now)) },
      telemetry: { runQueued: () => undefined },
    }) as unknown as SchedulerDeps;

  it('counts the delay from the send: the writes between the plan and it (3 s here) would make the run that late', async () => {
    const sent: number[] = [];
    await sendPlannedRun(depsAt(10_000, sent), plan, 7_000);
    expect(sent).toEqual([10_000]);
  });

  it('never from before the plan (a clock that reads earlier)', async () => {
    const sent: number[] = [];
    await sendPlannedRun(depsAt(5_000, sent), plan, 7_000);
    expect(sent).toEqual([7_000]);
  });
});
