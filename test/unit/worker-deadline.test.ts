// The worker's invocation deadline (decision 0179): from the Lambda context's remaining time, and
// none where a runtime gives no usable answer, so that nothing is handed on without a bound.
import { describe, expect, it } from 'vitest';
import { eagerUntilOf } from '../../lambdas/worker/adapter';

const deps = { clock: () => 1_000_000 };

describe('eagerUntilOf', () => {
  it('is now plus the remaining time', () => {
    expect(eagerUntilOf(deps, { getRemainingTimeInMillis: () => 60_000 })).toEqual({ eagerUntil: 1_060_000 });
  });

  it('is absent without a context, or with a remaining time that is not a positive number', () => {
    expect(eagerUntilOf(deps, undefined)).toEqual({});
    for (const remaining of [Number.NaN, 0, -5, Number.POSITIVE_INFINITY]) {
      expect(eagerUntilOf(deps, { getRemainingTimeInMillis: () => remaining })).toEqual({});
    }
    expect(eagerUntilOf(deps, {} as { getRemainingTimeInMillis: () => number })).toEqual({});
  });
});
