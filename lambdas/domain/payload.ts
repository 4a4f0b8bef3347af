// Payloads and where they live (decision 0162). A job's payload, or a trigger's, of up to
// INLINE_PAYLOAD_MAX_BYTES of JSON is kept in the item that carries it; a larger one, up to
// MAX_JOB_PAYLOAD_BYTES, is an object of the payload bucket that the item names. The item then
// stays small: a create writes, and a recurring job's every occurrence rewrites, a few hundred bytes
// instead of the payload, and only the worker that delivers the run reads the payload.
import { createHash } from 'node:crypto';
import type { Target } from './job';

/** The largest payload of a job or a trigger: 1 MiB of JSON. */
export const MAX_JOB_PAYLOAD_BYTES = 1024 * 1024;
/**
 * A payload of more bytes of JSON than this is stored apart. 4 KiB: above it, the object's PUT
 * ($5 per million) and GET ($0.40) cost less than the write units the payload adds to a create's
 * transaction and its index copy (three per KiB, $0.625 per million each), and a recurring job's
 * payload is rewritten at every occurrence (two units per KiB) when inline.
 */
export const INLINE_PAYLOAD_MAX_BYTES = 4 * 1024;
/** The largest payload without a payload bucket (the deployment's limit before decision 0162). */
export const MAX_INLINE_ONLY_PAYLOAD_BYTES = 64 * 1024;
/**
 * How many bytes of payloads stored apart a page of jobs shows: a list answer stays well inside
 * Lambda's 6 MB response. A job past the budget shows `payload: null` and `payloadStored`; GET
 * /v1/jobs/{jobId} always shows its payload.
 */
export const LIST_PAYLOAD_BUDGET_BYTES = 2 * 1024 * 1024;
/** What a listed job's stored payload may weigh to be shown in the list at all (the old inline limit). */
export const LIST_PAYLOAD_MAX_BYTES = 64 * 1024;

/** Where a payload stored apart is, with what identifies its content. */
export interface PayloadRef {
  /** The object's key in the payload bucket. */
  readonly key: string;
  /** Bytes of its JSON text. */
  readonly bytes: number;
  /** SHA-256 of its JSON text, hex: a read checks it. */
  readonly sha256: string;
}

/** A run's own payload (a trigger's), inline or stored apart. */
export type RunPayload = { readonly inline: unknown } | { readonly ref: PayloadRef };

/** The JSON text of a payload, as stored and as its size is counted. */
export const payloadText = (payload: unknown): string => JSON.stringify(payload ?? null);
export const payloadBytes = (payload: unknown): number => Buffer.byteLength(payloadText(payload), 'utf8');
export const sha256Of = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/**
 * The room a target leaves for a payload: its message limit less 32 KiB for the envelope around
 * the payload (ids, name, labels, trace context). SQS takes messages of 1 MiB, EventBridge entries
 * of 256 KiB; HTTP, Lambda (RequestResponse, 6 MB) and external workers take the largest payload.
 */
const ENVELOPE_ROOM_BYTES = 32 * 1024;
export function targetPayloadLimit(kind: Target['kind'] | 'workflow'): number {
  if (kind === 'sqs') return 1024 * 1024 - ENVELOPE_ROOM_BYTES;
  if (kind === 'eventbridge') return 256 * 1024 - ENVELOPE_ROOM_BYTES;
  return MAX_JOB_PAYLOAD_BYTES;
}

/**
 * The most a workflow step's run may deliver: its payload and its parents' results together
 * (decision 0163). A message target's room for a payload; 4 MiB for HTTP and Lambda targets, whose
 * request (Lambda's RequestResponse invoke) stays under Lambda's 6 MB; 2.5 MiB for an external
 * worker's claim, whose answer leaves the API function as a string inside its JSON response: encoded
 * twice, each quote and backslash of the inputs takes twice its bytes again (at most 5 MiB).
 */
export const STEP_DELIVERY_MAX_BYTES = 4 * 1024 * 1024;
export const EXTERNAL_STEP_DELIVERY_MAX_BYTES = 2.5 * 1024 * 1024;
export function stepDeliveryLimit(kind: Target['kind'] | 'workflow'): number {
  if (kind === 'external') return EXTERNAL_STEP_DELIVERY_MAX_BYTES;
  return kind === 'sqs' || kind === 'eventbridge' ? targetPayloadLimit(kind) : STEP_DELIVERY_MAX_BYTES;
}

/** Why a payload is refused for a target, or null when it fits. `storedApart`: a payload bucket is configured. */
export function payloadRefusal(bytes: number, kind: Target['kind'] | 'workflow', storedApart: boolean): string | null {
  const limit = Math.min(targetPayloadLimit(kind), storedApart ? MAX_JOB_PAYLOAD_BYTES : MAX_INLINE_ONLY_PAYLOAD_BYTES);
  if (bytes <= limit) return null;
  const why =
    limit < MAX_JOB_PAYLOAD_BYTES && limit === targetPayloadLimit(kind)
      ? ` (an ${kind} target's message limit, less room for the envelope)`
      : storedApart
        ? ''
        : ' (this deployment has no payload bucket)';
  return `must be at most ${limit} bytes of JSON${why} (got ${bytes})`;
}
