// The client's transport against a small local HTTP server that answers as told: 429 and 503 are
// retried honouring Retry-After within the attempts and time of the budget, a create keeps its
// Idempotency-Key across those retries, calls that could act twice are not repeated after a 503,
// and every refusal is a SchedulerApiError carrying the problem (a proxy's page included).
import type { IncomingHttpHeaders, Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SchedulerApiError, SchedulerClient, SchedulerConnectionError } from '../../clients/index';
import { retryAfterSeconds } from '../../clients/transport';

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly at: number;
}

type Reply = { status: number; headers?: Record<string, string>; body?: string } | 'hang-up';

let server: Server | undefined;

/** A server answering the n-th request with replies[n] (the last reply again past the end). */
async function serve(replies: readonly Reply[]): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const index = seen.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, at: Date.now() }) - 1;
      const reply = replies[Math.min(index, replies.length - 1)]!;
      if (reply === 'hang-up') {
        request.socket.destroy();
        return;
      }
      response.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
      response.end(reply.body ?? '{}');
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

afterEach(async () => {
  const closing = server;
  server = undefined;
  if (closing) {
    closing.closeAllConnections();
    await new Promise<void>((resolve) => closing.close(() => resolve()));
  }
});

const created = JSON.stringify({ job: { jobId: 'job_1' }, nextRunAt: null });
const tooMany = (retryAfter: string): Reply => ({
  status: 429,
  headers: { 'content-type': 'application/problem+json', 'retry-after': retryAfter },
  body: JSON.stringify({ type: 'urn:job-scheduler:problem:too-many-requests', title: 'Too many requests', status: 429, detail: 'Over the limit', errors: [] }),
});
const unavailable: Reply = {
  status: 503,
  headers: { 'content-type': 'application/problem+json', 'retry-after': '1' },
  body: JSON.stringify({
    type: 'urn:job-scheduler:problem:service-unavailable',
    title: 'Service unavailable',
    status: 503,
    detail: 'The store did not answer',
  }),
};
const spec = { name: 'n', type: 't', schedule: { kind: 'now' as const }, target: { kind: 'external' as const } };

