// Finding jobs and runs (issue 17, item 4): labels, the jobs listing by name, prefix, label, status
// and type, the runs of a job or of the tenant by status and time; each filter read from an index
// (decision 0095), so a page finds its matches within a read budget smaller than the tenant's jobs.
// And target header values are write-only (item 5). And the public contract (item 1).
import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobKey, jobLabelKey, runKey, workflowKey, workflowListKeys } from '../../lambdas/store/keys';
import { backfillFindingKeys } from '../../scripts/ops/backfill-finding-keys';
import type { Scheduler } from './harness';
import { jobBody, startScheduler } from './harness';

const TARGET = 'http://127.0.0.1:9/hook';
const HOUR = 3600_000;

interface Listing {
  status: number;
  body: { items: { jobId: string; runId?: string; name: string; status: string; scheduledFor?: string }[]; nextCursor: string | null };
}

describe('finding jobs', () => {
  let scheduler: Scheduler;
  const ids: Record<string, string> = {};

  async function all(path: string): Promise<string[]> {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const separator = path.includes('?') ? '&' : '?';
      const page: Listing = await scheduler.api('GET', `${path}${cursor ? `${separator}cursor=${cursor}` : ''}`);
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      seen.push(...page.body.items.map((item) => item.runId ?? item.name));
      cursor = page.body.nextCursor;
      pages += 1;
    } while (cursor && pages < 20);
    return seen;
  }

  beforeAll(async () => {
    scheduler = await startScheduler();
    // Oldest first; listings are newest first.
    const jobs: [string, Record<string, unknown>][] = [
      ['billing-daily', { type: 'reports', labels: { team: 'billing', env: 'prod' } }],
      ['billing-weekly', { type: 'reports', labels: { team: 'billing', env: 'dev' } }],
      ['search-reindex', { type: 'index', labels: { team: 'search', env: 'prod' } }],
      ['billing-eu', { type: 'index', labels: { team: 'billing', env: 'prod', region: 'eu' } }],
      ['plain-1', { type: 'misc' }],
      ['plain-2', { type: 'misc' }],
      ['plain-3', { type: 'misc' }],
      ['plain-4', { type: 'misc' }],
    ];
    for (const [name, overrides] of jobs) {
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(TARGET, { name, schedule: { kind: 'delay', seconds: 3600 }, ...overrides }));
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      ids[name] = created.body.job.jobId;
    }
    expect((await scheduler.api('POST', `/v1/jobs/${ids['billing-weekly']}/pause`)).status).toBe(200);
  });
  afterAll(() => scheduler.stop());

  it('stores labels and shows them', async () => {
    const job = await scheduler.api('GET', `/v1/jobs/${ids['billing-eu']}`);
    expect(job.body.labels).toEqual({ team: 'billing', env: 'prod', region: 'eu' });
    expect((await scheduler.api('GET', `/v1/jobs/${ids['plain-1']}`)).body.labels).toEqual({});
  });

  it('refuses bad labels: too many, bad keys or values, a malformed filter; and writes nothing', async () => {
    const before = await scheduler.countJobAndRunItems();
    const eleven = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, 'v']));
    for (const labels of [eleven, { 'bad key': 'v' }, { k: 'a,b' }, { k: 'a=b' }, { '': 'v' }, { k: 'v'.repeat(64) }, { k: 1 }]) {
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(TARGET, { labels }));
      expect(created.status, JSON.stringify(labels)).toBe(400);
      expect(created.body.errors[0].path).toMatch(/^labels/);
    }
    expect((await scheduler.api('GET', '/v1/jobs?label=team')).status).toBe(400);
    expect((await scheduler.api('GET', '/v1/jobs?label=te%20am=x')).status).toBe(400);
    expect((await scheduler.api('GET', '/v1/jobs?name=a&namePrefix=a')).status).toBe(400);
    expect(await scheduler.countJobAndRunItems()).toEqual(before);
  });

  it('lists by exact name and by name prefix (in name order)', async () => {
    expect(await all('/v1/jobs?name=billing-eu')).toEqual(['billing-eu']);
    expect(await all('/v1/jobs?name=billing')).toEqual([]);
    expect(await all('/v1/jobs?namePrefix=billing-&limit=2')).toEqual(['billing-daily', 'billing-eu', 'billing-weekly']);
    expect(await all('/v1/jobs?namePrefix=billing-&status=ACTIVE')).toEqual(['billing-daily', 'billing-eu']);
  });

  it('lists by label, repeated labels all matching, newest first', async () => {
    expect(await all('/v1/jobs?label=team=billing')).toEqual(['billing-eu', 'billing-weekly', 'billing-daily']);
    expect(await all('/v1/jobs?label=team=billing&label=env=prod&limit=1')).toEqual(['billing-eu', 'billing-daily']);
    // One key with two values: no job has both. Before, the last value alone was looked for.
    expect(await all('/v1/jobs?label=team=search&label=team=billing')).toEqual([]);
    expect(await all('/v1/jobs?label=env=prod&type=index')).toEqual(['billing-eu', 'search-reindex']);
    expect(await all('/v1/jobs?label=team=nobody')).toEqual([]);
  });

  it('lists by status and by type', async () => {
    expect(await all('/v1/jobs?status=PAUSED')).toEqual(['billing-weekly']);
    expect(await all('/v1/jobs?type=index')).toEqual(['billing-eu', 'search-reindex']);
    expect(await all('/v1/jobs?type=reports&status=ACTIVE')).toEqual(['billing-daily']);
  });

  it('reads a filter from its index: the matches are found within a read budget below the jobs before them', async () => {
    // Four unlabelled jobs are newer than every billing job; a budget of 3 entries would not reach
    // them through the tenant's listing, and does through the label's, the name's and the status's.
    type Filter = Parameters<Scheduler['deps']['jobs']['list']>[1];
    const names = async (filter: Filter) => (await scheduler.deps.jobs.list(scheduler.tenantId, filter, 10, undefined, 3)).items.map((job) => job.name);
    expect(await names({ labels: [{ key: 'team', value: 'billing' }] })).toEqual(['billing-eu', 'billing-weekly', 'billing-daily']);
    expect(await names({ namePrefix: 'billing-' })).toEqual(['billing-daily', 'billing-eu', 'billing-weekly']);
    expect(await names({ status: 'PAUSED' })).toEqual(['billing-weekly']);
    // The type has no index (decision 0186): kept from the tenant's listing, a budget's page may
    // hold none of its jobs, with a cursor that goes on to them.
    const first = await scheduler.deps.jobs.list(scheduler.tenantId, { type: 'reports' }, 10, undefined, 3);
    expect(first.items).toEqual([]);
    expect(first.nextCursor).not.toBeNull();
    const found: string[] = [];
    let cursor: string | null = first.nextCursor;
    let pages = 1;
    while (cursor !== null && pages < 20) {
      const page = await scheduler.deps.jobs.list(scheduler.tenantId, { type: 'reports' }, 10, cursor, 3);
      found.push(...page.items.map((job) => job.name));
      cursor = page.nextCursor;
      pages += 1;
    }
    expect(found).toEqual(['billing-weekly', 'billing-daily']);
    expect(cursor).toBeNull();
  });

  it('follows a PATCH of labels and a status change', async () => {
    const patched = await scheduler.api('PATCH', `/v1/jobs/${ids['search-reindex']}`, { labels: { team: 'billing' } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(await all('/v1/jobs?label=team=search')).toEqual([]);
    expect(await all('/v1/jobs?label=env=prod')).toEqual(['billing-eu', 'billing-daily']);
    expect(await all('/v1/jobs?label=team=billing')).toEqual(['billing-eu', 'search-reindex', 'billing-weekly', 'billing-daily']);
    expect((await scheduler.api('DELETE', `/v1/jobs/${ids['billing-daily']}`)).status).toBe(200);
    expect(await all('/v1/jobs?label=team=billing&status=ACTIVE')).toEqual(['billing-eu', 'search-reindex']);
    expect(await all('/v1/jobs?status=CANCELLED')).toEqual(['billing-daily']);
  });

  it('lists COMPLETED jobs from the tenant index: they have no status key, and one made ACTIVE again gets it back (decision 0166)', async () => {
    const statusKeyOf = async (jobId: string): Promise<unknown> =>
      (await scheduler.clients.dynamo.send(new GetCommand({ TableName: scheduler.config.jobsTable, Key: jobKey(jobId), ConsistentRead: true }))).Item
        ?.tenantStatus;
    // A run-now job is COMPLETED from its create.
    for (const name of ['done-1', 'done-2']) {
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(TARGET, { name, type: 'oneoff' }));
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.body.job.status).toBe('COMPLETED');
      ids[name] = created.body.job.jobId;
    }
    expect(await statusKeyOf(ids['done-1']!)).toBeUndefined();
    expect(await statusKeyOf(ids['billing-eu']!)).toBe(`${scheduler.tenantId}#ACTIVE`);
    expect(await all('/v1/jobs?status=COMPLETED')).toEqual(['done-2', 'done-1']);
    expect(await all('/v1/jobs?status=COMPLETED&limit=1')).toEqual(['done-2', 'done-1']);
    expect(await all('/v1/jobs?type=oneoff&status=COMPLETED')).toEqual(['done-2', 'done-1']);
    expect(await all('/v1/jobs?label=team=billing&status=COMPLETED')).toEqual([]);
    // A new schedule makes a COMPLETED job ACTIVE again: it enters the status index.
    const patched = await scheduler.api('PATCH', `/v1/jobs/${ids['done-1']}`, { schedule: { kind: 'delay', seconds: 3600 } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.status).toBe('ACTIVE');
    expect(await statusKeyOf(ids['done-1']!)).toBe(`${scheduler.tenantId}#ACTIVE`);
    expect(await all('/v1/jobs?status=COMPLETED')).toEqual(['done-2']);
    expect(await all('/v1/jobs?status=ACTIVE')).toEqual(['done-1', 'plain-4', 'plain-3', 'plain-2', 'plain-1', 'billing-eu', 'search-reindex']);
  });
});

