// Header values from Secrets Manager, without AWS: the schema accepts a text value or a secret
// reference, the API shows references and masks text, and the worker's resolution reads each secret
// once a cache period, fails an attempt (retryably, naming no value) for a secret it cannot use.
import { describe, expect, it, vi } from 'vitest';
import { logger } from '../../lambdas/core/logger';
import { httpTargetSchema } from '../../lambdas/domain/job';
import { maskedTarget } from '../../lambdas/app/jobs';
import { HeaderSecretsCache, resolveHeaders, secretsManagerRead } from '../../lambdas/targets/header-secrets';

const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:targets/billing-token-AbC123';

describe('header values in a job', () => {
  it('are text or a reference to a secret by its full ARN', () => {
    const parsed = httpTargetSchema.parse({ kind: 'http', url: 'https://example.com', headers: { A: 'text', B: { secretArn: ARN } } });
    expect(parsed.headers).toEqual({ A: 'text', B: { secretArn: ARN } });
    for (const wrong of [{ secretArn: 'arn:aws:s3:::bucket' }, { secretArn: ARN.replace('-AbC123', '') }, { secretArn: ARN, extra: 1 }, { arn: ARN }, 3]) {
      expect(httpTargetSchema.safeParse({ kind: 'http', url: 'https://example.com', headers: { B: wrong } }).success, JSON.stringify(wrong)).toBe(false);
    }
  });

  it('refuses traceparent, which the scheduler sets', () => {
    expect(httpTargetSchema.safeParse({ kind: 'http', url: 'https://example.com', headers: { traceparent: 'x' } }).success).toBe(false);
  });

  it('show masked when text and as given when a reference', () => {
    const target = httpTargetSchema.parse({ kind: 'http', url: 'https://example.com', headers: { A: 'text', B: { secretArn: ARN } } });
    expect(maskedTarget(target)).toMatchObject({ headers: { A: '<redacted>', B: { secretArn: ARN } } });
  });
});

describe('resolving header secrets', () => {
  const reads: string[] = [];
  const store: Record<string, string> = { [ARN]: 'Bearer 123' };
  const read = (arn: string) => {
    reads.push(arn);
    return arn in store ? Promise.resolve(store[arn]!) : Promise.reject(Object.assign(new Error('not found'), { name: 'ResourceNotFoundException' }));
  };

  it("replaces each reference by the secret's value, read once per cache period", async () => {
    let now = 0;
    const cache = new HeaderSecretsCache(read, 60_000, () => now);
    reads.length = 0;
    expect(await resolveHeaders({ A: 'text', B: { secretArn: ARN } }, cache)).toEqual({ ok: true, headers: { A: 'text', B: 'Bearer 123' } });
    await resolveHeaders({ B: { secretArn: ARN } }, cache);
    expect(reads).toEqual([ARN]);
    now = 60_000;
    store[ARN] = 'Bearer 456';
    expect(await resolveHeaders({ B: { secretArn: ARN } }, cache)).toEqual({ ok: true, headers: { B: 'Bearer 456' } });
    expect(reads).toEqual([ARN, ARN]);
  });

  it('fails retryably for a secret it cannot read, and reads it again next time', async () => {
    const missing = ARN.replace('billing', 'gone');
    const cache = new HeaderSecretsCache(read, 60_000, () => 0);
    reads.length = 0;
    const result = await resolveHeaders({ Authorization: { secretArn: missing } }, cache);
    expect(result).toEqual({
      ok: false,
      error: {
        code: 'HEADER_SECRET_UNAVAILABLE',
        message: `header Authorization: secret ${missing} could not be read: ResourceNotFoundException (not found); the target was not called`,
        retryable: true,
      },
    });
    await resolveHeaders({ Authorization: { secretArn: missing } }, cache);
    expect(reads).toEqual([missing, missing]);
  });

  it("keeps the scheduler's role out of the error a tenant reads, and logs the whole text", async () => {
    const text = 'User: arn:aws:sts::123456789012:assumed-role/Scheduler-WorkerRole-ABC/worker-1 is not authorized to perform: secretsmanager:GetSecretValue';
    const denied = () => Promise.reject(Object.assign(new Error(text), { name: 'AccessDeniedException' }));
    const warned = vi.spyOn(logger, 'warn');
    try {
      const result = await resolveHeaders({ Authorization: { secretArn: ARN } }, new HeaderSecretsCache(denied, 60_000, () => 0));
      // Before, the run's error (which the tenant reads) carried the worker role's session ARN.
      expect(!result.ok && result.error.message).toBe(
        `header Authorization: secret ${ARN} could not be read: AccessDeniedException (User: (the scheduler's role) is not authorized to perform: secretsmanager:GetSecretValue); the target was not called`,
      );
      // Under `error`: the logger drops a field named `message`.
      expect(warned).toHaveBeenCalledWith(expect.any(String), { code: 'HEADER_SECRET_UNAVAILABLE', error: `AccessDeniedException (${text})` });
    } finally {
      warned.mockRestore();
    }
  });

  it('fails for a value that cannot be a header, without saying the value', async () => {
    store[ARN] = 'line one\r\nInjected: yes';
    const result = await resolveHeaders({ B: { secretArn: ARN } }, new HeaderSecretsCache(read, 60_000, () => 0));
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error.message).toContain('is not a header value');
    expect(JSON.stringify(result)).not.toContain('Injected');
  });

  it('refuses a binary secret', async () => {
    const client = { send: () => Promise.resolve({ SecretBinary: new Uint8Array([1]) }) };
    await expect(secretsManagerRead(client as never)(ARN)).rejects.toThrow('has no string value');
  });
});
