// The CLI's answers to what the local runtime rarely says (a 429 past the retry budget, a 500, a
// 403), from a small local HTTP server; its list of finished run statuses against the domain's; and
// what it checks before any request (URL, key, instants, filters) against a fetch that records.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { INSTANT_MESSAGE, INSTANT_RANGE_MESSAGE, instantProblem } from '../../clients/cli/context';
import { EXIT } from '../../clients/cli/exit-codes';
import { FINISHED_RUN_STATUSES } from '../../clients/cli/output';
import { runCli } from '../../clients/cli/program';
import { isoInstant } from '../../lambdas/domain/job';
import { RUN_STATUSES, isTerminal } from '../../lambdas/domain/run';

let server: Server | undefined;

async function answering(status: number, headers: Record<string, string> = {}): Promise<string> {
  server = createServer((request, response) => {
    request.resume();
    response.writeHead(status, { 'content-type': 'application/problem+json', ...headers });
    response.end(JSON.stringify({ type: `urn:job-scheduler:problem:test-${status}`, title: `Status ${status}`, status, detail: 'as told' }));
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

afterEach(async () => {
  const closing = server;
  server = undefined;
  if (closing) await new Promise<void>((resolve) => closing.close(() => resolve()));
});

async function cli(url: string, ...args: string[]): Promise<{ code: number; stderr: string }> {
  let stderr = '';
  const code = await runCli(args, {
    stdout: () => undefined,
    stderr: (text) => (stderr += text),
    env: { SCHEDULER_URL: url, SCHEDULER_API_KEY: 'key' },
    readStdin: () => Promise.resolve(''),
    retry: { maxAttempts: 2, baseDelayMs: 1 },
  });
  return { code, stderr };
}

describe('dead replay', () => {
  it('says how to go on with the same filters, not with --to alone (which would replay every job)', async () => {
    const bodies: unknown[] = [];
    server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        bodies.push(JSON.parse(body));
        response.writeHead(202, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ replayed: [], remaining: true, until: '2026-01-01T00:00:00.000Z' }));
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    let stdout = '';
    const run = (args: string[]) =>
      runCli(args, {
        stdout: (text) => (stdout += text),
        stderr: () => undefined,
        env: { SCHEDULER_URL: url, SCHEDULER_API_KEY: 'key' },
        readStdin: () => Promise.resolve(''),
        retry: { maxAttempts: 1, baseDelayMs: 1 },
      });
    expect(await run(['dead', 'replay', '--job', 'job_A', '--from', '2025-12-01T00:00:00Z', '--limit', '5'])).toBe(EXIT.ok);
    expect(bodies[0]).toEqual({ jobId: 'job_A', from: '2025-12-01T00:00:00Z', limit: 5 });
    // Before: "run again with --to 2026-01-01T00:00:00.000Z", which sent {to} alone.
    expect(stdout).toBe(
      'replayed 0 dead run(s); more remain (run again: npx scheduler dead replay --job job_A --from 2025-12-01T00:00:00Z --to 2026-01-01T00:00:00.000Z --limit 5)\n',
    );
    stdout = '';
    expect(await run(['dead', 'replay', '--all'])).toBe(EXIT.ok);
    expect(stdout).toContain('(run again: npx scheduler dead replay --all --to 2026-01-01T00:00:00.000Z)');
  });
});

describe('watch --timeout', () => {
  async function answeringJob(status: string): Promise<string> {
    server = createServer((request, response) => {
      request.resume();
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ jobId: 'job_1', status, recentRuns: [] }));
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it('without --until-done follows for that long and ends 0, done or not; with it, 7 only when the job is not done', async () => {
    // Before, a plain --timeout always ended with 7 and "timed out before the job was done".
    const done = await answeringJob('COMPLETED');
    expect((await cli(done, 'watch', 'job_1', '--timeout', '1')).code).toBe(EXIT.ok);
    expect((await cli(done, 'watch', 'job_1', '--until-done', '--timeout', '1')).code).toBe(EXIT.ok);
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    const active = await answeringJob('ACTIVE');
    expect((await cli(active, 'watch', 'job_1', '--timeout', '1')).code).toBe(EXIT.ok);
    const timedOut = await cli(active, 'watch', 'job_1', '--until-done', '--timeout', '1');
    expect(timedOut).toEqual({ code: EXIT.watchTimeout, stderr: 'watch: timed out before the job was done\n' });
  });
});

describe('the CLI exit codes', () => {
  it('6 when the API still says 429 after the retries, with its Retry-After', async () => {
    const { code, stderr } = await cli(await answering(429, { 'retry-after': '0' }), 'jobs', 'trigger', 'job_1');
    expect(code).toBe(EXIT.rateLimited);
    expect(stderr).toBe('error: 429 Status 429: as told\n  (retry after 0 s)\n');
  });

  it('5 for a server error, 4 for a forbidden key', async () => {
    expect((await cli(await answering(500), 'health')).code).toBe(EXIT.unavailable);
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    expect((await cli(await answering(403), 'jobs', 'list')).code).toBe(EXIT.auth);
  });

  it('1 for a URL that is not http(s), before any request', async () => {
    const { code, stderr } = await cli('ftp://example.com', 'health');
    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain('is not an http(s) URL');
  });

  it('4 for no API key, as for a key the API refuses, before any request', async () => {
    // Before: exit 1, though exit 4 is "no key, or a key the API does not accept".
    const { code, stderr, requests } = await offline(['jobs', 'list'], { SCHEDULER_URL: 'http://127.0.0.1:9' });
    expect({ code, stderr, requests }).toEqual({ code: EXIT.auth, stderr: 'error: no API key: set SCHEDULER_API_KEY or pass --api-key\n', requests: [] });
    expect((await offline(['--url', 'http://127.0.0.1:9', 'health'], {})).code).toBe(EXIT.auth);
  });
});

/** The CLI with a fetch that records each request and answers `body` (200): nothing leaves the process. */
async function offline(
  args: string[],
  env: Record<string, string | undefined> = { SCHEDULER_URL: 'http://127.0.0.1:9', SCHEDULER_API_KEY: 'key' },
  body: unknown = { items: [], nextCursor: null },
): Promise<{ code: number; stdout: string; stderr: string; requests: { method: string; url: string; headers: Headers; body: unknown }[] }> {
  let stdout = '';
  let stderr = '';
  const requests: { method: string; url: string; headers: Headers; body: unknown }[] = [];
  const code = await runCli(args, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    env,
    readStdin: () => Promise.resolve(''),
    retry: { maxAttempts: 1 },
    fetch: (input, init) => {
      requests.push({
        method: init?.method ?? 'GET',
        url: typeof input === 'string' ? input : input instanceof URL ? input.href : input.url,
        headers: new Headers(init?.headers),
        body: typeof init?.body === 'string' ? (JSON.parse(init.body) as unknown) : undefined,
      });
      return Promise.resolve(new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } }));
    },
  });
  return { code, stdout, stderr, requests };
}

