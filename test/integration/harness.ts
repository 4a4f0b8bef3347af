// A scheduler of its own for each test: fresh tables and queues in the emulator (a unique prefix),
// the real handlers behind the local runtime, an API key, and helpers to call the API.
import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { schedulerStateKey } from '../../lambdas/store/keys';
import { inject } from 'vitest';
import type { SchedulerDeps } from '../../lambdas/app/deps';
import { createDeps } from '../../lambdas/app/deps';
import type { SchedulerConfig, Tuning } from '../../lambdas/config/config';
import type { TenantLimits } from '../../lambdas/domain/tenant';
import type { RequestCounter } from '../../lambdas/store/request-counter';
import type { AwsClients } from '../../lambdas/store/aws';
import type { PoolDefinition } from '../../lambdas/store/pools';
import type { HostResolver } from '../../lambdas/targets/egress';
import { createAwsClients, createTargetClients } from '../../lambdas/store/aws';
import { encodeDispatchMessage } from '../../lambdas/store/dispatch-queue';
import { emulatorEnvironment } from '../../scripts/local/emulator';
import { createLocalResources, deleteLocalResources } from '../../scripts/local/resources';
import type { LocalRuntime } from '../../scripts/local/runtime';
import { startLocalRuntime } from '../../scripts/local/runtime';
import { asFunction } from '../../scripts/local/function-role';
import { executeRun as executeRunUseCase } from '../../lambdas/app/execute-run';
import { tick as tickUseCase } from '../../lambdas/app/tick';
import { leaseCheckAt } from '../../lambdas/domain/time-gate';
import type { LeaseRequest } from '../../lambdas/store/run-leases';
import { recordAccesses } from '../support/access-log';
import { recordHeaderValue, recordLogLines } from './support/leak-record';
import { contractViolations } from '../support/contract';
import { CapacityModel } from '../../bench/lib/capacity-model';
import { jobsTable, runsTable } from '../../lambdas/store/schema';
import { runKey } from '../../lambdas/store/keys';

let clients: AwsClients | undefined;

export function awsClients(): AwsClients {
  if (!clients) {
    Object.assign(process.env, emulatorEnvironment(inject('awsEndpoint')));
    clients = createAwsClients();
    recordAccesses(clients);
    recordSecretValues(clients);
  }
  return clients;
}

/** A secret's value a test stores is a header value (a job names the secret): the leak check looks for it. */
function recordSecretValues(aws: AwsClients): void {
  aws.secrets.middlewareStack.add(
    (next) => (args) => {
      const input = args.input as { SecretString?: unknown };
      if (typeof input.SecretString === 'string') recordHeaderValue(input.SecretString);
      return next(args);
    },
    { step: 'initialize', name: 'leakRecordSecretValues' },
  );
}

/** The metric lines a scheduler writes: the test reads them, and the leak check scans them as log lines. */
function metricSinkInto(lines: string[]): (line: string) => void {
  return (line) => {
    lines.push(line);
    recordLogLines(line);
  };
}

