// The local runtime: the real handlers on one machine. An HTTP server stands in for API Gateway,
// pollers stand in for the SQS event source mapping (batches, partial batch failures, deletes),
// and a timer stands in for EventBridge Scheduler driving the ticker.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Message } from '@aws-sdk/client-sqs';
import { ChangeMessageVisibilityBatchCommand, DeleteMessageBatchCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import type { SchedulerDeps } from '../../lambdas/app/deps';
import { createApiHandler } from '../../lambdas/api/app';
import type { ApiEvent } from '../../lambdas/api/http';
import { MAX_BODY_BYTES } from '../../lambdas/api/http';
import type { AwsClients } from '../../lambdas/store/aws';
import { workerConsumer } from '../../lambdas/store/schema';
import { createTickerHandler } from '../../lambdas/ticker/app';
import { createWorkerHandler } from '../../lambdas/worker/app';

/** A demo target served by the local runtime itself (not part of the API). */
export const ECHO_PATH = '/_local/echo';

export interface LocalRuntimeOptions {
  readonly deps: SchedulerDeps;
  readonly clients: AwsClients;
  /** 0 picks a free port. */
  readonly port: number;
  readonly host?: string;
  /** Concurrent pollers, as the event source mapping runs concurrent batches. */
  readonly workerConcurrency: number;
  /** Ticker period; 0 disables the timer (tests drive the ticker themselves). */
  readonly tickIntervalMs: number;
  /** How long each ReceiveMessage long-polls. */
  readonly pollWaitSeconds?: number;
}

export interface LocalRuntime {
  readonly url: string;
  readonly port: number;
  /** Runs one tick now (as the schedule would). */
  tickNow(): Promise<void>;
  stop(): Promise<void>;
}

function lambdaContext(functionName: string): Context {
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/local/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => 900_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

async function readBody(request: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_BODY_BYTES + 1) return null;
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The API Gateway HTTP API (payload 2.0) event for a Node request. */
function toApiEvent(request: IncomingMessage, body: string): ApiEvent {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const headers: Record<string, string> = Object.fromEntries(
    Object.entries(request.headers).flatMap(([name, value]) => (value === undefined ? [] : [[name, Array.isArray(value) ? value.join(',') : value]])),
  );
  // A Map, not assignment into an object: a parameter named `__proto__` must arrive as a parameter
  // (as API Gateway's JSON event carries it), not vanish into the object's prototype.
  const joined = new Map<string, string>();
  for (const [name, value] of url.searchParams) joined.set(name, joined.has(name) ? `${joined.get(name) ?? ''},${value}` : value);
  const query: Record<string, string> = Object.fromEntries(joined);
  const now = new Date();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    queryStringParameters: Object.keys(query).length > 0 ? query : undefined,
    body: body === '' ? undefined : body,
    isBase64Encoded: false,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: url.host,
      domainPrefix: 'local',
      http: {
        method: request.method ?? 'GET',
        path: url.pathname,
        protocol: 'HTTP/1.1',
        sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
  };
}

function toSqsRecord(message: Message, queueArn: string): SQSRecord {
  const attributes = message.Attributes ?? {};
  return {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? '1',
      SentTimestamp: attributes.SentTimestamp ?? String(Date.now()),
      SenderId: attributes.SenderId ?? 'local',
      ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
      ...(attributes.MessageGroupId ? { MessageGroupId: attributes.MessageGroupId } : {}),
    },
    messageAttributes: {},
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: process.env.AWS_REGION ?? 'us-east-1',
  };
}

export async function startLocalRuntime(options: LocalRuntimeOptions): Promise<LocalRuntime> {
  const { deps, clients } = options;
  const api = createApiHandler(deps);
  const worker = createWorkerHandler(deps);
  const ticker = createTickerHandler(deps);
  const queueUrl = deps.config.dispatchQueueUrl;
  const queueArn = `arn:aws:sqs:local:000000000000:${queueUrl.split('/').pop() ?? 'dispatch'}`;
  let stopping = false;

  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    void (async () => {
      try {
        const body = await readBody(request);
        if (body === null) {
          response.writeHead(413, { 'content-type': 'application/problem+json' });
          response.end(JSON.stringify({ type: 'urn:job-scheduler:problem:payload-too-large', title: 'Payload too large', status: 413, detail: `The body must be at most ${MAX_BODY_BYTES} bytes`, errors: [] }));
          return;
        }
        if (request.url?.startsWith(ECHO_PATH)) {
          // A target for trying the scheduler out: answers 200 and says who called.
          console.log(`echo target: ${request.method} run ${String(request.headers['x-run-id'])} attempt ${String(request.headers['x-attempt'])} body ${body.slice(0, 200)}`);
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ ok: true }));
          return;
        }
        const result = await api(toApiEvent(request, body), lambdaContext('api'));
        response.writeHead(result.statusCode ?? 200, result.headers as Record<string, string> | undefined);
        response.end(result.body ?? '');
      } catch (error) {
        console.error('local API adapter failed', error);
        if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/problem+json' });
        response.end(JSON.stringify({ type: 'urn:job-scheduler:problem:internal-error', title: 'Internal error', status: 500, detail: 'The request could not be completed.', errors: [] }));
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(options.port, options.host ?? '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  // Pollers: receive a batch, hand it to the worker as the event source mapping would, delete
  // what succeeded; reported failures stay in flight until their visibility timeout ends.
  const poll = async (): Promise<void> => {
    while (!stopping) {
      let messages: Message[];
      try {
        const received = await clients.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: workerConsumer.batchSize,
            WaitTimeSeconds: options.pollWaitSeconds ?? 2,
            MessageSystemAttributeNames: ['All'],
          }),
        );
        messages = received.Messages ?? [];
        if (stopping && messages.length > 0) {
          // Received while stopping: hand them straight back rather than hide them for the
          // queue's visibility timeout.
          await clients.sqs.send(
            new ChangeMessageVisibilityBatchCommand({
              QueueUrl: queueUrl,
              Entries: messages.map((message, index) => ({ Id: String(index), ReceiptHandle: message.ReceiptHandle ?? '', VisibilityTimeout: 0 })),
            }),
          );
          return;
        }
      } catch (error) {
        if (stopping) return;
        console.error('local poller: ReceiveMessage failed; retrying in 1 s', error instanceof Error ? error.message : error);
        await new Promise((resolve) => setTimeout(resolve, 1000));
        continue;
      }
      if (messages.length === 0) continue;
      const event: SQSEvent = { Records: messages.map((message) => toSqsRecord(message, queueArn)) };
      let failed: Set<string>;
      try {
        const response = await worker(event, lambdaContext('worker'));
        failed = new Set((response?.batchItemFailures ?? []).map((failure) => failure.itemIdentifier));
      } catch (error) {
        console.error('local poller: worker invocation failed; the whole batch will be retried', error);
        failed = new Set(event.Records.map((record) => record.messageId));
      }
      const done = messages.filter((message) => !failed.has(message.MessageId ?? ''));
      if (done.length > 0) {
        await clients.sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: done.map((message, index) => ({ Id: String(index), ReceiptHandle: message.ReceiptHandle ?? '' })),
          }),
        );
      }
    }
  };
  const pollers = Array.from({ length: options.workerConcurrency }, () => poll());

  let ticking: Promise<void> | null = null;
  const tickNow = async (): Promise<void> => {
    if (ticking) return ticking;
    ticking = (async () => {
      try {
        await ticker({ scheduledTime: new Date().toISOString() }, lambdaContext('ticker'));
      } catch (error) {
        console.error('local ticker: tick failed', error);
      } finally {
        ticking = null;
      }
    })();
    return ticking;
  };
  const timer = options.tickIntervalMs > 0 ? setInterval(() => void tickNow(), options.tickIntervalMs) : null;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    tickNow,
    stop: async () => {
      stopping = true;
      if (timer) clearInterval(timer);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await closed;
      await Promise.allSettled(pollers);
      if (ticking) await ticking;
    },
  };
}
