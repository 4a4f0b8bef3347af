// Signed deliveries end to end: a tenant issues a signing secret through the API, and a target that
// knows it verifies every delivery and refuses a tampered one; through a rotation, a target that
// still has the old secret keeps verifying until the grace period ends.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyDelivery } from '../../clients/index';
import type { LocalRuntime } from '../../scripts/local/runtime';
import type { Scheduler, TargetServer } from './harness';
import { eventually, jobBody, startScheduler, startTarget } from './harness';

describe('signed deliveries', () => {
  let scheduler: Scheduler;
  let target: TargetServer;

  beforeAll(async () => {
    // Workers start per phase: each new process reads the tenant's secrets afresh (they are cached a minute).
    scheduler = await startScheduler({ workerConcurrency: 0 });
    target = await startTarget();
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  async function deliverOne(workers: LocalRuntime | null = null) {
    const own = workers ?? (await scheduler.startWorkers(1));
    try {
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { payload: { report: 'daily', n: target.calls.length } }));
      expect(created.status).toBe(201);
      const before = target.calls.length;
      await eventually(
        () => Promise.resolve(target.calls.length),
        (count) => count > before,
        30_000,
      );
      return target.calls[before]!;
    } finally {
      if (!workers) await own.stop();
    }
  }

  it('issues a secret shown once, lists it without its value, and signs deliveries with it', async () => {
    const unsigned = await deliverOne();
    expect(unsigned.headers['webhook-signature']).toBeUndefined();

    const issued = await scheduler.api('POST', '/v1/signing-secrets', {});
    expect(issued.status).toBe(201);
    expect(issued.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(issued.body.secretId).toMatch(/^sec_/);
    const listed = await scheduler.api('GET', '/v1/signing-secrets');
    expect(listed.status).toBe(200);
    expect(listed.body.items).toEqual([{ secretId: issued.body.secretId, createdAt: issued.body.createdAt, expiresAt: null }]);
    expect(JSON.stringify(listed.body)).not.toContain(issued.body.secret.slice(6));

    const signed = await deliverOne();
    expect(verifyDelivery(issued.body.secret, signed.headers, signed.body)).toBeNull();
    expect(verifyDelivery(issued.body.secret, signed.headers, signed.body.replace('daily', 'weekly'))).toBe('no-matching-signature');
    expect(
      verifyDelivery(issued.body.secret, { ...signed.headers, 'webhook-timestamp': String(Number(signed.headers['webhook-timestamp']) - 1) }, signed.body),
    ).toBe('no-matching-signature');
  });

  it('signs with the old and the new secret through a rotation, then with the new one only once the old is revoked', async () => {
    const old = (await scheduler.api('GET', '/v1/signing-secrets')).body.items[0];
    const oldSecret = (await scheduler.api('POST', '/v1/signing-secrets', { graceSeconds: 0 })).body;
    const rotated = await scheduler.api('POST', '/v1/signing-secrets', { graceSeconds: 3600 });
    expect(rotated.status).toBe(201);
    expect(rotated.body.previous).toEqual([expect.objectContaining({ secretId: oldSecret.secretId, expiresAt: expect.any(String) })]);
    expect(old.secretId).not.toBe(rotated.body.secretId);

    const during = await deliverOne();
    expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verifyDelivery(rotated.body.secret, during.headers, during.body)).toBeNull();
    expect(verifyDelivery(oldSecret.secret, during.headers, during.body)).toBeNull();

    expect((await scheduler.api('DELETE', `/v1/signing-secrets/${oldSecret.secretId}`)).status).toBe(204);
    expect((await scheduler.api('DELETE', `/v1/signing-secrets/${oldSecret.secretId}`)).status).toBe(404);
    const after = await deliverOne();
    expect(verifyDelivery(rotated.body.secret, after.headers, after.body)).toBeNull();
    expect(verifyDelivery(oldSecret.secret, after.headers, after.body)).toBe('no-matching-signature');
  });

  it('refuses a bad grace period and changes nothing', async () => {
    const before = (await scheduler.api('GET', '/v1/signing-secrets')).body.items;
    for (const body of [{ graceSeconds: -1 }, { graceSeconds: 8 * 86_400 }, { graceSeconds: 'a day' }, { other: 1 }]) {
      const refused = await scheduler.api('POST', '/v1/signing-secrets', body);
      expect(refused.status).toBe(400);
    }
    expect((await scheduler.api('GET', '/v1/signing-secrets')).body.items).toEqual(before);
  });

  it("keeps one tenant's secrets from another", async () => {
    const other = await startScheduler({ workerConcurrency: 0 });
    try {
      const mine = (await scheduler.api('GET', '/v1/signing-secrets')).body.items[0];
      expect((await other.api('GET', '/v1/signing-secrets')).body.items).toEqual([]);
      expect((await other.api('DELETE', `/v1/signing-secrets/${mine.secretId}`)).status).toBe(404);
    } finally {
      await other.stop();
    }
  });
});
