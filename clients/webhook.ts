// A target's check of a signed delivery (Standard Webhooks, version 1; docs/delivery.md): the
// timestamp must be recent (a replayed capture is refused) and one `v1` signature of
// "<webhook-id>.<webhook-timestamp>.<body>" must match the secret, compared in constant time. The
// client package carries it without a dependency; the scheduler signs with
// lambdas/targets/webhook-signature.ts, and the tests hold each to the other, to the spec's published
// example and to the spec authors' library.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Why a delivery was not accepted. */
export type VerifyFailure = 'missing-headers' | 'timestamp-too-old' | 'timestamp-too-new' | 'no-matching-signature';

export interface VerifyOptions {
  /** Now, in milliseconds (tests pin it). */
  readonly now?: number;
  /** How far the timestamp may be from now, either way; the spec suggests 5 minutes. */
  readonly toleranceSeconds?: number;
}

/** The key bytes of a `whsec_` secret. */
function keyOf(secret: string): Buffer {
  if (!/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(secret)) throw new Error('a signing secret is whsec_ followed by base64');
  return Buffer.from(secret.slice('whsec_'.length), 'base64');
}

/** null when one of the delivery's signatures is the secret's and its timestamp is recent; else why not. */
export function verifyDelivery(
  secret: string,
  headers: Readonly<Record<string, string | readonly string[] | undefined>>,
  body: string,
  options: VerifyOptions = {},
): VerifyFailure | null {
  // Header names are case-insensitive: Node lower-cases them, other servers and frameworks keep `Webhook-Id`.
  const header = (name: string): string | undefined => {
    const key = Object.keys(headers).find((given) => given.toLowerCase() === name);
    const value = key === undefined ? undefined : headers[key];
    return Array.isArray(value) ? (value as readonly string[])[0] : (value as string | undefined);
  };
  const id = header('webhook-id');
  const timestamp = header('webhook-timestamp');
  const signatures = header('webhook-signature');
  if (!id || !timestamp || !signatures || !/^\d+$/.test(timestamp)) return 'missing-headers';
  const seconds = Number(timestamp);
  const now = Math.floor((options.now ?? Date.now()) / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  if (seconds < now - tolerance) return 'timestamp-too-old';
  if (seconds > now + tolerance) return 'timestamp-too-new';
  const expected = createHmac('sha256', keyOf(secret)).update(`${id}.${seconds}.${body}`).digest();
  for (const candidate of signatures.split(' ')) {
    const [version, value] = candidate.split(',', 2);
    if (version !== 'v1' || !value) continue;
    const given = Buffer.from(value, 'base64');
    if (given.length === expected.length && timingSafeEqual(given, expected)) return null;
  }
  return 'no-matching-signature';
}
