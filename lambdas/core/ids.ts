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
