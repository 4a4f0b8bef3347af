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
import { createAuthorizerHandler } from '../../lambdas/authorizer/app';
import { createApiHandler } from '../../lambdas/api/app';
import type { ApiEvent } from '../../lambdas/api/http';
import { MAX_BODY_BYTES } from '../../lambdas/api/http';
import type { AwsClients } from '../../lambdas/store/aws';
import { STORE_TIMEOUTS } from '../../lambdas/store/aws';
import { decodeDispatchMessage } from '../../lambdas/store/dispatch-queue';
import { lowLaneConcurrency, workerConsumer } from '../../lambdas/store/schema';
import { createTickerHandler } from '../../lambdas/ticker/app';
import { createWorkerHandler } from '../../lambdas/worker/app';
import { asFunction } from './function-role';

/** A demo target served by the local runtime itself (not part of the API). */
export const ECHO_PATH = '/_local/echo';

export interface LocalRuntimeOptions {
  readonly deps: SchedulerDeps;
  /**
   * What the worker and ticker handlers use, when not `deps`: AWS runs the API, the workers and the
   * ticker as separate functions, each process with its own telemetry (roll-ups, worker registry).
   */
  readonly workerDeps?: SchedulerDeps;
  readonly clients: AwsClients;
  /** 0 picks a free port. */
  readonly port: number;
  readonly host?: string;
  /**
   * Concurrent pollers per lane of the default pool, as the event source mapping runs concurrent
   * batches; other pools use their own maxConcurrency. 0 runs no poller at all.
   */
  readonly workerConcurrency: number;
  /** Ticker period; 0 disables the timer (tests drive the ticker themselves). */
  readonly tickIntervalMs: number;
  /** How long each ReceiveMessage long-polls. */
  readonly pollWaitSeconds?: number;
  /** Messages fetched ahead for fair delivery across tenants (default 100). */
  readonly fairBufferSize?: number;
}

const DEFAULT_FAIR_BUFFER = 100;
/** Concurrent ReceiveMessage loops filling the fair buffer. */
const FETCHERS = 2;
/**
 * Messages are received hidden for this long, not the queue's visibility timeout (sized for the
 * longest run): a runtime killed with messages fetched ahead has them back within this, not after
 * the ticker's check-back (decision 0038).
 */
