// Tenancy and safety (issue 6): targets the deployment refuses to call, idempotent creates under
// concurrent retries (and after their time), creates DynamoDB keeps cancelling, the edge's header
// limit, isolation between tenants on every route, and logs free of payloads and keys.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostResolver } from '../../lambdas/targets/egress';
import { systemResolver } from '../../lambdas/targets/egress';
import { ECHO_PATH } from '../../scripts/local/runtime';
import { captureLogs } from './support/log-capture';
import type { Scheduler } from './harness';
import { eventually, jobBody, startScheduler, startTarget } from './harness';

interface RunBody {
  runId: string;
  jobId: string;
  status: string;
  error: { code: string; message: string; retryable: boolean } | null;
}

/** A loopback server that counts connections, so "never called" means not even a TCP handshake. */
async function startCountingServer(): Promise<{ port: number; connections: () => number; stop: () => Promise<void> }> {
  let connections = 0;
  const server: Server = createServer((_request, response) => response.writeHead(200).end('{}'));
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('target safety in AWS mode', () => {
  const REBOUND_HOST = 'loopback.rebind.example';
  let scheduler: Scheduler;
  let server: Awaited<ReturnType<typeof startCountingServer>>;
  const asked: string[] = [];
  // A name we control that resolves to loopback, as an attacker's DNS would answer.
  const resolveHost: HostResolver = (hostname) => {
    asked.push(hostname);
    return hostname === REBOUND_HOST ? Promise.resolve([{ address: '127.0.0.1', family: 4 }]) : systemResolver(hostname);
  };

  beforeAll(async () => {
    server = await startCountingServer();
    scheduler = await startScheduler({ workerConcurrency: 1, config: { localMode: false }, resolveHost });
  });
  afterAll(async () => {
    await scheduler.stop();
    await server.stop();
  });

  it.each([
    ['loopback', () => `https://127.0.0.1:${server.port}/hook`],
    ['loopback as a decimal number', () => `https://2130706433:${server.port}/hook`],
    ['loopback in hex', () => `https://0x7f.1:${server.port}/hook`],
    ['IPv4-mapped loopback', () => `https://[::ffff:127.0.0.1]:${server.port}/hook`],
    ['localhost', () => `https://localhost:${server.port}/hook`],
    ['the metadata service', () => 'https://169.254.169.254/latest/meta-data/iam/security-credentials/'],
    ['the IPv6 metadata service', () => 'https://[fd00:ec2::254]/latest/meta-data/'],
    ['a metadata name', () => 'https://metadata.google.internal/computeMetadata/v1/'],
    ['a private network', () => 'https://10.0.0.8/hook'],
    ['plain http', () => 'http://example.com/hook'],
  ])('refuses a job whose target is %s at create, with a 400 on target.url', async (_name, url) => {
    const response = await scheduler.api('POST', '/v1/jobs', jobBody(url()));
    expect(response.status).toBe(400);
    expect(response.body.errors.map((e: { path: string }) => e.path)).toEqual(['target.url']);
  });

  it('refuses a PATCH that points an existing job at the metadata service', async () => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody('https://example.com/hook', { schedule: { kind: 'delay', seconds: 3600 } }));
    expect(created.status).toBe(201);
    const patched = await scheduler.api('PATCH', `/v1/jobs/${created.body.job.jobId}`, { target: { kind: 'http', url: 'https://169.254.169.254/' } });
    expect(patched.status).toBe(400);
    expect(patched.body.errors.map((e: { path: string }) => e.path)).toEqual(['target.url']);
    const after = await scheduler.api('GET', `/v1/jobs/${created.body.job.jobId}`);
    expect(after.body.target.url).toBe('https://example.com/hook');
    expect(after.body.version).toBe(1);
  });

  it('ends a run whose host resolves to loopback DEAD with TARGET_ADDRESS_BLOCKED, and the target never sees a connection', async () => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(`https://${REBOUND_HOST}:${server.port}/hook`, { retryPolicy: { maxAttempts: 3 } }));
    expect(created.status).toBe(201);
    const run = await eventually(
      async () => (await scheduler.api('GET', `/v1/jobs/${created.body.job.jobId}/runs`)).body.items[0] as RunBody | undefined,
      (r) => r?.status === 'DEAD',
      30_000,
    );
    expect(run?.error).toMatchObject({ code: 'TARGET_ADDRESS_BLOCKED', retryable: false });
    expect(run?.error?.message).toContain('127.0.0.1');
    // Permanent: no retry run was planned.
    expect((await scheduler.api('GET', `/v1/jobs/${created.body.job.jobId}/runs`)).body.items).toHaveLength(1);
    expect(asked).toContain(REBOUND_HOST);
    expect(server.connections()).toBe(0);
  });
});