describe('finding runs', () => {
  let scheduler: Scheduler;
  let jobA: string;
  let jobB: string;
  const start = Date.parse('2030-01-01T00:00:00.000Z');
  const at = (hours: number): string => new Date(start + hours * HOUR).toISOString();

  beforeAll(async () => {
    scheduler = await startScheduler();
    // Two jobs of one-off runs at known instants; the later ones are cancelled.
    const make = async (name: string, hours: number): Promise<{ jobId: string; runId: string }> => {
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(TARGET, { name, schedule: { kind: 'at', at: at(hours) } }));
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      return { jobId: created.body.job.jobId, runId: created.body.job.nextRunId };
    };
    jobA = (await make('runs-a', 1)).jobId;
    jobB = (await make('runs-b', 2)).jobId;
    const c = await make('runs-c', 3);
    expect((await scheduler.api('POST', `/v1/runs/${c.runId}/cancel`)).status).toBe(200);
  });
  afterAll(() => scheduler.stop());

  async function runTimes(path: string): Promise<string[]> {
    const times: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const separator = path.includes('?') ? '&' : '?';
      const page: Listing = await scheduler.api('GET', `${path}${cursor ? `${separator}cursor=${cursor}` : ''}`);
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      times.push(...page.body.items.map((run) => run.scheduledFor ?? ''));
      cursor = page.body.nextCursor;
      pages += 1;
    } while (cursor && pages < 20);
    return times;
  }

  it('lists the tenant’s runs newest first, paged, by time range (from inclusive, to exclusive) and status', async () => {
    expect(await runTimes('/v1/runs?limit=2')).toEqual([at(3), at(2), at(1)]);
    expect(await runTimes(`/v1/runs?from=${at(2)}`)).toEqual([at(3), at(2)]);
    expect(await runTimes(`/v1/runs?to=${at(3)}`)).toEqual([at(2), at(1)]);
    expect(await runTimes(`/v1/runs?from=${encodeURIComponent('2030-01-01T03:00:00+02:00')}&to=${at(2)}`)).toEqual([at(1)]);
    expect(await runTimes('/v1/runs?status=CANCELLED')).toEqual([at(3)]);
    expect(await runTimes('/v1/runs?status=SCHEDULED&limit=1')).toEqual([at(2), at(1)]);
    expect((await scheduler.api('GET', '/v1/runs?from=yesterday')).status).toBe(400);
    expect((await scheduler.api('GET', '/v1/runs?status=DONE')).status).toBe(400);
  });

  it('lists a job’s runs by time and status; another tenant’s cursor or job is refused', async () => {
    expect(await runTimes(`/v1/jobs/${jobA}/runs`)).toEqual([at(1)]);
    expect(await runTimes(`/v1/jobs/${jobB}/runs?status=SCHEDULED&from=${at(2)}`)).toEqual([at(2)]);
    expect(await runTimes(`/v1/jobs/${jobB}/runs?to=${at(2)}`)).toEqual([]);
    const page = await scheduler.api('GET', '/v1/runs?limit=1');
    expect((await scheduler.api('GET', `/v1/jobs/${jobA}/runs?cursor=${page.body.nextCursor}`)).status).toBe(400);
  });
});

