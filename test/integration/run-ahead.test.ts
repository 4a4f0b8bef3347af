// A run-now job's create writes its run first, on its own, and then the job (decision 0167): what
// a create that fails or is refused between the two leaves behind, against the emulator.
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOB_NEVER_WRITTEN_REASON } from '../../lambdas/app/leased-run';
import { jobKey } from '../../lambdas/store/keys';
import type { Scheduler, TargetServer } from './harness';
import { eventually, jobBody, startScheduler, startTarget, tick } from './harness';
import { startApiFailingJobWrites } from './support/failing-api';

describe('a run written ahead of its job', () => {
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

  it('is deleted when the create is refused: a taken name leaves no run behind', async () => {
    const body = jobBody(target.url, { name: 'taken-once' });
    const first = await scheduler.api('POST', '/v1/jobs', body);
    expect(first.status).toBe(201);
    await eventually(
      async () => (await scheduler.api('GET', `/v1/runs/${first.body.job.nextRunId}`)).body,
      (run) => run.status === 'SUCCEEDED',
    );
    const before = await scheduler.countJobAndRunItems();
    for (let i = 0; i < 3; i++) expect((await scheduler.api('POST', '/v1/jobs', body)).status).toBe(409);
    expect(await scheduler.countJobAndRunItems()).toEqual(before);
    expect(target.calls.filter((call) => call.headers['x-job-id'] === first.body.job.jobId)).toHaveLength(1);
  });

  it('is deleted when a concurrent create under the same Idempotency-Key wins: one job, one run, one call', async () => {
    const before = await scheduler.countJobAndRunItems();
    const callsBefore = target.calls.length;
    const { name: _name, ...unnamed } = jobBody(target.url, { payload: { order: 7 } });
    const answers = await Promise.all(Array.from({ length: 4 }, () => scheduler.api('POST', '/v1/jobs', unnamed, { 'idempotency-key': 'order-7-once' })));
    // A replay answers as the first create did (201, the same job).
    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201, 201]);
    expect(new Set(answers.map((answer) => answer.body.job.jobId)).size).toBe(1);
    await eventually(
      async () => (await scheduler.api('GET', `/v1/runs/${answers[0]!.body.job.nextRunId}`)).body,
      (run) => run.status === 'SUCCEEDED',
    );
    // The job and its Idempotency-Key's record; one run.
    expect(await scheduler.countJobAndRunItems()).toEqual({ jobs: before.jobs + 2, runs: before.runs + 1 });
    expect(target.calls.length - callsBefore).toBe(1);
  });

  it('ends CANCELLED when its job was never written: found at its check-back, its target not called, nothing DEAD', async () => {
    // An API function whose job write fails before it reaches the store, after the run's write.
    const api = await startApiFailingJobWrites(scheduler);
    try {
      const before = await scheduler.countJobAndRunItems();
      const { name: _name, ...unnamed } = jobBody(`${target.url}/never`);
      const response = await api.create(unnamed);
      expect(response.status, await response.text()).toBeGreaterThanOrEqual(500);
      expect(api.failedJobWrites()).toBeGreaterThan(0);
      // The run is there, its job is not, and no message went out.
      expect(await scheduler.countJobAndRunItems()).toEqual({ jobs: before.jobs, runs: before.runs + 1 });
      expect(await scheduler.queueDepth()).toBe(0);
      const runs = await scheduler.api('GET', '/v1/runs?status=QUEUED');
      const orphan = runs.body.items.find((run: { jobId: string }) => run.jobId !== undefined);
      expect(orphan).toBeDefined();
      const job = await scheduler.clients.dynamo.send(new GetCommand({ TableName: scheduler.config.jobsTable, Key: jobKey(orphan.jobId) }));
      expect(job.Item).toBeUndefined();

      // Past the redelivery grace the ticker sends it; the worker finds no job and cancels it.
      const pastGrace = () => Date.now() + (scheduler.config.redeliveryGraceSeconds + 60) * 1000;
      expect((await tick(scheduler.workerDeps('late-ticker', pastGrace))).redelivered).toBe(1);
      const ended = await eventually(
        async () => (await scheduler.api('GET', `/v1/runs/${orphan.runId}`)).body,
        (run) => run.status !== 'QUEUED' && run.status !== 'RUNNING',
      );
      expect(ended).toMatchObject({ status: 'CANCELLED', reason: JOB_NEVER_WRITTEN_REASON, error: { code: 'JOB_NOT_FOUND' } });
      expect(target.calls.filter((call) => call.path.endsWith('/never'))).toHaveLength(0);
      expect((await scheduler.api('GET', '/v1/runs?status=DEAD')).body.items).toEqual([]);
    } finally {
      await api.stop();
    }
  });
});
