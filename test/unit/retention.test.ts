// How long a finished run is kept (decision 0156): its expiry from its id, its end and the retention;
// a workflow run, its steps' runs and the exactly-once ledger likewise (decision 0159).
import { describe, expect, it } from 'vitest';
import { effectExpiresAtEpoch, latestWorkflowRetry, occurrenceOfRunId, runExpiresAtEpoch, workflowRunExpiresAtEpoch } from '../../lambdas/domain/retention';
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

  it('is none when runs are kept forever (0); a workflow step’s run has one as any run (decision 0159)', () => {
    const finished = at('2026-11-27T03:00:04.500Z');
    expect(runExpiresAtEpoch(runIdFor('job_abc', '2026-11-27T03:00:00.000Z', 1), finished, 0)).toBeUndefined();
    expect(runExpiresAtEpoch(runIdFor(stepJobIdOf('wf_abc', 1, 'load'), '2026-11-27T03:00:00.000Z', 1), finished, 30)).toBe(
      Math.floor(finished / 1000) + 30 * DAY,
    );
  });
});

describe('a workflow run’s and the ledger’s expiry (decision 0159)', () => {
  const scheduledFor = at('2026-11-27T03:00:00.000Z');

  it('keeps an ended workflow run the retention after it ended, or after its time when that is later; forever with 0', () => {
    const ended = at('2026-11-28T10:00:00.400Z');
    expect(workflowRunExpiresAtEpoch(scheduledFor, ended, 30)).toBe(Math.floor(ended / 1000) + 30 * DAY);
    expect(workflowRunExpiresAtEpoch(at('2027-01-01T00:00:00.000Z'), ended, 30)).toBe(at('2027-01-01T00:00:00.000Z') / 1000 + 30 * DAY);
    expect(workflowRunExpiresAtEpoch(scheduledFor, ended, 0)).toBeUndefined();
  });

  it('allows a retry until a day before the first of its steps’ runs can leave (they all ended after its time)', () => {
    expect(latestWorkflowRetry(scheduledFor, 30)).toBe(scheduledFor + 29 * DAY * 1000);
    const earliestStepRunExpiry = runExpiresAtEpoch(runIdFor(stepJobIdOf('wf_abc', 1, 'load'), '2026-11-27T03:00:00.000Z', 1), scheduledFor, 30)!;
    expect(earliestStepRunExpiry * 1000 - latestWorkflowRetry(scheduledFor, 30)!).toBe(DAY * 1000);
    expect(latestWorkflowRetry(scheduledFor, 0)).toBeUndefined();
  });

  it('keeps an occurrence’s exactly-once ledger entry as long as its runs: the retention after the occurrence or its recording', () => {
    const recorded = at('2026-11-27T03:00:02.000Z');
    expect(effectExpiresAtEpoch(scheduledFor, recorded, 30)).toBe(recorded / 1000 + 30 * DAY);
    expect(effectExpiresAtEpoch(scheduledFor, recorded, 0)).toBeUndefined();
  });
});
