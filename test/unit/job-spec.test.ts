import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../lambdas/core/errors';
import { parseOrThrow } from '../../lambdas/core/validation';
import { MAX_JOB_PAYLOAD_BYTES, payloadRefusal, targetPayloadLimit } from '../../lambdas/domain/payload';
import { MAX_PAYLOAD_BYTES, attemptTimeoutSeconds, isUnnamed, jobPatchSchema, jobSpecSchema } from '../../lambdas/domain/job';
import { decodeCursor, encodeCursor } from '../../lambdas/store/keys';
import { findingKeysOf, itemToJob, jobToItem } from '../../lambdas/store/job-items';
import { JOBS_NEXT_RUN_INDEX, jobsTable } from '../../lambdas/store/schema';
import type { Job } from '../../lambdas/domain/job';
import { listRunsQuery } from '../../lambdas/api/schemas';

const valid = {
  name: 'daily-invoices',
  type: 'invoices',
  schedule: { kind: 'now' },
  target: { kind: 'http', url: 'https://example.com/hook' },
};

function failingPaths(body: unknown): string[] {
  try {
    parseOrThrow(jobSpecSchema, body);
  } catch (error) {
    if (error instanceof ValidationError) return error.errors.map((e) => e.path);
    throw error;
  }
  return [];
}

