// A job's runs through the API (decision 0188): the runs of the occurrence at the job's creation (a
// run-now job's, its retries and replays) have no byJob entry and are found through the tenant's
// index; the listing puts them between the job's later and earlier occurrences, pages through all
// of them once, and a delete finds the pending ones.
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planRun } from '../../lambdas/app/plan-run';
import type { Job } from '../../lambdas/domain/job';
import type { RunTrigger } from '../../lambdas/domain/run';
import { runKey } from '../../lambdas/store/keys';
import type { Scheduler } from './harness';
import { jobBody, startScheduler } from './harness';

const MINUTE = 60_000;

describe("a job's runs, its creation occurrence's among them", () => {
  let scheduler: Scheduler;
  let job: Job;
  const order: string[] = [];

  beforeAll(async () => {
    // No workers: the runs stay as written.
    scheduler = await startScheduler({ workerConcurrency: 0 });
    const created = await scheduler.api('POST', '/v1/jobs', jobBody('http://127.0.0.1:9/never', { name: 'band' }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    job = (await scheduler.deps.jobs.get(scheduler.tenantId, created.body.job.jobId as string))!;
    const createdAt = Date.parse(job.createdAt);
    const write = async (scheduledFor: number, attempt: number, trigger: RunTrigger, listedAsBefore = false): Promise<string> => {
      const plan = planRun(scheduler.config, job, { scheduledFor, attempt, trigger }, Date.now());
      // A run of the creation occurrence written before decision 0188 had its byJob entry.
      const { unlistedByJob: _unlisted, ...extras } = plan.extras;
      expect(await scheduler.deps.runs.create(listedAsBefore ? { ...plan, extras } : plan)).toBe(true);
      return plan.run.runId;
    };
    const first = created.body.job.nextRunId as string;
    const retry = await write(createdAt, 2, 'retry');
    const older = await write(createdAt, 3, 'replay', true);
    const later = await write(createdAt + MINUTE, 1, 'manual');
    const latest = await write(createdAt + 2 * MINUTE, 1, 'manual');
    const before = await write(createdAt - 60 * MINUTE, 1, 'manual');
    order.push(latest, later, older, retry, first, before);
  });
  afterAll(() => scheduler.stop());

  const pages = async (query: string, limit: number): Promise<{ runIds: string[]; pages: number }> => {
    const runIds: string[] = [];
    let cursor: string | null = null;
    let count = 0;
    do {
      const suffix: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
      const page = await scheduler.api('GET', `/v1/jobs/${job.jobId}/runs?limit=${limit}${query}${suffix}`);
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      runIds.push(...(page.body.items as { runId: string }[]).map((run) => run.runId));
      cursor = page.body.nextCursor as string | null;
      count += 1;
    } while (cursor !== null && count < 20);
    return { runIds, pages: count };
  };

  it('writes no byJob entry for the creation occurrence', async () => {
    const item = async (runId: string) =>
      (await scheduler.clients.dynamo.send(new GetCommand({ TableName: scheduler.config.runsTable, Key: runKey(runId), ConsistentRead: true }))).Item;
    expect((await item(order[4]!))?.jobSort).toBeUndefined();
    expect((await item(order[3]!))?.jobSort).toBeUndefined();
    expect((await item(order[1]!))?.jobSort).toBeDefined();
  });

  it('lists every run once, newest occurrence and attempt first, whatever the page size', async () => {
    for (const limit of [1, 2, 3, 4, 6, 100]) {
      const listed = await pages('', limit);
      expect(listed.runIds, `limit ${limit}`).toEqual(order);
      // The cursor is null exactly when nothing follows.
      expect(listed.pages, `limit ${limit}`).toBe(Math.max(1, Math.ceil(order.length / limit)));
    }
    const shown = await scheduler.api('GET', `/v1/jobs/${job.jobId}`);
    expect((shown.body.recentRuns as { runId: string }[]).map((run) => run.runId)).toEqual(order);
  });

  it('keeps from/to and status over all three parts', async () => {
    const at = (ms: number) => new Date(ms).toISOString();
    const createdAt = Date.parse(job.createdAt);
    expect((await pages(`&to=${at(createdAt)}`, 2)).runIds).toEqual([order[5]]);
    expect((await pages(`&from=${at(createdAt)}&to=${at(createdAt + 1)}`, 2)).runIds).toEqual(order.slice(2, 5));
    expect((await pages(`&from=${at(createdAt + 1)}`, 1)).runIds).toEqual(order.slice(0, 2));
    expect(await scheduler.deps.runs.retirePending(order[3]!, 'CANCELLED', 'test', Date.now())).toBe(true);
    expect((await pages('&status=CANCELLED', 1)).runIds).toEqual([order[3]]);
  });

  it('orders the creation occurrence by attempt number, not by the ids as text (…​.10 before …​.2)', async () => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody('http://127.0.0.1:9/never', { name: 'eleven' }));
    const eleven = (await scheduler.deps.jobs.get(scheduler.tenantId, created.body.job.jobId as string))!;
    for (let attempt = 2; attempt <= 11; attempt++) {
      expect(
        await scheduler.deps.runs.create(
          planRun(scheduler.config, eleven, { scheduledFor: Date.parse(eleven.createdAt), attempt, trigger: 'retry' }, Date.now()),
        ),
      ).toBe(true);
    }
    const attempts: number[] = [];
    let cursor: string | null = null;
    do {
      const page = await scheduler.deps.runs.listByJob(eleven, 3, cursor ?? undefined);
      attempts.push(...page.items.map((run) => run.attempt));
      cursor = page.nextCursor;
    } while (cursor !== null);
    expect(attempts).toEqual([11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
  });

  it('cancels the pending runs of the creation occurrence when the job is deleted', async () => {
    expect((await scheduler.api('DELETE', `/v1/jobs/${job.jobId}`)).status).toBe(200);
    const statuses = await Promise.all(order.map(async (runId) => (await scheduler.deps.runs.get(runId))?.status));
    expect(statuses).toEqual(['CANCELLED', 'CANCELLED', 'CANCELLED', 'CANCELLED', 'CANCELLED', 'CANCELLED']);
  });
});
