// The lambda, sqs and eventbridge adapters with in-process fake clients: what each sends, and how
// each answer and each SDK error becomes the attempt's outcome.
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it, vi } from 'vitest';
import { logger } from '../../lambdas/core/logger';
import type { Job } from '../../lambdas/domain/job';
import type { Run } from '../../lambdas/domain/run';
import { egressPolicyOf } from '../../lambdas/targets/egress';
import { callEventBridgeTarget } from '../../lambdas/targets/eventbridge-target';
import { callLambdaTarget, functionErrorOf } from '../../lambdas/targets/lambda-target';
import { sdkFailure } from '../../lambdas/targets/sdk-failure';
import { envelopeOf } from '../../lambdas/targets/envelope';
import { callSqsTarget, deduplicationIdOf, sqsMessageOf } from '../../lambdas/targets/sqs-target';
import type { TargetInvocation } from '../../lambdas/targets/target';

const run = { runId: 'job_x.1.2', jobId: 'job_x', scheduledFor: '2026-01-01T00:00:00.000Z', attempt: 2, version: 1, trigger: 'retry' } as Run;
const job = { jobId: 'job_x', name: 'invoices', type: 'billing', delivery: 'exactly-once' } as Job;

function invocation(target: Job['target']): TargetInvocation {
  return {
    job: { ...job, target },
    run,
    payload: { n: 1 },
    timeoutMs: 2_000,
    egress: { policy: egressPolicyOf({ localMode: true, allowPrivateTargets: false }), resolve: () => Promise.resolve([]) },
  };
}

/** A client whose `send` records the command's input and answers (or throws) as told. */
function fakeClient<T>(answer: (input: Record<string, unknown>) => unknown): { client: T; inputs: Record<string, unknown>[] } {
  const inputs: Record<string, unknown>[] = [];
  const client = {
    send: (command: { input: Record<string, unknown> }) => {
      inputs.push(command.input);
      return Promise.resolve().then(() => answer(command.input));
    },
  } as unknown as T;
  return { client, inputs };
}

class FakeServiceError extends Error {
  constructor(
    name: string,
    readonly $fault: 'client' | 'server',
    readonly $metadata: { httpStatusCode: number },
    readonly $retryable?: { throttling: boolean },
  ) {
    super(`${name} happened`);
    this.name = name;
  }
}

