// Hostile input on every route: a seeded generator builds hundreds of malformed or hostile
// requests (bodies, query strings, path ids, headers), each with at least one part that must be
// refused. None may get a 5xx, every 4xx is problem+json, and nothing is written.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scheduler } from './harness';
import { jobBody, startScheduler } from './harness';
import { MAX_JOB_PAYLOAD_BYTES } from '../../lambdas/domain/payload';
import { MAX_BODY_BYTES } from '../../lambdas/api/http';

const CASES = 600;
const SEED = 0x5eed_0006;

/** mulberry32: small, fast, and the same sequence for the same seed on every machine. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Vector = 'path' | 'query' | 'body' | 'header' | 'auth';

interface RouteUnderTest {
  readonly method: string;
  readonly path: (id: string) => string;
  /** Which kind of id the path takes, if any. */
  readonly id?: 'job' | 'run';
  readonly query: boolean;
  readonly body: 'job' | 'patch' | 'trigger' | 'preview' | 'bulk' | 'claim' | 'beat' | 'complete' | 'fail' | 'none';
  /** A header this route reads, which a hostile value must make it refuse. */
  readonly header?: 'idempotency-key' | 'if-match';
}

const ROUTES: readonly RouteUnderTest[] = [
  { method: 'POST', path: () => '/v1/jobs', query: false, body: 'job', header: 'idempotency-key' },
  { method: 'GET', path: () => '/v1/jobs', query: true, body: 'none' },
  { method: 'GET', path: (id) => `/v1/jobs/${id}`, id: 'job', query: false, body: 'none' },
  { method: 'PATCH', path: (id) => `/v1/jobs/${id}`, id: 'job', query: false, body: 'patch', header: 'if-match' },
  { method: 'DELETE', path: (id) => `/v1/jobs/${id}`, id: 'job', query: false, body: 'none' },
  { method: 'POST', path: (id) => `/v1/jobs/${id}/pause`, id: 'job', query: false, body: 'none' },
  { method: 'POST', path: (id) => `/v1/jobs/${id}/resume`, id: 'job', query: false, body: 'none' },
  { method: 'POST', path: (id) => `/v1/jobs/${id}/trigger`, id: 'job', query: false, body: 'trigger' },
  { method: 'GET', path: (id) => `/v1/jobs/${id}/runs`, id: 'job', query: true, body: 'none' },
  { method: 'GET', path: (id) => `/v1/runs/${id}`, id: 'run', query: false, body: 'none' },
  { method: 'POST', path: (id) => `/v1/runs/${id}/cancel`, id: 'run', query: false, body: 'none' },
  { method: 'POST', path: (id) => `/v1/runs/${id}/replay`, id: 'run', query: false, body: 'none' },
  { method: 'GET', path: () => '/v1/dead-runs', query: true, body: 'none' },
  { method: 'POST', path: () => '/v1/dead-runs/replay', query: false, body: 'bulk' },
  { method: 'POST', path: () => '/v1/schedules/preview', query: false, body: 'preview' },
  { method: 'GET', path: () => '/v1/health', query: true, body: 'none' },
  { method: 'POST', path: () => '/v1/workers/claim', query: false, body: 'claim' },
  { method: 'POST', path: (id) => `/v1/runs/${id}/heartbeat`, id: 'run', query: false, body: 'beat' },
  { method: 'POST', path: (id) => `/v1/runs/${id}/complete`, id: 'run', query: false, body: 'complete' },
  { method: 'POST', path: (id) => `/v1/runs/${id}/fail`, id: 'run', query: false, body: 'fail' },
];

/** A lease token of the right shape (no run has it): external-worker routes need one to get past validation. */
const SHAPED_TOKEN = 'a'.repeat(32);
const VALID_WORKER_BODIES: Partial<Record<RouteUnderTest['body'], unknown>> = {
  beat: { leaseToken: SHAPED_TOKEN },
  complete: { leaseToken: SHAPED_TOKEN },
  fail: { leaseToken: SHAPED_TOKEN, error: { code: 'X', message: 'm', retryable: true } },
};

