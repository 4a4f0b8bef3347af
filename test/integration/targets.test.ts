// SQS and EventBridge targets against the emulator (moto): the run's envelope arrives with its
// idempotency key and fencing token, FIFO queues get a group and a deduplication id, and a target
// that does not exist is a permanent failure. EventBridge is read back through a rule on the bus
// that targets an SQS queue.
import { randomUUID } from 'node:crypto';
import {
  CreateEventBusCommand,
  DeleteEventBusCommand,
  DeleteRuleCommand,
  EventBridgeClient,
  PutRuleCommand,
  PutTargetsCommand,
  RemoveTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import type { Message } from '@aws-sdk/client-sqs';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueAttributesCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fencingTokenOf } from '../../lambdas/domain/delivery';
import { occurrenceKey } from '../../lambdas/domain/run';
import type { TargetEnvelope } from '../../lambdas/targets/envelope';
import type { Scheduler } from './harness';
import { awsClients, eventually, startScheduler } from './harness';

type RunBody = Record<string, any>;

async function createQueue(name: string, fifo = false): Promise<{ url: string; arn: string }> {
  const { sqs } = awsClients();
  const created = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: fifo ? { FifoQueue: 'true' } : {} }));
  const url = created.QueueUrl as string;
  const attributes = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
  return { url, arn: attributes.Attributes?.QueueArn as string };
}

async function receiveOne(url: string): Promise<Message> {
  const { sqs } = awsClients();
  const messages = await eventually(
    async () =>
      (
        await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: url,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 1,
            MessageAttributeNames: ['All'],
            MessageSystemAttributeNames: ['All'],
          }),
        )
      ).Messages ?? [],
    (found) => found.length > 0,
  );
  expect(messages).toHaveLength(1);
  return messages[0] as Message;
}

async function finished(scheduler: Scheduler, runId: string): Promise<RunBody> {
  return eventually(
    async () => (await scheduler.api('GET', `/v1/runs/${runId}`)).body as RunBody,
    (run) => ['SUCCEEDED', 'DEAD', 'FAILED'].includes(run.status),
  );
}

