// W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` a request brings,
// kept with its run and passed on to the run's targets. An invalid header is not an error: the
// specification has the receiver start a new trace instead (decision 0111).
import { newSpanId, newTraceId } from '../core/ids';

export interface TraceContext {
  /** 32 lowercase hex digits, not all zeros. */
  readonly traceId: string;
  /** The caller's span: 16 lowercase hex digits, not all zeros. */
  readonly parentId: string;
  /** Trace flags, 2 hex digits; bit 0 is `sampled`. */
  readonly flags: string;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * The trace context of a `traceparent` header, or null when it is absent or invalid. Version `00`
 * must be exactly four fields; a later version is read by its first four (the specification's
 * forward compatibility); `ff`, upper case hex and all-zero ids are invalid.
 */
export function parseTraceparent(header: string | undefined | null): TraceContext | null {
  if (header === undefined || header === null) return null;
  const match = TRACEPARENT.exec(header.trim());
  if (!match) return null;
  const [, version, traceId, parentId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff') return null;
  if (version === '00' && rest !== undefined) return null;
  if (/^0+$/.test(traceId) || /^0+$/.test(parentId)) return null;
  // Version 00 defines the sampled bit; the others are passed on only where their version says so.
  return { traceId, parentId, flags: version === '00' ? flags : (parseInt(flags, 16) & 0x01).toString(16).padStart(2, '0') };
}

/** The header for a context, always in version 00. */
export function formatTraceparent(context: TraceContext): string {
  return `00-${context.traceId}-${context.parentId}-${context.flags}`;
}

/** A new trace, sampled, whose first span is the scheduler's. */
export function newTraceContext(now: number): TraceContext {
  return { traceId: newTraceId(now), parentId: newSpanId(), flags: '01' };
}

/** The request's context when it has a valid one, else a new trace. */
export function traceContextOf(header: string | undefined | null, now: number): TraceContext {
  return parseTraceparent(header) ?? newTraceContext(now);
}

/** A span of the scheduler's under the same trace: what one attempt's call to its target is. */
export function childSpanOf(context: TraceContext): TraceContext {
  return { ...context, parentId: newSpanId() };
}

/** The trace id of a stored traceparent (a run's), or undefined for runs without one. */
export function traceIdOf(traceparent: string | undefined | null): string | undefined {
  return parseTraceparent(traceparent)?.traceId;
}

/** The X-Ray form of a trace id (`1-<8 hex>-<24 hex>`), as X-Ray's AWSTraceHeader `Root` names it. */
export function xrayTraceIdOf(traceId: string): string {
  return `1-${traceId.slice(0, 8)}-${traceId.slice(8)}`;
}
