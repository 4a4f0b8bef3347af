// Bad input gets a 400 problem naming each failing field, and changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scheduler } from './harness';
import { jobBody, startScheduler } from './harness';
import { MAX_BODY_BYTES } from '../../lambdas/api/http';

/** A `from` a month after its `to`. */
const LATER_FROM = 'from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z';

describe('bad input', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
  });
  afterAll(async () => scheduler.stop());

  const bodies: [string, unknown, string[]][] = [
    ['an unknown schedule kind', jobBody('https://example.com', { schedule: { kind: 'sometimes' } }), ['schedule.kind']],
    ['a negative delay', jobBody('https://example.com', { schedule: { kind: 'delay', seconds: -5 } }), ['schedule.seconds']],
    [
      'a cron that never fires',
      jobBody('https://example.com', { schedule: { kind: 'cron', expression: '0 0 30 2 *', timezone: 'UTC' } }),
      ['schedule.expression'],
    ],
    [
      'an unknown zone',
      jobBody('https://example.com', { schedule: { kind: 'cron', expression: '0 9 * * *', timezone: 'Nowhere/City' } }),
      ['schedule.timezone'],
    ],
    [
      'a cron whose endAt has passed',
      jobBody('https://example.com', { schedule: { kind: 'cron', expression: '0 9 * * *', timezone: 'UTC', endAt: '2020-01-01T00:00:00Z' } }),
      ['schedule.endAt'],
    ],
    [
      'a cron with a hashed minute',
      jobBody('https://example.com', { schedule: { kind: 'cron', expression: 'H 9 * * *', timezone: 'UTC' } }),
      ['schedule.expression'],
    ],
    ['a non-http target URL', jobBody('ftp://example.com/x'), ['target.url']],
    ['an unknown field', { ...jobBody('https://example.com'), colour: 'blue' }, ['colour']],
    ['a missing type (a name may be left out)', { schedule: { kind: 'now' }, target: { kind: 'http', url: 'https://example.com' } }, ['type']],
    ['a timeout over the limit', jobBody('https://example.com', { timeoutSeconds: 100_000 }), ['timeoutSeconds']],
    ['a JSON array', [1, 2, 3], ['(body)']],
  ];

  it.each(bodies)('refuses %s with the failing field paths', async (_name, body, paths) => {
    const response = await scheduler.api('POST', '/v1/jobs', body);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ status: 400, title: 'Invalid request' });
    expect([...new Set(response.body.errors.map((e: { path: string }) => e.path))].sort()).toEqual([...paths].sort());
  });

  it('refuses malformed JSON, a wrong content type and an empty body', async () => {
    expect((await scheduler.api('POST', '/v1/jobs', '{"name": ')).status).toBe(400);
    expect((await scheduler.api('POST', '/v1/jobs', 'name=x', { 'content-type': 'application/x-www-form-urlencoded' })).status).toBe(415);
    expect((await scheduler.api('POST', '/v1/jobs', '')).status).toBe(400);
  });

  it('refuses bad query parameters and cursors', async () => {
    expect((await scheduler.api('GET', '/v1/jobs?limit=0')).status).toBe(400);
    expect((await scheduler.api('GET', '/v1/jobs?status=SLEEPING')).status).toBe(400);
    expect((await scheduler.api('GET', '/v1/jobs?cursor=bm90LWEtY3Vyc29y')).status).toBe(400);
  });

  const hostile: [string, string, string, unknown, Record<string, string>, string[]][] = [
    ['a malformed job id', 'GET', '/v1/jobs/job%20x', undefined, {}, ['path.jobId']],
    ['a job id over 128 characters', 'POST', `/v1/jobs/${'j'.repeat(129)}/pause`, undefined, {}, ['path.jobId']],
    ['a malformed run id', 'POST', '/v1/runs/run$1/cancel', undefined, {}, ['path.runId']],
    ['a query parameter a route does not take', 'GET', '/v1/runs/job_x.1.1?verbose=1', undefined, {}, ['verbose']],
    ['a limit spelled as hex', 'GET', '/v1/jobs?limit=0x10', undefined, {}, ['limit']],
    ['a limit in exponent form', 'GET', '/v1/dead-runs?limit=1e2', undefined, {}, ['limit']],
    // Digits only, as the OpenAPI document's integer says: a number coerced from text took these.
    ['a workflow version spelled as hex', 'GET', '/v1/workflows/wf_x?version=0x10', undefined, {}, ['version']],
    ['a workflow version in exponent form', 'GET', '/v1/workflows/wf_x?version=1e3', undefined, {}, ['version']],
    ['a workflow version with blanks', 'GET', '/v1/workflows/wf_x?version=%202%20', undefined, {}, ['version']],
    [
      'a retry delay the store cannot hold',
      'POST',
      '/v1/jobs',
      { name: 'd', type: 't', schedule: { kind: 'now' }, target: { kind: 'http', url: 'https://example.com' }, retryPolicy: { initialDelaySeconds: 1e-200 } },
      {},
      ['retryPolicy.initialDelaySeconds'],
    ],
    ['a cursor that is not base64url', 'GET', '/v1/jobs?cursor=%7B%22pk%22%3A1%7D', undefined, {}, ['cursor']],
    ['a health window of 0 minutes', 'GET', '/v1/health?minutes=0', undefined, {}, ['minutes']],
    // DynamoDB refuses a key condition `BETWEEN a AND b` with a > b (a 500); the emulator accepts it.
    ["a tenant's runs from after to", 'GET', `/v1/runs?${LATER_FROM}`, undefined, {}, ['from']],
    ["a job's runs from after to", 'GET', `/v1/jobs/job_x/runs?${LATER_FROM}`, undefined, {}, ['from']],
    ['dead runs from after to', 'GET', `/v1/dead-runs?${LATER_FROM}`, undefined, {}, ['from']],
    ['a bulk replay from after to', 'POST', '/v1/dead-runs/replay', { from: '2026-02-01T00:00:00Z', to: '2026-01-01T00:00:00Z' }, {}, ['from']],
    ['audit entries from after to', 'GET', `/v1/audit?${LATER_FROM}`, undefined, {}, ['from']],
    // Compared as instants, not as text: 23:45-02:00 on 31 December is 01:45Z on 1 January.
    ['runs from after to in another offset', 'GET', '/v1/runs?from=2025-12-31T23:45:00-02:00&to=2026-01-01T00:00:00Z', undefined, {}, ['from']],
    ['a body on a route that takes none', 'POST', '/v1/jobs/job_x/resume', { force: true }, {}, ['(body)']],
    ['an unknown field of a pause', 'POST', '/v1/jobs/job_x/pause', { force: true }, {}, ['force']],
    [
      'a __proto__ key in the payload',
      'POST',
      '/v1/jobs',
      '{"name":"p","type":"t","schedule":{"kind":"now"},"target":{"kind":"http","url":"https://example.com"},"payload":{"__proto__":{"admin":true}}}',
      {},
      ['payload.__proto__'],
    ],
    ['a constructor key in a trigger payload', 'POST', '/v1/jobs/job_x/trigger', { payload: { constructor: { prototype: 1 } } }, {}, ['payload.constructor']],
    [
      'JSON nested 40 levels deep',
      'POST',
      '/v1/schedules/preview',
      `{"schedule":{"kind":"now"},"from":${'['.repeat(40)}${']'.repeat(40)}}`,
      {},
      ['from.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0'],
    ],
    [
      'a preview from year 0001',
      'POST',
      '/v1/schedules/preview',
      { schedule: { kind: 'cron', expression: '0 9 * * *', timezone: 'UTC' }, from: '0001-01-01T00:00:00Z' },
      {},
      ['from'],
    ],
    [
      'a preview of a cron whose window closed before from',
      'POST',
      '/v1/schedules/preview',
      { schedule: { kind: 'cron', expression: '0 9 * * *', timezone: 'UTC', endAt: '2026-01-01T00:00:00Z' }, from: '2026-02-01T00:00:00Z' },
      {},
      ['schedule.endAt'],
    ],
    [
      'a target header with CR LF',
      'POST',
      '/v1/jobs',
      jobBody('https://example.com', { target: { kind: 'http', url: 'https://example.com', headers: { 'X-A': 'a\r\nHost: evil' } } }),
      {},
      ['target.headers.X-A'],
    ],
    [
      'a target header given twice',
      'POST',
      '/v1/jobs',
      jobBody('https://example.com', { target: { kind: 'http', url: 'https://example.com', headers: { 'X-A': 'first-of-two', 'x-a': 'second-of-two' } } }),
      {},
      ['target.headers.x-a'],
    ],
    ['credentials in a target URL', 'POST', '/v1/jobs', jobBody('https://user:secret@example.com/'), {}, ['target.url']],
    [
      'a Lambda function ARN over 170 characters',
      'POST',
      '/v1/jobs',
      jobBody('https://example.com', { target: { kind: 'lambda', functionArn: `arn:aws:lambda:us-east-1:123456789012:function:${'f'.repeat(200)}` } }),
      {},
      ['target.functionArn'],
    ],
    ['an unknown field in a PATCH', 'PATCH', '/v1/jobs/job_x', { colour: 'blue' }, {}, ['colour']],
    ['an Idempotency-Key with a space', 'POST', '/v1/jobs', jobBody('https://example.com'), { 'idempotency-key': 'a b' }, ['headers.Idempotency-Key']],
    ['an If-Match that is not a version', 'PATCH', '/v1/jobs/job_x', { priority: 'high' }, { 'if-match': 'abc' }, ['headers.If-Match']],
  ];

  it.each(hostile)('refuses %s with a 400 naming the field', async (_name, method, path, body, headers, paths) => {
    const response = await scheduler.api(method, path, body, headers);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ status: 400, title: 'Invalid request' });
    expect(response.body.errors.map((e: { path: string }) => e.path)).toEqual(paths);
  });

  it('refuses an oversized body before parsing it with a 413 problem', async () => {
    const huge = `{"name":"${'x'.repeat(MAX_BODY_BYTES)}"`; // not even valid JSON: size decides first
    const response = await fetch(`${scheduler.runtime.url}/v1/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${scheduler.apiKey}`, 'content-type': 'application/json' },
      body: huge,
    });
    expect(response.status).toBe(413);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
  });

  it('has written nothing and sent nothing after all of that', async () => {
    // The API key issued by the harness (its lookup record and its tenant's record of it) is all
    // the jobs table holds.
    expect(await scheduler.countItems('jobs')).toBe(2);
    expect(await scheduler.countItems('runs')).toBe(0);
    expect(await scheduler.queueDepth()).toBe(0);
  });

  it('answers an unknown route with 404 and a wrong method with 405, as problems', async () => {
    const missing = await scheduler.api('GET', '/v1/nothing-here');
    expect(missing.status).toBe(404);
    const wrongMethod = await scheduler.api('DELETE', '/v1/health');
    expect(wrongMethod.status).toBe(405);
  });

  it("answers a path of the local runtime's own that it does not serve with 404 naming what it serves, not 401", async () => {
    for (const path of ['/_local/echoes', '/_local/', '/_local/echo/x']) {
      const response = await fetch(`${scheduler.runtime.url}${path}`);
      expect(response.status, path).toBe(404);
      expect(response.headers.get('content-type')).toBe('application/problem+json');
      expect(((await response.json()) as { detail: string }).detail).toContain('/_local/echo');
    }
    const echo = await fetch(`${scheduler.runtime.url}/_local/echo?from=test`, { method: 'POST', body: '{}' });
    expect(echo.status).toBe(200);
  });
});
