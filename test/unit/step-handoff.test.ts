// Which dependants a worker takes to run itself (decision 0179): due now, of its own pool, whose
// lease ends before its invocation does (with the margin for the outcome), ten at most; and the
// offer is in scope only inside `offeringHandoff`.
import { describe, expect, it } from 'vitest';
import type { RunPlan } from '../../lambdas/app/plan-run';
import { HANDOFF_MARGIN_MS, MAX_HANDED_OFF, StepHandoff, handoffInScope, offeringHandoff } from '../../lambdas/app/step-handoff';

const NOW = Date.parse('2026-11-28T00:00:00Z');

function plan(runId: string, options: { leaseSeconds?: number; jobType?: string; availableAt?: number; sent?: boolean } = {}): RunPlan {
  const run = { runId, tenantId: 't1', leaseSeconds: options.leaseSeconds ?? 330 };
  const dispatch = options.sent === false ? null : { runId, tenantId: 't1', availableAt: options.availableAt ?? NOW, jobType: options.jobType ?? 'etl' };
  return { run, extras: {}, dispatch } as unknown as RunPlan;
}

const poolOf = (jobType: string | undefined) => (jobType === 'gpu' ? 'gpu' : 'default');
const handoff = (until: number, pool = 'default') => new StepHandoff({ until, pool, poolOf, clock: () => NOW });

describe('StepHandoff', () => {
  it('takes a due run of its pool whose lease ends before the invocation, with the margin', () => {
    const edge = NOW + 330_000 + HANDOFF_MARGIN_MS;
    const offer = handoff(edge);
    expect(offer.take(plan('r1'))).toBe(true);
    expect(handoff(edge - 1).take(plan('r1'))).toBe(false);
    expect(offer.runs().map((taken) => taken.run.runId)).toEqual(['r1']);
  });

  it('declines a run of another pool, a run not due yet, and a run with no message to send', () => {
    const offer = handoff(NOW + 3_600_000);
    expect(offer.take(plan('gpu', { jobType: 'gpu' }))).toBe(false);
    expect(offer.take(plan('later', { availableAt: NOW + 1 }))).toBe(false);
    expect(offer.take(plan('scheduled', { sent: false }))).toBe(false);
    expect(offer.runs()).toEqual([]);
    // The gpu pool's worker takes the gpu run and not the default pool's.
    const gpu = handoff(NOW + 3_600_000, 'gpu');
    expect(gpu.take(plan('gpu', { jobType: 'gpu' }))).toBe(true);
    expect(gpu.take(plan('etl'))).toBe(false);
  });

  it(`takes ${MAX_HANDED_OFF} at most: a wide fan-out's rest is sent`, () => {
    const offer = handoff(NOW + 3_600_000);
    const taken = Array.from({ length: MAX_HANDED_OFF + 5 }, (_, index) => offer.take(plan(`r${index}`)));
    expect(taken.filter(Boolean)).toHaveLength(MAX_HANDED_OFF);
    expect(taken.slice(MAX_HANDED_OFF)).toEqual([false, false, false, false, false]);
  });

  it('is offered only inside offeringHandoff, through its awaits, and not after', async () => {
    const offer = handoff(NOW + 3_600_000);
    expect(handoffInScope()).toBeUndefined();
    const seen = await offeringHandoff(offer, async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      return handoffInScope();
    });
    expect(seen).toBe(offer);
    expect(handoffInScope()).toBeUndefined();
  });
});