const deep = (levels: number, leaf: string): string => `${'['.repeat(levels)}${leaf}${']'.repeat(levels)}`;
const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/** Values of the wrong type or shape for almost any field. */
const HOSTILE_VALUES: readonly unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  -0.5,
  1e308,
  -1e308,
  2 ** 53 + 1,
  'NaN',
  'Infinity',
  '-Infinity',
  '',
  ' ',
  '\u0000',
  '\ud800',
  'é🙂\u202e',
  'x'.repeat(5000),
  [],
  [1, 2],
  [{}],
  {},
  { a: 1 },
  { __proto__x: 1 },
  '{"a":1}',
  '1',
  '2026-13-45T25:61:61Z',
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  '../../etc/passwd',
  '${jndi:ldap://x}',
];

const BAD_URLS = [
  'ftp://example.com/x',
  'http://',
  'https://',
  'javascript:alert(1)',
  'file:///etc/passwd',
  'gopher://127.0.0.1:25/',
  'https://127.0.0.1/',
  'https://2130706433/',
  'https://0x7f.1/',
  'https://0177.0.0.1/',
  'https://[::1]/',
  'https://[::ffff:127.0.0.1]/',
  'https://[::ffff:a9fe:a9fe]/',
  'https://169.254.169.254/latest/meta-data/',
  'https://[fd00:ec2::254]/',
  'https://metadata.google.internal/',
  'https://localhost/',
  'https://a.localhost/',
  'https://10.0.0.1/',
  'https://192.168.1.1/',
  'https://100.64.0.1/',
  'https://0.0.0.0/',
  'https://[fe80::1]/',
  'https://224.0.0.1/',
  'https://user:pass@example.com/',
  'http://example.com/',
  `https://example.com/${'a'.repeat(2100)}`,
  'not a url',
  '',
  'https://exa mple.com/',
];
const BAD_CRONS = ['* * *', '61 * * * *', '* 25 * * *', '0 0 30 2 *', '* * * * * * *', '@reboot', '', 'x'.repeat(300), '0 0 * * MONDAY', '*/0 * * * *'];
const BAD_ZONES = ['Mars/Olympus', '', 'UTC+25', 'Europe/Paris\u0000', 'x'.repeat(100), '../../etc/localtime', 'Etc/GMT+99'];
const BAD_IDS = [
  'job%20x',
  'j'.repeat(129),
  'job_x%00',
  '%3Cscript%3E',
  'job_%F0%9F%98%80',
  'job$1',
  "job_x'",
  'job_x%2F..',
  '%E2%80%AE',
  'run;1',
  'a,b',
  '~user',
];
const BAD_LIMITS = ['0', '-1', '101', '1e2', '0x10', 'abc', '', '%205', '5.5', 'NaN', '9'.repeat(30), '1,2'];
const BAD_IDEMPOTENCY_KEYS = ['', ' ', 'a b', 'k'.repeat(129), 'tab\there', 'é', 'key\u00a0x'];
const BAD_IF_MATCH = ['', 'abc', '"-1"', '1.5', '9999999999999', 'W/"x"', '*', '"1" "2"'];
const BAD_CONTENT_TYPES = ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'text/json'];
const BAD_AUTH = [undefined, '', 'Bearer', 'Bearer short', 'Basic dXNlcjpwYXNz', `Bearer ${'k'.repeat(600)}`, 'bearer  ', 'Token abcdefghijklmnopqrstuvwxyz'];

interface FuzzCase {
  readonly label: string;
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
  /** The statuses this case may get: every case is refused. */
  readonly expect: readonly number[];
}

interface Known {
  readonly apiKey: string;
  readonly tenantId: string;
  readonly jobId: string;
  readonly runId: string;
}

/** Wrong for every field of a job: no name, enum, number, schedule, target or policy accepts these. */
const NEVER_VALID_FIELD: readonly unknown[] = [null, true, false, -1, 1e308, '', ' ', [], [1], '\u0000', 'x'.repeat(5000), 'é🙂'];

