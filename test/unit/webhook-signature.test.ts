// Signed deliveries against the Standard Webhooks specification (our signer, and the client
// package's verifyDelivery that targets use): its published example, and the reference library
// (`standardwebhooks`, the spec authors' own) verifying what we sign and signing what we verify.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { Job } from '../../lambdas/domain/job';
import { httpTargetSchema } from '../../lambdas/domain/job';
import type { Run } from '../../lambdas/domain/run';
import type { Egress } from '../../lambdas/targets/egress';
import { egressPolicyOf } from '../../lambdas/targets/egress';
import { callHttpTarget } from '../../lambdas/targets/http-target';
import { describe, expect, it } from 'vitest';
import { newSigningSecret, secretKey, signDelivery } from '../../lambdas/targets/webhook-signature';
import { verifyDelivery } from '../../clients/index';

// The example of the specification (standard-webhooks, spec/standard-webhooks.md, "Signature scheme").
const SPEC = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};
const AT_SPEC_TIME = { now: SPEC.timestamp * 1000 };

describe('signing a delivery', () => {
  it("gives the specification's signature for its example", () => {
    expect(signDelivery([SPEC.secret], SPEC.id, SPEC.timestamp, SPEC.body)).toEqual({
      'webhook-id': SPEC.id,
      'webhook-timestamp': String(SPEC.timestamp),
      'webhook-signature': SPEC.signature,
    });
  });

  it('is accepted by the reference library, with one secret and with two during a rotation', () => {
    const [current, previous] = [newSigningSecret(), newSigningSecret()];
    const now = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ report: 'daily', n: 1 });
    const headers = signDelivery([current, previous], 'run_abc.1', now, body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    // A target that knows only one of the two secrets accepts the delivery.
    expect(new Webhook(current).verify(body, { ...headers })).toEqual({ report: 'daily', n: 1 });
    expect(new Webhook(previous).verify(body, { ...headers })).toEqual({ report: 'daily', n: 1 });
    expect(() => new Webhook(newSigningSecret()).verify(body, { ...headers })).toThrow();
  });

  it('refuses secrets that are not whsec_ and base64 of 24 to 64 bytes', () => {
    expect(() => secretKey('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toThrow(/whsec_/);
    expect(() => secretKey('whsec_not base64!')).toThrow(/base64/);
    expect(() => secretKey(`whsec_${Buffer.alloc(8).toString('base64')}`)).toThrow(/24 to 64/);
    expect(() => signDelivery([], 'id', 1, '')).toThrow(/at least one/);
  });
});

describe('verifying a delivery', () => {
  const signed = { 'webhook-id': SPEC.id, 'webhook-timestamp': String(SPEC.timestamp), 'webhook-signature': SPEC.signature };

  it("accepts the specification's example, and what the reference library signs", () => {
    expect(verifyDelivery(SPEC.secret, signed, SPEC.body, AT_SPEC_TIME)).toBeNull();
    const secret = newSigningSecret();
    const at = new Date();
    const body = '{"hello":"world"}';
    const signature = new Webhook(secret).sign('msg_1', at, body);
    const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signature };
    expect(verifyDelivery(secret, headers, body)).toBeNull();
  });

  it('refuses a tampered body, id or timestamp, and another secret', () => {
    expect(verifyDelivery(SPEC.secret, signed, '{"test": 2432232315}', AT_SPEC_TIME)).toBe('no-matching-signature');
    expect(verifyDelivery(SPEC.secret, { ...signed, 'webhook-id': 'msg_other' }, SPEC.body, AT_SPEC_TIME)).toBe('no-matching-signature');
    expect(verifyDelivery(SPEC.secret, { ...signed, 'webhook-timestamp': String(SPEC.timestamp + 1) }, SPEC.body, AT_SPEC_TIME)).toBe('no-matching-signature');
    expect(verifyDelivery(newSigningSecret(), signed, SPEC.body, AT_SPEC_TIME)).toBe('no-matching-signature');
  });

  it('refuses an old or future timestamp (a replayed capture) and missing headers', () => {
    expect(verifyDelivery(SPEC.secret, signed, SPEC.body, { now: (SPEC.timestamp + 301) * 1000 })).toBe('timestamp-too-old');
    expect(verifyDelivery(SPEC.secret, signed, SPEC.body, { now: (SPEC.timestamp - 301) * 1000 })).toBe('timestamp-too-new');
    expect(verifyDelivery(SPEC.secret, { 'webhook-id': SPEC.id }, SPEC.body, AT_SPEC_TIME)).toBe('missing-headers');
  });

  it('finds the headers whatever the case of their names', () => {
    const capitalised = {
      'Webhook-Id': signed['webhook-id'],
      'Webhook-Timestamp': signed['webhook-timestamp'],
      'Webhook-Signature': signed['webhook-signature'],
    };
    expect(verifyDelivery(SPEC.secret, capitalised, SPEC.body, AT_SPEC_TIME)).toBeNull();
    const upper = { 'WEBHOOK-ID': signed['webhook-id'], 'webhook-timestamp': signed['webhook-timestamp'], 'WebHook-Signature': [signed['webhook-signature']] };
    expect(verifyDelivery(SPEC.secret, upper, SPEC.body, AT_SPEC_TIME)).toBeNull();
    expect(verifyDelivery(SPEC.secret, { ...capitalised, 'Webhook-Id': 'msg_other' }, SPEC.body, AT_SPEC_TIME)).toBe('no-matching-signature');
  });

  it('accepts a header list where any one signature matches, and skips other versions', () => {
    const list = `v1a,${Buffer.alloc(32).toString('base64')} v1,${Buffer.alloc(32).toString('base64')} ${SPEC.signature}`;
    expect(verifyDelivery(SPEC.secret, { ...signed, 'webhook-signature': list }, SPEC.body, AT_SPEC_TIME)).toBeNull();
  });
});

