// How long finished runs are kept (decision 0156): every write that ends a run gives it an expiry in
// the runs table's TTL attribute, RUN_RETENTION_DAYS after it finished or after its occurrence,
// whichever is later; a workflow step's runs and a scheduler keeping runs forever (0) write none,
// and the API never shows the attribute.
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runKey } from '../../lambdas/store/keys';
import type { Scheduler, TargetServer } from './harness';
import { eventually, jobBody, startScheduler, startTarget } from './harness';

const DAY = 86_400;

describe('finished runs', () => {
  let scheduler: Scheduler;
  let forever: Scheduler;
  let target: TargetServer;

  beforeAll(async () => {
    target = await startTarget();
    scheduler = await startScheduler({ workerConcurrency: 2, config: { runRetentionDays: 2 } });
    forever = await startScheduler({ workerConcurrency: 2, config: { runRetentionDays: 0 } });
  });
  afterAll(async () => {
    await scheduler?.stop();
    await forever?.stop();
    await target?.stop();
  });

  const itemOf = async (on: Scheduler, runId: string) =>
    (await on.clients.dynamo.send(new GetCommand({ TableName: on.config.runsTable, Key: runKey(runId), ConsistentRead: true }))).Item;
  const finished = async (on: Scheduler, runId: string) =>
    eventually(
      async () => (await on.api('GET', `/v1/runs/${runId}`)).body,
      (run) => run.finishedAt !== null && run.finishedAt !== undefined,
      60_000,
    );
  const expiryOf = (finishedAt: string, days: number) => Math.floor(Date.parse(finishedAt) / 1000) + days * DAY;

  it('leave RUN_RETENTION_DAYS after they finished, or after their occurrence if later: a run that succeeded, one cancelled before its time', async () => {
    const ran = await scheduler.api('POST', '/v1/jobs', jobBody(target.url));
    expect(ran.status).toBe(201);
    const run = await finished(scheduler, ran.body.job.nextRunId);
    expect(run.status).toBe('SUCCEEDED');
    expect((await itemOf(scheduler, run.runId))?.expiresAtEpoch).toBe(expiryOf(run.finishedAt, 2));
    // The attribute is the table's, never the API's.
    expect(Object.keys(run)).not.toContain('expiresAtEpoch');

    const later = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: { kind: 'delay', seconds: 3600 } }));
    const pendingId = later.body.job.nextRunId as string;
    expect((await itemOf(scheduler, pendingId))?.expiresAtEpoch).toBeUndefined(); // a pending run stays
    expect((await scheduler.api('POST', `/v1/runs/${pendingId}/cancel`)).status).toBe(200);
    const cancelled = (await scheduler.api('GET', `/v1/runs/${pendingId}`)).body;
    expect(cancelled.status).toBe('CANCELLED');
    // Cancelled an hour before its occurrence: kept from the occurrence, the later of the two.
    expect(Date.parse(cancelled.scheduledFor)).toBeGreaterThan(Date.parse(cancelled.finishedAt));
    expect((await itemOf(scheduler, pendingId))?.expiresAtEpoch).toBe(expiryOf(cancelled.scheduledFor, 2));
  });

  it('keep the record of an occurrence skipped ahead of time until RUN_RETENTION_DAYS after the occurrence', async () => {
    // Yearly: the second occurrence skipped lies months ahead, past the retention from now.
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: { kind: 'cron', expression: '0 0 1 1 *', timezone: 'UTC' } }));
    expect(created.status).toBe(201);
    const jobId = created.body.job.jobId as string;
    const skipped = await scheduler.api('POST', `/v1/jobs/${jobId}/skip`, { next: 2 });
    expect(skipped.status, JSON.stringify(skipped.body)).toBe(200);
    const runs = (await scheduler.api('GET', `/v1/jobs/${jobId}/runs`)).body.items as { runId: string; status: string; scheduledFor: string }[];
    const records = runs.filter((run) => run.status === 'SKIPPED');
    expect(records).toHaveLength(2);
    for (const record of records) {
      expect((await itemOf(scheduler, record.runId))?.expiresAtEpoch).toBe(Date.parse(record.scheduledFor) / 1000 + 2 * DAY);
    }
  });

  it('of a workflow step are kept as long as their workflow run, and a scheduler keeping runs forever writes no expiry', async () => {
    const workflow = await scheduler.api('POST', '/v1/workflows', { name: 'kept', steps: [{ id: 'only', target: { kind: 'http', url: target.url } }] });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
    const workflowId = workflow.body.workflowId as string;
    const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
    expect(started.status).toBe(202);
    const done = await eventually(
      async () => (await scheduler.api('GET', `/v1/workflows/${workflowId}/runs/${started.body.workflowRunId}`)).body,
      (run) => run.status === 'SUCCEEDED',
      60_000,
    );
    const stepRunId = done.steps.only.runId as string;
    expect((await scheduler.api('GET', `/v1/runs/${stepRunId}`)).body.status).toBe('SUCCEEDED');
    expect((await itemOf(scheduler, stepRunId))?.expiresAtEpoch).toBeUndefined();

    const ran = await forever.api('POST', '/v1/jobs', jobBody(target.url));
    const run = await finished(forever, ran.body.job.nextRunId);
    expect(run.status).toBe('SUCCEEDED');
    expect((await itemOf(forever, run.runId))?.expiresAtEpoch).toBeUndefined();
  });
});
