// How long finished runs are kept (decision 0156): every write that ends a run gives it an expiry in
// the runs table's TTL attribute, RUN_RETENTION_DAYS after it finished or after its occurrence,
// whichever is later; a scheduler keeping runs forever (0) writes none, and the API never shows the
// attribute. A workflow run, its steps' runs and the exactly-once ledger leave likewise, and a
// workflow run is retried only while its steps' runs are kept (decision 0159).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { replayRun } from '../../lambdas/app/runs';
import { NotFoundError } from '../../lambdas/core/errors';
import { occurrenceKey } from '../../lambdas/domain/run';
import { effectKey, runKey, workflowRunKey } from '../../lambdas/store/keys';
import type { Scheduler, TargetServer } from './harness';
import { eventually, jobBody, startScheduler, startTarget } from './harness';

const DAY = 86_400;

describe('finished runs', () => {
  let scheduler: Scheduler;
  let forever: Scheduler;
  let target: TargetServer;

  beforeAll(async () => {
    // `/flaky` fails its first call; `/slow` answers after 1.5 s; `/refused` answers 400 (the run ends DEAD).
    let flakyCalls = 0;
    target = await startTarget(async (call) => {
      if (call.path.endsWith('/refused')) return { status: 400 };
      if (call.path.endsWith('/flaky')) return { status: flakyCalls++ === 0 ? 500 : 200 };
      if (call.path.endsWith('/slow')) await new Promise((resolve) => setTimeout(resolve, 1500));
      return { status: 200, body: JSON.stringify({ from: call.path }) };
    });
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

  it('a replay of a run that leaves (its retention ended) between its read and the replay is a 404, and writes nothing', async () => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(`${target.url}/refused`));
    expect(created.status).toBe(201);
    const dead = await finished(scheduler, created.body.job.nextRunId);
    expect(dead.status).toBe('DEAD');
    // The table's TTL deletes the run just before the replay's write.
    const deadRuns = scheduler.deps.deadRuns;
    const deps = {
      ...scheduler.deps,
      deadRuns: new Proxy(deadRuns, {
        get: (object, property) =>
          property === 'replay'
            ? async (...args: Parameters<typeof deadRuns.replay>) => {
                await scheduler.clients.dynamo.send(new DeleteCommand({ TableName: scheduler.config.runsTable, Key: runKey(dead.runId) }));
                return deadRuns.replay(...args);
              }
            : (Reflect.get(object, property) as unknown),
      }),
    };
    await expect(replayRun(deps, scheduler.tenantId, dead.runId)).rejects.toThrow(NotFoundError);
    // No item written in its place (one with no status and no expiry would never leave), and no replay.
    expect(await itemOf(scheduler, dead.runId)).toBeUndefined();
    expect((await scheduler.api('GET', `/v1/runs/${String(dead.runId).replace(/\.1$/, '.2')}`)).status).toBe(404);
  });

  const workflowRunItem = async (workflowId: string, workflowRunId: string) =>
    (
      await scheduler.clients.dynamo.send(
        new GetCommand({ TableName: scheduler.config.jobsTable, Key: workflowRunKey(workflowId, workflowRunId), ConsistentRead: true }),
      )
    ).Item;
  const workflowRunEnded = async (workflowId: string, workflowRunId: string) =>
    eventually(
      async () => (await scheduler.api('GET', `/v1/workflows/${workflowId}/runs/${workflowRunId}`)).body,
      (run) => run.status !== 'RUNNING',
      60_000,
    );

  /** A step calling `path` on the test's target, once (no retries). */
  const step = (id: string, path: string, dependsOn: string[] = []) => ({
    id,
    target: { kind: 'http', url: `${target.url}/${path}` },
    retryPolicy: { maxAttempts: 1 },
    dependsOn,
  });

  it('of a workflow: the workflow run and its steps’ runs leave after the retention, a retry keeps the run until it ends again, and comes only while the steps’ runs are kept', async () => {
    const workflow = await scheduler.api('POST', '/v1/workflows', { name: 'kept', steps: [step('first', 'first'), step('second', 'flaky', ['first'])] });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
    const workflowId = workflow.body.workflowId as string;
    const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
    expect(started.status).toBe(202);
    const workflowRunId = started.body.workflowRunId as string;
    const failed = await workflowRunEnded(workflowId, workflowRunId);
    expect(failed.status).toBe('FAILED');
    expect((await workflowRunItem(workflowId, workflowRunId))?.expiresAtEpoch).toBe(expiryOf(failed.finishedAt, 2));
    const first = await scheduler.api('GET', `/v1/runs/${failed.steps.first.runId}`);
    expect((await itemOf(scheduler, first.body.runId))?.expiresAtEpoch).toBe(expiryOf(first.body.finishedAt, 2));

    // Three days old, with runs kept two: its steps' runs may have left, so no retry, and nothing changes.
    const key = workflowRunKey(workflowId, workflowRunId);
    const setTime = (iso: string) =>
      scheduler.clients.dynamo.send(
        new UpdateCommand({
          TableName: scheduler.config.jobsTable,
          Key: key,
          UpdateExpression: 'SET scheduledFor = :at',
          ExpressionAttributeValues: { ':at': iso },
        }),
      );
    await setTime(new Date(Date.now() - 3 * DAY * 1000).toISOString());
    const refused = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/retry`);
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.detail).toMatch(/RUN_RETENTION_DAYS/);
    expect((await scheduler.api('GET', `/v1/workflows/${workflowId}/runs/${workflowRunId}`)).body.status).toBe('FAILED');
    await setTime(failed.scheduledFor);

    const retried = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/retry`);
    expect(retried.status, JSON.stringify(retried.body)).toBe(202);
    const again = await workflowRunEnded(workflowId, workflowRunId);
    expect(again.status).toBe('SUCCEEDED');
    expect((await workflowRunItem(workflowId, workflowRunId))?.expiresAtEpoch).toBe(expiryOf(again.finishedAt, 2));
  });

  it('of a workflow: a retried run has no expiry while it runs again', async () => {
    const workflow = await scheduler.api('POST', '/v1/workflows', {
      name: 'running-again',
      steps: [{ id: 'only', target: { kind: 'http', url: `${target.url}/slow` }, retryPolicy: { maxAttempts: 1 }, timeoutSeconds: 1 }],
    });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
    const workflowId = workflow.body.workflowId as string;
    const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
    const workflowRunId = started.body.workflowRunId as string;
    // A second's timeout against a 1.5 s answer: the step times out, the run fails.
    expect((await workflowRunEnded(workflowId, workflowRunId)).status).toBe('FAILED');
    expect((await workflowRunItem(workflowId, workflowRunId))?.expiresAtEpoch).toEqual(expect.any(Number));
    const retried = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/retry`);
    expect(retried.status, JSON.stringify(retried.body)).toBe(202);
    const item = await workflowRunItem(workflowId, workflowRunId);
    expect(item?.status).toBe('RUNNING');
    expect(item?.expiresAtEpoch).toBeUndefined();
    expect((await workflowRunEnded(workflowId, workflowRunId)).status).toBe('FAILED');
  });

  it('of a workflow: a step whose succeeded dependency’s run has left does not start with a null input; it is NOT_STARTED, saying why', async () => {
    const workflow = await scheduler.api('POST', '/v1/workflows', {
      name: 'parent-gone',
      steps: [step('first', 'first'), { ...step('second', 'slow', ['first']), timeoutSeconds: 1 }],
    });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
    const workflowId = workflow.body.workflowId as string;
    // The second step times out (1 s against 1.5 s), so that the run can be retried.
    const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
    const workflowRunId = started.body.workflowRunId as string;
    const failed = await workflowRunEnded(workflowId, workflowRunId);
    expect(failed.status, JSON.stringify(failed)).toBe('FAILED');
    // The first step's run has left (as after its retention).
    await scheduler.clients.dynamo.send(new DeleteCommand({ TableName: scheduler.config.runsTable, Key: runKey(failed.steps.first.runId) }));
    const slowCalls = () => target.calls.filter((call) => call.path.endsWith('/slow')).length;
    const callsBefore = slowCalls();
    expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/retry`)).status).toBe(202);
    const ended = await workflowRunEnded(workflowId, workflowRunId);
    expect(ended.status).toBe('FAILED');
    expect(ended.steps.second).toMatchObject({ status: 'NOT_STARTED', runId: null });
    expect(ended.steps.second.reason).toMatch(/dependency first .* has left/);
    // No run of its next attempt was written, and its target was not called.
    expect((await scheduler.api('GET', `/v1/runs/${String(failed.steps.second.runId).replace(/\.1$/, '.2')}`)).status).toBe(404);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(slowCalls()).toBe(callsBefore);
  });

  it('keep no expiry when runs are kept forever; the exactly-once ledger’s entry leaves with its occurrence’s runs', async () => {
    const once = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { delivery: 'exactly-once' }));
    expect(once.status, JSON.stringify(once.body)).toBe(201);
    const onceRun = await finished(scheduler, once.body.job.nextRunId);
    expect(onceRun.status).toBe('SUCCEEDED');
    const occurrence = occurrenceKey(onceRun.jobId, onceRun.scheduledFor);
    const effect = (
      await scheduler.clients.dynamo.send(new GetCommand({ TableName: scheduler.config.runsTable, Key: effectKey(occurrence), ConsistentRead: true }))
    ).Item;
    expect(effect).toBeDefined();
    expect(effect?.expiresAtEpoch).toBeGreaterThanOrEqual(Math.floor(Date.parse(onceRun.scheduledFor) / 1000) + 2 * DAY);
    expect(effect?.expiresAtEpoch).toBeLessThanOrEqual(Math.floor(Date.parse(onceRun.finishedAt) / 1000) + 2 * DAY);

    const ran = await forever.api('POST', '/v1/jobs', jobBody(target.url));
    const run = await finished(forever, ran.body.job.nextRunId);
    expect(run.status).toBe('SUCCEEDED');
    expect((await itemOf(forever, run.runId))?.expiresAtEpoch).toBeUndefined();
  });
});
