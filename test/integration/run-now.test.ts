// The run-now path end to end over HTTP: the API writes the job and its run and sends the run id;
// the worker (fed by the local runtime's poller) leases it, calls a real HTTP target and records
// the outcome.
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobKey, jobNameEntryKey } from '../../lambdas/store/keys';
import type { Scheduler, TargetServer } from './harness';
import { eventually, jobBody, startScheduler, startTarget } from './harness';

describe('a job that runs now', () => {
  let scheduler: Scheduler;
  let target: TargetServer;

  beforeAll(async () => {
    scheduler = await startScheduler();
    target = await startTarget();
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  it('is created, runs against its target and ends SUCCEEDED', async () => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'send-invoice', payload: { invoice: 42 } }));
    expect(created.status).toBe(201);
    const { job, nextRunAt } = created.body;
    // Its one occurrence is queued by the create: nothing is left to schedule (decision 0029).
    expect(job).toMatchObject({ name: 'send-invoice', tenantId: scheduler.tenantId, status: 'COMPLETED', version: 1, nextRunId: expect.any(String) });
    expect(nextRunAt).toBe(job.nextRunAt);

    const runs = await eventually(
      () => scheduler.api('GET', `/v1/jobs/${job.jobId}/runs`),
      (response) => response.body.items?.[0]?.status === 'SUCCEEDED',
    );
    const run = runs.body.items[0];
    expect(run).toMatchObject({
      jobId: job.jobId,
      tenantId: scheduler.tenantId,
      attempt: 1,
      trigger: 'schedule',
      scheduledFor: nextRunAt,
      idempotencyKey: `${job.jobId}#${nextRunAt}`,
      error: null,
      version: 1,
    });
    expect(Date.parse(run.startedAt)).toBeGreaterThanOrEqual(Date.parse(run.scheduledFor));
    expect(Date.parse(run.finishedAt)).toBeGreaterThanOrEqual(Date.parse(run.startedAt));

    expect(target.calls).toHaveLength(1);
    const call = target.calls[0]!;
    expect(call.method).toBe('POST');
    expect(JSON.parse(call.body)).toEqual({ invoice: 42 });
    expect(call.headers['content-type']).toBe('application/json');
    expect(call.headers['idempotency-key']).toBe(`${job.jobId}#${nextRunAt}`);
    expect(call.headers['x-job-id']).toBe(job.jobId);
    expect(call.headers['x-run-id']).toBe(run.runId);
    expect(call.headers['x-attempt']).toBe('1');

    const single = await scheduler.api('GET', `/v1/runs/${run.runId}`);
    expect(single.status).toBe(200);
    expect(single.body).toEqual(run);

    const detail = await eventually(
      () => scheduler.api('GET', `/v1/jobs/${job.jobId}`),
      (response) => response.body.status === 'COMPLETED',
    );
    expect(detail.body.recentRuns.map((r: { runId: string }) => r.runId)).toEqual([run.runId]);
    // It still names its one occurrence (a one-shot job of another kind clears it when the run starts).
    expect(detail.body.nextRunAt).toBe(nextRunAt);

    const listed = await scheduler.api('GET', '/v1/jobs');
    expect(listed.body.items.map((j: { jobId: string }) => j.jobId)).toContain(job.jobId);
  });

  it('records the target status when the target answers 500 and no retry is allowed', async () => {
    const failing = await startTarget(() => ({ status: 500 }));
    try {
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(failing.url, { retryPolicy: { maxAttempts: 1 } }));
      const run = await eventually(
        async () => (await scheduler.api('GET', `/v1/jobs/${created.body.job.jobId}/runs`)).body.items[0],
        (r) => r?.status === 'DEAD',
      );
      expect(run.error).toEqual({ code: 'HTTP_500', message: 'target answered 500', retryable: true });
      expect(run.reason).toBe('the retry budget of 1 attempts is spent');
      expect(failing.calls).toHaveLength(1);
    } finally {
      await failing.stop();
    }
  });

  it('times a slow target out at its timeout', async () => {
    const slow = await startTarget(() => new Promise((resolve) => setTimeout(() => resolve({ status: 200 }), 3_000)));
    try {
      const body = jobBody(slow.url, { target: { kind: 'http', url: slow.url, timeoutSeconds: 1 }, retryPolicy: { maxAttempts: 1 } });
      const created = await scheduler.api('POST', '/v1/jobs', body);
      const run = await eventually(
        async () => (await scheduler.api('GET', `/v1/jobs/${created.body.job.jobId}/runs`)).body.items[0],
        (r) => r?.status === 'DEAD',
      );
      expect(run.error).toMatchObject({ code: 'TIMEOUT', retryable: true });
    } finally {
      await slow.stop();
    }
  });

  it('paginates the job list with a cursor', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: `page-${i}` }))).status).toBe(201);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { items: { name: string }[]; nextCursor: string | null } } = await scheduler.api(
        'GET',
        `/v1/jobs?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      seen.push(...page.body.items.map((j) => j.name));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen.filter((name) => name.startsWith('page-'))).toEqual(['page-2', 'page-1', 'page-0']);
  });

  it('refuses a second job with the same name', async () => {
    const body = jobBody(target.url, { name: 'unique-name' });
    expect((await scheduler.api('POST', '/v1/jobs', body)).status).toBe(201);
    const again = await scheduler.api('POST', '/v1/jobs', body);
    expect(again.status).toBe(409);
    expect(again.body.errors).toEqual([{ path: 'name', message: 'is already used by another job' }]);
  });

  it('takes a job without a name: named by its id, with no name guard written; it runs, is found, patched and deleted like any other', async () => {
    const { name: _name, ...unnamed } = jobBody(target.url);
    const [first, second] = await Promise.all([scheduler.api('POST', '/v1/jobs', unnamed), scheduler.api('POST', '/v1/jobs', unnamed)]);
    expect([first.status, second.status]).toEqual([201, 201]);
    const job = first.body.job;
    expect(job.name).toBe(job.jobId);
    expect(second.body.job.name).toBe(second.body.job.jobId);
    // No name guard: the job item, its finding entries and its run are all it wrote.
    const guard = await scheduler.clients.dynamo.send(
      new GetCommand({ TableName: scheduler.config.jobsTable, Key: jobNameEntryKey(scheduler.tenantId, job.jobId) }),
    );
    expect(guard.Item).toBeUndefined();
    const named = jobBody(target.url);
    const withName = (await scheduler.api('POST', '/v1/jobs', named)).body.job;
    expect(
      (await scheduler.clients.dynamo.send(new GetCommand({ TableName: scheduler.config.jobsTable, Key: jobNameEntryKey(scheduler.tenantId, withName.name) })))
        .Item,
    ).toMatchObject({
      jobId: withName.jobId,
    });
    await eventually(
      () => scheduler.api('GET', `/v1/jobs/${job.jobId}/runs`),
      (response) => response.body.items?.[0]?.status === 'SUCCEEDED',
    );
    expect((await scheduler.api('GET', `/v1/jobs?name=${job.jobId}`)).body.items.map((found: { jobId: string }) => found.jobId)).toEqual([job.jobId]);
    // Its item keeps no name, so it has no entry in the byName index (decision 0157): found by its
    // id as its name (read by key, with the other filters), not by a name prefix.
    const item = (await scheduler.clients.dynamo.send(new GetCommand({ TableName: scheduler.config.jobsTable, Key: jobKey(job.jobId) }))).Item;
    expect(item).toBeDefined();
    expect(item).not.toHaveProperty('name');
    expect((await scheduler.clients.dynamo.send(new GetCommand({ TableName: scheduler.config.jobsTable, Key: jobKey(withName.jobId) }))).Item).toMatchObject({
      name: withName.name,
    });
    expect((await scheduler.api('GET', `/v1/jobs?name=${job.jobId}&status=PAUSED`)).body.items).toEqual([]);
    const prefixed = (await scheduler.api('GET', `/v1/jobs?namePrefix=job_&limit=100`)).body.items as { jobId: string }[];
    expect(prefixed.map((found) => found.jobId)).not.toContain(job.jobId);
    expect((await scheduler.api('GET', `/v1/jobs?name=${job.jobId}&cursor=not-a-cursor`)).status).toBe(400);

    // A name of a job id's form is refused, whoever's id it is (it would pass for an unnamed job), and writes nothing.
    const before = await scheduler.countJobAndRunItems();
    const refused = await scheduler.api('POST', '/v1/jobs', { ...unnamed, name: second.body.job.jobId });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([{ path: 'name', message: 'has the form of a job id, which names a job created without a name' }]);
    expect(await scheduler.countJobAndRunItems()).toEqual(before);

    // A PATCH may repeat its name (its id) but not change it; other fields change as for any job.
    const patched = await scheduler.api('PATCH', `/v1/jobs/${job.jobId}`, { name: job.jobId, payload: { hello: 'again' } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({ name: job.jobId, payload: { hello: 'again' } });
    const renamed = await scheduler.api('PATCH', `/v1/jobs/${job.jobId}`, { name: 'a-name-now' });
    expect(renamed.status).toBe(400);
    expect((await scheduler.api('DELETE', `/v1/jobs/${job.jobId}`)).status).toBe(200);
    expect((await scheduler.api('GET', `/v1/jobs/${job.jobId}`)).body.status).toBe('CANCELLED');
  });

  it('returns the first result for a repeated Idempotency-Key and 409 for another body under it', async () => {
    const body = jobBody(target.url);
    const headers = { 'idempotency-key': 'create-once-1' };
    const first = await scheduler.api('POST', '/v1/jobs', body, headers);
    const second = await scheduler.api('POST', '/v1/jobs', body, headers);
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body.job.jobId).toBe(first.body.job.jobId);
    const other = await scheduler.api('POST', '/v1/jobs', { ...body, name: 'another' }, headers);
    expect(other.status).toBe(409);
  });
});

describe('authentication', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
  });
  afterAll(async () => scheduler.stop());

  it('answers 401 without a key or with an unknown key, and 404 for another tenant', async () => {
    // No Authorization header: refused at the gateway, before the authorizer (as API Gateway does).
    const anonymous = await fetch(`${scheduler.runtime.url}/v1/jobs`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ message: 'Unauthorized' });
    // An unknown key: the authorizer marks it, the API answers the contract's problem.
    const unknown = await scheduler.api('GET', '/v1/jobs', undefined, { authorization: 'Bearer not-a-real-key-0000000' });
    expect(unknown.status).toBe(401);
    expect(unknown.body).toMatchObject({ status: 401, title: 'Unauthorized', detail: 'Unknown or revoked API key' });

    const created = await scheduler.api('POST', '/v1/jobs', jobBody('http://127.0.0.1:9/unused'));
    const otherKey = 'other-tenant-key-0123456789';
    await scheduler.deps.apiKeys.issue(otherKey, 'other-tenant', Date.now());
    const asOther = { authorization: `Bearer ${otherKey}` };
    expect((await scheduler.api('GET', `/v1/jobs/${created.body.job.jobId}`, undefined, asOther)).status).toBe(404);
    expect((await scheduler.api('GET', `/v1/runs/${created.body.job.nextRunId}`, undefined, asOther)).status).toBe(404);
    expect((await scheduler.api('GET', '/v1/jobs', undefined, asOther)).body.items).toEqual([]);
  });
});