describe('the CLI API URL', () => {
  it('is the base URL with or without /v1: `npm run dev` prints it with /v1, and /v1/v1/jobs would be a 404', async () => {
    for (const [url, expected] of [
      ['http://127.0.0.1:9', 'http://127.0.0.1:9/v1/jobs'],
      ['http://127.0.0.1:9/', 'http://127.0.0.1:9/v1/jobs'],
      ['http://127.0.0.1:9/v1', 'http://127.0.0.1:9/v1/jobs'],
      ['http://127.0.0.1:9/v1/', 'http://127.0.0.1:9/v1/jobs'],
      // A stage's path stays (API Gateway's https://…/prod), with or without the /v1 after it.
      ['https://api.example.com/prod/v1/', 'https://api.example.com/prod/v1/jobs'],
      ['https://api.example.com/prod', 'https://api.example.com/prod/v1/jobs'],
    ]) {
      const { code, stderr, requests } = await offline(['jobs', 'list'], { SCHEDULER_URL: url, SCHEDULER_API_KEY: 'key' });
      expect(code, stderr).toBe(EXIT.ok);
      expect(requests.map((request) => request.url)).toEqual([expected]);
    }
    const flag = await offline(['--url', 'http://127.0.0.1:9/v1', 'health'], { SCHEDULER_API_KEY: 'key' }, { status: 'ok' });
    expect(flag.requests.map((request) => request.url)).toEqual(['http://127.0.0.1:9/v1/health']);
  });

  it('names where a bad URL came from, SCHEDULER_URL or --url, and suggests http:// when it has no scheme', async () => {
    // Before: "--url localhost:3917 is not an http(s) URL", for a value from SCHEDULER_URL.
    const fromEnv = await offline(['jobs', 'list'], { SCHEDULER_URL: 'localhost:3917', SCHEDULER_API_KEY: 'key' });
    expect(fromEnv).toMatchObject({ code: EXIT.usage, requests: [] });
    expect(fromEnv.stderr).toBe('error: SCHEDULER_URL localhost:3917 is not an http(s) URL: did you mean http://localhost:3917?\n');
    const fromFlag = await offline(['--url', '127.0.0.1:3917/v1', 'jobs', 'list'], { SCHEDULER_URL: 'http://127.0.0.1:9', SCHEDULER_API_KEY: 'key' });
    expect(fromFlag).toMatchObject({ code: EXIT.usage, requests: [] });
    expect(fromFlag.stderr).toBe('error: --url 127.0.0.1:3917/v1 is not an http(s) URL: did you mean http://127.0.0.1:3917/v1?\n');
    const otherScheme = await offline(['jobs', 'list'], { SCHEDULER_URL: 'ftp://example.com', SCHEDULER_API_KEY: 'key' });
    expect(otherScheme.stderr).toBe('error: SCHEDULER_URL ftp://example.com is not an http(s) URL: the API is served over http:// or https://\n');
    const none = await offline(['jobs', 'list'], { SCHEDULER_API_KEY: 'key' });
    expect(none.code).toBe(EXIT.usage);
    expect(none.stderr).toContain('no API URL: set SCHEDULER_URL or pass --url');
  });
});

