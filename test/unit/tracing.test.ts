// Outside Lambda (no AWS_EXECUTION_ENV: the local runtime, the tests) the Tracer is off and its
// helpers only run what they are given: no client is wrapped, nothing reaches for an X-Ray daemon.
import { describe, expect, it } from 'vitest';
import { SQSClient } from '@aws-sdk/client-sqs';
import { annotateTrace, inSubsegment, traceClient, tracer } from '../../lambdas/core/tracing';

describe('tracing outside Lambda', () => {
  it('is off, and its helpers are pass-throughs', async () => {
    expect(process.env.AWS_EXECUTION_ENV).toBeUndefined();
    expect(tracer.isTracingEnabled()).toBe(false);
    const client = new SQSClient({});
    expect(traceClient(client)).toBe(client);
    expect(() => annotateTrace({ traceId: 'abc' })).not.toThrow();
    await expect(inSubsegment('run', { traceId: 'abc' }, () => Promise.resolve(42))).resolves.toBe(42);
    await expect(inSubsegment('run', {}, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  });
});
