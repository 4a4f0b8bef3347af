// The signing secrets store against the emulator: encrypted at rest with KMS and bound to their
// tenant, a rotation never cutting short a grace already given (a repeated issue included), at most
// MAX_LIVE_SIGNING_SECRETS live, and two rotations at once never both winning.
import { CreateKeyCommand, DecryptCommand } from '@aws-sdk/client-kms';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_LIVE_SIGNING_SECRETS, SigningSecretConflict, SigningSecretsRepository } from '../../lambdas/store/signing-secrets';
import { ConflictError } from '../../lambdas/core/errors';
import { signingSecretKey } from '../../lambdas/store/keys';
import { newSigningSecret } from '../../lambdas/targets/webhook-signature';
import { issueSigningSecret } from '../../lambdas/app/signing-secrets';
import type { Scheduler } from './harness';
import { awsClients, startScheduler } from './harness';

describe('signing secrets store', () => {
  let scheduler: Scheduler;
  let secrets: SigningSecretsRepository;
  const HOUR = 3_600_000;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
    const { KeyMetadata: key } = await awsClients().kms.send(new CreateKeyCommand({ Description: `${scheduler.prefix} signing` }));
    secrets = new SigningSecretsRepository(awsClients().dynamo, awsClients().kms, scheduler.config.jobsTable, key!.KeyId);
  });
  afterAll(() => scheduler.stop());

  const tenant = () => `tenant-${randomUUID().slice(0, 8)}`;

  it('stores a secret encrypted, and gives its value back only to the signer', async () => {
    const tenantId = tenant();
    const value = newSigningSecret();
    const now = Date.now();
    await secrets.rotate(tenantId, 'sec_1', value, now, 3600);
    const { Item: item } = await awsClients().dynamo.send(new GetCommand({ TableName: scheduler.config.jobsTable, Key: signingSecretKey(tenantId, 'sec_1') }));
    // The item's bytes, decoded every way the value could be kept: none holds it.
    const key = value.slice('whsec_'.length);
    const stored = Buffer.from(item!.ciphertext as Uint8Array);
    expect(stored.length).toBeGreaterThan(0);
    for (const text of [stored.toString('utf8'), stored.toString('base64'), stored.toString('latin1'), JSON.stringify({ ...item, ciphertext: null })]) {
      expect(text).not.toContain(key.slice(0, 16));
    }
    expect(stored.includes(Buffer.from(key, 'base64').subarray(0, 16))).toBe(false);
    // Bound to its tenant and id: decrypted as another tenant's, it fails.
    await expect(
      awsClients().kms.send(new DecryptCommand({ CiphertextBlob: stored, EncryptionContext: { tenantId: 'another-tenant', secretId: 'sec_1' } })),
    ).rejects.toThrow();
    expect(await secrets.list(tenantId, now)).toEqual([{ secretId: 'sec_1', createdAt: new Date(now).toISOString(), expiresAt: null }]);
    expect(await secrets.values(tenantId, now)).toEqual([value]);
  });

  it('keeps the replaced secret signing through the grace period, then only the new one', async () => {
    const tenantId = tenant();
    const [first, second, third] = [newSigningSecret(), newSigningSecret(), newSigningSecret()];
    const t0 = Date.now();
    await secrets.rotate(tenantId, 'sec_a', first, t0, 3600);
    await secrets.rotate(tenantId, 'sec_b', second, t0 + 1000, 3600);
    expect(await secrets.values(tenantId, t0 + 2000)).toEqual([second, first]);
    expect((await secrets.list(tenantId, t0 + 2000)).map((s) => [s.secretId, s.expiresAt])).toEqual([
      ['sec_b', null],
      ['sec_a', new Date(t0 + 1000 + HOUR).toISOString()],
    ]);
    expect(await secrets.values(tenantId, t0 + 1000 + HOUR + 1)).toEqual([second]);
    // A rotation during a grace period leaves that grace as it was: sec_a signs to its end.
    await secrets.rotate(tenantId, 'sec_c', third, t0 + 3000, 3600);
    expect(await secrets.values(tenantId, t0 + 4000)).toEqual([third, second, first]);
    expect(await secrets.values(tenantId, t0 + 1000 + HOUR + 1)).toEqual([third, second]);
    // No grace: every other secret stops now.
    await secrets.rotate(tenantId, 'sec_d', first, t0 + 5000, 0);
    expect(await secrets.values(tenantId, t0 + 6000)).toEqual([first]);
  });

  it('an issue answers the new value and the secrets beside it with no read after its commit', async () => {
    const tenantId = tenant();
    const t0 = Date.now();
    await secrets.rotate(tenantId, 'sec_known', newSigningSecret(), t0, 3600);
    // A store that fails any read after the rotation: before, the issue's list after its commit threw,
    // the value was never shown, and the caller's retry ended the grace of the secret its receivers knew.
    const failingReads = Object.assign(Object.create(secrets) as SigningSecretsRepository, {
      list: () => Promise.reject(new Error('the store failed')),
    });
    const issued = await issueSigningSecret({ signingSecrets: failingReads, clock: () => t0 + 1000 }, tenantId, { graceSeconds: 3600 });
    expect(issued.secret).toMatch(/^whsec_/);
    expect(issued.previous).toEqual([{ secretId: 'sec_known', createdAt: new Date(t0).toISOString(), expiresAt: new Date(t0 + 1000 + HOUR).toISOString() }]);
    expect(await secrets.list(tenantId, t0 + 2000)).toEqual([{ secretId: issued.secretId, createdAt: issued.createdAt, expiresAt: null }, ...issued.previous]);
  });

  it("an issue repeated because its answer was lost keeps the grace of the secret the tenant's receivers verify with", async () => {
    const tenantId = tenant();
    const t0 = Date.now();
    const deps = (at: number) => ({ signingSecrets: secrets, clock: () => t0 + at });
    const known = await issueSigningSecret(deps(0), tenantId, { graceSeconds: 3600 });
    // The rotation away from it commits, and its answer is lost: the caller issues again.
    const lost = await issueSigningSecret(deps(1_000), tenantId, { graceSeconds: 3600 });
    const repeated = await issueSigningSecret(deps(2_000), tenantId, { graceSeconds: 3600 });

    // The secret the receivers know signs until the grace its first rotation gave it, beside the new one.
    expect(repeated.previous).toEqual([
      { secretId: lost.secretId, createdAt: lost.createdAt, expiresAt: new Date(t0 + 2_000 + HOUR).toISOString() },
      { secretId: known.secretId, createdAt: known.createdAt, expiresAt: new Date(t0 + 1_000 + HOUR).toISOString() },
    ]);
    expect(await secrets.values(tenantId, t0 + 3_000)).toEqual([repeated.secret, lost.secret, known.secret]);
    expect(await secrets.values(tenantId, t0 + 1_000 + HOUR - 1)).toContain(known.secret);
    expect(await secrets.values(tenantId, t0 + 2_000 + HOUR + 1)).toEqual([repeated.secret]);
  });

  it('refuses a rotation with a grace past the most secrets that sign at once (409), and takes one without', async () => {
    const tenantId = tenant();
    const t0 = Date.now();
    for (let i = 0; i < MAX_LIVE_SIGNING_SECRETS; i += 1)
      await issueSigningSecret({ signingSecrets: secrets, clock: () => t0 + i }, tenantId, { graceSeconds: 3600 });
    const full = { signingSecrets: secrets, clock: () => t0 + 100 };
    await expect(issueSigningSecret(full, tenantId, { graceSeconds: 3600 })).rejects.toBeInstanceOf(ConflictError);
    expect(await secrets.list(tenantId, t0 + 100)).toHaveLength(MAX_LIVE_SIGNING_SECRETS);
    const alone = await issueSigningSecret(full, tenantId, { graceSeconds: 0 });
    expect(await secrets.values(tenantId, t0 + 200)).toEqual([alone.secret]);
  });

  it('lets one of two rotations at the same moment win, and the other conflict', async () => {
    const tenantId = tenant();
    const now = Date.now();
    await secrets.rotate(tenantId, 'sec_0', newSigningSecret(), now, 3600);
    const results = await Promise.allSettled([
      secrets.rotate(tenantId, 'sec_x', newSigningSecret(), now + 1, 3600),
      secrets.rotate(tenantId, 'sec_y', newSigningSecret(), now + 1, 3600),
    ]);
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    const failed = results.find((result) => result.status === 'rejected');
    expect(failed?.reason).toBeInstanceOf(SigningSecretConflict);
    expect((await secrets.list(tenantId, now + 2)).filter((s) => s.expiresAt === null)).toHaveLength(1);
  });

  it('lets the first two issues of a new tenant at once conflict too', async () => {
    const tenantId = tenant();
    const now = Date.now();
    const results = await Promise.allSettled([
      secrets.rotate(tenantId, 'sec_p', newSigningSecret(), now, 3600),
      secrets.rotate(tenantId, 'sec_q', newSigningSecret(), now, 3600),
    ]);
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    expect(await secrets.list(tenantId, now)).toHaveLength(1);
  });

  it('revokes a secret at once, and a revoked current one does not block the next rotation', async () => {
    const tenantId = tenant();
    const now = Date.now();
    const next = newSigningSecret();
    await secrets.rotate(tenantId, 'sec_r', newSigningSecret(), now, 3600);
    expect(await secrets.revoke(tenantId, 'sec_r', now)).toBe(true);
    expect(await secrets.revoke(tenantId, 'sec_r', now)).toBe(false);
    expect(await secrets.values(tenantId, now)).toEqual([]);
    await secrets.rotate(tenantId, 'sec_s', next, now + 1, 3600);
    expect(await secrets.values(tenantId, now + 2)).toEqual([next]);
  });

  it('does not revoke a secret whose grace has ended: it is no longer live (404, no audit entry)', async () => {
    const tenantId = tenant();
    const now = Date.now();
    await secrets.rotate(tenantId, 'sec_g', newSigningSecret(), now, 0);
    await secrets.rotate(tenantId, 'sec_h', newSigningSecret(), now + 1, 1);
    // sec_g signs until now + 1 s, then is stored until its expiry removes it.
    expect(await secrets.revoke(tenantId, 'sec_g', now + 2_000)).toBe(false);
    expect(await secrets.revoke(tenantId, 'sec_g', now + 500)).toBe(true);
    expect(await secrets.revoke(tenantId, 'sec_h', now + 2_000)).toBe(true);
  });

  it("does not decrypt a tenant's ciphertext under another tenant", async () => {
    const [owner, thief] = [tenant(), tenant()];
    const now = Date.now();
    await secrets.rotate(owner, 'sec_t', newSigningSecret(), now, 3600);
    const { Item: item } = await awsClients().dynamo.send(new GetCommand({ TableName: scheduler.config.jobsTable, Key: signingSecretKey(owner, 'sec_t') }));
    const { PutCommand } = await import('@aws-sdk/lib-dynamodb');
    await awsClients().dynamo.send(new PutCommand({ TableName: scheduler.config.jobsTable, Item: { ...item, ...signingSecretKey(thief, 'sec_t') } }));
    await expect(secrets.values(thief, now)).rejects.toThrow();
  });
});
