import { describe, expect, it } from 'vitest';
import { decideRate, KEY_DECISION_MS, keyedWaitSeconds, parseKeyTemplate, renderKey, stillWaitsForKey } from '../../lambdas/domain/flow-control';
import { jobSpecSchema } from '../../lambdas/domain/job';

const source = { type: 'invoice', labels: { team: 'billing' }, payload: { customerId: 'c-42', nested: { region: 'eu' }, count: 3, list: [1] } };

describe('concurrency and rate keys', () => {
  it('render the job type, a label and payload fields into the key', () => {
    expect(renderKey('customer:{payload.customerId}', source)).toBe('customer:c-42');
    expect(renderKey('{type}/{label.team}/{payload.nested.region}/{payload.count}', source)).toBe('invoice/billing/eu/3');
    expect(renderKey('fixed', source)).toBe('fixed');
  });

  it('render a missing field, or one that is not a scalar, empty', () => {
    expect(renderKey('c:{payload.missing}', source)).toBe('c:');
    expect(renderKey('c:{payload.list}', source)).toBe('c:');
    expect(renderKey('c:{payload.customerId.deeper}', source)).toBe('c:');
    expect(renderKey('l:{label.absent}', source)).toBe('l:');
    expect(renderKey('c:{payload.customerId}', { ...source, payload: 'text' })).toBe('c:');
  });

  it('hash a rendered key too long for a partition key', () => {
    const key = renderKey('{payload.long}', { ...source, payload: { long: 'x'.repeat(500) } });
    expect(key).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('refuse unknown placeholders and stray braces with a message', () => {
    expect(parseKeyTemplate('{tenant}')).toMatch(/placeholders are/);
    expect(parseKeyTemplate('a{payload.x')).toMatch(/placeholders are/);
    expect(parseKeyTemplate('a b')).toMatch(/literal text/);
    expect(parseKeyTemplate('{payload.a}{type}')).toEqual([{ payload: ['a'] }, { type: true }]);
  });

  it('are checked in a job spec, with the failing path', () => {
    const base = { name: 'n', type: 't', schedule: { kind: 'now' }, target: { kind: 'http', url: 'https://example.com' } };
    expect(jobSpecSchema.safeParse({ ...base, concurrency: { key: 'c:{payload.id}', limit: 2 } }).success).toBe(true);
    const bad = jobSpecSchema.safeParse({ ...base, concurrency: { key: '{nope}', limit: 0 }, rateLimit: { key: 'k', limit: 1, periodSeconds: 0 } });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues.map((issue) => issue.path.join('.')).sort()).toEqual(['concurrency.key', 'concurrency.limit', 'rateLimit.periodSeconds']);
    const external = jobSpecSchema.safeParse({ ...base, target: { kind: 'external' }, concurrency: { key: 'k', limit: 1 } });
    expect(external.error?.issues.map((issue) => issue.path.join('.'))).toEqual(['concurrency']);
  });
});

describe('the rate of a key', () => {
  const rate = { limit: 2, periodSeconds: 60 };
  const now = 1_000_000;

  it('takes an unused mark first', () => {
    expect(decideRate(rate, new Map(), now)).toEqual({ take: 0, lastUsedAt: null });
    expect(decideRate(rate, new Map([[0, now - 1]]), now)).toEqual({ take: 1, lastUsedAt: null });
  });

  it('takes the first mark used at least a period ago', () => {
    expect(
      decideRate(
        rate,
        new Map([
          [0, now - 61_000],
          [1, now - 70_000],
        ]),
        now,
      ),
    ).toEqual({ take: 0, lastUsedAt: now - 61_000 });
    expect(
      decideRate(
        rate,
        new Map([
          [0, now - 60_000],
          [1, now - 1],
        ]),
        now,
      ),
    ).toEqual({ take: 0, lastUsedAt: now - 60_000 });
  });

  it('looks from the start it is given, so runs starting at once spread over the marks', () => {
    const five = { limit: 5, periodSeconds: 60 };
    expect(decideRate(five, new Map(), now, 3)).toEqual({ take: 3, lastUsedAt: null });
    // Wraps past the last mark; an unused mark before a freed one.
    expect(
      decideRate(
        five,
        new Map([
          [4, now - 61_000],
          [3, now - 1],
        ]),
        now,
        3,
      ),
    ).toEqual({ take: 0, lastUsedAt: null });
    const allUsed = new Map([0, 1, 2, 3, 4].map((slot) => [slot, slot === 1 || slot === 4 ? now - 61_000 : now - 1] as const));
    expect(decideRate(five, allUsed, now, 2)).toEqual({ take: 4, lastUsedAt: now - 61_000 });
    expect(decideRate(five, allUsed, now, 7)).toEqual({ take: 4, lastUsedAt: now - 61_000 });
    expect(decideRate(five, allUsed, now, 0)).toEqual({ take: 1, lastUsedAt: now - 61_000 });
  });

  it('says when the earliest mark frees when every mark was used within the period', () => {
    expect(
      decideRate(
        rate,
        new Map([
          [0, now - 10_000],
          [1, now - 20_000],
        ]),
        now,
      ),
    ).toEqual({ waitUntil: now - 20_000 + 60_000 });
  });

  it('never lets more than `limit` starts into any window of the period', () => {
    // Starts asked for every 100 ms for three minutes; each granted start uses its mark.
    const marks = new Map<number, number>();
    const starts: number[] = [];
    for (let t = now; t < now + 180_000; t += 100) {
      const decision = decideRate({ limit: 3, periodSeconds: 10 }, marks, t);
      if ('take' in decision) {
        marks.set(decision.take, t);
        starts.push(t);
      }
    }
    for (const start of starts) expect(starts.filter((other) => other >= start && other < start + 10_000).length).toBeLessThanOrEqual(3);
    expect(starts.length).toBe(3 * 18);
  });
});

describe('a run waiting for its key', () => {
  it('waits longer each time, at most 9 s', () => {
    expect([1, 2, 3, 4, 10].map((waits) => keyedWaitSeconds(waits, 0))).toEqual([1, 2, 4, 8, 8]);
    expect(keyedWaitSeconds(10, 0.9)).toBe(9);
  });

  it("still waits in a key's queue only while pending for that key, or leased a moment ago and asking again (decision 0187)", () => {
    const now = 1_000_000;
    const scope = 't1#customer:a';
    const queued = { status: 'QUEUED' as const, leaseExpiresAt: null, startedAt: now - 5_000, waitScope: scope };
    expect(stillWaitsForKey(scope, queued, now)).toBe(true);
    expect(stillWaitsForKey(scope, { ...queued, status: 'SCHEDULED' }, now)).toBe(true);
    // Given back before decision 0187: no scope recorded, taken as this key's.
    const { waitScope: _scope, ...older } = queued;
    expect(stillWaitsForKey(scope, older, now)).toBe(true);
    // Its job's key changed: it waits for another key now.
    expect(stillWaitsForKey(scope, { ...queued, waitScope: 't1#customer:b' }, now)).toBe(false);
    // Leased this moment: asking for its slot again.
    const leased = { ...queued, status: 'RUNNING' as const, leaseExpiresAt: now + 60_000, startedAt: now - 100 };
    expect(stillWaitsForKey(scope, leased, now)).toBe(true);
    // Leased long ago and still running: it holds a slot (its entry's leave was lost), it does not wait.
    expect(stillWaitsForKey(scope, { ...leased, startedAt: now - KEY_DECISION_MS }, now)).toBe(false);
    // Its lease lapsed; it finished; it is gone.
    expect(stillWaitsForKey(scope, { ...leased, leaseExpiresAt: now }, now)).toBe(false);
    expect(stillWaitsForKey(scope, { ...queued, status: 'SUCCEEDED' }, now)).toBe(false);
    expect(stillWaitsForKey(scope, { ...queued, status: 'CANCELLED' }, now)).toBe(false);
    expect(stillWaitsForKey(scope, undefined, now)).toBe(false);
  });
});