describe('job spec', () => {
  it('refuses an instant past 9999-12-31T23:59:59.999Z once in UTC, in a schedule and in a listing filter', () => {
    const at = (value: string) => failingPaths({ ...valid, schedule: { kind: 'at', at: value } });
    expect(at('9999-12-31T23:59:59.999-12:00')).toEqual(['schedule.at']);
    expect(at('9999-12-31T11:59:59.999-12:00')).toEqual([]);
    // Not a timestamp: refused once, never thrown (the range check runs after the format's).
    expect(at('2026-13-45T99:99:99Z')).toEqual(['schedule.at']);
    expect(listRunsQuery.safeParse({ from: 'yesterday' }).success).toBe(false);
    expect(listRunsQuery.safeParse({ from: '9999-12-31T23:59:59-12:00' }).success).toBe(false);
    expect(listRunsQuery.safeParse({ to: '0000-01-01T00:00:00+01:00' }).success).toBe(false);
    expect(listRunsQuery.safeParse({ from: '2026-01-01T00:00:00+01:00' }).data).toMatchObject({ from: '2025-12-31T23:00:00.000Z' });
  });

  it("takes a job without a name, and refuses a name of a job id's form (an unnamed job's name) on create but not in a PATCH (decision 0154)", () => {
    const { name: _name, ...unnamed } = valid;
    expect(parseOrThrow(jobSpecSchema, unnamed).name).toBeUndefined();
    expect(failingPaths({ ...valid, name: 'job_01m8d1e8epkerqr7fmzh2yxf0j' })).toEqual(['name']);
    // Near the form is a name like any other.
    expect(failingPaths({ ...valid, name: 'job_cleanup' })).toEqual([]);
    expect(failingPaths({ ...valid, name: 'job_01m8d1e8epkerqr7fmzh2yxf0jx' })).toEqual([]);
    expect(jobPatchSchema.safeParse({ name: 'job_01m8d1e8epkerqr7fmzh2yxf0j' }).success).toBe(true);
    expect(isUnnamed({ jobId: 'job_1', name: 'job_1' })).toBe(true);
    expect(isUnnamed({ jobId: 'job_1', name: 'daily' })).toBe(false);
  });

  it('fills the documented defaults', () => {
    const spec = parseOrThrow(jobSpecSchema, valid);
    expect(spec).toMatchObject({
      payload: {},
      timeoutSeconds: 300,
      delivery: 'at-least-once',
      overlapPolicy: 'allow',
      misfirePolicy: 'fire-once',
      priority: 'normal',
      retryPolicy: { maxAttempts: 3, initialDelaySeconds: 1, maxDelaySeconds: 300 },
      target: { method: 'POST', headers: {} },
    });
  });

  it('names each failing field', () => {
    expect(
      failingPaths({
        ...valid,
        name: '',
        schedule: { kind: 'delay', seconds: -1 },
        target: { kind: 'http', url: 'not a url' },
        delivery: 'twice',
        surprise: true,
      }).sort(),
    ).toEqual(['delivery', 'name', 'name', 'schedule.seconds', 'surprise', 'target.url'].sort());
  });

  it('refuses headers the scheduler sets itself', () => {
    expect(failingPaths({ ...valid, target: { ...valid.target, headers: { 'Idempotency-Key': 'x' } } })).toEqual(['target.headers.Idempotency-Key']);
  });

  it('bounds a Lambda target’s function ARN at what Invoke accepts (170 characters)', () => {
    const arn = (length: number) => {
      const prefix = 'arn:aws:lambda:us-east-1:123456789012:function:';
      return prefix + 'f'.repeat(length - prefix.length);
    };
    expect(failingPaths({ ...valid, target: { kind: 'lambda', functionArn: arn(170) } })).toEqual([]);
    expect(failingPaths({ ...valid, target: { kind: 'lambda', functionArn: arn(171) } })).toEqual(['target.functionArn']);
    expect(failingPaths({ ...valid, target: { kind: 'lambda', functionArn: arn(100_000) } })).toEqual(['target.functionArn']);
  });

  it("limits the payload size to 1 MiB, and to what the target's messages carry (decision 0162)", () => {
    // `{"blob":"…"}` is 11 bytes of JSON around the text.
    const payloadOf = (bytes: number) => ({ blob: 'x'.repeat(bytes - 11) });
    expect(failingPaths({ ...valid, payload: payloadOf(MAX_JOB_PAYLOAD_BYTES) })).toEqual([]);
    expect(failingPaths({ ...valid, payload: payloadOf(MAX_JOB_PAYLOAD_BYTES + 1) })).toEqual(['payload']);
    const bus = { kind: 'eventbridge', eventBusName: 'b', detailType: 'd', source: 's' };
    expect(failingPaths({ ...valid, target: bus, payload: payloadOf(targetPayloadLimit('eventbridge')) })).toEqual([]);
    expect(failingPaths({ ...valid, target: bus, payload: payloadOf(targetPayloadLimit('eventbridge') + 1) })).toEqual(['payload']);
    const queue = { kind: 'sqs', queueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/q' };
    expect(failingPaths({ ...valid, target: queue, payload: payloadOf(targetPayloadLimit('sqs') + 1) })).toEqual(['payload']);
    expect(failingPaths({ ...valid, target: queue, payload: payloadOf(targetPayloadLimit('sqs')) })).toEqual([]);
  });

  it('refuses beyond 64 KiB, saying why, where the deployment has no payload bucket', () => {
    expect(payloadRefusal(MAX_PAYLOAD_BYTES, 'http', false)).toBeNull();
    expect(payloadRefusal(MAX_PAYLOAD_BYTES + 1, 'http', false)).toBe(
      `must be at most ${MAX_PAYLOAD_BYTES} bytes of JSON (this deployment has no payload bucket) (got ${MAX_PAYLOAD_BYTES + 1})`,
    );
    expect(payloadRefusal(300_000, 'eventbridge', true)).toMatch(/^must be at most 229376 bytes of JSON \(an eventbridge target's message limit/);
  });

  it('refuses a retry cap below the first delay', () => {
    expect(failingPaths({ ...valid, retryPolicy: { initialDelaySeconds: 10, maxDelaySeconds: 5 } })).toEqual(['retryPolicy.maxDelaySeconds']);
  });

  it('takes retry delays in fractions down to a millisecond, and refuses smaller ones the store could not hold', () => {
    expect(failingPaths({ ...valid, retryPolicy: { initialDelaySeconds: 0.5, maxDelaySeconds: 0.001 } })).toEqual(['retryPolicy.maxDelaySeconds']);
    expect(failingPaths({ ...valid, retryPolicy: { initialDelaySeconds: 0.001, maxDelaySeconds: 0.5 } })).toEqual([]);
    expect(failingPaths({ ...valid, retryPolicy: { initialDelaySeconds: 0, maxDelaySeconds: 0 } })).toEqual([]);
    // DynamoDB refuses numbers under 1e-130: accepted, they made a 500 after the create had spent its rate.
    expect(failingPaths({ ...valid, retryPolicy: { initialDelaySeconds: 1e-200 } })).toEqual(['retryPolicy.initialDelaySeconds']);
    expect(failingPaths({ ...valid, retryPolicy: { initialDelaySeconds: 0, maxDelaySeconds: 5e-324 } })).toEqual(['retryPolicy.maxDelaySeconds']);
  });

  it('narrows the attempt timeout to the target timeout', () => {
    const spec = parseOrThrow(jobSpecSchema, { ...valid, timeoutSeconds: 300, target: { ...valid.target, timeoutSeconds: 30 } });
    expect(attemptTimeoutSeconds(spec)).toBe(30);
  });
});

describe('stored items', () => {
  /** A stored job of `body` (over the valid one), active, with its pending occurrence. */
  const storedJob = (body: Record<string, unknown>, pending: Pick<Job, 'nextRunAt' | 'nextRunId'>): Job => {
    const spec = parseOrThrow(jobSpecSchema, { ...valid, ...body });
    return {
      ...spec,
      name: spec.name ?? 'job_1',
      jobId: 'job_1',
      tenantId: 't1',
      status: 'ACTIVE',
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
      version: 1,
      ...pending,
    };
  };

  it('round-trips any JSON payload exactly', () => {
    const job = storedJob({ payload: [1, null, { a: {} }, ''] }, { nextRunAt: null, nextRunId: null });
    expect(itemToJob(jobToItem(job))).toEqual(job);
  });

  it("keeps an active job's byNextRun key at or before its pending occurrence, rounded to the window, and reads the occurrence back (decision 0161)", () => {
    const spec = parseOrThrow(jobSpecSchema, { ...valid, schedule: { kind: 'cron', expression: '* * * * *', timezone: 'UTC' } });
    const base = {
      ...spec,
      name: spec.name ?? 'job_1',
      jobId: 'job_1',
      tenantId: 't1',
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
      version: 3,
      nextRunId: 'r',
    };
    const window = 150_000;
    const at = (iso: string): Job => ({ ...base, status: 'ACTIVE', nextRunAt: iso });
    // Occurrences a minute apart share a key until the next multiple of 150 s: no index write between them.
    const keys = ['2026-11-27T10:00:00.000Z', '2026-11-27T10:01:00.000Z', '2026-11-27T10:02:00.000Z', '2026-11-27T10:03:00.000Z'].map(
      (iso) => jobToItem(at(iso), { checkBackWindowMs: window }).nextRunAt,
    );
    expect(keys).toEqual(['2026-11-27T10:00:00.000Z', '2026-11-27T10:00:00.000Z', '2026-11-27T10:00:00.000Z', '2026-11-27T10:02:30.000Z']);
    for (const iso of ['2026-11-27T10:01:00.000Z', '2026-11-27T10:00:00.000Z', '2026-11-27T10:02:29.999Z']) {
      const item = jobToItem(at(iso), { checkBackWindowMs: window });
      const key = Date.parse(String(item.nextRunAt));
      expect(key).toBeLessThanOrEqual(Date.parse(iso));
      expect(key).toBeGreaterThan(Date.parse(iso) - window);
      expect(item.pendingAt === undefined).toBe(key === Date.parse(iso));
      expect(itemToJob(item)).toEqual(at(iso));
    }
    // A paused job's key stays its pause's end; a window of 0 and an item from before keep the exact time.
    const paused: Job = { ...base, status: 'PAUSED', nextRunAt: null, pausedUntil: '2026-11-27T10:01:00.000Z' };
    expect(jobToItem(paused, { checkBackWindowMs: window }).nextRunAt).toBe('2026-11-27T10:01:00.000Z');
    expect(jobToItem(at('2026-11-27T10:01:00.000Z')).nextRunAt).toBe('2026-11-27T10:01:00.000Z');
    const { pendingAt: _gone, ...before } = jobToItem(at('2026-11-27T10:01:00.000Z'), { checkBackWindowMs: window });
    expect(itemToJob({ ...before, nextRunAt: '2026-11-27T10:01:00.000Z' }).nextRunAt).toBe('2026-11-27T10:01:00.000Z');
  });

  it("keeps the pending run as pendingRunId, out of byNextRun's projection, and reads an item from before by its nextRunId (decision 0168)", () => {
    const job = storedJob(
      { schedule: { kind: 'cron', expression: '* * * * *', timezone: 'UTC' } },
      { nextRunAt: '2026-11-27T10:01:00.000Z', nextRunId: 'run-a' },
    );
    const item = jobToItem(job);
    expect(item.pendingRunId).toBe('run-a');
    // Nothing the byNextRun index projects changes when only the pending run does.
    const projected = jobsTable.indexes.find((index) => index.indexName === JOBS_NEXT_RUN_INDEX)!.projection as readonly string[];
    const other = jobToItem({ ...job, nextRunId: 'run-b' });
    for (const name of projected) expect(other[name]).toEqual(item[name]);
    expect('nextRunId' in item).toBe(false);
    expect(itemToJob(item)).toEqual(job);
    // None pending: a NULL pendingRunId, so that an item has exactly one of the two attributes.
    expect(jobToItem({ ...job, status: 'COMPLETED', nextRunAt: null, nextRunId: null }).pendingRunId).toBeNull();
    // An item written before: its nextRunId.
    const { pendingRunId: _new, ...before } = item;
    expect(itemToJob({ ...before, nextRunId: 'run-a' })).toEqual(job);
    expect(itemToJob({ ...before, nextRunId: null }).nextRunId).toBeNull();
  });

  it('gives a job a status key except when COMPLETED (decision 0166), and no type key (decision 0186)', () => {
    expect(findingKeysOf({ tenantId: 't1', status: 'ACTIVE' })).toEqual({ tenantStatus: 't1#ACTIVE' });
    expect(findingKeysOf({ tenantId: 't1', status: 'PAUSED' })).toEqual({ tenantStatus: 't1#PAUSED' });
    expect(findingKeysOf({ tenantId: 't1', status: 'CANCELLED' })).toEqual({ tenantStatus: 't1#CANCELLED' });
    expect(findingKeysOf({ tenantId: 't1', status: 'COMPLETED' })).toEqual({});
    const item = jobToItem(
      storedJob(
        { type: 'email', schedule: { kind: 'cron', expression: '* * * * *', timezone: 'UTC' } },
        { nextRunAt: '2026-11-27T10:01:00.000Z', nextRunId: 'run-a' },
      ),
    );
    expect(item).toMatchObject({ tenantStatus: `${item.tenantId as string}#ACTIVE`, type: 'email' });
    expect(item.tenantType).toBeUndefined();
  });

  it('refuses a cursor from another partition or a forged one', () => {
    const cursor = encodeCursor({ pk: 'JOB#job_1', sk: 'JOB', tenantId: 't1', tenantSort: 'x' });
    expect(cursor).not.toBeNull();
    expect(decodeCursor(cursor ?? '', { tenantId: 't1' })).not.toBeNull();
    expect(decodeCursor(cursor ?? '', { tenantId: 't2' })).toBeNull();
    expect(decodeCursor('not-base64-json', { tenantId: 't1' })).toBeNull();
  });
});
