import { describe, expect, it } from 'vitest';
import type { JobSpec } from '../../lambdas/domain/job';
import { MISFIRE_THRESHOLD_MS, classifyUnpointed, decideOverlap, decideStart, occurrenceOnResume } from '../../lambdas/domain/recurrence';

const MINUTE = 60_000;
const t0 = Date.parse('2026-01-01T10:00:00Z');
const everyMinute = (misfirePolicy: JobSpec['misfirePolicy'], backfillLimit = 10) => ({
  schedule: { kind: 'cron' as const, expression: '* * * * *', timezone: 'UTC' },
  misfirePolicy,
  backfillLimit,
});

describe('starting an occurrence', () => {
  it('runs an occurrence on time and hands on to the next fire time', () => {
    expect(decideStart(everyMinute('fire-once'), { scheduledFor: t0, startedAt: t0 + 500 })).toEqual({
      execute: true,
      reason: null,
      successor: { scheduledFor: t0 + MINUTE },
    });
  });

  it('treats a start later than the threshold as a misfire', () => {
    expect(decideStart(everyMinute('skip'), { scheduledFor: t0, startedAt: t0 + MISFIRE_THRESHOLD_MS }).execute).toBe(true);
    expect(decideStart(everyMinute('skip'), { scheduledFor: t0, startedAt: t0 + MISFIRE_THRESHOLD_MS + 1 }).execute).toBe(false);
  });

  it('under fire-once runs the late occurrence once and skips to the first fire time after now', () => {
    const decision = decideStart(everyMinute('fire-once'), { scheduledFor: t0, startedAt: t0 + 10 * MINUTE + 1_000 });
    expect(decision.execute).toBe(true);
    expect(decision.successor).toEqual({ scheduledFor: t0 + 11 * MINUTE });
    expect(decision.reason).toMatch(/10 later missed occurrences skipped/);
  });

  it('under skip skips the late occurrence and goes on after now', () => {
    const decision = decideStart(everyMinute('skip'), { scheduledFor: t0, startedAt: t0 + 10 * MINUTE + 1_000 });
    expect(decision).toMatchObject({ execute: false, successor: { scheduledFor: t0 + 11 * MINUTE } });
  });

  it('under backfill runs missed occurrences in order until the cap, then jumps past now', () => {
    const policy = everyMinute('backfill', 3);
    const now = t0 + 10 * MINUTE + 1_000;
    const first = decideStart(policy, { scheduledFor: t0, startedAt: now });
    expect(first.successor).toEqual({ scheduledFor: t0 + MINUTE, backfillRemaining: 1 });
    const second = decideStart(policy, { scheduledFor: t0 + MINUTE, startedAt: now, backfillRemaining: 1 });
    expect(second.successor).toEqual({ scheduledFor: t0 + 2 * MINUTE, backfillRemaining: 0 });
    const third = decideStart(policy, { scheduledFor: t0 + 2 * MINUTE, startedAt: now, backfillRemaining: 0 });
    expect(third.successor).toEqual({ scheduledFor: t0 + 11 * MINUTE });
  });

  it('has no successor for a one-shot schedule', () => {
    expect(decideStart({ schedule: { kind: 'now' }, misfirePolicy: 'fire-once', backfillLimit: 10 }, { scheduledFor: t0, startedAt: t0 }).successor).toBeNull();
  });
});

describe('overlap', () => {
  it('proceeds when nothing runs or the policy allows overlap', () => {
    expect(decideOverlap('skip', 'r1', false)).toEqual({ action: 'proceed' });
    expect(decideOverlap('allow', 'r1', true)).toEqual({ action: 'proceed' });
  });
  it('maps each policy to its action while the previous run runs', () => {
    expect(decideOverlap('skip', 'r1', true).action).toBe('skip');
    expect(decideOverlap('buffer-one', 'r1', true).action).toBe('wait');
    expect(decideOverlap('cancel-running', 'r1', true).action).toBe('cancel-previous');
  });
});

describe('resuming a paused job', () => {
  const now = t0 + 10 * MINUTE + 30_000;
  it('keeps a pending occurrence that is still ahead', () => {
    expect(occurrenceOnResume(everyMinute('skip'), now + MINUTE, now)).toEqual({ scheduledFor: now + MINUTE, reason: null });
  });
  it('follows the misfire policy for an occurrence missed while paused', () => {
    expect(occurrenceOnResume(everyMinute('skip'), t0, now)?.scheduledFor).toBe(t0 + 11 * MINUTE);
    expect(occurrenceOnResume(everyMinute('fire-once'), t0, now)?.scheduledFor).toBe(t0 + 10 * MINUTE);
    expect(occurrenceOnResume(everyMinute('backfill'), t0, now)?.scheduledFor).toBe(t0);
  });
  it('fires once at the latest missed occurrence however many were missed (more than a listing of 1,000)', () => {
    const twoDays = 2 * 24 * 60 * MINUTE;
    expect(occurrenceOnResume(everyMinute('fire-once'), t0, t0 + twoDays + 30_000)?.scheduledFor).toBe(t0 + twoDays);
    // Skipped on request: the one before it.
    const skipping = { ...everyMinute('fire-once'), skippedOccurrences: [new Date(t0 + twoDays).toISOString()] };
    expect(occurrenceOnResume(skipping, t0, t0 + twoDays + 30_000)?.scheduledFor).toBe(t0 + twoDays - MINUTE);
    // A daily job paused for three years: its last day's.
    const daily = { ...everyMinute('fire-once'), schedule: { kind: 'cron' as const, expression: '0 9 * * *', timezone: 'UTC' } };
    expect(occurrenceOnResume(daily, t0, Date.parse('2029-03-04T12:00:00Z'))?.scheduledFor).toBe(Date.parse('2029-03-04T09:00:00Z'));
  });

  it('completes a one-shot job whose instant passed while paused under skip', () => {
    expect(occurrenceOnResume({ schedule: { kind: 'at', at: new Date(t0).toISOString() }, misfirePolicy: 'skip', backfillLimit: 10 }, t0, now)).toBeNull();
  });
});

describe('an occurrence its job does not point at (decision 0175)', () => {
  const job = { status: 'ACTIVE' as const, nextRunId: 'job_1.p.1', nextRunAt: '2026-01-01T00:05:00.000Z' };
  const after = { scheduledFor: '2026-01-01T00:06:00.000Z' };

  it("is the chain's unadopted successor when the job still points at the occurrence it follows", () => {
    expect(classifyUnpointed(job, after, 'job_1.p.1')).toBe('unadopted');
  });

  it('was replaced by an edit when the job points at another occurrence since, or has none', () => {
    // A PATCH re-planned the pending occurrence: the job points at the run it wrote.
    expect(classifyUnpointed({ ...job, nextRunId: 'job_1.n.1' }, after, 'job_1.p.1')).toBe('replaced');
    // A run planned when the job pointed at none (a create's first, a resume's) is not pointed at any more.
    expect(classifyUnpointed(job, after, null)).toBe('replaced');
    // The job points there still but is no longer waiting for a later occurrence: it was made
    // COMPLETED, or the occurrence is not after the pending one.
    expect(classifyUnpointed({ ...job, status: 'COMPLETED', nextRunAt: null }, after, 'job_1.p.1')).toBe('replaced');
    expect(classifyUnpointed(job, { scheduledFor: '2026-01-01T00:05:00.000Z' }, 'job_1.p.1')).toBe('replaced');
  });

  it('runs as it is when planned before the rule, or by no job write (a backfill)', () => {
    expect(classifyUnpointed(job, after, undefined)).toBe('other');
  });
});
