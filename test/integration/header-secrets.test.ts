// Target headers whose value is a Secrets Manager secret, against the emulator's Secrets Manager: the
// worker sends the secret's value, the API shows the reference and never a value, a secret the
// deployment does not list is refused, and one that cannot be read fails the attempt (retried).
import { randomBytes, randomUUID } from 'node:crypto';
import { CreateSecretCommand, DeleteSecretCommand } from '@aws-sdk/client-secrets-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scheduler, TargetServer } from './harness';
import { awsClients, eventually, jobBody, startScheduler, startTarget } from './harness';

type RunBody = Record<string, any>;

describe('target headers from Secrets Manager', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  let secretArn: string;
  let goneArn: string;
  const secretValue = `Bearer tok-${randomBytes(12).toString('hex')}`;

  beforeAll(async () => {
    const { secrets } = awsClients();
    const created = await secrets.send(new CreateSecretCommand({ Name: `it-${randomUUID().slice(0, 8)}/target-token`, SecretString: secretValue }));
    secretArn = created.ARN!;
    // Listed by the deployment, but deleted: its reads fail.
    const gone = await secrets.send(new CreateSecretCommand({ Name: `it-${randomUUID().slice(0, 8)}/gone`, SecretString: `gone-${randomUUID()}` }));
    goneArn = gone.ARN!;
    await secrets.send(new DeleteSecretCommand({ SecretId: goneArn, ForceDeleteWithoutRecovery: true }));
    scheduler = await startScheduler({ config: { headerSecretArns: [secretArn, goneArn] } });
    target = await startTarget();
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  const runsOf = async (jobId: string): Promise<RunBody[]> =>
    ((await scheduler.api('GET', `/v1/jobs/${jobId}/runs?limit=10`)).body.items as RunBody[]).sort((a, b) => a.attempt - b.attempt);

  it("sends the secret's value as the header, and shows the reference, never a value", async () => {
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(`${target.url}/secret`, {
        target: { kind: 'http', url: `${target.url}/secret`, headers: { Authorization: { secretArn }, 'X-Plain': 'plain-value' } },
      }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.job.target.headers).toEqual({ Authorization: { secretArn }, 'X-Plain': '<redacted>' });
    const call = await eventually(
      () => Promise.resolve(target.calls.find((c) => c.path === '/hook/secret')),
      (found) => found !== undefined,
      30_000,
    );
    expect(call!.headers.authorization).toBe(secretValue);
    expect(call!.headers['x-plain']).toBe('plain-value');
    const shown = await scheduler.api('GET', `/v1/jobs/${created.body.job.jobId}`);
    expect(shown.body.target.headers).toEqual({ Authorization: { secretArn }, 'X-Plain': '<redacted>' });
    expect(JSON.stringify(shown.body)).not.toContain(secretValue);
    const runs = await eventually(
      () => runsOf(created.body.job.jobId),
      (items) => items[0]?.status === 'SUCCEEDED',
      30_000,
    );
    expect(runs).toHaveLength(1);
  });

  it('refuses a secret the deployment does not list, naming the header, and creates nothing', async () => {
    const before = await scheduler.countJobAndRunItems();
    const unlisted = secretArn.replace(/:secret:.*$/, ':secret:someone-elses-AbC123');
    const refused = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { target: { kind: 'http', url: target.url, headers: { 'X-Key': { secretArn: unlisted } } } }),
    );
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([
      { path: 'target.headers.X-Key.secretArn', message: expect.stringContaining('is not a secret this deployment may read') },
    ]);
    const malformed = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { target: { kind: 'http', url: target.url, headers: { 'X-Key': { secretArn: 'arn:aws:s3:::bucket' } } } }),
    );
    expect(malformed.status).toBe(400);
    expect(await scheduler.countJobAndRunItems()).toEqual(before);
  });

  // At-most-once too: the secret is read before the attempt is consumed, so the attempt was never
  // consumed (before, it was consumed first, and ended DEAD at once though nothing was called).
  it.each(['at-least-once', 'at-most-once'] as const)(
    'fails an attempt whose secret cannot be read, before any call and unconsumed, and retries it by the policy (%s)',
    async (delivery) => {
      const calls = target.calls.length;
      const path = `/gone-${delivery}`;
      const created = await scheduler.api(
        'POST',
        '/v1/jobs',
        jobBody(`${target.url}${path}`, {
          delivery,
          target: { kind: 'http', url: `${target.url}${path}`, headers: { Authorization: { secretArn: goneArn } } },
          retryPolicy: { maxAttempts: 2, initialDelaySeconds: 0, maxDelaySeconds: 1 },
        }),
      );
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const runs = await eventually(
        () => runsOf(created.body.job.jobId),
        (items) => items.some((run) => run.status === 'DEAD'),
        30_000,
      );
      expect(runs.map((run) => [run.attempt, run.status, run.error?.code, run.error?.retryable, run.consumedAt ?? null])).toEqual([
        [1, 'FAILED', 'HEADER_SECRET_UNAVAILABLE', true, null],
        [2, 'DEAD', 'HEADER_SECRET_UNAVAILABLE', true, null],
      ]);
      expect(runs[0]!.error.message).toContain(`header Authorization: secret ${goneArn} could not be read`);
      expect(target.calls.length).toBe(calls);
    },
  );

  it('keeps a stored text value when a PATCH sends it masked, and a reference sent back as shown', async () => {
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, {
        schedule: { kind: 'delay', seconds: 3600 },
        target: { kind: 'http', url: target.url, headers: { Authorization: { secretArn }, 'X-Plain': 'kept-value' } },
      }),
    );
    const jobId = created.body.job.jobId as string;
    const patched = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { target: created.body.job.target, payload: { changed: true } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const stored = await scheduler.deps.jobs.get(scheduler.tenantId, jobId);
    expect(stored!.target.kind === 'http' && stored!.target.headers).toEqual({ Authorization: { secretArn }, 'X-Plain': 'kept-value' });
  });
});
