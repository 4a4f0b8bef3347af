// Opaque, time-sortable identifiers: 10 characters of milliseconds and 16 of randomness, in
// Crockford's base32, so ids sort by creation time and never collide in practice.
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

export function sortableId(now: number): string {
  let time = '';
  let remaining = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET.charAt(remaining % 32) + time;
    remaining = Math.floor(remaining / 32);
  }
  let random = '';
  for (const byte of randomBytes(16)) random += ALPHABET.charAt(byte % 32);
  return time + random;
}

export function newJobId(now: number): string {
  return `job_${sortableId(now).toLowerCase()}`;
}

/**
 * A W3C trace id (32 lowercase hex digits) that is also an X-Ray trace id: its first 8 digits are
 * the epoch seconds, as X-Ray's `1-<8 hex time>-<24 hex random>` wants, so one id names the trace in
 * both (decision 0111).
 */
export function newTraceId(now: number): string {
  const seconds = Math.floor(now / 1000)
    .toString(16)
    .padStart(8, '0')
    .slice(-8);
  return seconds + randomBytes(12).toString('hex');
}

/** A W3C span (parent) id: 16 lowercase hex digits, never all zeros. */
export function newSpanId(): string {
  const id = randomBytes(8).toString('hex');
  return id === '0000000000000000' ? newSpanId() : id;
}