function generate(count: number, seed: number, known: Known): FuzzCase[] {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const chance = (p: number): boolean => random() < p;
  const hostile = (): unknown => pick(HOSTILE_VALUES);

  /** A job body made invalid by at least one mutation, plus some harmless noise. */
  const badJob = (): unknown => {
    const body = jobBody('https://example.com/hook', { schedule: { kind: 'delay', seconds: 3600 } });
    const mutations: (() => void)[] = [
      () =>
        (body[
          pick([
            'name',
            'type',
            'schedule',
            'target',
            'retryPolicy',
            'timeoutSeconds',
            'delivery',
            'overlapPolicy',
            'misfirePolicy',
            'priority',
            'backfillLimit',
          ])
        ] = pick(NEVER_VALID_FIELD)),
      () => delete body[pick(['type', 'schedule', 'target'])],
      () => (body[pick(['colour', 'constructor', 'tenantId', 'jobId', 'status'])] = pick(['x', 1, {}])),
      () => (body.schedule = { kind: 'cron', expression: pick(BAD_CRONS), timezone: 'UTC' }),
      () => (body.schedule = { kind: 'cron', expression: '0 9 * * *', timezone: pick(BAD_ZONES) }),
      () => (body.schedule = { kind: pick(['delay', 'at', 'cron', 'sometimes', '']), seconds: pick([-5, 1e12, 'ten', null]) }),
      () => (body.schedule = { kind: 'at', at: pick(['yesterday', '2020-01-01T00:00:00Z', '2026-13-01T00:00:00Z', 1234567890]) }),
      () => (body.target = { kind: 'http', url: pick(BAD_URLS) }),
      () =>
        (body.target = {
          kind: 'http',
          url: 'https://example.com/',
          headers: pick([
            // Values long enough for the suite's leak check to recognise (test/support/leak-scan.ts).
            { Host: 'evil-host-value' },
            { 'X-A': 'a\r\nB: c-injected' },
            { 'Bad Name': 'bad-name-value' },
            { 'X-A': 'first-of-two', 'x-a': 'second-of-two' },
            Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H${i}`, `value-${i}-of-21`])),
            { 'X-Big': 'v'.repeat(1100) },
          ]),
        }),
      () => (body.target = { kind: pick(['sqs', 'lambda', 'eventbridge', 'smtp']), queueUrl: 'https://sqs.local/q', bogus: true }),
      () => (body.payload = { blob: 'p'.repeat(MAX_JOB_PAYLOAD_BYTES) }),
      () => (body.payload = JSON.parse(deep(40, '1')) as unknown),
      () => (body.payload = JSON.parse('{"__proto__":{"polluted":true}}') as unknown),
      () => (body.payload = { nested: { constructor: { prototype: { polluted: true } } } }),
      () => (body.retryPolicy = { maxAttempts: pick([0, 21, -1, 1.5, '3']), initialDelaySeconds: 1, maxDelaySeconds: 1 }),
      () => (body.retryPolicy = { maxAttempts: 3, initialDelaySeconds: 100, maxDelaySeconds: 1 }),
      () => (body.name = pick(['', ' leading', 'has space', 'n'.repeat(129), 'ü', '-dash', 'a/b'])),
    ];
    pick(mutations)();
    if (chance(0.3)) pick(mutations)();
    if (chance(0.2)) body.priority = pick(['high', 'low']); // harmless noise
    return body;
  };

  const badBodyFor = (kind: RouteUnderTest['body']): unknown => {
    const badToken = () => pick<unknown>(['', 'short', 't'.repeat(200), 'has space in it here!!', 42, null]);
    switch (kind) {
      case 'claim':
        return pick<unknown>([
          { waitSeconds: pick([-1, 21, 'ten', 1.5, null]) },
          { jobType: pick(['', 't'.repeat(65), 'a b', 42]) },
          { workerId: pick(['', 'w'.repeat(65), 'a/b']) },
          { extra: true },
          [],
          null,
          'claim',
        ]);
      case 'beat':
        return pick<unknown>([
          {},
          { leaseToken: badToken() },
          { leaseToken: SHAPED_TOKEN, checkpoint: { blob: 'p'.repeat(70 * 1024) } },
          { leaseToken: SHAPED_TOKEN, progress: JSON.parse('{"__proto__":1}') as unknown },
          { leaseToken: SHAPED_TOKEN, extra: 1 },
          [],
          null,
        ]);
      case 'complete':
        return pick<unknown>([
          {},
          { leaseToken: badToken() },
          // Over the 1 MiB a result may be (decision 0163), within the 2 MiB body.
          { leaseToken: SHAPED_TOKEN, result: { blob: 'r'.repeat(1024 * 1024 + 1) } },
          { leaseToken: SHAPED_TOKEN, status: 'SUCCEEDED' },
          [],
          'done',
        ]);
      case 'fail':
        return pick<unknown>([
          { leaseToken: SHAPED_TOKEN },
          { leaseToken: badToken(), error: { code: 'X', message: 'm', retryable: true } },
          { leaseToken: SHAPED_TOKEN, error: { code: '', message: 'm', retryable: true } },
          { leaseToken: SHAPED_TOKEN, error: { code: 'X', message: 'm', retryable: 'yes' } },
          { leaseToken: SHAPED_TOKEN, error: { code: 'X', message: 'm'.repeat(2000), retryable: false } },
          { leaseToken: SHAPED_TOKEN, error: 'broken' },
        ]);
      case 'job':
        return chance(0.8) ? badJob() : hostile();
      case 'patch':
        return pick<unknown>([
          { colour: 'blue' },
          { name: 'renamed-job' },
          { [pick(['schedule', 'target', 'retryPolicy', 'timeoutSeconds', 'priority', 'delivery'])]: pick(NEVER_VALID_FIELD) },
          { schedule: { kind: 'cron', expression: pick(BAD_CRONS), timezone: 'UTC' } },
          { target: { kind: 'http', url: pick(BAD_URLS) } },
          { payload: JSON.parse('{"__proto__":{"x":1}}') as unknown },
          [],
          null,
          'string',
          42,
        ]);
      case 'trigger':
        return pick<unknown>([
          { payload: { blob: 'p'.repeat(MAX_JOB_PAYLOAD_BYTES) } },
          { payload: JSON.parse(deep(35, '0')) as unknown },
          { payload: JSON.parse('{"__proto__":1}') as unknown },
          { payload: 1, extra: true },
          { runAt: 'now' },
          [],
          null,
          'go',
        ]);
      case 'preview':
        return pick<unknown>([
          { schedule: { kind: 'cron', expression: pick(BAD_CRONS), timezone: 'UTC' } },
          { schedule: { kind: 'cron', expression: '0 9 * * *', timezone: pick(BAD_ZONES) } },
          { schedule: { kind: 'now' }, count: pick([0, 101, -1, 1.5, '5', null]) },
          { schedule: { kind: 'now' }, from: pick(['yesterday', '', 0, '2026-99-01T00:00:00Z']) },
          { schedule: hostile() },
          {},
          [],
        ]);
      case 'bulk':
        return pick<unknown>([
          { limit: pick([0, 101, -3, 'ten', 1.5]) },
          { jobId: pick(['bad id', '', 'j'.repeat(129), 5]) },
          { from: pick(['yesterday', '2026-02-30', 0]) },
          { to: pick(['never', 'not-a-date', 17]) },
          { unknown: true },
          [],
          null,
          7,
        ]);
      case 'none':
        // Anything but nothing or {}.
        return pick<unknown>([{ force: true }, [], null, 0, 'x', { __proto__x: 1 }, JSON.parse(deep(40, '1')) as unknown]);
    }
  };

  const rawBodies = (): string =>
    pick([
      '{"name": ',
      'not json',
      '{"a":1}{"b":2}',
      "{'single':'quotes'}",
      '{"a":NaN}',
      '{"a":Infinity}',
      '[1,2,',
      '\u0000',
      deep(5000, '1'),
      `{"x":${deep(3000, '{}')}}`,
      '{"__proto__":{"polluted":true},"name":"x"}',
      '{"constructor":{"prototype":{"polluted":true}}}',
      '{"a":"\\ud800"}',
      '\ufeff{}',
      '"just a string"',
      'null',
    ]);

  const badQuery = (route: RouteUnderTest): string => {
    const parts: string[] = [];
    const add = (name: string, value: string) => parts.push(`${name}=${value}`);
    if (!route.query || chance(0.3)) {
      add(pick(['foo', '__proto__', 'constructor', 'verbose', 'tenantId', '%00']), pick(['1', '', 'x'.repeat(3000)]));
    } else {
      const which = pick(['limit', 'cursor', 'status', 'minutes', 'from', 'jobId', 'type', 'repeat']);
      if (which === 'limit' || which === 'minutes') add(which, pick(BAD_LIMITS));
      else if (which === 'cursor')
        add(
          'cursor',
          pick([
            '!!!',
            'a'.repeat(3000),
            b64({}),
            b64([1]),
            b64({ tenantId: known.tenantId }),
            b64({ tenantId: known.tenantId, pk: 1, sk: 2, tenantSort: 3 }),
            b64({ tenantId: known.tenantId, pk: '', sk: '', tenantSort: '' }),
            b64({ tenantId: known.tenantId, pk: 'JOB#x', sk: 'JOB', tenantSort: 'z', extra: 'y' }),
            b64({ jobId: known.jobId, pk: 'RUN#x', sk: 'RUN', jobSort: '', x: 1 }),
            b64({ deadTenantId: known.tenantId, pk: {}, sk: [], deadSort: null }),
            b64({ tenantId: 'someone-else', pk: 'JOB#x', sk: 'JOB', tenantSort: 'z' }),
            'bm90LWEtY3Vyc29y',
          ]),
        );
      else if (which === 'status') add('status', pick(['active', 'DONE', '', 'ACTIVE,PAUSED']));
      else if (which === 'from') add('from', pick(['yesterday', '2026-02-30T00:00:00Z', '0', '']));
      else if (which === 'jobId') add('jobId', pick(BAD_IDS));
      else if (which === 'type') add('type', pick(['', 't'.repeat(65)]));
      else add('limit', '1&limit=2');
    }
    return parts.join('&');
  };

  const cases: FuzzCase[] = [];
  for (let i = 0; i < count; i++) {
    const route = pick(ROUTES);
    const vectors: Vector[] = ['auth', 'query'];
    if (route.id) vectors.push('path', 'path');
    if (route.body !== 'none' || route.method !== 'GET') vectors.push('body', 'body', 'body');
    if (route.header) vectors.push('header');
    const vector = pick(vectors);

    const validId = route.id === 'run' ? known.runId : route.id === 'job' ? known.jobId : 'x';
    // Well-formed but unknown ids are a 404; they count as hostile only when the path is the vector.
    const id = vector === 'path' ? (chance(0.7) ? pick(BAD_IDS) : `job_${Math.floor(random() * 1e9).toString(36)}`) : validId;
    let path = route.path(id);
    const query = vector === 'query' ? badQuery(route) : '';
    if (query) path += `?${query}`;

    const headers: Record<string, string> = { authorization: `Bearer ${known.apiKey}` };
    if (vector === 'auth') {
      const auth = pick(BAD_AUTH);
      if (auth === undefined) delete headers.authorization;
      else headers.authorization = auth;
    }
    let body: string | undefined;
    if (vector === 'body') {
      body = chance(0.25) ? rawBodies() : JSON.stringify(badBodyFor(route.body));
      headers['content-type'] = chance(0.15) ? pick(BAD_CONTENT_TYPES) : 'application/json';
      if (chance(0.05)) body = `{"blob":"${'z'.repeat(MAX_BODY_BYTES + 1)}"}`;
    } else if (VALID_WORKER_BODIES[route.body] !== undefined) {
      body = JSON.stringify(VALID_WORKER_BODIES[route.body]);
      headers['content-type'] = 'application/json';
    } else if (route.body === 'job' || route.body === 'preview' || route.body === 'patch') {
      // A route that needs a body gets a valid one when another part is the hostile one.
      body = JSON.stringify(
        route.body === 'job'
          ? jobBody('https://example.com/hook', { schedule: { kind: 'delay', seconds: 3600 } })
          : route.body === 'preview'
            ? { schedule: { kind: 'cron', expression: '0 9 * * *', timezone: 'UTC' } }
            : { priority: 'low' },
      );
      headers['content-type'] = 'application/json';
    }
    if (vector === 'header' && route.header) headers[route.header] = route.header === 'idempotency-key' ? pick(BAD_IDEMPOTENCY_KEYS) : pick(BAD_IF_MATCH);

    const expect: readonly number[] =
      vector === 'auth' ? [401] : vector === 'body' ? [400, 413, 415] : vector === 'path' && !BAD_IDS.includes(id) ? [404] : [400];
    cases.push({
      label: `#${i} ${vector} ${route.method} ${path.slice(0, 100)}`,
      method: route.method,
      path,
      headers,
      ...(body !== undefined ? { body } : {}),
      expect,
    });
  }
  return cases;
}

describe('fuzz: hostile requests on every route', () => {
  let scheduler: Scheduler;
  let known: Known;
  beforeAll(async () => {
    // AWS-mode target rules (https only, no loopback), and no workers: nothing may run or write.
    scheduler = await startScheduler({ workerConcurrency: 0, config: { localMode: false } });
    const created = await scheduler.api('POST', '/v1/jobs', jobBody('https://example.com/hook', { schedule: { kind: 'delay', seconds: 3600 } }));
    expect(created.status).toBe(201);
    known = { apiKey: scheduler.apiKey, tenantId: scheduler.tenantId, jobId: created.body.job.jobId, runId: created.body.job.nextRunId };
  });
  afterAll(async () => scheduler.stop());

  it(`answers ${CASES} generated hostile requests without a 5xx, with problem+json, and writes nothing`, async () => {
    const cases = generate(CASES, SEED, known);
    const before = {
      items: await scheduler.countJobAndRunItems(),
      job: (await scheduler.api('GET', `/v1/jobs/${known.jobId}`)).body,
      queue: await scheduler.queueDepth(),
    };
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    const BATCH = 8;
    for (let start = 0; start < cases.length; start += BATCH) {
      await Promise.all(
        cases.slice(start, start + BATCH).map(async (fuzz) => {
          const response = await fetch(`${scheduler.runtime.url}${fuzz.path}`, {
            method: fuzz.method,
            headers: fuzz.headers,
            ...(fuzz.body !== undefined ? { body: fuzz.body } : {}),
          });
          const text = await response.text();
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          const problem = (why: string) => failures.push(`${fuzz.label}: ${response.status} ${why}: ${text.slice(0, 200)}`);
          if (response.status >= 500) return problem('is a 5xx');
          if (!fuzz.expect.includes(response.status)) return problem(`expected one of ${fuzz.expect.join(', ')}`);
          // No (or an empty) Authorization header: refused by the gateway before the authorizer, in
          // its own words (API Gateway answers so in AWS; the local runtime does the same).
          const hasAuthorization = Object.entries(fuzz.headers).some(([name, value]) => name.toLowerCase() === 'authorization' && value !== '');
          if (response.status === 401 && !hasAuthorization) {
            if (text !== JSON.stringify({ message: 'Unauthorized' })) return problem('is not the gateway 401');
            return;
          }
          if (response.headers.get('content-type') !== 'application/problem+json') return problem('is not problem+json');
          let body: { type?: unknown; title?: unknown; status?: unknown; detail?: unknown; errors?: unknown };
          try {
            body = JSON.parse(text) as typeof body;
          } catch {
            return problem('has a body that is not JSON');
          }
          if (
            typeof body.type !== 'string' ||
            typeof body.title !== 'string' ||
            body.status !== response.status ||
            typeof body.detail !== 'string' ||
            !Array.isArray(body.errors)
          ) {
            return problem('is not a complete problem');
          }
          const errors = body.errors as { path?: unknown; message?: unknown }[];
          if (
            response.status === 400 &&
            (errors.length === 0 || !errors.every((e) => typeof e.path === 'string' && e.path !== '' && typeof e.message === 'string'))
          ) {
            problem('names no field');
          }
        }),
      );
    }
    console.warn(`fuzz: ${cases.length} cases, statuses ${JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))}`);
    expect(cases.length).toBeGreaterThanOrEqual(500);
    expect(failures).toEqual([]);
    // The generator reached every kind of refusal.
    for (const status of [400, 401, 404, 413]) expect(statuses.get(status) ?? 0).toBeGreaterThan(0);

    expect(await scheduler.countJobAndRunItems()).toEqual(before.items);
    expect((await scheduler.api('GET', `/v1/jobs/${known.jobId}`)).body).toEqual(before.job);
    expect(await scheduler.queueDepth()).toBe(before.queue);
  });
});
