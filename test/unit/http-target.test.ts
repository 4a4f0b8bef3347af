import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo, Server as NetServer } from 'node:net';
import { createServer as createNetServer } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Job } from '../../lambdas/domain/job';
import { RESERVED_HEADERS, httpTargetSchema } from '../../lambdas/domain/job';
import type { Run } from '../../lambdas/domain/run';
import { PUBLIC_HTTPS_ONLY } from '../../lambdas/targets/address-policy';
import type { Egress, HostResolver } from '../../lambdas/targets/egress';
import { egressPolicyOf } from '../../lambdas/targets/egress';
import { callHttpTarget, classifyStatus, isRetryableStatus, postJson } from '../../lambdas/targets/http-target';

describe('HTTP failure classes', () => {
  it('retries 408, 429 and 5xx, and no other 4xx', () => {
    expect([408, 429, 500, 502, 503, 504].every(isRetryableStatus)).toBe(true);
    expect([400, 401, 403, 404, 409, 410, 422].some(isRetryableStatus)).toBe(false);
  });

  it("lets the target's X-Retryable header override the status class", () => {
    expect(classifyStatus(503, 'false')).toBe(false);
    expect(classifyStatus(503, ' FALSE ')).toBe(false);
    expect(classifyStatus(409, 'true')).toBe(true);
    expect(classifyStatus(503, null)).toBe(true);
    expect(classifyStatus(400, 'maybe')).toBe(false);
  });
});

