// The emulator's own limit: the minimal sequence of AWS calls an execution needs, issued directly
// with no scheduler code, at full concurrency. Per execution: one transaction putting a job and its
// run, one SendMessage; then, per received batch of up to 10, one ReceiveMessage, one
// ChangeMessageVisibilityBatch and one DeleteMessageBatch, and per message a conditional lease
// (UpdateItem), the call to the HTTP target and a conditional completion (UpdateItem). This is what any durable at-least-once scheduler on
// DynamoDB and SQS must spend; the load bench divides the scheduler's throughput by it.
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import type { Message } from '@aws-sdk/client-sqs';
import {
  ChangeMessageVisibilityBatchCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createAwsClients } from '../lambdas/store/aws';
import { RequestCounter } from '../lambdas/store/request-counter';
import { jobsTable, runsTable } from '../lambdas/store/schema';
import { createTableInput } from '../scripts/local/resources';
import { shardOf } from '../lambdas/domain/time-gate';

export interface RawLimitOptions {
  readonly seconds: number;
  /** Concurrent producers, and as many concurrent consumers. */
  readonly concurrency: number;
  /** Producers pause while this many executions are created and not yet finished. */
  readonly maxBacklog: number;
  readonly warmupSeconds: number;
  readonly targetUrl: string;
  /**
   * `plain`: one table without indexes (the least any design pays). `scheduler`: the scheduler's
   * own jobs and runs tables with their indexes, the items carrying the index keys the scheduler's
   * items carry (so the emulator maintains the same indexes), still without scheduler code.
   */
  readonly schema: 'plain' | 'scheduler';
}

export interface RawLimitResult {
  readonly executionsPerSecond: number;
  readonly executions: number;
  /** Created and not finished when the phase ended (at most the backlog): their creates' requests are in the figures below. */
  readonly unfinished: number;
  readonly errors: number;
  /** AWS requests per finished execution, by `service.Operation`. */
  readonly requestsPerExecution: Record<string, number>;
  readonly firstError?: string;
}

