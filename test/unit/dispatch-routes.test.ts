// Routing of dispatches to worker pools and lanes, and the routing table as the functions read it.
import type { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { readConfig } from '../../lambdas/config/config';
import { DispatchQueue, DispatchRouter, awsTraceHeaderOf, decodeDispatchMessage, encodeDispatchMessage } from '../../lambdas/store/dispatch-queue';
import { lowLaneConcurrency, UNCAPPED_POOL_LOW_LANE_CONCURRENCY, validatePools } from '../../lambdas/store/pools';

const base = 'https://sqs.us-east-1.amazonaws.com/123456789012';
const sent: { QueueUrl: string; ids: string[] }[] = [];
const sqs = {
  send: (command: { input: { QueueUrl: string; Entries: { MessageBody: string }[] } }) => {
    sent.push({ QueueUrl: command.input.QueueUrl, ids: command.input.Entries.map((entry) => (JSON.parse(entry.MessageBody) as { runId: string }).runId) });
    return Promise.resolve({ Failed: [] });
  },
} as unknown as SQSClient;

const router = new DispatchRouter(sqs, [
  { name: 'default', jobTypes: [], queueUrl: `${base}/d`, highQueueUrl: `${base}/d-high`, lowQueueUrl: `${base}/d-low`, dlqUrl: `${base}/d-dlq` },
  {
    name: 'exports',
    jobTypes: ['export', 'archive'],
    queueUrl: `${base}/exports`,
    highQueueUrl: `${base}/exports-high`,
    lowQueueUrl: `${base}/exports-low`,
    dlqUrl: `${base}/exports-dlq`,
  },
  { name: 'nohigh', jobTypes: ['plain'], queueUrl: `${base}/plain`, dlqUrl: `${base}/plain-dlq` },
]);

describe('DispatchRouter', () => {
  it("sends a run to its job type's pool, and within it to the lane of its priority", () => {
    expect(router.queueUrlFor('export', 'normal')).toBe(`${base}/exports`);
    expect(router.queueUrlFor('archive', 'low')).toBe(`${base}/exports-low`);
    expect(router.queueUrlFor('billing', 'low')).toBe(`${base}/d-low`);
    expect(router.queueUrlFor('export', 'high')).toBe(`${base}/exports-high`);
    expect(router.queueUrlFor('billing', 'high')).toBe(`${base}/d-high`);
    expect(router.queueUrlFor('billing', undefined)).toBe(`${base}/d`);
    expect(router.queueUrlFor(undefined, undefined)).toBe(`${base}/d`);
    // A pool without a high or low lane (a routing table from before lanes) takes those runs on the standard lane.
    expect(router.queueUrlFor('plain', 'high')).toBe(`${base}/plain`);
    expect(router.queueUrlFor('plain', 'low')).toBe(`${base}/plain`);
  });

  it('batches sends per queue, and sends a message with a queue URL back to exactly that queue', async () => {
    sent.length = 0;
    await router.send(
      [
        { runId: 'a', tenantId: 't', availableAt: 0, jobType: 'export', priority: 'high' },
        { runId: 'b', tenantId: 't', availableAt: 0, jobType: 'export' },
        { runId: 'c', tenantId: 't', availableAt: 0, jobType: 'other', priority: 'low' },
        { runId: 'd', tenantId: 't', availableAt: 0, jobType: 'other', priority: 'low' },
        { runId: 'e', tenantId: 't', availableAt: 0, queueUrl: `${base}/exports-high` },
      ],
      0,
    );
    expect(sent.map((entry) => [entry.QueueUrl, entry.ids.sort()]).sort()).toEqual(
      [
        [`${base}/d-low`, ['c', 'd']],
        [`${base}/exports`, ['b']],
        [`${base}/exports-high`, ['a', 'e']],
      ].sort(),
    );
  });

  it('finds the queue of an event source ARN by its name, the default lane when unknown', () => {
    expect(router.queueUrlOfArn('arn:aws:sqs:us-east-1:123456789012:exports-high')).toBe(`${base}/exports-high`);
    expect(router.queueUrlOfArn('arn:aws:sqs:us-east-1:123456789012:d')).toBe(`${base}/d`);
    expect(router.queueUrlOfArn('arn:aws:sqs:us-east-1:123456789012:exports-low')).toBe(`${base}/exports-low`);
    expect(router.queueUrlOfArn('arn:aws:sqs:us-east-1:123456789012:elsewhere')).toBe(`${base}/d`);
    expect(router.queueUrlOfArn(undefined)).toBe(`${base}/d`);
    expect(router.lanes().map((lane) => `${lane.pool}/${lane.lane}`)).toEqual([
      'default/high',
      'default/standard',
      'default/low',
      'exports/high',
      'exports/standard',
      'exports/low',
      'nohigh/standard',
    ]);
  });
});

describe('the routing table in the environment', () => {
  const env = { JOBS_TABLE: 'j', RUNS_TABLE: 'r', DISPATCH_QUEUE_URL: 'q', DISPATCH_DLQ_URL: 'dlq' };

  it('reads DISPATCH_HIGH_QUEUE_URL, DISPATCH_LOW_QUEUE_URL and DISPATCH_POOLS', () => {
    const pools = [{ name: 'exports', jobTypes: ['export'], queueUrl: 'e', highQueueUrl: 'eh', lowQueueUrl: 'el', dlqUrl: 'ed', timeoutSeconds: 300 }];
    const config = readConfig({ ...env, DISPATCH_HIGH_QUEUE_URL: 'qh', DISPATCH_LOW_QUEUE_URL: 'ql', DISPATCH_POOLS: JSON.stringify(pools) });
    expect(config.dispatchHighQueueUrl).toBe('qh');
    expect(config.dispatchLowQueueUrl).toBe('ql');
    expect(config.pools).toEqual(pools);
  });

  it('has no other pool and no high lane without them, as before pools', () => {
    const config = readConfig(env);
    expect(config.pools).toEqual([]);
    expect(config.dispatchHighQueueUrl).toBeUndefined();
    expect(config.dispatchLowQueueUrl).toBeUndefined();
  });

  it('fails at start on a table that is not a list of pools', () => {
    expect(() => readConfig({ ...env, DISPATCH_POOLS: '{"name":"x"}' })).toThrow(/DISPATCH_POOLS: must be a JSON array of worker pools/);
    expect(() => readConfig({ ...env, DISPATCH_POOLS: '[{"name":"x","jobTypes":["a"],"queueUrl":"q","dlqUrl":"d","extra":1}]' })).toThrow(/DISPATCH_POOLS/);
  });
});

describe("the low lane's concurrency", () => {
  it("is a quarter of the pool's, at least the minimum and at most the pool's, unless set", () => {
    expect(lowLaneConcurrency(20, 2)).toBe(5);
    expect(lowLaneConcurrency(3, 2)).toBe(2);
    expect(lowLaneConcurrency(4, 1)).toBe(1);
    expect(lowLaneConcurrency(1, 1)).toBe(1);
    expect(lowLaneConcurrency(2, 2)).toBe(2);
    expect(lowLaneConcurrency(1000, 2)).toBe(250);
    expect(lowLaneConcurrency(20, 2, 7)).toBe(7);
    // An uncapped pool (the default one in AWS, unless configured) still caps its low lane.
    expect(lowLaneConcurrency(undefined, 2)).toBe(UNCAPPED_POOL_LOW_LANE_CONCURRENCY);
  });

  it("is refused outside the minimum and the pool's own concurrency", () => {
    const pool = { name: 'a', jobTypes: ['x'], maxConcurrency: 4, timeoutSeconds: 60 };
    expect(() => validatePools([{ ...pool, lowMaxConcurrency: 5 }], { minConcurrency: 2 })).toThrow(
      /lowMaxConcurrency must be a whole number from 2 to its maxConcurrency \(4\)/,
    );
    expect(() => validatePools([{ ...pool, lowMaxConcurrency: 1 }], { minConcurrency: 2 })).toThrow(/lowMaxConcurrency/);
    expect(() => validatePools([{ ...pool, lowMaxConcurrency: 1.5 }], { minConcurrency: 1 })).toThrow(/lowMaxConcurrency/);
    expect(() => validatePools([{ ...pool, lowMaxConcurrency: 4 }], { minConcurrency: 2 })).not.toThrow();
  });
});

describe('dispatch messages and traces', () => {
  it("carry the run's trace as X-Ray's AWSTraceHeader, and nothing for a run without one", async () => {
    const entries: Record<string, unknown>[] = [];
    const capture = {
      send: (command: { input: { Entries: Record<string, unknown>[] } }) => {
        entries.push(...command.input.Entries);
        return Promise.resolve({ Failed: [] });
      },
    } as unknown as SQSClient;
    const traced = new DispatchRouter(capture, [{ name: 'default', jobTypes: [], queueUrl: `${base}/d`, dlqUrl: `${base}/d-dlq` }]);
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    await traced.send(
      [
        { runId: 'r1', tenantId: 't', availableAt: 0, traceparent },
        { runId: 'r2', tenantId: 't', availableAt: 0 },
      ],
      0,
    );
    expect(entries.map((entry) => entry.MessageSystemAttributes)).toEqual([
      { AWSTraceHeader: { DataType: 'String', StringValue: 'Root=1-4bf92f35-77b34da6a3ce929d0e0e4736;Parent=00f067aa0ba902b7;Sampled=1' } },
      undefined,
    ]);
    expect(awsTraceHeaderOf('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00')).toBe(
      'Root=1-4bf92f35-77b34da6a3ce929d0e0e4736;Parent=00f067aa0ba902b7;Sampled=0',
    );
    expect(awsTraceHeaderOf('garbage')).toBeUndefined();
  });

  it("carry the run's trace in their body too, for the worker's lines; a value that is not one is dropped, the message kept", () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    expect(decodeDispatchMessage(encodeDispatchMessage('r1', { tenantId: 't', traceparent }))).toEqual({ v: 1, runId: 'r1', tenantId: 't', traceparent });
    expect(decodeDispatchMessage(encodeDispatchMessage('r2', { tenantId: 't' }))).toEqual({ v: 1, runId: 'r2', tenantId: 't' });
    // A message of an older version (no trace) and one whose trace is not a string still run their run.
    expect(decodeDispatchMessage(JSON.stringify({ v: 1, runId: 'r3', traceparent: 42 }))).toMatchObject({ v: 1, runId: 'r3' });
    expect(decodeDispatchMessage(JSON.stringify({ v: 1, runId: 'r3', traceparent: 'x'.repeat(500) }))?.traceparent).toBeUndefined();
  });

  it('say when a delayed one was meant to arrive, and nothing for one sent for now (decision 0172)', async () => {
    const bodies: string[] = [];
    const capture = {
      send: (command: { input: { Entries: { MessageBody: string }[] } }) => {
        bodies.push(...command.input.Entries.map((entry) => entry.MessageBody));
        return Promise.resolve({ Failed: [] });
      },
    } as unknown as SQSClient;
    const router = new DispatchRouter(capture, [{ name: 'default', jobTypes: [], queueUrl: `${base}/d`, dlqUrl: `${base}/d-dlq` }]);
    const now = Date.parse('2030-01-01T00:00:00.000Z');
    await router.send(
      [
        { runId: 'later', tenantId: 't', availableAt: now + 4_750 },
        { runId: 'now', tenantId: 't', availableAt: now },
        { runId: 'overdue', tenantId: 't', availableAt: now - 10_000 },
      ],
      now,
    );
    expect(bodies.map((body) => decodeDispatchMessage(body)?.notBefore)).toEqual([now + 4_750, undefined, undefined]);
    // A hint that is not a time is dropped, the message kept.
    expect(decodeDispatchMessage(JSON.stringify({ v: 1, runId: 'r', notBefore: 'soon' }))).toEqual({ v: 1, runId: 'r' });
    expect(decodeDispatchMessage(JSON.stringify({ v: 1, runId: 'r', notBefore: -5 }))).toEqual({ v: 1, runId: 'r' });
  });
});