describe('HTTP target egress guard', () => {
  let server: Server;
  let port: number;
  const connections: number[] = [];
  const requests: { host: string | undefined }[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      requests.push({ host: request.headers.host });
      response.writeHead(204).end();
    });
    server.on('connection', () => connections.push(Date.now()));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    connections.length = 0;
    requests.length = 0;
  });

  const run = { runId: 'job_x.1.1', jobId: 'job_x', scheduledFor: '2026-01-01T00:00:00.000Z', attempt: 1 } as Run;
  const job = { target: { kind: 'http' } } as Job;
  const call = (url: string, egress: Egress) =>
    callHttpTarget({ kind: 'http', url, method: 'POST', headers: {} }, { job, run, payload: { a: 1 }, timeoutMs: 2_000, egress });
  const resolving = (...answers: string[][]) => {
    const asked: string[] = [];
    const resolve: HostResolver = (hostname) => {
      asked.push(hostname);
      const answer = answers[Math.min(asked.length - 1, answers.length - 1)] ?? [];
      return Promise.resolve(answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
    };
    return { asked, resolve };
  };

  it('refuses a name that resolves to loopback under the AWS policy, without connecting', async () => {
    const dns = resolving(['127.0.0.1']);
    const result = await call(`http://rebind.example:${port}/hook`, { policy: { ...PUBLIC_HTTPS_ONLY, allowPlainHttp: true }, resolve: dns.resolve });
    expect(result).toMatchObject({ ok: false, error: { code: 'TARGET_ADDRESS_BLOCKED', retryable: false } });
    expect(!result.ok && result.error.message).toMatch(/127\.0\.0\.1, a loopback address/);
    expect(connections).toHaveLength(0);
  });

  it('refuses a name when any of its addresses is blocked', async () => {
    const dns = resolving(['93.184.215.14', '10.0.0.7']);
    const result = await call(`https://mixed.example:${port}/`, { policy: PUBLIC_HTTPS_ONLY, resolve: dns.resolve });
    expect(result).toMatchObject({ ok: false, error: { code: 'TARGET_ADDRESS_BLOCKED' } });
    expect(!result.ok && result.error.message).toMatch(/10\.0\.0\.7, a private address/);
  });

  it('refuses literal addresses and plain http under the AWS policy, and never asks DNS for a literal', async () => {
    const dns = resolving(['8.8.8.8']);
    const aws = { policy: PUBLIC_HTTPS_ONLY, resolve: dns.resolve };
    expect(await call(`https://127.0.0.1:${port}/`, aws)).toMatchObject({ error: { code: 'TARGET_ADDRESS_BLOCKED' } });
    expect(await call(`https://[::ffff:7f00:1]:${port}/`, aws)).toMatchObject({ error: { code: 'TARGET_ADDRESS_BLOCKED' } });
    expect(await call(`https://169.254.169.254/latest/meta-data/`, aws)).toMatchObject({ error: { code: 'TARGET_ADDRESS_BLOCKED' } });
    expect(await call(`http://example.com:${port}/`, aws)).toMatchObject({ error: { code: 'TARGET_URL_REFUSED', retryable: false } });
    expect(dns.asked).toEqual([]);
    expect(connections).toHaveLength(0);
  });

  it('connects to the address it checked, resolving once, with the name as Host', async () => {
    // A second answer (the rebinding) would point elsewhere; the socket must never ask for it.
    const dns = resolving(['127.0.0.1'], ['10.9.9.9']);
    const result = await call(`http://pinned.example:${port}/hook`, {
      policy: egressPolicyOf({ localMode: true, allowPrivateTargets: false }),
      resolve: dns.resolve,
    });
    expect(result).toEqual({ ok: true, detail: 'HTTP 204' });
    expect(dns.asked).toEqual(['pinned.example']);
    expect(requests).toEqual([{ host: `pinned.example:${port}` }]);
  });

  it('treats a name that does not resolve as a retryable network error', async () => {
    const result = await call(`https://nowhere.invalid/`, {
      policy: PUBLIC_HTTPS_ONLY,
      resolve: () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.invalid'), { code: 'ENOTFOUND' })),
    });
    expect(result).toMatchObject({ ok: false, error: { code: 'NETWORK_ERROR', retryable: true } });
  });

  it("times out a name whose resolution does not answer within the call's timeout: a run's or a notification's, whose lease or claim it was sized for", async () => {
    const silent: Egress = { policy: PUBLIC_HTTPS_ONLY, resolve: () => new Promise(() => undefined) };
    const started = Date.now();
    const [runCall, notificationCall] = await Promise.all([
      callHttpTarget({ kind: 'http', url: 'https://silent.example/', method: 'POST', headers: {} }, { job, run, payload: {}, timeoutMs: 300, egress: silent }),
      postJson('https://silent.example/', {}, '{}', silent, 300),
    ]);
    expect(runCall).toMatchObject({ ok: false, timedOut: true, error: { code: 'TIMEOUT', retryable: true } });
    expect(notificationCall).toMatchObject({ ok: false, timedOut: true, error: { code: 'TIMEOUT', retryable: true } });
    expect(Date.now() - started).toBeLessThan(2_000);
  }, 5_000);
});

