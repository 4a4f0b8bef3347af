import { describe, expect, it } from 'vitest';
import { debounceStep } from '../../lambdas/domain/debounce';
import { triggerSchema } from '../../lambdas/api/schemas';

const now = Date.parse('2026-05-01T12:00:00Z');

describe('a debounced trigger', () => {
  it('opens a window of S seconds when none is open', () => {
    expect(debounceStep(null, now, 30)).toEqual({ kind: 'open', endsAt: now + 30_000 });
  });

  it('joins the open window until its end, which later triggers do not move', () => {
    const window = { runId: 'run-1', endsAt: now + 10_000 };
    expect(debounceStep(window, now, 30)).toEqual({ kind: 'join', runId: 'run-1' });
    expect(debounceStep(window, now + 9_999, 30)).toEqual({ kind: 'join', runId: 'run-1' });
  });

  it('opens the next window at and after the end of the last', () => {
    const window = { runId: 'run-1', endsAt: now };
    expect(debounceStep(window, now, 5)).toEqual({ kind: 'open', endsAt: now + 5_000 });
  });

  it('takes a whole number of seconds from 1 to 3600', () => {
    expect(triggerSchema.safeParse({ debounceSeconds: 1 }).success).toBe(true);
    expect(triggerSchema.safeParse({ debounceSeconds: 3600 }).success).toBe(true);
    for (const bad of [0, 3601, 2.5, '5']) expect(triggerSchema.safeParse({ debounceSeconds: bad }).success).toBe(false);
  });
});
