// How long a finished run is kept (decision 0156): its expiry from its id, its end and the retention.
import { describe, expect, it } from 'vitest';
import { occurrenceOfRunId, runExpiresAtEpoch } from '../../lambdas/domain/retention';
import { runIdFor } from '../../lambdas/domain/run';
import { stepJobIdOf } from '../../lambdas/domain/workflow-jobs';

const DAY = 24 * 60 * 60;
const at = (iso: string) => Date.parse(iso);

describe('a finished run’s expiry', () => {
  it('reads the occurrence back from a run id, a step job’s dotted id too, and nothing from an id of another form', () => {
    expect(occurrenceOfRunId(runIdFor('job_abc', '2026-11-27T03:00:00.000Z', 2))).toEqual({ jobId: 'job_abc', at: at('2026-11-27T03:00:00.000Z') });
    const step = stepJobIdOf('wf_abc', 3, 'load');
    expect(occurrenceOfRunId(runIdFor(step, '2026-11-27T03:00:00.000Z', 1))?.jobId).toBe(step);
    expect(occurrenceOfRunId('not-a-run-id')).toBeUndefined();
    expect(occurrenceOfRunId('job.NOT_BASE36.1')).toBeUndefined();
  });

  it('is the retention after the run finished, or after its occurrence when that is later (a skipped future occurrence)', () => {
    const runId = runIdFor('job_abc', '2026-11-27T03:00:00.000Z', 1);
    const finished = at('2026-11-27T03:00:04.500Z');
    expect(runExpiresAtEpoch(runId, finished, 30)).toBe(Math.floor(finished / 1000) + 30 * DAY);
    const ahead = runIdFor('job_abc', '2027-06-01T00:00:00.000Z', 1);
    expect(runExpiresAtEpoch(ahead, at('2026-11-27T03:00:00.000Z'), 30)).toBe(at('2027-06-01T00:00:00.000Z') / 1000 + 30 * DAY);
  });

  it('is none when runs are kept forever (0), and none for a workflow step’s run (its workflow run’s retry reads it)', () => {
    const finished = at('2026-11-27T03:00:04.500Z');
    expect(runExpiresAtEpoch(runIdFor('job_abc', '2026-11-27T03:00:00.000Z', 1), finished, 0)).toBeUndefined();
    expect(runExpiresAtEpoch(runIdFor(stepJobIdOf('wf_abc', 1, 'load'), '2026-11-27T03:00:00.000Z', 1), finished, 30)).toBeUndefined();
  });
});