describe('HTTP target on a kept-alive connection the target closes', () => {
  // A server that answers the first request of a connection and then, like a server whose idle
  // timeout fires as the next request is written, closes that connection without reading on. A
  // new connection is answered again.
  let server: NetServer;
  let port: number;
  const requestsPerConnection: number[] = [];

  beforeAll(async () => {
    server = createNetServer((socket) => {
      const index = requestsPerConnection.push(0) - 1;
      socket.on('data', (chunk: Buffer) => {
        if (!chunk.toString('latin1').includes('\r\n\r\n')) return;
        requestsPerConnection[index] = (requestsPerConnection[index] ?? 0) + 1;
        if (requestsPerConnection[index] === 1) socket.write('HTTP/1.1 204 No Content\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\n');
        else socket.destroy();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    requestsPerConnection.length = 0;
  });

  const run = { runId: 'job_k.1.1', jobId: 'job_k', scheduledFor: '2026-01-01T00:00:00.000Z', attempt: 1 } as Run;
  const egress: Egress = {
    policy: egressPolicyOf({ localMode: true, allowPrivateTargets: true }),
    resolve: () => Promise.resolve([{ address: '127.0.0.1', family: 4 }]),
  };
  const call = (delivery: Job['delivery'], runDelivery?: Job['delivery']) =>
    callHttpTarget(
      { kind: 'http', url: `http://127.0.0.1:${port}/hook`, method: 'POST', headers: {} },
      { job: { target: { kind: 'http' }, delivery } as Job, run: { ...run, delivery: runDelivery }, payload: {}, timeoutMs: 2_000, egress },
    );

  it('sends the request again, once, on a new connection', async () => {
    expect(await call('at-least-once')).toEqual({ ok: true, detail: 'HTTP 204' }); // opens the kept-alive connection
    expect(await call('at-least-once')).toEqual({ ok: true, detail: 'HTTP 204' }); // met the closing one, then a new one
    expect(requestsPerConnection).toEqual([2, 1]);
  });

  it('does not for at-most-once, which never risks a second call', async () => {
    expect((await call('at-most-once')).ok).toBe(true);
    const second = await call('at-most-once');
    expect(second).toMatchObject({ ok: false, error: { code: 'NETWORK_ERROR', retryable: true } });
    expect(requestsPerConnection.slice(-1)).toEqual([2]);
  });

  it("goes by the run's own delivery: an at-most-once run whose job was changed since is not sent again", async () => {
    expect((await call('at-least-once', 'at-most-once')).ok).toBe(true);
    // Before, the job's delivery (at-least-once since a PATCH) decided, and the request went twice.
    expect(await call('at-least-once', 'at-most-once')).toMatchObject({ ok: false, error: { code: 'NETWORK_ERROR' } });
    expect(requestsPerConnection.slice(-1)).toEqual([2]);
  });
});

describe('headers the HTTP target sets itself', () => {
  let server: Server;
  let port: number;
  let seen: string[] = [];
  let requests = 0;

  beforeAll(async () => {
    server = createServer((request, response) => {
      requests++;
      seen = Object.keys(request.headers);
      response.writeHead(204).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const run = { runId: 'job_h.1.1', jobId: 'job_h', scheduledFor: '2026-01-01T00:00:00.000Z', attempt: 1 } as Run;
  const egress: Egress = {
    policy: egressPolicyOf({ localMode: true, allowPrivateTargets: true }),
    resolve: () => Promise.resolve([{ address: '127.0.0.1', family: 4 }]),
  };

  it('never calls with a header missing: a secret reference the worker did not resolve fails the attempt', async () => {
    const before = requests;
    const secretArn = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:t-AbC123';
    const target = { kind: 'http' as const, url: `http://127.0.0.1:${port}/hook`, method: 'POST' as const, headers: { Authorization: { secretArn } } };
    const invocation = { job: { target: { kind: 'http' } } as Job, run, payload: { a: 1 }, timeoutMs: 2_000, egress };
    expect(await callHttpTarget(target, invocation)).toMatchObject({ ok: false, error: { code: 'HEADER_SECRET_UNAVAILABLE', retryable: true } });
    expect(requests).toBe(before);
    expect(await callHttpTarget(target, { ...invocation, headers: { Authorization: 'Bearer resolved' } })).toEqual({ ok: true, detail: 'HTTP 204' });
  });

  it('are all reserved, so a job that names one is refused rather than stored and replaced', async () => {
    const custom = { 'X-Tenant-Tag': 'a' };
    const result = await callHttpTarget(
      { kind: 'http', url: `http://127.0.0.1:${port}/hook`, method: 'POST', headers: custom },
      {
        job: { target: { kind: 'http' } } as Job,
        run,
        payload: { a: 1 },
        timeoutMs: 2_000,
        egress,
        traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      },
    );
    expect(result).toEqual({ ok: true, detail: 'HTTP 204' });
    const setByScheduler = seen.filter((name) => name !== 'x-tenant-tag');
    expect(setByScheduler).toContain('user-agent');
    expect(setByScheduler).toContain('traceparent');
    expect(setByScheduler.filter((name) => !(RESERVED_HEADERS as readonly string[]).includes(name))).toEqual([]);
    for (const name of [...setByScheduler, 'User-Agent']) {
      const parsed = httpTargetSchema.safeParse({ kind: 'http', url: 'https://example.com/', headers: { [name]: 'mine' } });
      expect(parsed.success, name).toBe(false);
    }
  });
});