describe('the CLI time options', () => {
  const GOOD = '2026-01-31T10:00:00.5+01:00';
  // A time the old local check let through, and the API refuses (no seconds).
  const NO_SECONDS = '2026-01-31T09:00Z';

  it('checks every time option as the API checks an instant, with one message naming the option, before any request', async () => {
    // Before, only runs list checked its --from and --to; the others sent the value and showed the API's bare 400.
    const commands: [string[], string][] = [
      [['runs', 'list', '--from', 'BAD'], '--from <instant>'],
      [['runs', 'list', 'job_1', '--to', 'BAD'], '--to <instant>'],
      [['jobs', 'backfill', 'job_1', '--from', 'BAD', '--to', GOOD], '--from <instant>'],
      [['jobs', 'backfill', 'job_1', '--from', GOOD, '--to', 'BAD'], '--to <instant>'],
      [['jobs', 'pause', 'job_1', '--until', 'BAD'], '--until <instant>'],
      [['jobs', 'skip', 'job_1', '--at', GOOD, 'BAD'], '--at <instant...>'],
      [['dead', 'list', '--from', 'BAD'], '--from <time>'],
      [['dead', 'list', '--to', 'BAD'], '--to <time>'],
      [['dead', 'replay', '--from', 'BAD'], '--from <time>'],
      [['dead', 'replay', '--job', 'job_1', '--to', 'BAD'], '--to <time>'],
      [['preview', '--every', 'PT15M', '--anchor', 'BAD'], '--anchor <time>'],
      [['preview', '--at', 'BAD'], '--at <time>'],
      [['preview', '--cron', '0 9 * * *', '--from', 'BAD'], '--from <time>'],
    ];
    for (const bad of ['yesterday', NO_SECONDS, '2026-01-31t09:00:00z', '2026-02-30T09:00:00Z']) {
      for (const [args, option] of commands) {
        const { code, stderr, requests } = await offline(args.map((arg) => (arg === 'BAD' ? bad : arg)));
        expect({ code, requests }, `${args.join(' ')} with ${bad}`).toEqual({ code: EXIT.usage, requests: [] });
        expect(stderr, args.join(' ')).toContain(`error: option '${option}' argument '${bad}' is invalid. ${INSTANT_MESSAGE}\n`);
      }
    }
    const late = await offline(['preview', '--at', '9999-12-31T23:59:59-12:00']);
    expect(late.stderr).toContain(`argument '9999-12-31T23:59:59-12:00' is invalid. ${INSTANT_RANGE_MESSAGE}\n`);
  });

  it('sends the instants it takes as they were written', async () => {
    const backfill = await offline(['jobs', 'backfill', 'job_1', '--from', GOOD, '--to', '2026-02-01T00:00:00Z'], undefined, {
      backfill: { backfillId: 'bf_1', released: 0, total: 0, status: 'DONE' },
    });
    expect(backfill.code, backfill.stderr).toBe(EXIT.ok);
    expect(backfill.requests[0]?.body).toEqual({ from: GOOD, to: '2026-02-01T00:00:00Z' });
    const skip = await offline(['jobs', 'skip', 'job_1', '--at', '2026-02-01T09:00:00Z', GOOD], undefined, { jobId: 'job_1', name: 'j' });
    expect(skip.requests[0]?.body).toEqual({ occurrences: ['2026-02-01T09:00:00Z', GOOD] });
    const dead = await offline(['dead', 'list', '--from', GOOD]);
    expect(dead.requests.map((request) => new URL(request.url).searchParams.get('from'))).toEqual([GOOD]);
    const preview = await offline(['preview', '--every', 'PT15M', '--anchor', GOOD, '--from', '2026-01-31T00:00:00Z'], undefined, { occurrences: [] });
    expect(preview.requests[0]?.body).toEqual({ schedule: { kind: 'every', interval: 'PT15M', anchor: GOOD }, from: '2026-01-31T00:00:00Z' });
  });

  it("takes exactly the instants the API's isoInstant takes: not one more, not one fewer", () => {
    const dates = [
      '2026-01-31',
      '2024-02-29',
      '2023-02-29',
      '2000-02-29',
      '1900-02-29',
      '2026-04-31',
      '2026-13-01',
      '2026-00-10',
      '0000-01-01',
      '9999-12-31',
      '26-01-31',
      '2026-1-31',
      '20260131',
      '+002026-01-31',
    ];
    const times = [
      '09:00:00',
      '23:59:59',
      '00:00:00',
      '24:00:00',
      '09:00',
      '09:00:60',
      '09:60:00',
      '09:00:00.5',
      '09:00:00.123456789',
      '09:00:00.',
      '9:00:00',
      '09:00:00,5',
      '0900:00',
    ];
    const offsets = ['Z', 'z', '+01:00', '-12:00', '+14:00', '+23:59', '+24:00', '+01:60', '+0100', '+01', '', ' Z', '-00:00'];
    const samples = [
      '',
      'yesterday',
      '2026-01-31',
      ' 2026-01-31T09:00:00Z',
      '2026-01-31T09:00:00Z ',
      '2026-01-31T09:00:00Z\n',
      '0000-01-01T00:00:00Z',
      '0000-01-01T00:00:00+01:00',
      '0000-01-01T00:00:00-01:00',
      '9999-12-31T23:59:59.999Z',
      '9999-12-31T23:59:59.9999Z',
      '9999-12-31T23:59:59-12:00',
      '9999-12-31T12:00:00+12:00',
      '2026-01-31T09:00:00.000000000000000000001Z',
      '２026-01-31T09:00:00Z',
    ];
    for (const date of dates)
      for (const separator of ['T', 't', ' ']) for (const time of times) for (const offset of offsets) samples.push(`${date}${separator}${time}${offset}`);
    const disagreements = samples.filter((raw) => (instantProblem(raw) === undefined) !== isoInstant.safeParse(raw).success);
    expect(disagreements).toEqual([]);
    // The corpus holds both answers, in numbers.
    expect(samples.filter((raw) => instantProblem(raw) === undefined).length).toBeGreaterThan(100);
    expect(samples.filter((raw) => instantProblem(raw) !== undefined).length).toBeGreaterThan(1000);
  });
});

