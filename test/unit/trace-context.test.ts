// The W3C traceparent parser against the specification's rules (https://www.w3.org/TR/trace-context/
// §3.2 and §4.3), and the ids the scheduler makes: valid W3C ids that X-Ray reads as its own.
import { describe, expect, it } from 'vitest';
import { newSpanId, newTraceId } from '../../lambdas/core/ids';
import {
  childSpanOf,
  formatTraceparent,
  newTraceContext,
  parseTraceparent,
  traceContextOf,
  traceIdOf,
  xrayTraceIdOf,
} from '../../lambdas/domain/trace-context';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('parseTraceparent', () => {
  it("reads the specification's example", () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`)).toEqual({ traceId: TRACE, parentId: SPAN, flags: '01' });
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)?.flags).toBe('00');
  });

  it('allows the whitespace HTTP allows around a value', () => {
    expect(parseTraceparent(` 00-${TRACE}-${SPAN}-01\t`)?.traceId).toBe(TRACE);
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['not the format', 'garbage'],
    ['upper case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['an all-zero parent id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['version 00 with more fields', `00-${TRACE}-${SPAN}-01-extra`],
    ['a short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['a long parent id', `00-${TRACE}-${SPAN}0-01`],
    ['one-digit flags', `00-${TRACE}-${SPAN}-1`],
    ['a later version without a dash after the flags', `01-${TRACE}-${SPAN}-01x`],
    ['non-hex', `00-${TRACE.slice(0, 31)}g-${SPAN}-01`],
  ])('refuses %s', (_case, header) => {
    expect(parseTraceparent(header)).toBeNull();
  });

  it('reads a later version by its first four fields, keeping only the sampled flag', () => {
    expect(parseTraceparent(`cc-${TRACE}-${SPAN}-03-what-the-future-holds`)).toEqual({ traceId: TRACE, parentId: SPAN, flags: '01' });
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-02`)?.flags).toBe('00');
  });
});

describe('trace contexts the scheduler makes', () => {
  it('keeps a valid request context, and starts a new sampled trace for an invalid or absent one', () => {
    expect(traceContextOf(`00-${TRACE}-${SPAN}-00`, 0)).toEqual({ traceId: TRACE, parentId: SPAN, flags: '00' });
    const fresh = traceContextOf('nonsense', Date.UTC(2026, 10, 23));
    expect(fresh.traceId).not.toBe(TRACE);
    expect(parseTraceparent(formatTraceparent(fresh))).toEqual(fresh);
    expect(fresh.flags).toBe('01');
    expect(traceContextOf(undefined, 0).traceId).toMatch(/^[0-9a-f]{32}$/);
  });

  it("gives an attempt a span of its own under the run's trace", () => {
    const run = { traceId: TRACE, parentId: SPAN, flags: '01' };
    const first = childSpanOf(run);
    const second = childSpanOf(run);
    expect([first.traceId, second.traceId]).toEqual([TRACE, TRACE]);
    expect(new Set([SPAN, first.parentId, second.parentId]).size).toBe(3);
    expect(first.flags).toBe('01');
  });

  it('makes trace ids X-Ray reads: the epoch seconds first, then randomness', () => {
    const now = Date.UTC(2026, 10, 23, 12, 0, 0);
    const traceId = newTraceId(now);
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(parseInt(traceId.slice(0, 8), 16)).toBe(now / 1000);
    expect(xrayTraceIdOf(traceId)).toBe(`1-${traceId.slice(0, 8)}-${traceId.slice(8)}`);
    expect(newTraceId(now)).not.toBe(traceId);
    expect(newSpanId()).toMatch(/^[0-9a-f]{16}$/);
    expect(newTraceContext(now).traceId.slice(0, 8)).toBe(traceId.slice(0, 8));
  });

  it("reads a stored run's trace id, and none from runs without one", () => {
    expect(traceIdOf(`00-${TRACE}-${SPAN}-01`)).toBe(TRACE);
    expect(traceIdOf(undefined)).toBeUndefined();
  });
});