describe('sqs and eventbridge targets against the emulator', () => {
  let scheduler: Scheduler;
  const queues: string[] = [];
  const cleanups: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    scheduler = await startScheduler();
  });
  afterAll(async () => {
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
    for (const url of queues)
      await awsClients()
        .sqs.send(new DeleteQueueCommand({ QueueUrl: url }))
        .catch(() => undefined);
    await scheduler.stop();
  });

  async function job(body: Record<string, unknown>): Promise<{ jobId: string; runId: string }> {
    const created = await scheduler.api('POST', '/v1/jobs', {
      name: `job-${randomUUID().slice(0, 8)}`,
      type: 'targets',
      schedule: { kind: 'now' },
      payload: { invoice: 42 },
      ...body,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return { jobId: created.body.job.jobId, runId: created.body.job.nextRunId };
  }

  it('sqs: sends the envelope as the body, with the key and the fencing token as message attributes', async () => {
    const queue = await createQueue(`${scheduler.prefix}-target`);
    queues.push(queue.url);
    const { jobId, runId } = await job({ target: { kind: 'sqs', queueUrl: queue.url } });
    const run = await finished(scheduler, runId);
    expect(run).toMatchObject({ status: 'SUCCEEDED' });
    const message = await receiveOne(queue.url);
    const envelope = JSON.parse(message.Body ?? '') as TargetEnvelope;
    const key = occurrenceKey(jobId, run.scheduledFor);
    expect(envelope).toMatchObject({
      scheduler: 'job-scheduler/1',
      job: { jobId, type: 'targets', delivery: 'at-least-once' },
      run: { runId, attempt: 1 },
      attempt: 1,
      idempotencyKey: key,
      fencingToken: fencingTokenOf({ attempt: 1, version: run.version }),
      payload: { invoice: 42 },
    });
    expect(message.MessageAttributes?.['idempotency-key']?.StringValue).toBe(key);
    expect(message.MessageAttributes?.['fencing-token']).toMatchObject({ DataType: 'Number', StringValue: String(envelope.fencingToken) });
    expect(message.MessageAttributes?.['run-id']?.StringValue).toBe(runId);
  });

  it('sqs FIFO: the job is the message group and the occurrence key the deduplication id', async () => {
    const queue = await createQueue(`${scheduler.prefix}-target.fifo`, true);
    queues.push(queue.url);
    const { jobId, runId } = await job({ target: { kind: 'sqs', queueUrl: queue.url }, delivery: 'exactly-once' });
    const run = await finished(scheduler, runId);
    expect(run.status).toBe('SUCCEEDED');
    const message = await receiveOne(queue.url);
    expect(message.Attributes).toMatchObject({ MessageGroupId: jobId, MessageDeduplicationId: occurrenceKey(jobId, run.scheduledFor) });
    expect(await scheduler.deps.leases.effectOf(occurrenceKey(jobId, run.scheduledFor))).toMatchObject({ runId });
  });

  it('sqs: a queue that does not exist is a permanent failure', async () => {
    const missing = (await createQueue(`${scheduler.prefix}-gone`)).url;
    await awsClients().sqs.send(new DeleteQueueCommand({ QueueUrl: missing }));
    const { runId } = await job({ target: { kind: 'sqs', queueUrl: missing }, retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 } });
    const run = await finished(scheduler, runId);
    expect(run).toMatchObject({ status: 'DEAD', attempt: 1, error: { retryable: false } });
    expect(run.error.code).toMatch(/NonExistentQueue|QueueDoesNotExist/);
  });

  it('eventbridge: puts one event whose detail is the envelope (read back through a rule to a queue)', async () => {
    const events = new EventBridgeClient({});
    const bus = `${scheduler.prefix}-bus`;
    const source = `scheduler.${scheduler.prefix}`;
    await events.send(new CreateEventBusCommand({ Name: bus }));
    cleanups.push(() => events.send(new DeleteEventBusCommand({ Name: bus })));
    const queue = await createQueue(`${scheduler.prefix}-events`);
    queues.push(queue.url);
    await events.send(new PutRuleCommand({ Name: 'to-queue', EventBusName: bus, EventPattern: JSON.stringify({ source: [source] }) }));
    await events.send(new PutTargetsCommand({ Rule: 'to-queue', EventBusName: bus, Targets: [{ Id: 'queue', Arn: queue.arn }] }));
    cleanups.unshift(async () => {
      await events.send(new RemoveTargetsCommand({ Rule: 'to-queue', EventBusName: bus, Ids: ['queue'] }));
      await events.send(new DeleteRuleCommand({ Name: 'to-queue', EventBusName: bus }));
    });

    const { jobId, runId } = await job({ target: { kind: 'eventbridge', eventBusName: bus, source, detailType: 'invoice.due' }, delivery: 'exactly-once' });
    const run = await finished(scheduler, runId);
    expect(run.status).toBe('SUCCEEDED');
    const event = JSON.parse((await receiveOne(queue.url)).Body ?? '') as { source: string; 'detail-type': string; detail: TargetEnvelope };
    expect(event).toMatchObject({ source, 'detail-type': 'invoice.due' });
    expect(event.detail).toMatchObject({
      job: { jobId, delivery: 'exactly-once' },
      run: { runId },
      idempotencyKey: occurrenceKey(jobId, run.scheduledFor),
      fencingToken: fencingTokenOf({ attempt: 1, version: run.version }),
      // The run's trace id, in the envelope of every target that is not HTTP (decision 0111).
      traceparent: expect.stringContaining(`-${String(run.traceparent).split('-')[1]}-`),
      payload: { invoice: 42 },
    });
  });

  it('eventbridge: a failed entry is a failure of the attempt', async () => {
    const { runId } = await job({
      target: { kind: 'eventbridge', eventBusName: `${scheduler.prefix}-no-such-bus`, source: 'scheduler.test', detailType: 'x' },
      retryPolicy: { maxAttempts: 1, initialDelaySeconds: 0, maxDelaySeconds: 1 },
    });
    const run = await finished(scheduler, runId);
    expect(run.status).toBe('DEAD');
    expect(run.error.code).toMatch(/^EVENTBRIDGE_|ResourceNotFound/);
  });
});