describe('the CLI jobs list', () => {
  it('filters by name, name prefix and labels (repeated: all must match), as the API does', async () => {
    const byName = await offline(['jobs', 'list', '--name', 'nightly-report', '--status', 'ACTIVE']);
    expect(byName.code, byName.stderr).toBe(EXIT.ok);
    expect(byName.requests.map((request) => new URL(request.url).search)).toEqual(['?status=ACTIVE&name=nightly-report']);
    const byPrefix = await offline(['jobs', 'list', '--name-prefix', 'nightly-', '--label', 'team=billing', '--label', 'env=prod', '--limit', '5']);
    expect(byPrefix.requests.map((request) => Object.fromEntries(new URL(request.url).searchParams))).toEqual([
      { namePrefix: 'nightly-', label: 'team=billing,env=prod', limit: '5' },
    ]);
    const both = await offline(['jobs', 'list', '--name', 'a', '--name-prefix', 'b']);
    expect(both).toMatchObject({ code: EXIT.usage, stderr: 'error: give --name or --name-prefix, not both\n', requests: [] });
    const noValue = await offline(['jobs', 'list', '--label', 'team']);
    expect(noValue).toMatchObject({ code: EXIT.usage, requests: [] });
    expect(noValue.stderr).toContain("option '--label <key=value>' argument 'team' is invalid. must be key=value");
  });
});