describe('an HTTP delivery', () => {
  const egress: Egress = {
    policy: egressPolicyOf({ localMode: true, allowPrivateTargets: false }),
    resolve: (host) => Promise.resolve([{ address: host, family: 4 }]),
  };
  const job = { target: { kind: 'http' } } as Job;
  const runOf = (attempt: number) => ({ runId: `job_x.1.${attempt}`, jobId: 'job_x', scheduledFor: '2026-01-01T00:00:00.000Z', attempt }) as Run;

  async function deliver(signingSecrets: readonly string[] | undefined, attempt = 1) {
    const received: { headers: Record<string, string | string[] | undefined>; body: string }[] = [];
    const server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      request.on('end', () => {
        received.push({ headers: request.headers, body });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    try {
      const result = await callHttpTarget(
        { kind: 'http', url, method: 'POST', headers: {} },
        { job, run: runOf(attempt), payload: { report: 'daily' }, timeoutMs: 5_000, egress, ...(signingSecrets ? { signingSecrets } : {}) },
      );
      expect(result.ok).toBe(true);
      return received[0]!;
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  it('is signed with each live secret, verifiable by the reference library, with an id stable across attempts', async () => {
    const [current, previous] = [newSigningSecret(), newSigningSecret()];
    const first = await deliver([current, previous], 1);
    const retry = await deliver([current, previous], 2);
    for (const secret of [current, previous]) {
      expect(verifyDelivery(secret, first.headers, first.body)).toBeNull();
      expect(new Webhook(secret).verify(first.body, first.headers as Record<string, string>)).toEqual({ report: 'daily' });
    }
    expect(first.headers['webhook-id']).toMatch(/^msg_[A-Za-z0-9_-]{32}$/);
    expect(retry.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(verifyDelivery(current, first.headers, '{"report":"weekly"}')).toBe('no-matching-signature');
  });

  it('is not signed when the tenant has no secret', async () => {
    const unsigned = await deliver(undefined);
    expect(unsigned.headers['webhook-id']).toBeUndefined();
    expect(unsigned.headers['webhook-timestamp']).toBeUndefined();
    expect(unsigned.headers['webhook-signature']).toBeUndefined();
  });

  it("refuses a job that sets a signature header of its own: it could pass for the scheduler's", () => {
    for (const name of ['webhook-id', 'Webhook-Timestamp', 'webhook-signature']) {
      expect(httpTargetSchema.safeParse({ kind: 'http', url: 'https://example.com/hook', headers: { [name]: 'v1,forged' } }).success).toBe(false);
    }
  });
});
