// The audit trail's store against the emulator: both listings newest first, within a time range,
// paged, each tenant's apart.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../lambdas/domain/audit';
import { AuditLog, InvalidAuditCursor } from '../../lambdas/store/audit-log';
import type { Scheduler } from './harness';
import { awsClients, startScheduler } from './harness';

describe('audit log store', () => {
  let scheduler: Scheduler;
  let audit: AuditLog;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
    audit = new AuditLog(awsClients().dynamo, scheduler.config.jobsTable);
  });
  afterAll(() => scheduler.stop());

  const entry = (tenantId: string, objectId: string, at: string, action: AuditEntry['action'] = 'job.pause'): AuditEntry => ({
    auditId: `aud_${randomUUID().slice(0, 8)}`,
    at,
    tenantId,
    actor: 'key_abc',
    action,
    objectId,
    changes: { status: { before: 'ACTIVE', after: 'PAUSED' } },
  });

  it("lists a tenant's entries and one object's, newest first, within a range, paged", async () => {
    const tenantId = `tenant-${randomUUID().slice(0, 8)}`;
    const entries = [
      entry(tenantId, 'job_a', '2026-03-01T10:00:00.000Z', 'job.create'),
      entry(tenantId, 'job_b', '2026-03-01T11:00:00.000Z', 'job.create'),
      entry(tenantId, 'job_a', '2026-03-01T12:00:00.000Z'),
      entry(tenantId, 'job_a', '2026-03-01T13:00:00.000Z', 'job.delete'),
    ];
    for (const e of entries) await audit.append(e, 90);

    const all = await audit.list(tenantId, { limit: 10 });
    expect(all.items.map((e) => e.at)).toEqual(entries.map((e) => e.at).reverse());
    expect(all.items[0]).toEqual(entries[3]);

    const jobA = await audit.list(tenantId, { objectId: 'job_a', limit: 10 });
    expect(jobA.items.map((e) => e.action)).toEqual(['job.delete', 'job.pause', 'job.create']);

    const ranged = await audit.list(tenantId, { from: '2026-03-01T11:00:00.000Z', to: '2026-03-01T12:00:00.000Z', limit: 10 });
    expect(ranged.items.map((e) => e.at)).toEqual(['2026-03-01T12:00:00.000Z', '2026-03-01T11:00:00.000Z']);

    const first = await audit.list(tenantId, { limit: 3 });
    expect(first.items).toHaveLength(3);
    const second = await audit.list(tenantId, { limit: 3, cursor: first.nextCursor! });
    expect(second.items.map((e) => e.at)).toEqual(['2026-03-01T10:00:00.000Z']);
  });

  it("keeps tenants apart, and refuses another listing's cursor", async () => {
    const [mine, theirs] = [`tenant-${randomUUID().slice(0, 8)}`, `tenant-${randomUUID().slice(0, 8)}`];
    await audit.append(entry(mine, 'job_x', '2026-03-02T10:00:00.000Z'), 90);
    await audit.append(entry(mine, 'job_x', '2026-03-02T11:00:00.000Z'), 90);
    expect((await audit.list(theirs, { limit: 10 })).items).toEqual([]);
    expect((await audit.list(theirs, { objectId: 'job_x', limit: 10 })).items).toEqual([]);
    const page = await audit.list(mine, { limit: 1 });
    await expect(audit.list(theirs, { limit: 1, cursor: page.nextCursor! })).rejects.toBeInstanceOf(InvalidAuditCursor);
  });

  it('writes the entries of one request together, past one batch write, each under its own object', async () => {
    const tenantId = `tenant-${randomUUID().slice(0, 8)}`;
    // 30 entries are 60 items: three BatchWriteItem calls of at most 25.
    const entries = Array.from({ length: 30 }, (_, i) => entry(tenantId, `run_${i}`, '2026-03-03T10:00:00.000Z', 'dead-runs.replay'));
    await audit.append(entries, 90);
    for (const e of entries) expect((await audit.list(tenantId, { objectId: e.objectId, limit: 10 })).items).toEqual([e]);
    expect((await audit.list(tenantId, { limit: 100 })).items).toHaveLength(30);
  });
});