describe('target header values are write-only', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler();
  });
  afterAll(() => scheduler.stop());

  const SECRET = 'Bearer very-secret-token';

  it('never returns a header value: not from create, GET, the list, PATCH, pause or delete', async () => {
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(TARGET, {
        schedule: { kind: 'delay', seconds: 3600 },
        target: { kind: 'http', url: TARGET, headers: { Authorization: SECRET, 'X-Tenant': 'acme-tenant-header' } },
      }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const jobId: string = created.body.job.jobId;
    const responses = [
      created,
      await scheduler.api('GET', `/v1/jobs/${jobId}`),
      await scheduler.api('GET', '/v1/jobs'),
      await scheduler.api('GET', `/v1/jobs?name=${created.body.job.name}`),
      await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { timeoutSeconds: 60 }),
      await scheduler.api('POST', `/v1/jobs/${jobId}/pause`),
      await scheduler.api('POST', `/v1/jobs/${jobId}/resume`),
    ];
    for (const response of responses) {
      expect(response.status).toBeLessThan(300);
      expect(JSON.stringify(response.body)).not.toContain('very-secret-token');
      expect(JSON.stringify(response.body)).not.toContain('acme');
    }
    expect((await scheduler.api('GET', `/v1/jobs/${jobId}`)).body.target.headers).toEqual({ Authorization: '<redacted>', 'X-Tenant': '<redacted>' });
    // Stored as sent: the worker sends it.
    expect((await scheduler.deps.jobs.get(scheduler.tenantId, jobId))?.target).toMatchObject({
      headers: { Authorization: SECRET, 'X-Tenant': 'acme-tenant-header' },
    });
    const deleted = await scheduler.api('DELETE', `/v1/jobs/${jobId}`);
    expect(JSON.stringify(deleted.body)).not.toContain('very-secret-token');
  });

  it('lets a PATCH keep a header by its mask, replace one and remove one', async () => {
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(TARGET, {
        schedule: { kind: 'delay', seconds: 3600 },
        target: { kind: 'http', url: TARGET, headers: { Authorization: SECRET, 'X-Tenant': 'acme-tenant-header' } },
      }),
    );
    const jobId: string = created.body.job.jobId;
    // What a client read, with the URL changed: the masked Authorization is kept as stored.
    const read = (await scheduler.api('GET', `/v1/jobs/${jobId}`)).body.target;
    const kept = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { target: { ...read, url: 'http://127.0.0.1:9/other' } });
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
    expect((await scheduler.deps.jobs.get(scheduler.tenantId, jobId))?.target).toMatchObject({
      url: 'http://127.0.0.1:9/other',
      headers: { Authorization: SECRET, 'X-Tenant': 'acme-tenant-header' },
    });
    // Replace Authorization (the name in another case), remove X-Tenant.
    const replaced = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { target: { kind: 'http', url: TARGET, headers: { authorization: 'Bearer new' } } });
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
    expect(replaced.body.target.headers).toEqual({ authorization: '<redacted>' });
    expect((await scheduler.deps.jobs.get(scheduler.tenantId, jobId))?.target).toMatchObject({ headers: { authorization: 'Bearer new' } });
    // Remove them all.
    const removed = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { target: { kind: 'http', url: TARGET } });
    expect(removed.status).toBe(200);
    expect((await scheduler.deps.jobs.get(scheduler.tenantId, jobId))?.target).toMatchObject({ headers: {} });
  });

  it('refuses a masked header in a PATCH that moves the URL to another origin, and changes nothing', async () => {
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(TARGET, { schedule: { kind: 'delay', seconds: 3600 }, target: { kind: 'http', url: TARGET, headers: { Authorization: SECRET } } }),
    );
    const jobId: string = created.body.job.jobId;
    const before = await scheduler.deps.jobs.get(scheduler.tenantId, jobId);
    const read = (await scheduler.api('GET', `/v1/jobs/${jobId}`)).body.target;
    // Another port, another host: a key that cannot read the credential must not be able to send it there.
    for (const url of ['http://127.0.0.1:10/hook', 'http://localhost:9/hook', 'https://127.0.0.1:9/hook']) {
      const moved = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { target: { ...read, url } });
      expect(moved.status, url).toBe(400);
      expect(moved.body.errors[0].path).toBe('target.headers.Authorization');
      expect(moved.body.errors[0].message).toContain('same origin (http://127.0.0.1:9)');
    }
    expect(await scheduler.deps.jobs.get(scheduler.tenantId, jobId)).toEqual(before);
    // Sent again with its value, it goes to the new origin.
    const resent = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, {
      target: { ...read, url: 'http://127.0.0.1:10/hook', headers: { Authorization: 'Bearer again' } },
    });
    expect(resent.status, JSON.stringify(resent.body)).toBe(200);
    expect((await scheduler.deps.jobs.get(scheduler.tenantId, jobId))?.target).toMatchObject({
      url: 'http://127.0.0.1:10/hook',
      headers: { Authorization: 'Bearer again' },
    });
  });

  it('refuses the mask for a header the job does not have, and on create', async () => {
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(TARGET, { target: { kind: 'http', url: TARGET, headers: { Authorization: '<redacted>' } } }),
    );
    expect(created.status).toBe(400);
    expect(created.body.errors[0].path).toBe('target.headers.Authorization');
    const job = await scheduler.api('POST', '/v1/jobs', jobBody(TARGET, { schedule: { kind: 'delay', seconds: 3600 } }));
    const patched = await scheduler.api('PATCH', `/v1/jobs/${job.body.job.jobId}`, {
      target: { kind: 'http', url: TARGET, headers: { 'X-Key': '<redacted>' } },
    });
    expect(patched.status).toBe(400);
    expect(patched.body.errors[0].path).toBe('target.headers.X-Key');
  });
});