/** Needs AWS_ENDPOINT_URL and credentials in the environment; builds clients of its own (counted). */
export async function measureRawLimit(options: RawLimitOptions): Promise<RawLimitResult> {
  const clients = createAwsClients();
  const prefix = `raw-${randomUUID().slice(0, 8)}`;
  const tableName = `${prefix}-table`;
  const jobsTableName = options.schema === 'scheduler' ? `${prefix}-jobs` : tableName;
  if (options.schema === 'scheduler') {
    await clients.dynamo.send(new CreateTableCommand(createTableInput(tableName, runsTable)));
    await clients.dynamo.send(new CreateTableCommand(createTableInput(jobsTableName, jobsTable)));
  } else
    await clients.dynamo.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
      }),
    );
  const { QueueUrl: queueUrl } = await clients.sqs.send(new CreateQueueCommand({ QueueName: `${prefix}-queue`, Attributes: { VisibilityTimeout: '60' } }));
  if (!queueUrl) throw new Error('raw limit: queue not created');
  const counter = new RequestCounter();
  counter.attach(clients);

  const startedAt = Date.now();
  const endAt = startedAt + options.seconds * 1000;
  const windowStart = startedAt + options.warmupSeconds * 1000;
  let created = 0;
  let finished = 0;
  let finishedInWindow = 0;
  let errors = 0;
  let firstError: string | undefined;
  const fail = (error: unknown) => {
    errors++;
    firstError ??= error instanceof Error ? error.message : String(error);
  };
  const owner = `raw-${process.pid}`;

  const produce = async (): Promise<void> => {
    while (Date.now() < endAt) {
      if (created - finished >= options.maxBacklog) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        continue;
      }
      created++;
      const id = randomUUID();
      const at = new Date().toISOString();
      // The index keys the scheduler's job and run items carry (byTenant, byNextRun; byJob, timeIndex).
      const jobIndexKeys =
        options.schema === 'scheduler' ? { tenantId: 'raw', tenantSort: `${at}#${id}`, nextRunShard: String(created % 8), nextRunAt: at } : {};
      const runIndexKeys =
        options.schema === 'scheduler'
          ? { jobId: id, jobSort: `${at}#0001`, gateKey: `${at.slice(0, 16)}#${String(created % 8).padStart(3, '0')}`, gateAt: at }
          : {};
      try {
        await clients.dynamo.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Put: {
                  TableName: jobsTableName,
                  Item: { pk: `JOB#${id}`, sk: 'JOB', status: 'ACTIVE', createdAt: at, ...jobIndexKeys },
                  ConditionExpression: 'attribute_not_exists(pk)',
                },
              },
              {
                Put: {
                  TableName: tableName,
                  Item: { pk: `RUN#${id}`, sk: 'RUN', status: 'QUEUED', scheduledFor: at, ...runIndexKeys },
                  ConditionExpression: 'attribute_not_exists(pk)',
                },
              },
            ],
          }),
        );
        await clients.sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: id }));
      } catch (error) {
        fail(error);
        created--;
      }
    }
  };

  const execute = async (message: Message): Promise<boolean> => {
    const key = { pk: `RUN#${message.Body ?? ''}`, sk: 'RUN' };
    try {
      // On the scheduler's tables the lease moves the run's time-index entry to its check-back, and
      // the outcome removes it, as the scheduler's do (decision 0065).
      const checkBack = new Date(Date.now() + 32_000).toISOString();
      const withIndex = options.schema === 'scheduler';
      await clients.dynamo.send(
        new UpdateCommand({
          TableName: tableName,
          Key: key,
          UpdateExpression: `SET #s = :running, leaseOwner = :owner, startedAt = :now${withIndex ? ', gateKey = :gateKey, gateAt = :gateAt' : ''}`,
          ConditionExpression: '#s = :queued',
          ExpressionAttributeNames: { '#s': 'status' },
          ExpressionAttributeValues: {
            ':running': 'RUNNING',
            ':queued': 'QUEUED',
            ':owner': owner,
            ':now': new Date().toISOString(),
            ...(withIndex ? { ':gateKey': `${checkBack.slice(0, 16)}#${String(shardOf(message.Body ?? '', 8)).padStart(3, '0')}`, ':gateAt': checkBack } : {}),
          },
        }),
      );
      const response = await fetch(options.targetUrl, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
      await response.arrayBuffer();
      await clients.dynamo.send(
        new UpdateCommand({
          TableName: tableName,
          Key: key,
          UpdateExpression: `SET #s = :done, finishedAt = :now${options.schema === 'scheduler' ? ' REMOVE gateKey, gateAt' : ''}`,
          ConditionExpression: 'leaseOwner = :owner',
          ExpressionAttributeNames: { '#s': 'status' },
          ExpressionAttributeValues: { ':done': response.ok ? 'SUCCEEDED' : 'FAILED', ':owner': owner, ':now': new Date().toISOString() },
        }),
      );
      return true;
    } catch (error) {
      fail(error);
      return false;
    }
  };

  const consume = async (): Promise<void> => {
    while (Date.now() < endAt) {
      let messages: Message[];
      try {
        const received = await clients.sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
        messages = received.Messages ?? [];
      } catch (error) {
        fail(error);
        continue;
      }
      if (messages.length === 0) continue;
      // The message follows the lease: one visibility change per batch, sent while the runs go on
      // (as the worker does, decision 0031).
      const visibility = clients.sqs
        .send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: queueUrl,
            Entries: messages.map((message, index) => ({ Id: String(index), ReceiptHandle: message.ReceiptHandle ?? '', VisibilityTimeout: 60 })),
          }),
        )
        .catch(fail);
      const outcomes = await Promise.all(messages.map(execute));
      await visibility;
      const done = messages.filter((_, index) => outcomes[index]);
      if (done.length > 0) {
        try {
          await clients.sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: queueUrl,
              Entries: done.map((message, index) => ({ Id: String(index), ReceiptHandle: message.ReceiptHandle ?? '' })),
            }),
          );
        } catch (error) {
          fail(error);
        }
      }
      const now = Date.now();
      finished += done.length;
      if (now >= windowStart && now < endAt) finishedInWindow += done.length;
    }
  };

  let tally: ReturnType<RequestCounter['tally']>;
  try {
    await Promise.all([...Array.from({ length: options.concurrency }, produce), ...Array.from({ length: options.concurrency }, consume)]);
    tally = counter.tally();
  } finally {
    await Promise.allSettled([
      clients.dynamo.send(new DeleteTableCommand({ TableName: tableName })),
      ...(jobsTableName === tableName ? [] : [clients.dynamo.send(new DeleteTableCommand({ TableName: jobsTableName }))]),
      clients.sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl })),
    ]);
  }
  return {
    executionsPerSecond: finishedInWindow / Math.max(1, options.seconds - options.warmupSeconds),
    executions: finished,
    unfinished: created - finished,
    errors,
    requestsPerExecution: Object.fromEntries(Object.entries(tally.calls).map(([name, count]) => [name, count / Math.max(1, finished)])),
    ...(firstError ? { firstError } : {}),
  };
}
