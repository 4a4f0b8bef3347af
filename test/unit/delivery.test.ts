import { describe, expect, it } from 'vitest';
import { FENCING_ATTEMPT_FACTOR, fencingTokenOf } from '../../lambdas/domain/delivery';

describe('fencing tokens', () => {
  it('grow with every lease of a run', () => {
    expect(fencingTokenOf({ attempt: 1, version: 2 })).toBeGreaterThan(fencingTokenOf({ attempt: 1, version: 1 }));
  });

  it('grow across attempts of an occurrence, though a retry is a new run whose version starts again', () => {
    // Attempt 1 leased three times (given back twice), then its retry leased once.
    const leases = [
      { attempt: 1, version: 1 },
      { attempt: 1, version: 2 },
      { attempt: 1, version: 3 },
      { attempt: 2, version: 1 },
      { attempt: 3, version: 1 },
    ];
    const tokens = leases.map(fencingTokenOf);
    expect([...tokens].sort((a, b) => a - b)).toEqual(tokens);
    expect(new Set(tokens).size).toBe(tokens.length);
  });

  it('read as attempt and lease version', () => {
    expect(fencingTokenOf({ attempt: 2, version: 1 })).toBe(2 * FENCING_ATTEMPT_FACTOR + 1);
  });
});
