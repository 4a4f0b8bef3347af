// The CLI's answers to what the local runtime rarely says (a 429 past the retry budget, a 500, a
// 403), from a small local HTTP server; and its list of finished run statuses against the domain's.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EXIT } from '../../clients/cli/exit-codes';
import { FINISHED_RUN_STATUSES } from '../../clients/cli/output';
import { runCli } from '../../clients/cli/program';
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