export interface Scheduler {
  readonly config: SchedulerConfig;
  /** The resource name prefix of this scheduler's tables and queues. */
  readonly prefix: string;
  readonly clients: AwsClients;
  readonly deps: SchedulerDeps;
  readonly tenantId: string;
  readonly apiKey: string;
  /** The EMF lines this scheduler's process wrote (its API, workers and ticker). */
  readonly metricLines: string[];
  /** A runtime serving the API; its pollers run only when `workerConcurrency` > 0. */
  readonly runtime: LocalRuntime;
  /** The handlers' DynamoDB units as AWS bills them (bench/lib/capacity-model.ts), with `capacityModel`. */
  readonly capacity: CapacityModel | null;
  api(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
  /** Another process-like worker over the same resources, with its own identity and clock. */
  workerDeps(workerId: string, clock?: () => number): SchedulerDeps;
  /** Starts another runtime over the same resources with `count` pollers (stopped by `stop`); its requests are counted too. */
  startWorkers(count: number): Promise<LocalRuntime>;
  sendRawMessage(body: string): Promise<void>;
  sendDispatch(runId: string): Promise<void>;
  queueDepth(): Promise<number>;
  countItems(table: 'jobs' | 'runs'): Promise<number>;
  /** Jobs (with their name guards and idempotency records) and runs; not API keys, telemetry or the audit trail. */
  countJobAndRunItems(): Promise<{ jobs: number; runs: number }>;
  stop(): Promise<void>;
}

export interface SchedulerOptions {
  readonly tuning?: Partial<Tuning>;
  readonly workerConcurrency?: number;
  readonly clock?: () => number;
  /** Pins the jitter of retry backoff (1 waits the whole bound, 0 none). */
  readonly random?: () => number;
  /** The test tenant's own limits (a tenant profile is written when given). */
  readonly tenantLimits?: Partial<TenantLimits>;
  /** Counts the requests of the scheduler's handlers (not the runtime's SQS polling). */
  readonly requestCounter?: RequestCounter;
  /** With `requestCounter`: models the handlers' DynamoDB units as AWS bills them (`Scheduler.capacity`). */
  readonly capacityModel?: boolean;
  /** Configuration over the local defaults, e.g. `{ localMode: false }` for AWS-mode target rules. */
  readonly config?: Partial<
    Pick<
      SchedulerConfig,
      | 'localMode'
      | 'allowPrivateTargets'
      | 'allowedTargets'
      | 'tenantDefaults'
      | 'headerSecretArns'
      | 'auditRetentionDays'
      | 'runRetentionDays'
      | 'payloadBucket'
      | 'legacyNameGuards'
    >
  >;
  /** How target host names resolve (the system's resolver by default). */
  readonly resolveHost?: HostResolver;
  /** Worker pools besides the default one, each with its own queues and pollers. */
  readonly pools?: readonly PoolDefinition[];
  /** Where the lambda target's client sends invocations (LAMBDA_ENDPOINT_URL; e.g. MiniStack). */
  readonly lambdaEndpoint?: string;
}

export async function startScheduler(options: SchedulerOptions = {}): Promise<Scheduler> {
  const aws = awsClients();
  const prefix = `it-${randomUUID().slice(0, 8)}`;
  const config: SchedulerConfig = { ...(await createLocalResources(aws, prefix, options.tuning, {}, options.pools)), ...options.config };
  const metricLines: string[] = [];
  // Counted requests need clients of their own: the shared ones serve every test.
  let handlerClients = aws;
  let capacity: CapacityModel | null = null;
  if (options.requestCounter) {
    handlerClients = createAwsClients();
    options.requestCounter.attach(handlerClients);
    recordAccesses(handlerClients);
    if (options.capacityModel) {
      capacity = new CapacityModel(
        new Map([
          [config.jobsTable, jobsTable],
          [config.runsTable, runsTable],
        ]),
      );
      capacity.attach(handlerClients.dynamo);
    }
  }
  if (options.lambdaEndpoint) handlerClients = { ...handlerClients, targets: createTargetClients(options.lambdaEndpoint) };
  const deps = createDeps(config, handlerClients, {
    workerId: `${prefix}-main`,
    metricSink: metricSinkInto(metricLines),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.random ? { random: options.random } : {}),
    ...(options.resolveHost ? { resolveHost: options.resolveHost } : {}),
  });
  const tenantId = `tenant-${prefix}`;
  const apiKey = `key_${randomBytes(18).toString('base64url')}`;
  await deps.apiKeys.issue(apiKey, tenantId, Date.now());
  if (options.tenantLimits) {
    const at = new Date().toISOString();
    await deps.tenants.create({ tenantId, name: tenantId, limits: { ...config.tenantDefaults, ...options.tenantLimits }, createdAt: at, updatedAt: at });
  }
  const runtime = await startLocalRuntime({
    deps,
    clients: aws,
    port: 0,
    workerConcurrency: options.workerConcurrency ?? 2,
    tickIntervalMs: 0,
    pollWaitSeconds: 1,
  });

