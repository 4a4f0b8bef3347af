// The audit trail through the API: who paused job X, from the entries the API appended, and what a
// PATCH changed, with no payload or header value in any entry.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyIdOf } from '../../lambdas/store/api-keys-repository';
import type { Scheduler, TargetServer } from './harness';
import { jobBody, startScheduler, startTarget } from './harness';

describe('audit trail', () => {
  let scheduler: Scheduler;
  let target: TargetServer;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
    target = await startTarget();
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  it('answers who paused job X, and what each change did', async () => {
    const body = jobBody(target.url, {
      name: 'audited',
      schedule: { kind: 'cron', expression: '0 9 * * *', timezone: 'UTC' },
      target: { kind: 'http', url: target.url, headers: { authorization: 'Bearer audit-s3cret' } },
      payload: { card: 'payload-marker-4111' },
    });
    const created = await scheduler.api('POST', '/v1/jobs', body);
    const jobId = created.body.job.jobId as string;
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/pause`)).status).toBe(200);
    expect((await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { timeoutSeconds: 120, payload: { card: 'payload-marker-5500' } })).status).toBe(200);
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/resume`)).status).toBe(200);

    const trail = await scheduler.api('GET', `/v1/audit?objectId=${jobId}`);
    expect(trail.status).toBe(200);
    expect(trail.body.items.map((entry: { action: string }) => entry.action)).toEqual(['job.resume', 'job.update', 'job.pause', 'job.create']);
    const paused = trail.body.items.find((entry: { action: string }) => entry.action === 'job.pause');
    // Who: the caller's key id (never the key), when, and what changed.
    expect(paused).toMatchObject({
      actor: keyIdOf(scheduler.apiKey),
      tenantId: scheduler.tenantId,
      objectId: jobId,
      changes: { status: { before: 'ACTIVE', after: 'PAUSED' } },
    });
    expect(Date.parse(paused.at)).toBeGreaterThan(Date.now() - 60_000);
    const updated = trail.body.items.find((entry: { action: string }) => entry.action === 'job.update');
    expect(updated.changes.timeoutSeconds).toMatchObject({ after: 120 });
    expect(updated.changes.payload).toEqual({ before: '(set)', after: '(set)' });
    expect(updated.requested).toEqual(['payload', 'timeoutSeconds']);
    expect(JSON.stringify(trail.body)).not.toMatch(/audit-s3cret|payload-marker|sk_|key_[A-Za-z0-9]{20,}/);
  });

  it('lists newest first within a range, and shows a tenant only its own', async () => {
    const before = new Date().toISOString();
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { name: 'ranged', schedule: { kind: 'cron', expression: '0 9 * * *', timezone: 'UTC' } }),
    );
    const jobId = created.body.job.jobId as string;
    await scheduler.api('DELETE', `/v1/jobs/${jobId}`);
    const ranged = await scheduler.api('GET', `/v1/audit?from=${encodeURIComponent(before)}`);
    expect(ranged.body.items.map((entry: { action: string; objectId: string }) => [entry.action, entry.objectId])).toEqual([
      ['job.delete', jobId],
      ['job.create', jobId],
    ]);
    expect((await scheduler.api('GET', '/v1/audit?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z')).status).toBe(400);

    const other = await startScheduler({ workerConcurrency: 0 });
    try {
      expect((await other.api('GET', `/v1/audit?objectId=${jobId}`)).body.items).toEqual([]);
      expect((await other.api('GET', '/v1/audit')).body.items).toEqual([]);
    } finally {
      await other.stop();
    }
  });
});