describe('envelope targets', () => {
  const envelope = {
    scheduler: 'job-scheduler/1',
    job: { jobId: 'job_x', name: 'invoices', type: 'billing', delivery: 'exactly-once' },
    run: { runId: 'job_x.1.2', attempt: 2, scheduledFor: '2026-01-01T00:00:00.000Z', trigger: 'retry' },
    attempt: 2,
    idempotencyKey: 'job_x#2026-01-01T00:00:00.000Z',
    fencingToken: 2_000_001,
    payload: { n: 1 },
  };

  it("tells the target the run's own delivery, which a later change of the job's does not move", () => {
    expect(envelopeOf({ ...job, delivery: 'at-least-once' }, { ...run, delivery: 'at-most-once' }, {}).job.delivery).toBe('at-most-once');
    // A run made before runs kept it: its job's.
    expect(envelopeOf(job, run, {}).job.delivery).toBe('exactly-once');
  });

  it('lambda: invokes synchronously with the envelope as the event', async () => {
    const { client, inputs } = fakeClient<LambdaClient>(() => ({ StatusCode: 200, Payload: Buffer.from('{"ok":true}') }));
    const result = await callLambdaTarget(
      client,
      { kind: 'lambda', functionArn: 'arn:aws:lambda:us-east-1:1:function:f' },
      invocation({ kind: 'lambda', functionArn: 'arn:aws:lambda:us-east-1:1:function:f' }),
    );
    expect(result).toEqual({ ok: true, detail: 'Lambda 200' });
    expect(inputs[0]).toMatchObject({ FunctionName: 'arn:aws:lambda:us-east-1:1:function:f', InvocationType: 'RequestResponse' });
    expect(JSON.parse(Buffer.from(inputs[0]!.Payload as Uint8Array).toString())).toEqual(envelope);
  });

  it("lambda, a workflow step: the envelope carries its workflow and its dependencies' results, and the function's answer is the step's result (at most 4 KiB)", async () => {
    const step = { workflowId: 'wf_1', workflowRunId: 'wf_1.abc', stepId: 'load', version: 3, results: { extract: { rows: 12 }, skipped: null } };
    const target = { kind: 'lambda' as const, functionArn: 'arn:aws:lambda:us-east-1:1:function:f' };
    const { client, inputs } = fakeClient<LambdaClient>(() => ({ StatusCode: 200, Payload: Buffer.from('{"loaded":12}') }));
    expect(await callLambdaTarget(client, target, { ...invocation(target), step })).toEqual({ ok: true, detail: 'Lambda 200', result: { loaded: 12 } });
    expect(JSON.parse(Buffer.from(inputs[0]!.Payload as Uint8Array).toString())).toEqual({
      ...envelope,
      workflow: { workflowId: 'wf_1', workflowRunId: 'wf_1.abc', stepId: 'load', version: 3 },
      results: { extract: { rows: 12 }, skipped: null },
    });
    const { client: big } = fakeClient<LambdaClient>(() => ({ StatusCode: 200, Payload: Buffer.from(JSON.stringify({ data: 'x'.repeat(5000) })) }));
    expect(await callLambdaTarget(big, target, { ...invocation(target), step })).toMatchObject({
      ok: false,
      error: { code: 'RESULT_TOO_LARGE', retryable: false },
    });
  });

  it('sqs, a workflow step: the message body is the envelope with its workflow and results', async () => {
    const step = { workflowId: 'wf_1', workflowRunId: 'wf_1.abc', stepId: 'notify', version: 1, results: { load: { loaded: 12 } } };
    const target = { kind: 'sqs' as const, queueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/steps' };
    const { client, inputs } = fakeClient<SQSClient>(() => ({ MessageId: 'm-1' }));
    expect(await callSqsTarget(client, target, { ...invocation(target), step })).toMatchObject({ ok: true });
    expect(JSON.parse(String(inputs[0]!.MessageBody))).toEqual({
      ...envelope,
      workflow: { workflowId: 'wf_1', workflowRunId: 'wf_1.abc', stepId: 'notify', version: 1 },
      results: { load: { loaded: 12 } },
    });
  });

  it('lambda: a function error is retryable unless the function marks it permanent', async () => {
    const error = (body: unknown) => Buffer.from(JSON.stringify(body));
    expect(functionErrorOf('Unhandled', error({ errorType: 'Error', errorMessage: 'boom' }))).toMatchObject({
      ok: false,
      error: { code: 'LAMBDA_FUNCTION_ERROR', retryable: true },
    });
    expect(functionErrorOf('Unhandled', error({ errorType: 'PermanentError', errorMessage: 'bad invoice' }))).toMatchObject({ error: { retryable: false } });
    expect(functionErrorOf('Unhandled', error({ errorType: 'Runtime.HandlerError', errorMessage: '[permanent] bad invoice' }))).toMatchObject({
      error: { retryable: false },
    });
    expect(functionErrorOf('Unhandled', error({ errorType: 'Sandbox.Timedout', errorMessage: 'Task timed out after 3.00 seconds' }))).toMatchObject({
      timedOut: true,
      error: { code: 'LAMBDA_TIMEOUT', retryable: true },
    });
    expect(functionErrorOf('Unhandled', Buffer.from('not json'))).toMatchObject({ error: { message: 'Unhandled: the function failed', retryable: true } });
    const { client } = fakeClient<LambdaClient>(() => ({
      StatusCode: 200,
      FunctionError: 'Unhandled',
      Payload: error({ errorType: 'PermanentError', errorMessage: 'no' }),
    }));
    expect(
      await callLambdaTarget(
        client,
        { kind: 'lambda', functionArn: 'arn:aws:lambda:us-east-1:1:function:f' },
        invocation({ kind: 'lambda', functionArn: 'arn:aws:lambda:us-east-1:1:function:f' }),
      ),
    ).toMatchObject({
      ok: false,
      error: { code: 'LAMBDA_FUNCTION_ERROR', message: 'PermanentError: no', retryable: false },
    });
  });

  it('sqs: the envelope as the body, identity as attributes; FIFO gets a group and a deduplication id', () => {
    const standard = sqsMessageOf(
      { kind: 'sqs', queueUrl: 'https://sqs.us-east-1.amazonaws.com/1/q' },
      invocation({ kind: 'sqs', queueUrl: 'https://sqs.us-east-1.amazonaws.com/1/q' }),
    );
    expect(JSON.parse(standard.MessageBody ?? '')).toEqual(envelope);
    expect(standard.MessageAttributes).toMatchObject({
      'idempotency-key': { StringValue: envelope.idempotencyKey },
      'fencing-token': { DataType: 'Number', StringValue: '2000001' },
    });
    expect(standard.MessageGroupId).toBeUndefined();
    const fifo = sqsMessageOf(
      { kind: 'sqs', queueUrl: 'https://sqs.us-east-1.amazonaws.com/1/q.fifo' },
      invocation({ kind: 'sqs', queueUrl: 'https://sqs.us-east-1.amazonaws.com/1/q.fifo' }),
    );
    expect(fifo).toMatchObject({ MessageGroupId: 'job_x', MessageDeduplicationId: envelope.idempotencyKey });
    expect(deduplicationIdOf('k'.repeat(200))).toMatch(/^[0-9a-f]{64}$/);
  });

  it("sqs: in AWS mode never sends to a plain-http or other-port queue URL, whatever the job says; locally the emulator's http URL is fine", async () => {
    let sends = 0;
    const client = fakeClient<SQSClient>(() => {
      sends++;
      return Promise.resolve({ MessageId: 'm-1' });
    }).client;
    const aws = (target: { kind: 'sqs'; queueUrl: string }): TargetInvocation => ({
      ...invocation(target),
      egress: { policy: egressPolicyOf({ localMode: false, allowPrivateTargets: false }), resolve: () => Promise.resolve([]) },
    });
    for (const queueUrl of ['http://sqs.us-east-1.amazonaws.com/1/q', 'https://sqs.us-east-1.amazonaws.com:8443/1/q']) {
      const target = { kind: 'sqs', queueUrl } as const;
      expect(await callSqsTarget(client, target, aws(target)), queueUrl).toMatchObject({ ok: false, error: { code: 'TARGET_URL_REFUSED', retryable: false } });
    }
    expect(sends).toBe(0);
    const secure = { kind: 'sqs', queueUrl: 'https://sqs.us-east-1.amazonaws.com/1/q' } as const;
    expect(await callSqsTarget(client, secure, aws(secure))).toMatchObject({ ok: true });
    const local = { kind: 'sqs', queueUrl: 'http://127.0.0.1:4566/000000000000/q' } as const;
    expect(await callSqsTarget(client, local, invocation(local))).toMatchObject({ ok: true });
    expect(sends).toBe(2);
  });

  it('sqs: throttling and server faults are retryable, client faults permanent, network errors retryable', async () => {
    const target = { kind: 'sqs', queueUrl: 'https://sqs.us-east-1.amazonaws.com/1/q' } as const;
    const failing = (error: Error) => fakeClient<SQSClient>(() => Promise.reject(error)).client;
    expect(
      await callSqsTarget(failing(new FakeServiceError('QueueDoesNotExist', 'client', { httpStatusCode: 400 })), target, invocation(target)),
    ).toMatchObject({ error: { code: 'QueueDoesNotExist', retryable: false } });
    expect(
      await callSqsTarget(
        failing(new FakeServiceError('RequestThrottled', 'client', { httpStatusCode: 400 }, { throttling: true })),
        target,
        invocation(target),
      ),
    ).toMatchObject({ error: { retryable: true } });
    expect(await callSqsTarget(failing(new FakeServiceError('InternalError', 'server', { httpStatusCode: 500 })), target, invocation(target))).toMatchObject({
      error: { retryable: true },
    });
    expect(await callSqsTarget(failing(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })), target, invocation(target))).toMatchObject({
      error: { code: 'NETWORK_ERROR', retryable: true },
    });
  });

  it("keeps the scheduler's role out of the error a tenant reads (an access-denied answer names it)", () => {
    const denied = new FakeServiceError('KMSAccessDeniedException', 'client', { httpStatusCode: 400 });
    Object.defineProperty(denied, 'message', {
      value:
        'User: arn:aws:sts::123456789012:assumed-role/SchedulerStack-WorkerRole-1AB2C3/SchedulerStack-Worker-xyz is not authorized to perform: kms:GenerateDataKey on resource: arn:aws:kms:eu-west-1:123456789012:key/abcd because no identity-based policy allows it; role arn:aws-cn:iam::123456789012:role/Worker is not in the policy',
    });
    const warned = vi.spyOn(logger, 'warn');
    const failure = sdkFailure(denied, new AbortController().signal, undefined, 100);
    // The whole text is logged, under `error` (the logger drops a field named `message`).
    expect(warned).toHaveBeenCalledWith(expect.any(String), { code: 'KMSAccessDeniedException', error: denied.message });
    warned.mockRestore();
    expect(failure).toMatchObject({ ok: false, error: { code: 'KMSAccessDeniedException', retryable: false } });
    const message = (failure as { error: { message: string } }).error.message;
    expect(message).toBe(
      "User: (the scheduler's role) is not authorized to perform: kms:GenerateDataKey on resource: arn:aws:kms:eu-west-1:123456789012:key/abcd because no identity-based policy allows it; role (the scheduler's role) is not in the policy",
    );
  });

  it('an aborted call is a timeout or a cancellation, whatever the SDK threw', () => {
    const aborted = AbortSignal.abort();
    expect(sdkFailure(new Error('aborted'), aborted, undefined, 100)).toMatchObject({ timedOut: true, error: { code: 'TIMEOUT', retryable: true } });
    expect(sdkFailure(new Error('aborted'), new AbortController().signal, aborted, 100)).toMatchObject({
      timedOut: false,
      error: { code: 'ABORTED', retryable: false },
    });
  });

  it('eventbridge: one entry with the envelope as detail; a failed entry is a failure', async () => {
    const target = { kind: 'eventbridge', eventBusName: 'bus', source: 'billing', detailType: 'invoice.due' } as const;
    const ok = fakeClient<EventBridgeClient>(() => ({ FailedEntryCount: 0, Entries: [{ EventId: 'e1' }] }));
    expect(await callEventBridgeTarget(ok.client, target, invocation(target))).toEqual({ ok: true, detail: 'event e1' });
    const entries = ok.inputs[0]!.Entries as Record<string, string>[];
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ EventBusName: 'bus', Source: 'billing', DetailType: 'invoice.due' });
    expect(JSON.parse(entries[0]!.Detail!)).toEqual(envelope);

    const throttled = fakeClient<EventBridgeClient>(() => ({
      FailedEntryCount: 1,
      Entries: [{ ErrorCode: 'ThrottlingException', ErrorMessage: 'slow down' }],
    }));
    expect(await callEventBridgeTarget(throttled.client, target, invocation(target))).toMatchObject({
      ok: false,
      error: { code: 'EVENTBRIDGE_ThrottlingException', retryable: true },
    });
    const refused = fakeClient<EventBridgeClient>(() => ({ FailedEntryCount: 1, Entries: [{ ErrorCode: 'MalformedDetail', ErrorMessage: 'bad' }] }));
    expect(await callEventBridgeTarget(refused.client, target, invocation(target))).toMatchObject({
      ok: false,
      error: { code: 'EVENTBRIDGE_MalformedDetail', retryable: false },
    });
  });
});