  const extraRuntimes: LocalRuntime[] = [];
  return {
    config,
    prefix,
    clients: aws,
    deps,
    tenantId,
    apiKey,
    metricLines,
    runtime,
    capacity,
    async api(method, path, body, headers = {}) {
      const response = await fetch(`${runtime.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${apiKey}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await response.text();
      const parsed: unknown = text ? JSON.parse(text) : null;
      // Every response the integration tests receive must conform to the OpenAPI document.
      const violations = contractViolations(method, path, response.status, response.headers.get('content-type'), parsed);
      if (violations.length > 0) throw new Error(`The response breaks docs/openapi.json:\n${violations.slice(0, 10).join('\n')}`);
      return { status: response.status, body: parsed };
    },
    workerDeps(workerId, clock) {
      return createDeps(config, aws, { workerId, metricSink: metricSinkInto(metricLines), ...(clock ? { clock } : {}) });
    },
    async startWorkers(count) {
      const workers = await startLocalRuntime({
        // The handlers' clients: counted when the scheduler counts requests.
        deps: createDeps(config, handlerClients, {
          workerId: `${prefix}-workers-${extraRuntimes.length}`,
          metricSink: metricSinkInto(metricLines),
          ...(options.random ? { random: options.random } : {}),
        }),
        clients: aws,
        port: 0,
        workerConcurrency: count,
        tickIntervalMs: 0,
        pollWaitSeconds: 1,
      });
      extraRuntimes.push(workers);
      return workers;
    },
    async sendRawMessage(body) {
      await aws.sqs.send(new SendMessageCommand({ QueueUrl: config.dispatchQueueUrl, MessageBody: body }));
    },
    async sendDispatch(runId) {
      await aws.sqs.send(new SendMessageCommand({ QueueUrl: config.dispatchQueueUrl, MessageBody: encodeDispatchMessage(runId) }));
    },
    async queueDepth() {
      const depth = await deps.dispatch.depth();
      return depth.visible + depth.inFlight + depth.delayed;
    },
    async countItems(table) {
      const { Count: count = 0 } = await aws.dynamo.send(
        new ScanCommand({ TableName: table === 'jobs' ? config.jobsTable : config.runsTable, Select: 'COUNT' }),
      );
      return count;
    },
    async countJobAndRunItems() {
      const count = async (tableName: string): Promise<number> => {
        let total = 0;
        let start: Record<string, unknown> | undefined;
        do {
          const page = await aws.dynamo.send(new ScanCommand({ TableName: tableName, ProjectionExpression: 'pk', ExclusiveStartKey: start }));
          total += (page.Items ?? []).filter(
            (item) =>
              !/^(APIKEY#|TENANT#|RATE#|INFLIGHT#|KEYSLOT#|KEYWAIT#|KEYRATE#|BACKFILLS$|BACKFILLS_ENDED#|DEBOUNCE#|STATS#|SCHEDULER#|AUDIT#|NOTIFY#|WORKERS$)/.test(
                String(item.pk),
              ),
          ).length;
          start = page.LastEvaluatedKey;
        } while (start);
        return total;
      };
      return { jobs: await count(config.jobsTable), runs: await count(config.runsTable) };
    },
    async stop() {
      await Promise.all([runtime.stop(), ...extraRuntimes.map((extra) => extra.stop())]);
      // The emulator keeps everything in memory: leave nothing behind.
      await deleteLocalResources(aws, config);
    },
  };
}

/** Receives whatever is in a queue without deleting it (for assertions on the DLQ). */
export async function peekQueue(aws: AwsClients, queueUrl: string): Promise<number> {
  const { Messages: messages = [] } = await aws.sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 0 }));
  return messages.length;
}

export interface TargetCall {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly at: number;
  /** When the caller hung up before an answer was sent (an aborted call), if it did. */
  abortedAt?: number;
}

export interface TargetAnswer {
  readonly status: number;
  readonly body?: string;
  readonly headers?: Record<string, string>;
}

export interface TargetServer {
  readonly url: string;
  readonly calls: TargetCall[];
  stop(): Promise<void>;
}

/** A real HTTP target on loopback that records every call; `respond` decides the answer. */
export async function startTarget(
  respond: (call: TargetCall, index: number) => Promise<TargetAnswer> | TargetAnswer = () => ({ status: 200 }),
): Promise<TargetServer> {
  const calls: TargetCall[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const call: TargetCall = {
        method: request.method ?? '',
        path: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      const index = calls.push(call) - 1;
      response.on('close', () => {
        if (!response.writableEnded) call.abortedAt = Date.now();
      });
      void Promise.resolve(respond(call, index)).then(({ status, body, headers }) => {
        if (response.destroyed) return;
        response.writeHead(status, { 'content-type': 'application/json', ...headers });
        response.end(body ?? '{}');
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    calls,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Waits, if fewer than `marginMs` are left in the current wall-clock minute, until the next one
 * begins. For counts of requests: a worker writes one health roll-up per tenant and minute, so a
 * count that straddles a minute's end sees two.
 */
export async function clearOfMinuteEnd(marginMs = 25_000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < marginMs) await new Promise((resolve) => setTimeout(resolve, left + 200));
}

/**
 * Waits until the next wall-clock second begins. For counts of a create's requests: a process that
 * created in the current second may hold places of the tenant's create rate it reserved then, and a
 * create that spends one writes no counter (decision 0169).
 */
export async function inFreshSecond(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 10));
}

export async function eventually<T>(probe: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await probe();
  while (!accept(last)) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    last = await probe();
  }
  return last;
}

export function jobBody(targetUrl: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: `job-${randomUUID().slice(0, 8)}`,
    type: 'test',
    schedule: { kind: 'now' },
    target: { kind: 'http', url: targetUrl },
    payload: { hello: 'world' },
    ...overrides,
  };
}

/** A run's entry in the time index as its item holds it (undefined attributes: no entry). */
export async function timeIndexEntryOf(scheduler: Scheduler, runId: string): Promise<{ gateKey?: string; gateAt?: string }> {
  const { Item: item } = await scheduler.clients.dynamo.send(
    new GetCommand({ TableName: scheduler.config.runsTable, Key: runKey(runId), ConsistentRead: true }),
  );
  return { gateKey: item?.gateKey as string | undefined, gateAt: item?.gateAt as string | undefined };
}

/** A lease as a worker of this scheduler takes it (with its check-back in the time index), for tests that lease runs themselves. */
export function leaseRequest(config: SchedulerConfig, owner: string, now = Date.now()): LeaseRequest {
  return { owner, now, checkBackAt: leaseCheckAt(now, config), shards: config.timeIndexShards };
}

/**
 * The ticker's use case, run as the ticker function: tests that drive it directly keep its AWS
 * requests attributed, so the grants check (test/grants) sees them as it sees the runtime's ticks.
 */
export function tick(...args: Parameters<typeof tickUseCase>): ReturnType<typeof tickUseCase> {
  return asFunction('ticker', () => tickUseCase(...args));
}

/**
 * Sets where the scheduler's next tick begins (the minute it reads from). A test that ticks at a
 * clock ahead of the real one moves the cursor past entries written after it, which a deployment's
 * ticker, whose clock only moves on, never does: a later test sets it back to its own time.
 */
export async function setTickerCursor(scheduler: Scheduler, cursor: number): Promise<void> {
  await scheduler.clients.dynamo.send(
    new UpdateCommand({
      TableName: scheduler.config.jobsTable,
      Key: schedulerStateKey('ticker'),
      UpdateExpression: 'SET #cursor = :cursor',
      ExpressionAttributeNames: { '#cursor': 'cursor' },
      ExpressionAttributeValues: { ':cursor': cursor },
    }),
  );
}

/** The worker's use case for one run, run as the default pool's worker function (see `tick`). */
/**
 * Receives and deletes every waiting message of the default dispatch queue (for tests whose
 * runtime's pollers are off), and answers the run ids they carried, in the order received.
 */
export async function drainDispatch(scheduler: Pick<Scheduler, 'clients' | 'config'>): Promise<string[]> {
  const ids: string[] = [];
  const queueUrl = scheduler.config.dispatchQueueUrl;
  for (let empty = 0; empty < 2;) {
    const received = await scheduler.clients.sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
    const messages = received.Messages ?? [];
    if (messages.length === 0) empty++;
    for (const message of messages) {
      ids.push((JSON.parse(message.Body ?? '{}') as { runId: string }).runId);
      await scheduler.clients.sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle }));
    }
  }
  return ids;
}

export function executeRun(...args: Parameters<typeof executeRunUseCase>): ReturnType<typeof executeRunUseCase> {
  return asFunction('worker:default', () => executeRunUseCase(...args));
}
