// What the client's route groups share: the per-call options, the trace header, and iterating
// every item of a paged listing.
import type { Page } from './types.js';

/** Per call: an abort signal; for creates, the Idempotency-Key (a random one otherwise). */
export interface CallOptions {
  readonly signal?: AbortSignal;
}

/** Calls that make runs: the W3C trace context they join (`traceparent`); without it each run starts a new trace. */
export interface TracedOptions extends CallOptions {
  readonly traceparent?: string;
}

export const traceHeaders = (options: TracedOptions): Record<string, string> => (options.traceparent === undefined ? {} : { traceparent: options.traceparent });

export interface CreateOptions extends TracedOptions {
  /** Sent as Idempotency-Key; a retry of the call (by you, later) with the same key and body gets the same job. */
  readonly idempotencyKey?: string;
}

export interface UpdateOptions extends CallOptions {
  /** The job version the change expects (If-Match): a job changed since answers 412. */
  readonly ifMatch?: number;
}

export async function* everyItem<T>(
  fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
  cursor: string | undefined,
): AsyncGenerator<T, void, undefined> {
  let next = cursor;
  do {
    const page = await fetchPage(next);
    yield* page.items;
    next = page.nextCursor ?? undefined;
  } while (next !== undefined);
}