export const PREFETCH_VISIBILITY_SECONDS = 20;
/** A fetched message that would be visible again within this is hidden for another PREFETCH_VISIBILITY_SECONDS. */
const VISIBILITY_REFRESH_MARGIN_MS = 10_000;
const VISIBILITY_REFRESH_EVERY_MS = 2_000;
/** Backoff of a consumer loop whose SQS calls fail (the emulator is gone): doubling from 1 s to 15 s. */
const RETRY_BACKOFF_MS = { first: 1_000, max: 15_000 } as const;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A short description of an error for a log line (the SDK's errors carry their whole request). */
function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** The message group (tenant) of a dispatch message: its MessageGroupId, or the tenant in its body. */
function groupOf(message: Message): string {
  const group = message.Attributes?.MessageGroupId;
  if (group) return group;
  return decodeDispatchMessage(message.Body ?? '')?.tenantId ?? '';
}

/**
 * Received messages by group, handed out round robin across groups: one message of each group in
 * turn, so that a batch mixes tenants and a group with one message waits behind no other group's
 * backlog.
 */
export class FairBuffer {
  private readonly groups = new Map<string, Message[]>();
  private size = 0;
  private closed = false;
  private waitingTakers: (() => void)[] = [];
  private waitingFetchers: (() => void)[] = [];

  constructor(private readonly capacity: number) {}

  get full(): boolean {
    return this.size >= this.capacity;
  }

  add(group: string, message: Message): void {
    const queue = this.groups.get(group);
    if (queue) queue.push(message);
    else this.groups.set(group, [message]);
    this.size++;
    this.waitingTakers.shift()?.();
  }

  /** Up to `max` messages, round robin across groups; waits for one if there is none. */
  async take(max: number): Promise<Message[]> {
    while (this.size === 0 && !this.closed) await new Promise<void>((resolve) => this.waitingTakers.push(resolve));
    const batch: Message[] = [];
    while (batch.length < max && this.size > 0) {
      for (const [group, queue] of this.groups) {
        const message = queue.shift();
        // Map order is insertion order: a group that had its turn goes to the back.
        this.groups.delete(group);
        if (queue.length > 0) this.groups.set(group, queue);
        if (!message) continue;
        batch.push(message);
        this.size--;
        break;
      }
    }
    if (batch.length > 0) this.waitingFetchers.splice(0).forEach((resolve) => resolve());
    return batch;
  }

  async waitForRoom(): Promise<void> {
    if (!this.full || this.closed) return;
    await new Promise<void>((resolve) => this.waitingFetchers.push(resolve));
  }

  close(): void {
    this.closed = true;
    this.waitingTakers.splice(0).forEach((resolve) => resolve());
    this.waitingFetchers.splice(0).forEach((resolve) => resolve());
  }

  drain(): Message[] {
    const all = [...this.groups.values()].flat();
    this.groups.clear();
    this.size = 0;
    return all;
  }
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
  const authorizer = createAuthorizerHandler(deps.authenticator);
  const worker = createWorkerHandler(options.workerDeps ?? deps);
  const ticker = createTickerHandler(options.workerDeps ?? deps);
  let stopping = false;

  // As API Gateway HTTP APIs: at most 10,240 bytes of request line and headers (Node answers 431).
  const server: Server = createServer({ maxHeaderSize: 10_240 }, (request: IncomingMessage, response: ServerResponse) => {
    void (async () => {
      try {
        const body = await readBody(request);
        if (body === null) {
          response.writeHead(413, { 'content-type': 'application/problem+json' });
          response.end(JSON.stringify({ type: 'urn:job-scheduler:problem:payload-too-large', title: 'Payload too large', status: 413, detail: `The body must be at most ${MAX_BODY_BYTES} bytes`, errors: [] }));
          return;
        }
        if (request.url?.startsWith(ECHO_PATH)) {
          // A target for trying the scheduler out: answers 200 and says who called; of the body only
          // its size and type, as payloads never go to logs.
          console.log(`echo target: ${request.method} run ${String(request.headers['x-run-id'])} attempt ${String(request.headers['x-attempt'])} body ${Buffer.byteLength(body)} bytes of ${String(request.headers['content-type'] ?? 'no content type')}`);
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ ok: true }));
          return;
        }
        const event = toApiEvent(request, body);
        // API Gateway's part: no Authorization header, no call; otherwise the authorizer first, its
        // answer passed on as the request's authorizer context.
        const authorization = event.headers.authorization;
        if (!authorization) {
          response.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' });
          response.end(JSON.stringify({ message: 'Unauthorized' }));
          return;
        }
        const verdict = await asFunction('authorizer', () => authorizer({ headers: { authorization } }));
        if (!verdict.isAuthorized) {
          response.writeHead(403, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ message: 'Forbidden' }));
          return;
        }
        (event.requestContext as { authorizer?: unknown }).authorizer = { lambda: verdict.context };
        const result = await asFunction('api', () => api(event, lambdaContext('api')));
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

  // The event source mapping's part, with SQS fair queues' delivery order: fetchers receive
  // messages into a buffer by message group (the tenant), and workers take batches from it round
  // robin across groups, so a tenant with a deep backlog does not hold up a quiet one. moto serves
  // a standard queue in order and knows nothing of fair queues; this is the local stand-in for what
  // SQS does in AWS (decision 0024). The worker handler, batches, partial batch failures and
  // deletes are as the mapping does them; reported failures stay in flight until their visibility
  // timeout ends. As in AWS, every lane of every pool has a consumer of its own (one mapping per
  // queue), with the pool's concurrency and batch size (decision 0050): a slow pool or a deep
  // standard lane never holds up another pool or the high lane. The low lane gets a quarter of the
  // pool's concurrency unless the pool says otherwise (decision 0051).
  const consumers = deps.dispatch.lanes().map((lane) => {
    const pool = deps.dispatch.pools.find((candidate) => candidate.name === lane.pool);
    const laneConcurrency = options.workerConcurrency > 0 && lane.pool !== deps.dispatch.defaultPool.name ? (pool?.maxConcurrency ?? options.workerConcurrency) : options.workerConcurrency;
    const concurrency = lane.lane === 'low' && laneConcurrency > 0 ? lowLaneConcurrency(laneConcurrency, 1, pool?.lowMaxConcurrency) : laneConcurrency;
    return consume(lane.pool, lane.queueUrl, concurrency, pool?.batchSize ?? workerConsumer.batchSize, lane.lane === 'standard' ? FETCHERS : 1);
  });

  function consume(poolName: string, queueUrl: string, concurrency: number, batchSize: number, fetchers: number) {
    const queueArn = `arn:aws:sqs:local:000000000000:${queueUrl.split('/').pop() ?? 'dispatch'}`;
    const delivery = new FairBuffer(options.fairBufferSize ?? DEFAULT_FAIR_BUFFER);
    /** When each message fetched but not yet handed to a worker becomes visible again (epoch ms). */
    const visibleAt = new Map<Message, number>();
    const changeVisibility = async (messages: readonly Message[], seconds: number): Promise<void> => {
      for (let start = 0; start < messages.length; start += 10) {
        await clients.sqs.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: queueUrl,
            Entries: messages.slice(start, start + 10).map((message, index) => ({ Id: String(index), ReceiptHandle: message.ReceiptHandle ?? '', VisibilityTimeout: seconds })),
          }),
        );
      }
    };
    const returnToQueue = async (messages: Message[]): Promise<void> => {
      await changeVisibility(messages, 0).catch(() => undefined);
    };
    /** Hides again, for PREFETCH_VISIBILITY_SECONDS, the messages among these that would soon be visible. */
    const keepHidden = async (messages: readonly Message[], visibleBy: (message: Message) => number): Promise<void> => {
      const now = Date.now();
      const due = messages.filter((message) => visibleBy(message) - now < VISIBILITY_REFRESH_MARGIN_MS);
      if (due.length === 0) return;
      await changeVisibility(due, PREFETCH_VISIBILITY_SECONDS);
      for (const message of due) if (visibleAt.has(message)) visibleAt.set(message, now + PREFETCH_VISIBILITY_SECONDS * 1000);
    };
    let refreshing: Promise<void> | null = null;
    const fetch = async (): Promise<void> => {
      let backoff = 0;
      while (!stopping) {
        if (delivery.full) {
          await delivery.waitForRoom();
          continue;
        }
        let messages: Message[];
        try {
          const waitSeconds = options.pollWaitSeconds ?? 2;
          const receivedAt = Date.now();
          const received = await clients.sqs.send(
            new ReceiveMessageCommand({
              QueueUrl: queueUrl,
              MaxNumberOfMessages: workerConsumer.batchSize,
              WaitTimeSeconds: waitSeconds,
              VisibilityTimeout: PREFETCH_VISIBILITY_SECONDS,
              MessageSystemAttributeNames: ['All'],
            }),
            // A long poll answers after its wait: the store clients' request timeout comes on top.
            { requestTimeout: waitSeconds * 1000 + STORE_TIMEOUTS.requestTimeoutMs },
          );
          messages = received.Messages ?? [];
          for (const message of messages) visibleAt.set(message, receivedAt + PREFETCH_VISIBILITY_SECONDS * 1000);
          backoff = 0;
        } catch (error) {
          if (stopping) return;
          backoff = Math.min(backoff === 0 ? RETRY_BACKOFF_MS.first : backoff * 2, RETRY_BACKOFF_MS.max);
          console.error(`local poller: ReceiveMessage failed; retrying in ${backoff / 1000} s:`, errorText(error));
          await sleep(backoff);
          continue;
        }
        if (stopping) {
          // Received while stopping: hand them straight back rather than hide them for the queue's
          // visibility timeout.
          for (const message of messages) visibleAt.delete(message);
          await returnToQueue(messages);
          return;
        }
        for (const message of messages) delivery.add(groupOf(message), message);
      }
    };
    // Messages waiting in the buffer stay hidden while they wait, and no longer than that.
    const refresher =
      concurrency > 0
        ? setInterval(() => {
            if (refreshing) return;
            refreshing = keepHidden([...visibleAt.keys()], (message) => visibleAt.get(message) ?? Infinity)
              .catch((error: unknown) => console.error('local poller: could not keep fetched messages hidden; they may be delivered again:', errorText(error)))
              .finally(() => {
                refreshing = null;
              });
          }, VISIBILITY_REFRESH_EVERY_MS)
        : null;
    const work = async (): Promise<void> => {
      while (!stopping) {
        const messages = await delivery.take(batchSize);
        if (messages.length === 0) continue;
        // The hand-off: a message about to be visible again is hidden for the worker first (the
        // worker ties each message to its lease within moments; decision 0064). The refresher lets go
        // of the batch first, and a refresh already sent lands before the worker's own changes.
        const handedOff = new Map(messages.map((message) => [message, visibleAt.get(message) ?? Infinity]));
        for (const message of messages) visibleAt.delete(message);
        if (refreshing) await refreshing;
        try {
          await keepHidden(messages, (message) => handedOff.get(message) ?? Infinity);
        } catch (error) {
          console.error('local poller: could not extend the visibility of a batch before its hand-off:', errorText(error));
        }
        const event: SQSEvent = { Records: messages.map((message) => toSqsRecord(message, queueArn)) };
        let failed: Set<string>;
        try {
          const response = await asFunction(`worker:${poolName}`, () => worker(event, lambdaContext('worker')));
          failed = new Set((response?.batchItemFailures ?? []).map((failure) => failure.itemIdentifier));
        } catch (error) {
          console.error('local poller: worker invocation failed; the whole batch will be retried', error);
          failed = new Set(event.Records.map((record) => record.messageId));
        }
        const done = messages.filter((message) => !failed.has(message.MessageId ?? ''));
        await deleteDone(done);
      }
    };
    /**
     * Deletes what the worker finished, as the event source mapping does. When the queue does not
     * answer (the emulator is gone), the messages stay and come back at their visibility timeout,
     * when the worker finds their runs finished and drops them: nothing is lost by not deleting.
     */
    const deleteDone = async (done: readonly Message[]): Promise<void> => {
      for (let start = 0; start < done.length; start += 10) {
        const entries = done.slice(start, start + 10).map((message, index) => ({ Id: String(index), ReceiptHandle: message.ReceiptHandle ?? '' }));
        try {
          await clients.sqs.send(new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
        } catch (error) {
          console.error(`local poller: DeleteMessageBatch failed; ${entries.length} finished messages will be delivered again and dropped:`, errorText(error));
          await sleep(RETRY_BACKOFF_MS.first);
        }
      }
    };
    /** Runs a consumer loop, and starts it again (after a pause) should it ever throw. */
    const supervised = async (name: string, loop: () => Promise<void>): Promise<void> => {
      let backoff = 0;
      while (!stopping) {
        try {
          await loop();
          return;
        } catch (error) {
          backoff = Math.min(backoff === 0 ? RETRY_BACKOFF_MS.first : backoff * 2, RETRY_BACKOFF_MS.max);
          console.error(`local poller: the ${name} loop of ${poolName} failed; restarting it in ${backoff / 1000} s:`, error);
          await sleep(backoff);
        }
      }
    };
    const loops =
      concurrency > 0
        ? [...Array.from({ length: fetchers }, () => supervised('fetch', fetch)), ...Array.from({ length: concurrency }, () => supervised('worker', work))]
        : [];
    return {
      stop: async (): Promise<void> => {
        delivery.close();
        if (refresher) clearInterval(refresher);
        await Promise.allSettled(loops);
        // Messages fetched but not yet handed to a worker go back to the queue at once.
        visibleAt.clear();
        await returnToQueue(delivery.drain());
      },
    };
  }

  let ticking: Promise<void> | null = null;
  const tickNow = async (): Promise<void> => {
    if (ticking) return ticking;
    ticking = (async () => {
      try {
        await asFunction('ticker', () => ticker({ scheduledTime: new Date().toISOString() }, lambdaContext('ticker')));
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
      await Promise.all(consumers.map((consumer) => consumer.stop()));
      if (ticking) await ticking;
    },
  };
}
