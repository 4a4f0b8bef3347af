// Standard Webhooks signatures (https://www.standardwebhooks.com, version 1): a delivery carries
// `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature`, a space-separated list
// of `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, one per secret that signs (two during a
// rotation's grace period). A secret is written `whsec_` + the base64 of its key bytes. A target's
// check is the client package's `verifyDelivery` (clients/webhook.ts), which tests hold this to.
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

/** The spec's bounds: keys of 24 to 64 bytes. */
const MIN_KEY_BYTES = 24;
const MAX_KEY_BYTES = 64;

/** A new secret of 32 random bytes, written as the spec writes it. */
export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

/** The key bytes of a `whsec_` secret; anything else is refused. */
export function secretKey(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error(`a signing secret starts with ${SECRET_PREFIX}`);
  const encoded = secret.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) throw new Error('a signing secret is whsec_ followed by base64');
  const key = Buffer.from(encoded, 'base64');
  if (key.length < MIN_KEY_BYTES || key.length > MAX_KEY_BYTES) throw new Error(`a signing key has ${MIN_KEY_BYTES} to ${MAX_KEY_BYTES} bytes`);
  return key;
}

function signature(key: Buffer, id: string, timestamp: number, body: string): string {
  return createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
}

export interface SignedHeaders {
  readonly 'webhook-id': string;
  readonly 'webhook-timestamp': string;
  readonly 'webhook-signature': string;
}

/** The three headers of a delivery signed by each of `secrets` (newest first). */
export function signDelivery(secrets: readonly string[], id: string, timestampSeconds: number, body: string): SignedHeaders {
  if (secrets.length === 0) throw new Error('signing needs at least one secret');
  if (!Number.isInteger(timestampSeconds) || timestampSeconds < 0) throw new Error('a webhook timestamp is whole Unix seconds');
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((secret) => `v1,${signature(secretKey(secret), id, timestampSeconds, body)}`).join(' '),
  };
}