describe('the CLI workflows update', () => {
  it('posts a new version from a file, with --if-match as If-Match', async () => {
    const directory = await mkdtemp(path.join(tmpdir(), 'cli-workflow-'));
    try {
      const file = path.join(directory, 'workflow.yaml');
      await writeFile(file, 'name: etl\nsteps:\n  - { id: a, target: { kind: http, url: "https://example.com/a" } }\n');
      const updated = await offline(['workflows', 'update', 'wf_1', '-f', file, '--if-match', '3'], undefined, {
        workflowId: 'wf_1',
        name: 'etl',
        version: 4,
        scheduleState: null,
      });
      expect(updated.code, updated.stderr).toBe(EXIT.ok);
      expect(updated.stdout).toBe('updated workflow wf_1 (etl) to version 4, next run -\n');
      const [request] = updated.requests;
      expect([request?.method, request?.url, request?.headers.get('if-match')]).toEqual(['POST', 'http://127.0.0.1:9/v1/workflows/wf_1/versions', '3']);
      expect(request?.body).toEqual({ name: 'etl', steps: [{ id: 'a', target: { kind: 'http', url: 'https://example.com/a' } }] });
      const missing = await offline(['workflows', 'update', 'wf_1']);
      expect(missing).toMatchObject({ code: EXIT.usage, requests: [] });
      expect(missing.stderr).toContain("required option '-f, --file <path>' not specified");
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});

describe('the CLI watch', () => {
  it('counts as finished exactly the statuses the domain calls terminal', () => {
    expect([...FINISHED_RUN_STATUSES].sort()).toEqual(RUN_STATUSES.filter(isTerminal).sort());
  });

  it('polls until the deadline itself: a job done at --timeout is reported done, not timed out', async () => {
    const polls: number[] = [];
    server = createServer((request, response) => {
      request.resume();
      polls.push(Date.now());
      // ACTIVE at the first two polls (0 s and 1 s), COMPLETED from the third (2 s, the deadline).
      const status = polls.length >= 3 ? 'COMPLETED' : 'ACTIVE';
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ jobId: 'job_1', status, recentRuns: [] }));
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const started = Date.now();
    const { code, stderr } = await cli(url, 'watch', 'job_1', '--interval', '1', '--until-done', '--timeout', '2');
    expect(code, stderr).toBe(EXIT.ok);
    expect(polls).toHaveLength(3);
    expect(polls[2]! - started).toBeLessThan(3_500);
  });
});

describe('the CLI trigger', () => {
  it('sends any JSON or YAML value of --payload-file as the payload, as --payload does', async () => {
    const bodies: unknown[] = [];
    server = createServer((request, response) => {
      let text = '';
      request.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      request.on('end', () => {
        bodies.push(JSON.parse(text));
        response.writeHead(202, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ run: { runId: 'job_1.r.1', status: 'QUEUED' } }));
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const directory = await mkdtemp(path.join(tmpdir(), 'cli-payload-'));
    try {
      const values: [string, unknown][] = [
        ['[1, 2, 3]', [1, 2, 3]],
        ['- a\n- b\n', ['a', 'b']],
        ['"text"', 'text'],
        ['42', 42],
        ['{"kept": true}', { kept: true }],
      ];
      for (const [index, [text, value]] of values.entries()) {
        const file = path.join(directory, `payload-${index}.yaml`);
        await writeFile(file, text);
        const { code, stderr } = await cli(url, 'jobs', 'trigger', 'job_1', '--payload-file', file);
        expect(code, stderr).toBe(EXIT.ok);
        expect(bodies.at(-1)).toEqual({ payload: value });
      }
      expect((await cli(url, 'jobs', 'trigger', 'job_1', '--payload', '[1,2,3]')).code).toBe(EXIT.ok);
      expect(bodies.at(-1)).toEqual({ payload: [1, 2, 3] });
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});

describe('the CLI help', () => {
  async function help(...args: string[]): Promise<string> {
    let stdout = '';
    await runCli([...args, '--help'], {
      stdout: (text) => (stdout += text),
      stderr: (text) => (stdout += text),
      env: { SCHEDULER_URL: 'http://127.0.0.1:9', SCHEDULER_API_KEY: 'key' },
      readStdin: () => Promise.resolve(''),
    });
    return stdout;
  }

  it('shows the default of watch --interval once', async () => {
    // Before: "seconds between polls (default 2) (default: 2)".
    const text = await help('watch');
    expect(text).toMatch(/--interval <seconds>\s+seconds between polls \(default: 2\)\n/);
    expect(text.match(/default:? 2/g)).toHaveLength(1);
  });

  it('says what SCHEDULER_URL is (the base URL, with or without /v1) and that exit 4 is also no key', async () => {
    const text = await help();
    expect(text).toContain("SCHEDULER_URL, the API's base URL (such as http://localhost:3000, with or without\n/v1)");
    expect(text).toMatch(/--url <url>\s+the API's base URL,\s+such\s+as\s+http:\/\/localhost:3000,\s+with\s+or\s+without\s+\/v1/);
    expect(text).toContain('4 authentication (no API key, or a key refused)');
  });

  it('says dead runs are chosen by when they ended, as the API filters them', async () => {
    for (const command of [
      ['dead', 'list'],
      ['dead', 'replay'],
    ]) {
      const text = await help(...command);
      expect(text, command.join(' ')).toMatch(/--from <time>\s+.*ended at or after/);
      expect(text, command.join(' ')).toMatch(/--to <time>\s+.*ended at or before/);
      expect(text, command.join(' ')).not.toContain('scheduled');
    }
  });
});