describe('idempotent create under concurrent retries', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
  });
  afterAll(async () => scheduler.stop());

  it('creates one job for 20 concurrent requests with the same Idempotency-Key and body, and all of them answer with it', async () => {
    const body = jobBody('https://example.com/hook', { schedule: { kind: 'delay', seconds: 3600 } });
    const headers = { 'idempotency-key': `retry-${randomUUID()}` };
    const raw = await Promise.all(
      Array.from({ length: 20 }, () =>
        fetch(`${scheduler.runtime.url}/v1/jobs`, {
          method: 'POST',
          headers: { authorization: `Bearer ${scheduler.apiKey}`, 'content-type': 'application/json', ...headers },
          body: JSON.stringify(body),
        }),
      ),
    );
    const responses = await Promise.all(
      raw.map(async (r) => ({
        status: r.status,
        replayed: r.headers.get('idempotent-replayed'),
        body: (await r.json()) as { job: { jobId: string; version: number } },
      })),
    );
    // Exactly one request created the job; the other 19 replayed it.
    expect(responses.filter((r) => r.replayed === null)).toHaveLength(1);
    expect(responses.filter((r) => r.replayed === 'true')).toHaveLength(19);

    expect(responses.map((r) => r.status)).toEqual(Array.from({ length: 20 }, () => 201));
    const jobIds = new Set(responses.map((r) => r.body.job.jobId));
    expect(jobIds.size).toBe(1);
    expect(responses.filter((r) => r.body.job.version === 1)).toHaveLength(20);

    const listed = await scheduler.api('GET', '/v1/jobs?limit=100');
    expect(listed.body.items.map((job: { jobId: string }) => job.jobId)).toEqual([...jobIds]);
    // One job, its name guard, its idempotency record, and its one first run.
    expect(await scheduler.countJobAndRunItems()).toEqual({ jobs: 3, runs: 1 });
  });

  it('answers 409 for the same key with another body, concurrently or not, and creates nothing', async () => {
    const key = `retry-${randomUUID()}`;
    const body = jobBody('https://example.com/hook', { schedule: { kind: 'delay', seconds: 3600 } });
    const before = await scheduler.countJobAndRunItems();
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) => scheduler.api('POST', '/v1/jobs', i % 2 === 0 ? body : { ...body, priority: 'high' }, { 'idempotency-key': key })),
    );
    const created = responses.filter((r) => r.status === 201);
    const conflicts = responses.filter((r) => r.status === 409);
    expect(created.length + conflicts.length).toBe(10);
    expect(new Set(created.map((r) => r.body.job.jobId)).size).toBe(1);
    // Whichever body won, the other five got 409.
    expect(conflicts).toHaveLength(5);
    for (const conflict of conflicts) expect(conflict.body).toMatchObject({ status: 409, title: 'Conflict' });
    expect(await scheduler.countJobAndRunItems()).toEqual({ jobs: before.jobs + 3, runs: before.runs + 1 });

    const later = await scheduler.api('POST', '/v1/jobs', { ...body, timeoutSeconds: 60 }, { 'idempotency-key': key });
    expect(later.status).toBe(409);
    expect(later.body.errors.map((e: { path: string }) => e.path)).toEqual(['headers.Idempotency-Key']);
  });

  it('answers 429 with Retry-After, not 500, when DynamoDB keeps cancelling a create with TransactionConflict, and writes nothing', async () => {
    // moto serialises transactions and never answers so; real DynamoDB does when one tenant's
    // creates keep meeting on its usage and rate items. A stand-in answers every transaction so.
    const stack = scheduler.clients.dynamo.middlewareStack as unknown as {
      add(
        middleware: (next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) => (args: unknown) => Promise<unknown>,
        options: { step: 'initialize'; name: string },
      ): void;
      remove(name: string): boolean;
    };
    let transactions = 0;
    stack.add(
      (next, context) => (args) => {
        if (!context.commandName?.startsWith('TransactWrite')) return next(args);
        transactions++;
        return Promise.reject(
          new TransactionCanceledException({
            message: 'Transaction cancelled',
            $metadata: {},
            CancellationReasons: [{ Code: 'None' }, { Code: 'TransactionConflict' }],
          }),
        );
      },
      { step: 'initialize', name: 'transaction-conflict-stand-in' },
    );
    const before = await scheduler.countJobAndRunItems();
    const started = Date.now();
    let response: Response;
    try {
      response = await fetch(`${scheduler.runtime.url}/v1/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${scheduler.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(jobBody('https://example.com/hook', { name: 'conflicted', schedule: { kind: 'delay', seconds: 3600 } })),
      });
    } finally {
      stack.remove('transaction-conflict-stand-in');
    }
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(response.headers.get('content-type')).toContain('application/problem+json');
    expect(await response.json()).toMatchObject({ status: 429, title: 'Too many requests', detail: expect.stringMatching(/conflicted/) });
    expect(transactions).toBeGreaterThan(4);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(await scheduler.countJobAndRunItems()).toEqual(before);
    expect((await scheduler.api('GET', '/v1/jobs?limit=100')).body.items.map((job: { name: string }) => job.name)).not.toContain('conflicted');
  });
});

describe('idempotent create replayed after its time has passed', () => {
  let now = Date.parse('2030-01-01T12:00:00.000Z');
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0, clock: () => now });
  });
  afterAll(async () => scheduler.stop());

  const create = async (body: unknown, key: string) => {
    const response = await fetch(`${scheduler.runtime.url}/v1/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${scheduler.apiKey}`, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(body),
    });
    return {
      status: response.status,
      replayed: response.headers.get('idempotent-replayed'),
      body: (await response.json()) as { job?: { jobId: string }; errors?: { path: string }[] },
    };
  };

  it('answers a retry of an `at` job created before its time with the first result, though its time is now past', async () => {
    const body = jobBody('https://example.com/hook', { name: 'at-retry', schedule: { kind: 'at', at: new Date(now + 30_000).toISOString() } });
    const key = `at-${randomUUID()}`;
    const first = await create(body, key);
    expect(first.status).toBe(201);
    const after = await scheduler.countJobAndRunItems();

    // The client's retry comes three minutes later: the `at` is now more than a minute past.
    now += 3 * 60_000;
    const retry = await create(body, key);
    expect(retry).toMatchObject({ status: 201, replayed: 'true', body: { job: { jobId: first.body.job?.jobId } } });
    expect(await scheduler.countJobAndRunItems()).toEqual(after);

    // Without the key's record, the same body is refused on its time, as before.
    const fresh = await create(body, `at-${randomUUID()}`);
    expect(fresh.status).toBe(400);
    expect(fresh.body.errors?.map((error) => error.path)).toEqual(['schedule.at']);
    // And another body under the used key is still a conflict.
    expect((await create({ ...body, priority: 'high' }, key)).status).toBe(409);
  });
});

describe('request headers at the edge', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
  });
  afterAll(async () => scheduler.stop());

  const createWithPadding = (name: string, paddingBytes: number) =>
    fetch(`${scheduler.runtime.url}/v1/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${scheduler.apiKey}`, 'content-type': 'application/json', 'x-padding': 'p'.repeat(paddingBytes) },
      body: JSON.stringify(jobBody('https://example.com/hook', { name, schedule: { kind: 'delay', seconds: 3600 } })),
    });

  it('refuses a request whose headers pass API Gateway’s 10,240 bytes with a 431, and writes nothing; 9 KB still work', async () => {
    const before = await scheduler.countJobAndRunItems();
    const refused = await createWithPadding('too-much-header', 11 * 1024);
    expect(refused.status).toBe(431);
    expect(await scheduler.countJobAndRunItems()).toEqual(before);

    const accepted = await createWithPadding('enough-header', 9 * 1024);
    expect(accepted.status).toBe(201);
    expect((await scheduler.api('GET', '/v1/jobs?limit=100')).body.items.map((job: { name: string }) => job.name)).toEqual(['enough-header']);
  });
});

describe('tenant isolation', () => {
  let scheduler: Scheduler;
  let target: Awaited<ReturnType<typeof startTarget>>;
  let keyB: string;
  const asB = (): Record<string, string> => ({ authorization: `Bearer ${keyB}` });
  // Tenant A's resources.
  let pendingJob: string;
  let pendingRun: string;
  let deadJob: string;
  let deadRun: string;

  beforeAll(async () => {
    target = await startTarget(() => ({ status: 500 }));
    scheduler = await startScheduler({ workerConcurrency: 1 });
    keyB = `key_${randomBytes(18).toString('base64url')}`;
    await scheduler.deps.apiKeys.issue(keyB, `tenant-b-${scheduler.prefix}`, Date.now());

    // Hours ahead whatever the time of day, so that the occurrence stays pending through the test.
    const parisHour = Number(new Intl.DateTimeFormat('en-GB', { hour: 'numeric', hourCycle: 'h23', timeZone: 'Europe/Paris' }).format(new Date()));
    const pending = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { schedule: { kind: 'cron', expression: `0 ${(parisHour + 6) % 24} * * *`, timezone: 'Europe/Paris' } }),
    );
    pendingJob = pending.body.job.jobId;
    pendingRun = pending.body.job.nextRunId;
    const dead = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { retryPolicy: { maxAttempts: 1 } }));
    deadJob = dead.body.job.jobId;
    deadRun = dead.body.job.nextRunId;
    await eventually(
      async () => (await scheduler.api('GET', `/v1/runs/${deadRun}`)).body.status as string,
      (status) => status === 'DEAD',
      30_000,
    );
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  /** Everything tenant A can see of its own data, minus what moves on its own (health timing). */
  async function snapshotOfA(): Promise<unknown> {
    const read = async (path: string) => (await scheduler.api('GET', path)).body;
    return {
      jobs: await read('/v1/jobs?limit=100'),
      pendingJob: await read(`/v1/jobs/${pendingJob}`),
      deadJob: await read(`/v1/jobs/${deadJob}`),
      pendingRuns: await read(`/v1/jobs/${pendingJob}/runs`),
      deadRuns: await read(`/v1/jobs/${deadJob}/runs`),
      deadList: await read('/v1/dead-runs'),
    };
  }

  // Every route that names one of A's jobs or runs. Add a route here and it is covered.
  const routesNamingA: [string, string, () => string, unknown?][] = [
    ['get job', 'GET', () => `/v1/jobs/${pendingJob}`],
    ['patch job', 'PATCH', () => `/v1/jobs/${pendingJob}`, { priority: 'high' }],
    ['pause job', 'POST', () => `/v1/jobs/${pendingJob}/pause`],
    ['resume job', 'POST', () => `/v1/jobs/${pendingJob}/resume`],
    ['trigger job', 'POST', () => `/v1/jobs/${pendingJob}/trigger`, { payload: { from: 'b' } }],
    ['list job runs', 'GET', () => `/v1/jobs/${pendingJob}/runs`],
    ['get run', 'GET', () => `/v1/runs/${pendingRun}`],
    ['cancel run', 'POST', () => `/v1/runs/${pendingRun}/cancel`],
    ['replay run', 'POST', () => `/v1/runs/${deadRun}/replay`],
    ['get dead run', 'GET', () => `/v1/runs/${deadRun}`],
    ['delete job', 'DELETE', () => `/v1/jobs/${deadJob}`],
  ];

  it('answers 404 to tenant B on every route that names A’s job or run, and A’s data is unchanged', async () => {
    const before = await snapshotOfA();
    const itemsBefore = await scheduler.countJobAndRunItems();
    for (const [name, method, path, body] of routesNamingA) {
      const response = await scheduler.api(method, path(), body, asB());
      expect({ name, status: response.status, type: response.body?.title }).toEqual({ name, status: 404, type: 'Not found' });
    }
    expect(await snapshotOfA()).toEqual(before);
    expect(await scheduler.countJobAndRunItems()).toEqual(itemsBefore);
  });

  it('shows tenant B none of A’s jobs, dead runs or health figures, and B’s bulk replay touches none of A’s runs', async () => {
    const before = await snapshotOfA();
    expect((await scheduler.api('GET', '/v1/jobs', undefined, asB())).body.items).toEqual([]);
    expect((await scheduler.api('GET', `/v1/jobs?type=test`, undefined, asB())).body.items).toEqual([]);
    expect((await scheduler.api('GET', '/v1/dead-runs', undefined, asB())).body.items).toEqual([]);
    expect((await scheduler.api('GET', `/v1/dead-runs?jobId=${deadJob}`, undefined, asB())).body.items).toEqual([]);
    const bulk = await scheduler.api('POST', '/v1/dead-runs/replay', { jobId: deadJob }, asB());
    expect(bulk).toMatchObject({ status: 202, body: { replayed: [], remaining: false } });
    expect((await scheduler.api('POST', '/v1/dead-runs/replay', {}, asB())).body.replayed).toEqual([]);

    const health = await scheduler.api('GET', '/v1/health', undefined, asB());
    expect(health.status).toBe(200);
    expect(health.body.runs.deadAwaitingReplay.count).toBe(0);
    expect(health.body.runs.started).toBe(0);
    expect(Object.values(health.body.runs.byStatus as Record<string, number>).every((count) => count === 0)).toBe(true);
    expect(JSON.stringify(health.body)).not.toContain(deadJob);
    // A sees its own dead run in the same report, so the zeroes above are isolation, not absence.
    const healthA = await scheduler.api('GET', '/v1/health');
    expect(healthA.body.runs.deadAwaitingReplay.count).toBe(1);

    // A's cursor does not page through A's jobs for B.
    const pageA = await scheduler.api('GET', '/v1/jobs?limit=1');
    expect(pageA.body.nextCursor).toEqual(expect.any(String));
    const stolen = await scheduler.api('GET', `/v1/jobs?limit=1&cursor=${pageA.body.nextCursor as string}`, undefined, asB());
    expect(stolen.status).toBe(400);

    expect(await snapshotOfA()).toEqual(before);
  });
});

describe('logs', () => {
  let scheduler: Scheduler;
  let target: Awaited<ReturnType<typeof startTarget>>;
  beforeAll(async () => {
    target = await startTarget();
    scheduler = await startScheduler({ workerConcurrency: 1 });
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  it('never carry a payload or an API key, at INFO level, through create, run, trigger, failures and the local echo target', async () => {
    const marker = `marker-${randomUUID()}`;
    // The structured lines at INFO, and the local runtime's own lines (the echo target's among them),
    // which go through console.
    const capture = captureLogs('INFO');
    try {
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { payload: { secret: marker } }), { 'idempotency-key': `log-${marker}` });
      expect(created.status).toBe(201);
      const jobId = created.body.job.jobId as string;
      await eventually(
        async () => (await scheduler.api('GET', `/v1/jobs/${jobId}/runs`)).body.items[0]?.status as string,
        (s) => s === 'SUCCEEDED',
      );
      const triggered = await scheduler.api('POST', `/v1/jobs/${jobId}/trigger`, { payload: { override: marker } });
      expect(triggered.status).toBe(202);
      await eventually(
        async () => (await scheduler.api('GET', `/v1/runs/${triggered.body.run.runId}`)).body.status as string,
        (s) => s === 'SUCCEEDED',
      );
      // Failures log too: a bad key, a bad body carrying the marker, a duplicate name.
      await scheduler.api('GET', '/v1/jobs', undefined, { authorization: `Bearer ${scheduler.apiKey}x` });
      await scheduler.api('POST', '/v1/jobs', { ...jobBody(target.url), payload: { secret: marker }, colour: marker });
      await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: created.body.job.name, payload: { secret: marker } }));
      expect(target.calls.map((call) => call.body)).toEqual([JSON.stringify({ secret: marker }), JSON.stringify({ override: marker })]);
      // The local runtime's echo target receives the payload too.
      const echoed = await scheduler.api('POST', '/v1/jobs', jobBody(`${scheduler.runtime.url}${ECHO_PATH}`, { payload: { secret: marker } }));
      expect(echoed.status).toBe(201);
      await eventually(
        async () => (await scheduler.api('GET', `/v1/runs/${echoed.body.job.nextRunId}`)).body.status as string,
        (s) => s === 'SUCCEEDED',
      );
    } finally {
      capture.stop();
    }
    const output = capture.lines.join('\n');
    // The capture saw the scheduler's INFO lines, so an absence below means something.
    expect(output).toContain('"message":"job created"');
    expect(output).toContain('"message":"run finished"');
    expect(output).toContain('echo target: POST run');
    expect(output).not.toContain(marker);
    expect(output).not.toContain(scheduler.apiKey);
    expect(output).toMatch(/echo target: POST run \S+ attempt 1 body \d+ bytes of application\/json/);
  });
});
