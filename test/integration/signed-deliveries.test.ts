// Signed deliveries end to end: a tenant issues a signing secret through the API, and a target that
// knows it verifies every delivery and refuses a tampered one; through a rotation, a target that
// still has the old secret keeps verifying until the grace period ends. A target that verifies with
// the client package's verifyDelivery answers 401 to a delivery whose body was altered on the way, or
// that it checks with a secret the tenant does not sign with, and the run fails for it.
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyDelivery } from '../../clients/index';
import type { LocalRuntime } from '../../scripts/local/runtime';
import type { Scheduler, TargetServer } from './harness';
import { eventually, jobBody, startScheduler, startTarget } from './harness';

/**
 * A proxy on loopback that forwards every request to `to` with its headers as they came and one
 * change to its body, as someone on the way could make: what the target gets is not what was signed.
 */
async function startTamperingProxy(to: string, tamper: (body: string) => string): Promise<{ url: string; stop: () => Promise<void> }> {
  const target = new URL(to);
  const server: Server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.from(tamper(Buffer.concat(chunks).toString('utf8')), 'utf8');
      const forwarded = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: incoming.method,
          headers: { ...incoming.headers, 'content-length': body.length },
        },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
        },
      );
      forwarded.on('error', () => outgoing.destroy());
      forwarded.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/tampered`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

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

  it('a target that verifies refuses, with 401, a tampered body and a delivery it checks with a secret the tenant does not sign with; the run fails for it', async () => {
    // Only this secret signs from now on (the ones before end at once).
    const issued = await scheduler.api('POST', '/v1/signing-secrets', { graceSeconds: 0 });
    expect(issued.status).toBe(201);
    const secret = issued.body.secret as string;
    const notTheTenants = `whsec_${randomBytes(32).toString('base64')}`;
    const verdicts: { path: string; failure: string | null; body: string }[] = [];
    // The target checks every delivery as docs/delivery.md shows: 401 and the reason when it fails.
    const verifying = await startTarget((call) => {
      const failure = verifyDelivery(call.path.endsWith('/wrong-secret') ? notTheTenants : secret, call.headers, call.body);
      verdicts.push({ path: call.path, failure, body: call.body });
      return failure === null ? { status: 200 } : { status: 401, body: JSON.stringify({ refused: failure }) };
    });
    const proxy = await startTamperingProxy(`${verifying.url}/checked`, (body) => body.replace('"amount":10', '"amount":1000'));
    const workers = await scheduler.startWorkers(1);
    try {
      const runOf = async (url: string) => {
        const created = await scheduler.api('POST', '/v1/jobs', jobBody(url, { payload: { amount: 10 }, retryPolicy: { maxAttempts: 3 } }));
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        const runId = created.body.job.nextRunId as string;
        return eventually(
          async () => (await scheduler.api('GET', `/v1/runs/${runId}`)).body,
          (run) => ['SUCCEEDED', 'DEAD'].includes(run.status),
          30_000,
        );
      };
      // As sent: accepted.
      const intact = await runOf(`${verifying.url}/checked`);
      expect(intact.status).toBe('SUCCEEDED');
      // Altered on the way: the signature no longer matches; refused, and the run ends DEAD at once (a 401 is not retried).
      const tampered = await runOf(proxy.url);
      expect(tampered).toMatchObject({ status: 'DEAD', attempt: 1, error: { code: 'HTTP_401', retryable: false } });
      // Checked with a secret the tenant does not sign with: refused the same way.
      const wrongSecret = await runOf(`${verifying.url}/wrong-secret`);
      expect(wrongSecret).toMatchObject({ status: 'DEAD', attempt: 1, error: { code: 'HTTP_401', retryable: false } });

      expect(verdicts.map(({ failure }) => failure)).toEqual([null, 'no-matching-signature', 'no-matching-signature']);
      // The tampered delivery reached the target altered, with the signature of what was sent.
      expect(JSON.parse(verdicts[1]!.body)).toEqual({ amount: 1000 });
      expect(verifyDelivery(secret, verifying.calls[1]!.headers, JSON.stringify({ amount: 10 }))).toBeNull();
    } finally {
      await workers.stop();
      await proxy.stop();
      await verifying.stop();
    }
  });
});
