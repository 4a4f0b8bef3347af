// What a worker signs with around an issue: it holds a tenant's secrets for a minute, so an issue's
// `signsFrom` must come no earlier than the end of a hold that began before the issue committed.
import { describe, expect, it } from 'vitest';
import { SigningSecretsCache, issueSigningSecret } from '../../lambdas/app/signing-secrets';
import type { SigningSecretsRepository } from '../../lambdas/store/signing-secrets';

/** A tenant's secrets in memory: what the repository's rotate and values do, without KMS. */
function memorySecrets() {
  const live: { secretId: string; value: string; createdAt: number }[] = [];
  const repository = {
    configured: true,
    rotate: (_tenantId: string, secretId: string, value: string, now: number) => {
      live.unshift({ secretId, value, createdAt: now });
      return Promise.resolve({ secretId, createdAt: new Date(now).toISOString(), expiresAt: null, previous: [] });
    },
    values: () => Promise.resolve(live.map((secret) => secret.value)),
  };
  return repository as unknown as SigningSecretsRepository;
}

describe('signing secrets as workers hold them', () => {
  it("signs every delivery from the issue's signsFrom, even on a worker that cached the tenant as having none just before", async () => {
    let now = Date.parse('2026-11-28T12:00:00Z');
    const clock = () => now;
    const secrets = memorySecrets();
    const cache = new SigningSecretsCache(secrets, clock);
    expect(await cache.of('acme')).toEqual([]);

    now += 500;
    const issued = await issueSigningSecret({ signingSecrets: secrets, clock }, 'acme', { graceSeconds: 86_400 });
    const signsFrom = Date.parse(issued.signsFrom);
    expect(signsFrom).toBeGreaterThan(now);

    // Before it, the worker may still hold what it read: no secret.
    now = signsFrom - 10_000;
    expect(await cache.of('acme')).toEqual([]);
    // From it, the new secret signs.
    now = signsFrom;
    expect(await cache.of('acme')).toEqual([issued.secret]);
  });
});