describe('the contract', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler();
  });
  afterAll(() => scheduler.stop());

  it('serves the OpenAPI document without an API key', async () => {
    const response = await fetch(`${scheduler.runtime.url}/v1/openapi.json`);
    expect(response.status).toBe(200);
    const document = (await response.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(document.openapi).toBe('3.1.0');
    expect(Object.keys(document.paths)).toContain('/v1/jobs/{jobId}');
    // Every other route still wants a key.
    expect((await fetch(`${scheduler.runtime.url}/v1/jobs`)).status).toBe(401);
  });
});

describe('items written before the finding indexes', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler();
  });
  afterAll(() => scheduler.stop());

  it('are found once the backfill has given them the indexes’ keys; a second backfill changes nothing', async () => {
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(TARGET, { name: 'old-job', type: 'legacy', labels: { team: 'old' }, schedule: { kind: 'delay', seconds: 3600 } }),
    );
    const jobId: string = created.body.job.jobId;
    const runId: string = created.body.job.nextRunId;
    // A run-now job, COMPLETED: no key (decisions 0166, 0186), before and after the backfill.
    const completed = await scheduler.api('POST', '/v1/jobs', jobBody(TARGET, { name: 'old-completed', type: 'legacy' }));
    expect(completed.body.job.status).toBe('COMPLETED');
    // As an item written before the indexes: no index keys, no label entry.
    const { dynamo } = scheduler.clients;
    for (const id of [jobId, completed.body.job.jobId]) {
      await dynamo.send(new UpdateCommand({ TableName: scheduler.config.jobsTable, Key: jobKey(id), UpdateExpression: 'REMOVE tenantStatus' }));
    }
    await dynamo.send(new DeleteCommand({ TableName: scheduler.config.jobsTable, Key: jobLabelKey(scheduler.tenantId, 'team=old', created.body.job) }));
    await dynamo.send(new UpdateCommand({ TableName: scheduler.config.runsTable, Key: runKey(runId), UpdateExpression: 'REMOVE tenantRunSort' }));
    // A workflow from before the workflows' list: its entries, and the mark that it has them, missing.
    const workflow = await scheduler.api('POST', '/v1/workflows', { name: 'old-workflow', steps: [{ id: 'a', target: { kind: 'http', url: TARGET } }] });
    expect(workflow.status).toBe(201);
    const listKeys = workflowListKeys({ ...workflow.body, tenantId: scheduler.tenantId });
    for (const key of [listKeys.byTime, listKeys.byName]) await dynamo.send(new DeleteCommand({ TableName: scheduler.config.jobsTable, Key: key }));
    await dynamo.send(
      new UpdateCommand({ TableName: scheduler.config.jobsTable, Key: workflowKey(workflow.body.workflowId), UpdateExpression: 'REMOVE listed' }),
    );
    const found = async (): Promise<number[]> => [
      (await scheduler.api('GET', '/v1/jobs?status=ACTIVE')).body.items.length,
      (await scheduler.api('GET', '/v1/jobs?type=legacy')).body.items.length,
      (await scheduler.api('GET', '/v1/jobs?label=team=old')).body.items.length,
      // The delayed job's run (the run-now job's are running or retried, and were not touched).
      (await scheduler.api('GET', '/v1/runs?status=SCHEDULED')).body.items.length,
      (await scheduler.api('GET', '/v1/workflows')).body.items.length,
    ];
    // The type is kept from the jobs the tenant's index lists, which needs no key of its own (decision 0186).
    expect(await found()).toEqual([0, 2, 0, 0, 0]);
    expect(await backfillFindingKeys(dynamo, scheduler.config.jobsTable, scheduler.config.runsTable)).toEqual({ jobs: 1, runs: 1, workflows: 1 });
    expect(await found()).toEqual([1, 2, 1, 1, 1]);
    const completedItem = await dynamo.send(new GetCommand({ TableName: scheduler.config.jobsTable, Key: jobKey(completed.body.job.jobId) }));
    expect(completedItem.Item?.tenantType).toBeUndefined();
    expect(completedItem.Item?.tenantStatus).toBeUndefined();
    expect(await backfillFindingKeys(dynamo, scheduler.config.jobsTable, scheduler.config.runsTable)).toEqual({ jobs: 0, runs: 0, workflows: 0 });
  });
});
