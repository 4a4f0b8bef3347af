// Delivery semantics per job, and the fencing token every target receives.
//
// - at-least-once: lease, call, record. A crash between the call and the record calls again.
// - at-most-once: the attempt is recorded as consumed (a conditional write) before the call; an
//   attempt that was consumed is never called again, and a failed one is never retried.
// - exactly-once effects: at-least-once transport, the occurrence's idempotency key handed to the
//   target, and a ledger that records one effect per occurrence however many attempts ran.
import type { Run } from './run';

export const DELIVERY_MODES = ['at-least-once', 'at-most-once', 'exactly-once'] as const;
export type Delivery = (typeof DELIVERY_MODES)[number];
export const DEFAULT_DELIVERY: Delivery = 'at-least-once';

/**
 * The delivery an attempt keeps: the one its run copied from its job when it was made (decision
 * 0060), so that a PATCH of the job's delivery changes runs made after it, never one made before
 * (leased, consumed or offered). A run made before runs copied it has its job's.
 */
export function deliveryOf(run: Pick<Run, 'delivery'>, job: { readonly delivery: Delivery }): Delivery {
  return run.delivery ?? job.delivery;
}

/** Lease versions of one run stay far below this; attempts are counted above it (decision 0061). */
export const FENCING_ATTEMPT_FACTOR = 1_000_000;

/**
 * The fencing token of an attempt: its attempt number and its lease version together
 * (`attempt * 1_000_000 + version`). The version grows with every lease of a run; a retry is a
 * new run whose version starts again, but its attempt is higher, so the token grows strictly
 * across every lease of every attempt of an occurrence. A target keeps the highest token it has
 * seen per idempotency key and refuses writes that carry a lower one.
 */
export function fencingTokenOf(run: Pick<Run, 'attempt' | 'version'>): number {
  return run.attempt * FENCING_ATTEMPT_FACTOR + run.version;
}