describe('coalesced sends (decision 0160)', () => {
  const dispatch = (runId: string) => ({ runId, tenantId: 't', availableAt: 0, jobType: 'other' });
  // A quiet time far longer than the test's gaps between sends, so that a loaded machine's timers still land inside it.
  const coalesce = { quietMs: 1_500, capMs: 10_000 };
  const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('share one SendMessageBatch across sends made moments apart, and only a refused message fails its own send', async () => {
    const requests: string[][] = [];
    const client = {
      send: (command: { input: { Entries: { Id: string; MessageBody: string }[] } }) => {
        const entries = command.input.Entries;
        requests.push(entries.map((entry) => (JSON.parse(entry.MessageBody) as { runId: string }).runId));
        const refused = entries.filter((entry) => (JSON.parse(entry.MessageBody) as { runId: string }).runId === 'refused');
        return Promise.resolve({ Failed: refused.map((entry) => ({ Id: entry.Id, Code: 'InvalidMessage', SenderFault: true })) });
      },
    } as unknown as SQSClient;
    const queues = new DispatchRouter(client, [{ name: 'default', jobTypes: [], queueUrl: `${base}/d`, dlqUrl: `${base}/d-dlq` }]);
    // Three sends in three separate moments, each within the quiet time of the one before.
    const sends = [
      queues.send([dispatch('a')], 0, { coalesce }),
      later(5).then(() => queues.send([dispatch('refused')], 0, { coalesce })),
      later(10).then(() => queues.send([dispatch('b')], 0, { coalesce })),
    ];
    const results = await Promise.allSettled(sends);
    expect(requests).toEqual([['a', 'refused', 'b']]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/refused dispatch of runs refused/);
  });

  it('fail every send of a request that failed, so that each run is left to its check-back', async () => {
    const client = { send: () => Promise.reject(new Error('SQS unavailable')) } as unknown as SQSClient;
    const queues = new DispatchRouter(client, [{ name: 'default', jobTypes: [], queueUrl: `${base}/d`, dlqUrl: `${base}/d-dlq` }]);
    const results = await Promise.allSettled([queues.send([dispatch('a')], 0, { coalesce }), queues.send([dispatch('b')], 0, { coalesce })]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected']);
  });
});

describe('a delayed send', () => {
  it('counts its delay from when it leaves, not from when it joined its batch', async () => {
    const delays: number[] = [];
    const recording = {
      send: (command: { input: { Entries: { DelaySeconds: number }[] } }) => {
        delays.push(...command.input.Entries.map((entry) => entry.DelaySeconds));
        return Promise.resolve({ Failed: [] });
      },
    } as unknown as SQSClient;
    const queue = new DispatchQueue(recording, `${base}/d`);
    const now = Date.parse('2026-11-28T12:00:00Z');
    // Due in 10.5 s, held 1.5 s for its batch (a quiet time longer than the cap: it leaves at the cap).
    await queue.send([{ runId: 'r', tenantId: 't', availableAt: now + 10_500 }], now, { coalesce: { quietMs: 5_000, capMs: 1_500 } });
    // Before, 10 s from the sender's clock: it arrived 1.5 s after its time. Now 9 at most (8 once
    // the rounding down meets the milliseconds the send took), which the worker waits out (notBefore).
    expect(delays).toHaveLength(1);
    expect(delays[0]).toBeLessThanOrEqual(9);
    expect(delays[0]).toBeGreaterThanOrEqual(7);
  });
});