describe('the client transport', () => {
  it('retries a create after a 429, waiting its Retry-After, with the same Idempotency-Key', async () => {
    const { url, seen } = await serve([tooMany('1'), { status: 201, body: created }]);
    const client = new SchedulerClient({ baseUrl: url, apiKey: 'key' });
    const answer = await client.jobs.create(spec);
    expect(answer.job.jobId).toBe('job_1');
    expect(seen).toHaveLength(2);
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(950);
    const keys = seen.map((request) => request.headers['idempotency-key']);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(seen[0]!.headers.authorization).toBe('Bearer key');
  });

  it('gives every create call a key of its own, or the one the caller names', async () => {
    const { url, seen } = await serve([{ status: 201, body: created }]);
    const client = new SchedulerClient({ baseUrl: url, apiKey: 'key' });
    await client.jobs.create(spec);
    await client.jobs.create(spec);
    await client.jobs.create(spec, { idempotencyKey: 'mine-1' });
    const keys = seen.map((request) => request.headers['idempotency-key']);
    expect(new Set(keys).size).toBe(3);
    expect(keys[2]).toBe('mine-1');
  });

  it('says when the API answered a create as a replay of an earlier one', async () => {
    const { url } = await serve([{ status: 201, headers: { 'idempotent-replayed': 'true' }, body: created }]);
    const answer = await new SchedulerClient({ baseUrl: url, apiKey: 'key' }).jobs.create(spec, { idempotencyKey: 'k' });
    expect(answer.replayed).toBe(true);
  });

  it('stops after the budget of attempts and throws the last refusal', async () => {
    const { url, seen } = await serve([tooMany('0')]);
    const client = new SchedulerClient({ baseUrl: url, apiKey: 'key', retry: { maxAttempts: 3 } });
    const error = await client.jobs.list().catch((thrown: unknown) => thrown);
    expect(seen).toHaveLength(3);
    expect(error).toBeInstanceOf(SchedulerApiError);
    expect(error).toMatchObject({ status: 429, retryAfterSeconds: 0, type: 'urn:job-scheduler:problem:too-many-requests' });
  });

  it('does not wait for a Retry-After that would end past the time budget', async () => {
    const { url, seen } = await serve([tooMany('120'), { status: 200, body: '{"items":[],"nextCursor":null}' }]);
    const client = new SchedulerClient({ baseUrl: url, apiKey: 'key', retry: { maxElapsedMs: 30_000 } });
    const started = Date.now();
    await expect(client.jobs.list()).rejects.toMatchObject({ status: 429, retryAfterSeconds: 120 });
    expect(seen).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('honours a Retry-After given as an HTTP date', () => {
    expect(retryAfterSeconds(new Date(Date.parse('2026-01-01T00:00:00Z') + 3_000).toUTCString(), Date.parse('2026-01-01T00:00:00Z'))).toBe(3);
    expect(retryAfterSeconds('Wed, 21 Oct 2015 07:28:00 GMT', Date.parse('2026-01-01T00:00:00Z'))).toBe(0);
    expect(retryAfterSeconds('soon', 0)).toBeNull();
    expect(retryAfterSeconds(null, 0)).toBeNull();
  });

  it('retries a read after a 503, but not a call that could act twice', async () => {
    const first = await serve([unavailable, { status: 200, body: '{"runId":"r1"}' }]);
    const run = await new SchedulerClient({ baseUrl: first.url, apiKey: 'key' }).runs.get('r1');
    expect(run.runId).toBe('r1');
    expect(first.seen).toHaveLength(2);
    expect(first.seen[1]!.at - first.seen[0]!.at).toBeGreaterThanOrEqual(950);

    server!.closeAllConnections();
    server!.close();
    const second = await serve([unavailable, { status: 202, body: '{"run":{"runId":"r2"}}' }]);
    const error = await new SchedulerClient({ baseUrl: second.url, apiKey: 'key' }).jobs.trigger('job_1').catch((thrown: unknown) => thrown);
    expect(second.seen).toHaveLength(1);
    expect(error).toMatchObject({ status: 503, retryAfterSeconds: 1, title: 'Service unavailable' });
  });

  it('retries a read whose connection was lost, and says so when none answers', async () => {
    const { url, seen } = await serve(['hang-up', { status: 200, body: '{"items":[],"nextCursor":null}' }]);
    const client = new SchedulerClient({ baseUrl: url, apiKey: 'key', retry: { baseDelayMs: 10 } });
    expect(await client.jobs.list()).toEqual({ items: [], nextCursor: null });
    expect(seen).toHaveLength(2);

    // Nothing listens on the port any more.
    server!.closeAllConnections();
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    server = undefined;
    const error = await new SchedulerClient({ baseUrl: url, apiKey: 'key', retry: { maxAttempts: 2, baseDelayMs: 10 } })
      .health()
      .catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(SchedulerConnectionError);
    expect((error as Error).message).toContain('GET /v1/health');
  });

  it('carries the problem: its standard members and its extensions', async () => {
    const problem = {
      type: 'urn:job-scheduler:problem:invalid-request',
      title: 'Invalid request',
      status: 400,
      detail: 'Invalid job',
      errors: [{ path: 'schedule.expression', message: 'is not a cron expression' }],
      errorsOmitted: 2,
    };
    const { url } = await serve([{ status: 400, headers: { 'content-type': 'application/problem+json' }, body: JSON.stringify(problem) }]);
    const error = (await new SchedulerClient({ baseUrl: url, apiKey: 'key' }).jobs.create(spec).catch((thrown: unknown) => thrown)) as SchedulerApiError;
    expect(error).toBeInstanceOf(SchedulerApiError);
    expect(error).toMatchObject({
      name: 'SchedulerApiError',
      status: 400,
      type: problem.type,
      title: 'Invalid request',
      detail: 'Invalid job',
      request: 'POST /v1/jobs',
    });
    expect(error.problem).toEqual(problem);
    expect(error.errors).toEqual(problem.errors);
    expect(error.extensions).toEqual({ errors: problem.errors, errorsOmitted: 2 });
    expect(error.message).toBe('400 Invalid request: Invalid job (POST /v1/jobs)');
  });

  it("makes a problem of a proxy's page that is not problem+json", async () => {
    const { url } = await serve([{ status: 502, headers: { 'content-type': 'text/html' }, body: '<html>Bad gateway</html>' }]);
    const error = (await new SchedulerClient({ baseUrl: url, apiKey: 'key' }).jobs.get('job_1').catch((thrown: unknown) => thrown)) as SchedulerApiError;
    expect(error).toBeInstanceOf(SchedulerApiError);
    expect(error.problem).toEqual({ type: 'about:blank', title: 'Bad Gateway', status: 502, detail: '<html>Bad gateway</html>' });
  });

  it('sends ids as one path segment and drops absent query parameters', async () => {
    const { url, seen } = await serve([{ status: 200, body: '{"items":[],"nextCursor":null}' }]);
    const client = new SchedulerClient({ baseUrl: `${url}/`, apiKey: 'key' });
    await client.runs.list('a/b?c', { limit: 5 });
    await client.deadRuns.list({ jobId: undefined, from: '2026-01-01T00:00:00Z' });
    expect(seen.map((request) => request.url)).toEqual(['/v1/jobs/a%2Fb%3Fc/runs?limit=5', '/v1/dead-runs?from=2026-01-01T00%3A00%3A00Z']);
  });

  it('iterates every page of a list, following its cursors', async () => {
    const { url, seen } = await serve([
      { status: 200, body: JSON.stringify({ items: [{ jobId: 'a' }, { jobId: 'b' }], nextCursor: 'c1' }) },
      { status: 200, body: JSON.stringify({ items: [{ jobId: 'c' }], nextCursor: 'c2' }) },
      { status: 200, body: JSON.stringify({ items: [], nextCursor: null }) },
    ]);
    const ids: string[] = [];
    for await (const job of new SchedulerClient({ baseUrl: url, apiKey: 'key' }).jobs.iterate({ status: 'ACTIVE', limit: 2 })) ids.push(job.jobId);
    expect(ids).toEqual(['a', 'b', 'c']);
    expect(seen.map((request) => request.url)).toEqual([
      '/v1/jobs?status=ACTIVE&limit=2',
      '/v1/jobs?status=ACTIVE&limit=2&cursor=c1',
      '/v1/jobs?status=ACTIVE&limit=2&cursor=c2',
    ]);
  });
});

describe('trace context', () => {
  it('sends the traceparent given to the calls that make runs, and none otherwise', async () => {
    const { url, seen } = await serve([
      { status: 201, body: created },
      { status: 202, body: JSON.stringify({ run: {} }) },
    ]);
    const client = new SchedulerClient({ baseUrl: url, apiKey: 'key_test_0123456789' });
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const spec = {
      name: 'traced',
      type: 't',
      schedule: { kind: 'now' as const },
      // The header shapes the client accepts: text, or a secret the deployment lists.
      target: {
        kind: 'http' as const,
        url: 'https://example.com',
        headers: { 'X-Text': 'v', Authorization: { secretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:t-AbC123' } },
      },
    };
    await client.jobs.create(spec, { traceparent });
    await client.jobs.trigger('job_1', {}, { traceparent });
    await client.jobs.create(spec);
    expect(seen.map((request) => request.headers.traceparent)).toEqual([traceparent, traceparent, undefined]);
  });
});
