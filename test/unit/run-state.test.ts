import { describe, expect, it } from 'vitest';
import { RUN_STATUSES, canTransition, isTerminal, occurrenceKey, runIdFor, sourcesOf } from '../../lambdas/domain/run';

describe('run state machine', () => {
  it('has no way out of a terminal status', () => {
    for (const status of ['SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELLED', 'SKIPPED', 'DEAD'] as const) {
      expect(isTerminal(status)).toBe(true);
      for (const to of RUN_STATUSES) expect(canTransition(status, to)).toBe(false);
    }
  });

  it('leases only waiting runs; a running run is never leased twice', () => {
    expect(sourcesOf('RUNNING')).toEqual(['SCHEDULED', 'QUEUED']);
  });

  it('records outcomes only from RUNNING', () => {
    for (const outcome of ['SUCCEEDED', 'FAILED', 'TIMED_OUT', 'DEAD'] as const) expect(sourcesOf(outcome)).toEqual(['RUNNING']);
  });

  it('goes back to waiting from RUNNING only by giving a lease back, never to SCHEDULED', () => {
    expect(sourcesOf('QUEUED')).toEqual(['SCHEDULED', 'RUNNING']);
    expect(canTransition('RUNNING', 'SCHEDULED')).toBe(false);
    expect(canTransition('QUEUED', 'SCHEDULED')).toBe(false);
  });
});

describe('run identity', () => {
  it('gives the same run id for the same occurrence and attempt, and another for the next attempt', () => {
    const at = '2026-01-01T09:00:00.000Z';
    expect(runIdFor('job_a', at, 1)).toBe(runIdFor('job_a', at, 1));
    expect(runIdFor('job_a', at, 2)).not.toBe(runIdFor('job_a', at, 1));
    expect(runIdFor('job_a', '2026-01-01T09:00:00.001Z', 1)).not.toBe(runIdFor('job_a', at, 1));
  });

  it('keys the occurrence by job and fire time', () => {
    expect(occurrenceKey('job_a', '2026-01-01T09:00:00.000Z')).toBe('job_a#2026-01-01T09:00:00.000Z');
  });
});