describe('targets the deployment allows (AWS mode)', () => {
  let scheduler: Scheduler;
  const allowedFunction = 'arn:aws:lambda:us-east-1:123456789012:function:invoices';
  const allowedQueueUrl = 'https://sqs.us-east-1.amazonaws.com/123456789012/exports';

  beforeAll(async () => {
    scheduler = await startScheduler({
      workerConcurrency: 0,
      config: {
        localMode: false,
        allowedTargets: {
          lambdaFunctionArns: [allowedFunction],
          sqsQueueArns: ['arn:aws:sqs:us-east-1:123456789012:exports'],
          eventBusArns: ['arn:aws:events:us-east-1:123456789012:event-bus/billing'],
          snsTopicArns: ['arn:aws:sns:us-east-1:123456789012:ops'],
        },
      },
    });
  });
  afterAll(() => scheduler.stop());

  const create = (target: Record<string, unknown>) =>
    scheduler.api('POST', '/v1/jobs', { name: `job-${randomUUID().slice(0, 8)}`, type: 'targets', schedule: { kind: 'delay', seconds: 3600 }, target });

  it('creates jobs whose function (any qualifier), queue and bus the stack granted', async () => {
    expect((await create({ kind: 'lambda', functionArn: allowedFunction })).status).toBe(201);
    expect((await create({ kind: 'lambda', functionArn: `${allowedFunction}:live` })).status).toBe(201);
    expect((await create({ kind: 'sqs', queueUrl: allowedQueueUrl })).status).toBe(201);
    expect((await create({ kind: 'eventbridge', eventBusName: 'billing', source: 's', detailType: 'd' })).status).toBe(201);
    expect(
      (await create({ kind: 'eventbridge', eventBusName: 'arn:aws:events:us-east-1:123456789012:event-bus/billing', source: 's', detailType: 'd' })).status,
    ).toBe(201);
  });

  it('refuses, with a 400 naming the field, a function, queue or bus it was not granted, and writes nothing', async () => {
    const before = await scheduler.countJobAndRunItems();
    const cases: [Record<string, unknown>, string][] = [
      [{ kind: 'lambda', functionArn: 'arn:aws:lambda:us-east-1:123456789012:function:payroll' }, 'target.functionArn'],
      [{ kind: 'sqs', queueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/payroll' }, 'target.queueUrl'],
      [{ kind: 'sqs', queueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/exports' }, 'target.queueUrl'],
      [{ kind: 'eventbridge', eventBusName: 'default', source: 's', detailType: 'd' }, 'target.eventBusName'],
    ];
    for (const [target, path] of cases) {
      const answer = await create(target);
      expect(answer.status, JSON.stringify(target)).toBe(400);
      expect(answer.body.errors).toEqual([{ path, message: expect.stringContaining('stack property targets.') }]);
    }
    expect(await scheduler.countJobAndRunItems()).toEqual(before);
  });

  it('refuses a granted queue by a URL over plain http or on another port, with a 400 on target.queueUrl, and writes nothing', async () => {
    const before = await scheduler.countJobAndRunItems();
    for (const queueUrl of ['http://sqs.us-east-1.amazonaws.com/123456789012/exports', 'https://sqs.us-east-1.amazonaws.com:8443/123456789012/exports']) {
      const answer = await create({ kind: 'sqs', queueUrl });
      expect(answer.status, queueUrl).toBe(400);
      expect(answer.body).toMatchObject({ status: 400, errors: [{ path: 'target.queueUrl', message: expect.stringMatching(/https|port/) }] });
    }
    expect(await scheduler.countJobAndRunItems()).toEqual(before);
  });

  it('refuses a PATCH to a target it was not granted', async () => {
    const created = await create({ kind: 'lambda', functionArn: allowedFunction });
    const patched = await scheduler.api('PATCH', `/v1/jobs/${created.body.job.jobId}`, {
      target: { kind: 'lambda', functionArn: 'arn:aws:lambda:us-east-1:123456789012:function:other' },
    });
    expect(patched.status).toBe(400);
    expect(patched.body.errors).toEqual([{ path: 'target.functionArn', message: expect.any(String) }]);
  });
});
