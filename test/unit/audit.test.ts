import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AUDIT_ACTIONS, changesBetween } from '../../lambdas/domain/audit';

describe('audit change summaries', () => {
  const job = {
    jobId: 'job_1',
    tenantId: 't',
    name: 'nightly',
    status: 'ACTIVE',
    version: 3,
    updatedAt: '2026-01-01T00:00:00.000Z',
    nextRunAt: '2026-01-02T00:00:00.000Z',
    schedule: { kind: 'cron', expression: '0 9 * * *', timezone: 'UTC' },
    target: { kind: 'http', url: 'https://example.com/hook', method: 'POST', headers: { authorization: 'Bearer s3cret' } },
    payload: { card: '4111-1111' },
  };

  it('names the fields a change set, with their values before and after', () => {
    const after = { ...job, status: 'PAUSED', version: 4, updatedAt: '2026-01-01T01:00:00.000Z', nextRunAt: null };
    expect(changesBetween(job, after)).toEqual({ status: { before: 'ACTIVE', after: 'PAUSED' } });
    const rescheduled = { ...job, schedule: { kind: 'cron', expression: '0 10 * * *', timezone: 'UTC' } };
    expect(changesBetween(job, rescheduled)).toEqual({ schedule: { before: job.schedule, after: rescheduled.schedule } });
  });

  it('never holds a payload or a header value, only that they changed and the header names', () => {
    const after = { ...job, payload: { card: '5500-0000' }, target: { ...job.target, headers: { authorization: 'Bearer n3w', 'x-team': 'ops' } } };
    const changes = changesBetween(job, after);
    expect(changes).toEqual({
      payload: { before: '(set)', after: '(set)' },
      target: {
        before: { kind: 'http', url: 'https://example.com/hook', method: 'POST', headerNames: ['authorization'] },
        after: { kind: 'http', url: 'https://example.com/hook', method: 'POST', headerNames: ['authorization', 'x-team'], headersChanged: ['authorization'] },
      },
    });
    expect(JSON.stringify(changes)).not.toMatch(/s3cret|n3w|4111|5500/);
  });

  it('names a header whose value alone changed, and treats null and absent alike', () => {
    const swapped = { ...job, target: { ...job.target, headers: { authorization: 'Bearer n3w' } }, pauseNote: null };
    expect(changesBetween(job, swapped)).toEqual({
      target: {
        before: { kind: 'http', url: 'https://example.com/hook', method: 'POST', headerNames: ['authorization'] },
        after: { kind: 'http', url: 'https://example.com/hook', method: 'POST', headerNames: ['authorization'], headersChanged: ['authorization'] },
      },
    });
  });

  it('shows a created object as its fields after, and a deleted one as its fields before', () => {
    const created = changesBetween(undefined, job);
    expect(Object.keys(created)).toEqual(['name', 'payload', 'schedule', 'status', 'target']);
    expect(created.name).toEqual({ after: 'nightly' });
    expect(changesBetween(job, undefined).status).toEqual({ before: 'ACTIVE' });
    expect(JSON.stringify(created)).not.toContain('s3cret');
  });
});

describe('the audit trail in docs/api.md', () => {
  it('names every action the code records, and none it does not', () => {
    const api = readFileSync('docs/api.md', 'utf8');
    const section = api.slice(api.indexOf('## Audit trail'), api.indexOf('\n## ', api.indexOf('## Audit trail') + 1));
    const documented = new Set([...section.matchAll(/`([a-z-]+\.[a-z-]+)`/g)].map((match) => match[1]));
    expect(AUDIT_ACTIONS.filter((action) => !documented.has(action))).toEqual([]);
    expect([...documented].filter((action) => !(AUDIT_ACTIONS as readonly string[]).includes(action!))).toEqual([]);
  });
});
