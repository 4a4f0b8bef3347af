// Signed deliveries against the Standard Webhooks specification: its published example, and the
// reference library (`standardwebhooks`, the spec authors' own) verifying what we sign and signing
// what we verify.
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { newSigningSecret, secretKey, signDelivery, verifyDelivery } from '../../lambdas/targets/webhook-signature';

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
    expect(verifyDelivery(SPEC.secret, { ...signed, 'webhook-timestamp': String(SPEC.timestamp + 1) }, SPEC.body, AT_SPEC_TIME)).toBe(
      'no-matching-signature',
    );
    expect(verifyDelivery(newSigningSecret(), signed, SPEC.body, AT_SPEC_TIME)).toBe('no-matching-signature');
  });

  it('refuses an old or future timestamp (a replayed capture) and missing headers', () => {
    expect(verifyDelivery(SPEC.secret, signed, SPEC.body, { now: (SPEC.timestamp + 301) * 1000 })).toBe('timestamp-too-old');
    expect(verifyDelivery(SPEC.secret, signed, SPEC.body, { now: (SPEC.timestamp - 301) * 1000 })).toBe('timestamp-too-new');
    expect(verifyDelivery(SPEC.secret, { 'webhook-id': SPEC.id }, SPEC.body, AT_SPEC_TIME)).toBe('missing-headers');
  });

  it('accepts a header list where any one signature matches, and skips other versions', () => {
    const list = `v1a,${Buffer.alloc(32).toString('base64')} v1,${Buffer.alloc(32).toString('base64')} ${SPEC.signature}`;
    expect(verifyDelivery(SPEC.secret, { ...signed, 'webhook-signature': list }, SPEC.body, AT_SPEC_TIME)).toBeNull();
  });
});
