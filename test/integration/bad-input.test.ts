// Bad input gets a 400 problem naming each failing field, and changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scheduler } from './harness';
import { jobBody, startScheduler } from './harness';

describe('bad input', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
  });
  afterAll(async () => scheduler.stop());

  const bodies: [string, unknown, string[]][] = [
    ['an unknown schedule kind', jobBody('https://example.com', { schedule: { kind: 'sometimes' } }), ['schedule.kind']],
    ['a negative delay', jobBody('https://example.com', { schedule: { kind: 'delay', seconds: -5 } }), ['schedule.seconds']],
    ['a cron that never fires', jobBody('https://example.com', { schedule: { kind: 'cron', expression: '0 0 30 2 *', timezone: 'UTC' } }), ['schedule.expression']],
    ['an unknown zone', jobBody('https://example.com', { schedule: { kind: 'cron', expression: '0 9 * * *', timezone: 'Nowhere/City' } }), ['schedule.timezone']],
    ['a non-http target URL', jobBody('ftp://example.com/x'), ['target.url']],
    ['an unknown field', { ...jobBody('https://example.com'), colour: 'blue' }, ['colour']],
    ['a missing name and type', { schedule: { kind: 'now' }, target: { kind: 'http', url: 'https://example.com' } }, ['name', 'type']],
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
});
