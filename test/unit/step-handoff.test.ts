// Which dependants a worker takes to run itself (decision 0179): due now, of its own pool, whose
// lease ends before its invocation does (with the margin for the outcome), ten at most; and the
// offer is in scope only inside `offeringHandoff`.
import { describe, expect, it } from 'vitest';
import type { SchedulerDeps } from '../../lambdas/app/deps';
import type { DispatchContext } from '../../lambdas/app/execute-run';
import type { RunPlan } from '../../lambdas/app/plan-run';
import {
  HANDOFF_MARGIN_MS,
  MAX_HANDED_OFF,
  StepHandoff,
  handoffInScope,
  leaseOfPlan,
  leasedPlan,
  offeringHandoff,
  runHandedOff,
} from '../../lambdas/app/step-handoff';
import { leaseCheckAt } from '../../lambdas/domain/time-gate';

const NOW = Date.parse('2026-11-28T00:00:00Z');

function plan(runId: string, options: { leaseSeconds?: number; jobType?: string; availableAt?: number; sent?: boolean } = {}): RunPlan {
  const run = { runId, tenantId: 't1', leaseSeconds: options.leaseSeconds ?? 330 };
  const dispatch = options.sent === false ? null : { runId, tenantId: 't1', availableAt: options.availableAt ?? NOW, jobType: options.jobType ?? 'etl' };
  return { run, extras: {}, dispatch } as unknown as RunPlan;
}

const poolOf = (jobType: string | undefined) => (jobType === 'gpu' ? 'gpu' : 'default');
const handoff = (until: number, pool = 'default') => new StepHandoff({ until, pool, poolOf, clock: () => NOW, owner: 'worker-1' });

describe('StepHandoff', () => {
  it('takes a due run of its pool whose lease ends before the invocation, with the margin', () => {
    const edge = NOW + 330_000 + HANDOFF_MARGIN_MS;
    const offer = handoff(edge);
    expect(offer.take(plan('r1'))).not.toBeNull();
    expect(handoff(edge - 1).take(plan('r1'))).toBeNull();
    expect(offer.runs().map((taken) => taken.run.runId)).toEqual(['r1']);
  });

  it('declines a run of another pool, a run not due yet, and a run with no message to send', () => {
    const offer = handoff(NOW + 3_600_000);
    expect(offer.take(plan('gpu', { jobType: 'gpu' }))).toBeNull();
    expect(offer.take(plan('later', { availableAt: NOW + 1 }))).toBeNull();
    expect(offer.take(plan('scheduled', { sent: false }))).toBeNull();
    expect(offer.runs()).toEqual([]);
    // The gpu pool's worker takes the gpu run and not the default pool's.
    const gpu = handoff(NOW + 3_600_000, 'gpu');
    expect(gpu.take(plan('gpu', { jobType: 'gpu' }))).not.toBeNull();
    expect(gpu.take(plan('etl'))).toBeNull();
  });

  it(`takes ${MAX_HANDED_OFF} at most: a wide fan-out's rest is sent`, () => {
    const offer = handoff(NOW + 3_600_000);
    const taken = Array.from({ length: MAX_HANDED_OFF + 5 }, (_, index) => offer.take(plan(`r${index}`)) !== null);
    expect(taken.filter(Boolean)).toHaveLength(MAX_HANDED_OFF);
    expect(taken.slice(MAX_HANDED_OFF)).toEqual([false, false, false, false, false]);
    // A run withdrawn (its write found it written) frees its place.
    offer.withdraw('r3');
    expect(offer.runs()).toHaveLength(MAX_HANDED_OFF - 1);
    expect(offer.take(plan('r-late'))).not.toBeNull();
  });

  it('keeps the run as its lease would make it, when it is written leased', () => {
    const offer = handoff(NOW + 3_600_000);
    const settings = { leaseMarginSeconds: 30, timeIndexShards: 4 };
    const written = offer.take(plan('r1'), (taken) => leasedPlan(taken, offer.owner, NOW, settings));
    expect(written?.run).toMatchObject({
      status: 'RUNNING',
      leaseOwner: 'worker-1',
      leaseExpiresAt: new Date(NOW + 330_000).toISOString(),
      startedAt: new Date(NOW).toISOString(),
    });
    expect(written?.extras.gate?.at).toBe(leaseCheckAt(NOW, settings));
    expect(offer.runs()).toEqual([written]);
  });

  it('answers the lease of a run written leased as the lease write would', () => {
    const base = plan('r1');
    const leased = leasedPlan({ ...base, run: { ...base.run, version: 0 }, extras: { budgetFrom: 2, inputs: { parents: { a: 1 } } } }, 'worker-1', NOW, {
      leaseMarginSeconds: 30,
      timeIndexShards: 4,
    });
    expect(leaseOfPlan(leased)).toEqual({ kind: 'leased', run: leased.run, payloadOverride: undefined, budgetFrom: 2, inputs: { parents: { a: 1 } } });
    expect(leased.run.version).toBe(1);
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

describe('runHandedOff', () => {
  const lanes: Record<string, string> = { high: 'q-high', normal: 'q-standard' };
  function queuedPlan(runId: string, priority: 'high' | 'normal', leaseSeconds: number): RunPlan {
    const run = { runId, tenantId: 't1', leaseSeconds, status: 'QUEUED', priority };
    return { run, extras: {}, dispatch: { runId, tenantId: 't1', availableAt: NOW, jobType: 'etl', priority } } as unknown as RunPlan;
  }
  const deps = {
    dispatch: { queueUrlFor: (_jobType: string | undefined, priority: string | undefined) => lanes[priority ?? 'normal'] },
  } as unknown as SchedulerDeps;

  it("runs each in its own lane, and gives the parent's receipt handle only to the longest lease of the parent's lane", async () => {
    const seen = new Map<string, DispatchContext>();
    const executeRun = (_deps: SchedulerDeps, runId: string, context: DispatchContext) => {
      seen.set(runId, context);
      return Promise.resolve('succeeded' as const);
    };
    const executeLeased = () => Promise.reject(new Error('none is leased'));
    const parent: DispatchContext = { tenantId: 't1', queueUrl: 'q-standard', receiptHandle: 'parent-handle', eagerUntil: NOW + 3_600_000 };
    // The high-priority run has the longest lease, but the handle is the standard lane's message.
    await runHandedOff(deps, [queuedPlan('r-high', 'high', 900), queuedPlan('r-short', 'normal', 60), queuedPlan('r-long', 'normal', 330)], parent, {
      executeRun,
      executeLeased,
    });
    expect(seen.get('r-high')).toMatchObject({ queueUrl: 'q-high', handedOff: true });
    expect(seen.get('r-high')?.receiptHandle).toBeUndefined();
    expect(seen.get('r-short')?.receiptHandle).toBeUndefined();
    expect(seen.get('r-long')).toMatchObject({ queueUrl: 'q-standard', receiptHandle: 'parent-handle' });
  });
});
