// The local runtime: the real handlers on one machine. An HTTP server stands in for API Gateway,
// pollers stand in for the SQS event source mapping (batches, partial batch failures, deletes),
// and a timer stands in for EventBridge Scheduler driving the ticker.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context } from 'aws-lambda';
import type { SchedulerDeps } from '../../lambdas/app/deps';
import { createAuthorizerHandler } from '../../lambdas/authorizer/adapter';
import { PUBLIC_ROUTES } from '../../lambdas/api/routes';
import { createApiHandler } from '../../lambdas/api/adapter';
import type { ApiEvent } from '../../lambdas/api/http';
import { MAX_BODY_BYTES } from '../../lambdas/api/http';
import type { AwsClients } from '../../lambdas/store/aws';
import { workerConsumer } from '../../lambdas/store/schema';
import { lowLaneConcurrency } from '../../lambdas/store/pools';
import { createTickerHandler } from '../../lambdas/ticker/adapter';
import { createWorkerHandler } from '../../lambdas/worker/adapter';
import { isConsolePath, serveConsole } from '../../lambdas/console/adapter';
import type { ConsoleAssets } from '../../console/build';
import { buildConsole } from '../../console/build';
import { asFunction } from './function-role';
import { startLaneConsumer } from './lane-consumer';

/** A demo target served by the local runtime itself (not part of the API). */
const LOCAL_PREFIX = '/_local/';
export const ECHO_PATH = `${LOCAL_PREFIX}echo`;

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

/** The web console, built on its first request (esbuild, in memory) and kept for the process. */
let consoleBuild: Promise<ConsoleAssets> | null = null;

async function consoleFiles(): Promise<ConsoleAssets> {
  consoleBuild ??= buildConsole().catch((error: unknown) => {
    consoleBuild = null;
    throw error;
  });
  return consoleBuild;
}

/** Concurrent ReceiveMessage loops filling the standard lane's fair buffer (one on the others). */
const FETCHERS = 2;

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

export async function startLocalRuntime(options: LocalRuntimeOptions): Promise<LocalRuntime> {
  const { deps, clients } = options;
  const api = createApiHandler(deps);
  const authorizer = createAuthorizerHandler(deps.authenticator);
  const worker = createWorkerHandler(options.workerDeps ?? deps);
  const ticker = createTickerHandler(options.workerDeps ?? deps);

  // As API Gateway HTTP APIs: at most 10,240 bytes of request line and headers (Node answers 431).
  const server: Server = createServer({ maxHeaderSize: 10_240 }, (request: IncomingMessage, response: ServerResponse) => {
    void (async () => {
      try {
        const body = await readBody(request);
        if (body === null) {
          response.writeHead(413, { 'content-type': 'application/problem+json' });
          response.end(
            JSON.stringify({
              type: 'urn:job-scheduler:problem:payload-too-large',
              title: 'Payload too large',
              status: 413,
              detail: `The body must be at most ${MAX_BODY_BYTES} bytes`,
              errors: [],
            }),
          );
          return;
        }
        const requestPath = new URL(request.url ?? '/', 'http://localhost').pathname;
        if (requestPath.startsWith(LOCAL_PREFIX) && requestPath !== ECHO_PATH) {
          // The local runtime's own paths: not the API's, so no authorizer and no 401 for a typo.
          response.writeHead(404, { 'content-type': 'application/problem+json' });
          response.end(
            JSON.stringify({
              type: 'urn:job-scheduler:problem:not-found',
              title: 'Not found',
              status: 404,
              detail: `The local runtime serves ${ECHO_PATH} (a target that answers 200) under ${LOCAL_PREFIX}, and nothing else`,
              errors: [],
            }),
          );
          return;
        }
        if (requestPath === ECHO_PATH) {
          // A target for trying the scheduler out: answers 200 and says who called; of the body only
          // its size and type, as payloads never go to logs.
          console.log(
            `echo target: ${request.method} run ${String(request.headers['x-run-id'])} attempt ${String(request.headers['x-attempt'])} body ${Buffer.byteLength(body)} bytes of ${String(request.headers['content-type'] ?? 'no content type')}`,
          );
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ ok: true }));
          return;
        }
        if (isConsolePath(requestPath)) {
          // The console's files are public (its own route, no authorizer, as in the stack).
          const answer = serveConsole(await consoleFiles(), request.method ?? 'GET', requestPath);
          response.writeHead(answer.statusCode, answer.headers);
          response.end(answer.body);
          return;
        }
        const event = toApiEvent(request, body);
        // API Gateway's part: no Authorization header, no call; otherwise the authorizer first, its
        // answer passed on as the request's authorizer context.
        const authorization = event.headers.authorization;
        // Routes the stack serves without the authorizer (lambdas/api/routes.ts: PUBLIC_ROUTES).
        if (PUBLIC_ROUTES.some((route) => route.method === event.requestContext.http.method && route.path === event.rawPath)) {
          const result = await asFunction('api', () => api(event, lambdaContext('api')));
          response.writeHead(result.statusCode ?? 200, result.headers as Record<string, string> | undefined);
          response.end(result.body ?? '');
          return;
        }
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
        response.end(
          JSON.stringify({
            type: 'urn:job-scheduler:problem:internal-error',
            title: 'Internal error',
            status: 500,
            detail: 'The request could not be completed.',
            errors: [],
          }),
        );
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
    // A pool without a cap of its own (the default one) polls at the runtime's workerConcurrency.
    const laneConcurrency = options.workerConcurrency > 0 ? (pool?.maxConcurrency ?? options.workerConcurrency) : options.workerConcurrency;
    const concurrency = lane.lane === 'low' && laneConcurrency > 0 ? lowLaneConcurrency(laneConcurrency, 1, pool?.lowMaxConcurrency) : laneConcurrency;
    return startLaneConsumer({
      sqs: clients.sqs,
      poolName: lane.pool,
      queueUrl: lane.queueUrl,
      concurrency,
      batchSize: pool?.batchSize ?? workerConsumer.batchSize,
      fetchers: lane.lane === 'standard' ? FETCHERS : 1,
      pollWaitSeconds: options.pollWaitSeconds,
      fairBufferSize: options.fairBufferSize,
      invoke: (event) => asFunction(`worker:${lane.pool}`, () => worker(event, lambdaContext('worker'))),
    });
  });

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
      for (const consumer of consumers) consumer.halt();
      if (timer) clearInterval(timer);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await closed;
      await Promise.all(consumers.map((consumer) => consumer.stop()));
      if (ticking) await ticking;
    },
  };
}
