// The store stalls or drops out: requests must not hang (each store request has a timeout, the API
// answers 503 problem+json with Retry-After, the authorizer answers rather than hangs), and the local
// runtime must log, back off and carry on, serving and running jobs once the store is back. Each
// test has an emulator of its own, which it pauses with SIGSTOP, and the runtime process meets it
// through a proxy that can cut the connection of a chosen call (its batch deletes, which killed it).
import { randomBytes, randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeps } from '../../lambdas/app/deps';
import type { SchedulerDeps } from '../../lambdas/app/deps';
import { createAuthorizerHandler } from '../../lambdas/authorizer/adapter';
import { createAwsClients } from '../../lambdas/store/aws';
import { createLocalResources } from '../../scripts/local/resources';
import type { LocalRuntime } from '../../scripts/local/runtime';
import { startLocalRuntime } from '../../scripts/local/runtime';
import type { TargetServer } from './harness';
import { awsClients, eventually, jobBody, startTarget } from './harness';
import type { FaultProxy, OwnEmulator } from './support/own-emulator';
import { startFaultProxy, startOwnEmulator } from './support/own-emulator';
import { killProcess, startRuntimeProcess } from './worker-process';

/** Far longer than any request may take with the store clients' timeouts (3 s, no retry after one). */
const STALL_MS = 40_000;

async function call(url: string, apiKey: string, method = 'GET', body?: unknown): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
}

describe('a store that stops answering', () => {
  let emulator: OwnEmulator;
  let deps: SchedulerDeps;
  let runtime: LocalRuntime;
  const apiKey = `key_${randomBytes(18).toString('base64url')}`;

  beforeAll(async () => {
    emulator = await startOwnEmulator();
    awsClients(); // the region and credentials every client needs
    const clients = createAwsClients(emulator.endpoint);
    const config = await createLocalResources(clients, `outage-${randomUUID().slice(0, 8)}`);
    deps = createDeps(config, clients, { workerId: 'outage-test', metricSink: () => undefined });
    await deps.apiKeys.issue(apiKey, 'tenant-outage', Date.now());
    runtime = await startLocalRuntime({ deps, clients, port: 0, workerConcurrency: 1, tickIntervalMs: 0, pollWaitSeconds: 1 });
  });
  afterAll(async () => {
    emulator.resume();
    await runtime?.stop();
    await emulator.stop();
  });

  it('answers 503 problem+json with Retry-After while the store is stalled, and 200 once it is back', async () => {
    expect((await call(`${runtime.url}/v1/jobs`, apiKey)).status).toBe(200);
    emulator.pause(STALL_MS);
    let stalled: Awaited<ReturnType<typeof call>>;
    try {
      stalled = await call(`${runtime.url}/v1/jobs`, apiKey);
    } finally {
      emulator.resume();
    }
    // Answered while the store was still stopped: the watchdog did not have to resume it.
    expect(emulator.resumedByWatchdog).toBe(false);
    expect(stalled.status).toBe(503);
    expect(stalled.headers.get('content-type')).toBe('application/problem+json');
    expect(stalled.headers.get('retry-after')).toBe('5');
    expect(stalled.body).toMatchObject({ status: 503, title: 'Service unavailable' });

    expect((await call(`${runtime.url}/v1/jobs`, apiKey)).status).toBe(200);
  });

  it('the authorizer answers, unresolved, instead of hanging; the API then answers 503 itself, and the key works once the store is back', async () => {
    const newKey = `key_${randomBytes(18).toString('base64url')}`;
    await deps.apiKeys.issue(newKey, 'tenant-outage-2', Date.now());
    const authorizer = createAuthorizerHandler(deps.authenticator);
    emulator.pause(STALL_MS);
    let verdict: Awaited<ReturnType<typeof authorizer>>;
    let stalled: Awaited<ReturnType<typeof call>>;
    try {
      verdict = await authorizer({ headers: { authorization: `Bearer ${newKey}` } });
      stalled = await call(`${runtime.url}/v1/jobs`, newKey);
    } finally {
      emulator.resume();
    }
    expect(emulator.resumedByWatchdog).toBe(false);
    // Let through, marked: API Gateway would answer a bare 500 to a thrown error, or cache a denial.
    expect(verdict).toEqual({ isAuthorized: true, context: { unresolved: 'the key could not be checked' } });
    expect(stalled.status).toBe(503);
    expect(stalled.headers.get('content-type')).toBe('application/problem+json');

    // The same (possibly cached) verdict once the store answers: the API checks the key itself.
    const after = await call(`${runtime.url}/v1/jobs`, newKey);
    expect(after.status).toBe(200);
  });
});

