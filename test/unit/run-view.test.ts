// A run as the store hands it out (and the API shows it) is built from the run's own fields, not by
// stripping what the item keeps beside them: a bookkeeping attribute added to run items later
// (as the lease token of external workers once was) cannot leak.
import { describe, expect, it } from 'vitest';
import type { Run } from '../../lambdas/domain/run';
import { RUN_FIELDS } from '../../lambdas/domain/run';
import { itemToRun, runToItem } from '../../lambdas/store/run-items';

const run: Run = {
  runId: 'job_1.occ.1',
  jobId: 'job_1',
  tenantId: 't',
  jobType: 'report',
  priority: 'high',
  scheduledFor: '2026-01-01T00:00:00.000Z',
  attempt: 1,
  status: 'RUNNING',
  availableAt: '2026-01-01T00:00:00.000Z',
  enqueuedAt: '2026-01-01T00:00:00.100Z',
  startedAt: '2026-01-01T00:00:00.200Z',
  finishedAt: null,
  leaseOwner: 'worker-1',
  leaseExpiresAt: '2026-01-01T00:05:00.200Z',
  version: 3,
  leaseSeconds: 300,
  progress: { done: 2 },
  error: null,
  reason: null,
  idempotencyKey: 'job_1#2026-01-01T00:00:00.000Z',
  trigger: 'schedule',
  delivery: 'at-least-once',
  consumedAt: null,
  result: { rows: 12 },
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.200Z',
};

describe('a run read from its item', () => {
  it('is the run that was written, whatever bookkeeping the item keeps beside it', () => {
    const item = {
      ...runToItem(run, {
        payloadOverride: { a: 1 },
        gate: { at: Date.parse('2026-01-01T00:06:00.000Z'), shards: 4 },
        backfillRemaining: 2,
        budgetFrom: 1,
        checkpoint: { page: 3 },
      }),
      leaseToken: 'lease-token-secret-0123456789',
      claimTenant: 't',
      claimSort: 'report#2026-01-01T00:00:00.000Z#job_1.occ.1',
      deadTenantId: 't',
      deadSort: '2026-01-01T00:00:01.000Z#job_1.occ.1',
      // An attribute a later change might add to run items and forget to hide.
      workerSecret: 'never-shown',
    };
    const read = itemToRun(item);
    expect(read).toEqual(run);
    expect(Object.keys(read).every((field) => (RUN_FIELDS as readonly string[]).includes(field))).toBe(true);
    expect(JSON.stringify(read)).not.toMatch(/lease-token-secret|never-shown|payloadOverride|gateKey|checkpoint/);
  });

  it('keeps a field a run may lack absent, and reads the replay a run was replayed as', () => {
    const { priority: _p, delivery: _d, consumedAt: _c, result: _r, ...older } = run;
    const read = itemToRun({ ...runToItem(older), replayedAs: 'job_1.occ.2' });
    expect(read).toEqual({ ...older, replayedAs: 'job_1.occ.2' });
    expect(Object.keys(read)).not.toContain('priority');
    expect(Object.keys(read)).not.toContain('result');
  });

  it("lists a job's run under its job, and keeps a workflow step's run out of the byJob index (decision 0174)", () => {
    expect(runToItem(run).jobSort).toBe('2026-01-01T00:00:00.000Z#0001');
    // A step's job (`<workflowId>.v<version>.<stepId>`) is listed by no route: its runs carry no
    // byJob key, and are still the tenant's runs.
    const step = runToItem({ ...run, runId: 'wf_1.v2.load.occ.1', jobId: 'wf_1.v2.load' });
    expect(step).not.toHaveProperty('jobSort');
    expect(step.jobId).toBe('wf_1.v2.load');
    expect(step.tenantRunSort).toBe('2026-01-01T00:00:00.000Z#wf_1.v2.load.occ.1');
    // A scheduled workflow's schedule job is listed (the workflow's recent occurrences): its runs keep it.
    expect(runToItem({ ...run, jobId: 'wf_1.schedule' }).jobSort).toBe('2026-01-01T00:00:00.000Z#0001');
  });
});