describe('the local runtime when its emulator drops out', () => {
  let emulator: OwnEmulator;
  let proxy: FaultProxy;
  let target: TargetServer;
  let child: ChildProcess | undefined;
  const apiKey = `dev_${randomBytes(18).toString('base64url')}`;

  beforeAll(async () => {
    emulator = await startOwnEmulator();
    proxy = await startFaultProxy(emulator.endpoint);
    target = await startTarget(() => new Promise((resolve) => setTimeout(() => resolve({ status: 200 }), 50)));
  });
  afterAll(async () => {
    emulator.resume();
    if (child) await killProcess(child);
    await target.stop();
    await proxy.stop();
    await emulator.stop();
  });

  it('logs, backs off and carries on: it still serves and runs jobs once the emulator is back', async () => {
    // `npm run dev` as its own process, on the test's emulator (through a proxy that can cut calls).
    const prefix = `dropout-${randomUUID().slice(0, 8)}`;
    const runtime = startRuntimeProcess(
      { prefix, config: { leaseMarginSeconds: 2 } },
      { AWS_ENDPOINT_URL: proxy.endpoint, DEV_API_KEY: apiKey, WORKER_CONCURRENCY: '4', TICK_INTERVAL_SECONDS: '5' },
    );
    child = runtime;
    let output = '';
    runtime.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    runtime.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const url = await eventually(
      () => Promise.resolve(/API\s+(http:\/\/localhost:\d+)\s/.exec(output)?.[1] ?? null),
      (found) => found !== null,
      60_000,
    );

    // The emulator drops out just as the runtime deletes a finished batch (the connection is cut).
    proxy.cutAction = 'DeleteMessageBatch';
    for (let i = 0; i < 10; i++) {
      const created = await call(`${url}/v1/jobs`, apiKey, 'POST', jobBody(target.url, { name: `cut-${i}` }));
      expect(created.status).toBe(201);
    }
    await eventually(
      () => Promise.resolve(proxy.cuts),
      (cuts) => cuts >= 3,
      30_000,
    );
    proxy.cutAction = null;
    expect(runtime.exitCode).toBeNull();
    expect(runtime.signalCode).toBeNull();

    // Then it stalls while runs keep the workers busy (lease, call, record, delete).
    for (let i = 0; i < 40; i++) {
      const created = await call(`${url}/v1/jobs`, apiKey, 'POST', jobBody(target.url, { name: `before-${i}` }));
      expect(created.status).toBe(201);
    }
    await eventually(
      () => Promise.resolve(target.calls.length),
      (n) => n >= 15,
      30_000,
    );
    emulator.pause(STALL_MS);
    // Longer than the store clients' timeouts: every call in flight fails, pollers and deletes too.
    await new Promise((resolve) => setTimeout(resolve, 12_000));
    emulator.resume();

    expect(runtime.exitCode).toBeNull();
    expect(runtime.signalCode).toBeNull();
    const listed = await eventually(
      () => call(`${url}/v1/jobs?limit=1`, apiKey),
      (answer) => answer.status === 200,
      30_000,
    );
    expect(listed.status).toBe(200);
    const created = await call(`${url}/v1/jobs`, apiKey, 'POST', jobBody(target.url, { name: 'after' }));
    expect(created.status).toBe(201);
    const runId: string = created.body.job.nextRunId;
    await eventually(
      async () => (await call(`${url}/v1/runs/${runId}`, apiKey)).body?.status,
      (status) => status === 'SUCCEEDED',
      60_000,
    );
    expect(runtime.exitCode).toBeNull();
  });
});
