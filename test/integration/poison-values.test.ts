// Numbers an external worker sends in `progress` and `result` that DynamoDB or the SDK cannot hold
// as numbers (integers beyond 2^53, magnitudes beyond 1e125 or below 1e-130) must neither fail the
// call nor poison the run's item for every later read: they are stored as JSON text.
import { randomBytes } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runKey } from '../../lambdas/store/keys';
import type { Scheduler } from './harness';
import { startScheduler, tick } from './harness';

type RunBody = Record<string, any>;

describe('poison values from external workers', () => {
  let scheduler: Scheduler;

  beforeAll(async () => {
    scheduler = await startScheduler();
  });
  afterAll(() => scheduler.stop());

  async function claimedRun(type: string): Promise<{ jobId: string; runId: string; leaseToken: string }> {
    const created = await scheduler.api('POST', '/v1/jobs', {
      name: `external-${type}-${randomBytes(3).toString('hex')}`,
      type,
      schedule: { kind: 'now' },
      target: { kind: 'external', leaseSeconds: 30 },
      retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { jobId, nextRunId: runId } = created.body.job;
    const claim = await scheduler.api('POST', '/v1/workers/claim', { jobType: type, waitSeconds: 10 });
    expect(claim.status, JSON.stringify(claim.body)).toBe(200);
    expect(claim.body.run.runId).toBe(runId);
    return { jobId, runId, leaseToken: claim.body.leaseToken };
  }

  const getRun = async (runId: string): Promise<RunBody> => (await scheduler.api('GET', `/v1/runs/${runId}`)).body as RunBody;

  it('completes with an integer beyond 2^53 in the result, once, and shows it as JSON parses it', async () => {
    const { runId, leaseToken } = await claimedRun('poison-bigint');
    // Raw text: JSON.stringify could not write this integer exactly.
    const completed = await scheduler.api(
      'POST',
      `/v1/runs/${runId}/complete`,
      `{"leaseToken":"${leaseToken}","result":{"ts_ns":1763900000000000123,"n":12345678901234567891}}`,
    );
    expect(completed.status, JSON.stringify(completed.body)).toBe(200);
    expect(completed.body).toMatchObject({ runId, status: 'SUCCEEDED' });
    // What any JSON parser of IEEE doubles makes of the text (docs/api.md): the nearest double.
    expect((await getRun(runId)).result).toEqual(JSON.parse('{"ts_ns":1763900000000000123,"n":12345678901234567891}'));
  });

  it('takes numbers beyond DynamoDB range in progress and result, and every later read and tick still works', async () => {
    const { jobId, runId, leaseToken } = await claimedRun('poison-range');
    // Below DynamoDB's smallest magnitude (1e-130): the SDK writes it as a number.
    const beat = await scheduler.api('POST', `/v1/runs/${runId}/heartbeat`, `{"leaseToken":"${leaseToken}","progress":{"pct":1e-200}}`);
    expect(beat.status, JSON.stringify(beat.body)).toBe(200);
    expect(beat.body.run.progress).toEqual({ pct: 1e-200 });

    // The run's item is read by the ticker's queries, the job's runs, the run itself.
    const report = await tick(scheduler.deps);
    expect(report.complete).toBe(true);
    expect((await scheduler.api('GET', `/v1/jobs/${jobId}`)).status).toBe(200);
    const runs = await scheduler.api('GET', `/v1/jobs/${jobId}/runs`);
    expect(runs.status).toBe(200);
    expect(runs.body.items[0]).toMatchObject({ runId, progress: { pct: 1e-200 } });
    expect((await scheduler.api('GET', '/v1/health')).status).toBe(200);

    // Beyond its largest (1e125), which the SDK refuses to write as a number.
    const again = await scheduler.api(
      'POST',
      `/v1/runs/${runId}/heartbeat`,
      `{"leaseToken":"${leaseToken}","progress":{"pct":1e-200,"big":1e200,"neg":-1e130}}`,
    );
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    const completed = await scheduler.api('POST', `/v1/runs/${runId}/complete`, `{"leaseToken":"${leaseToken}","result":{"tiny":1e-300,"huge":1.5e300}}`);
    expect(completed.status, JSON.stringify(completed.body)).toBe(200);
    expect(await getRun(runId)).toMatchObject({ status: 'SUCCEEDED', progress: { pct: 1e-200, big: 1e200 }, result: { tiny: 1e-300, huge: 1.5e300 } });
    expect((await tick(scheduler.deps)).complete).toBe(true);
  });

  it('keeps such numbers in a job payload and a trigger payload harmless too (stored as text)', async () => {
    const body = `{"name":"odd-numbers","type":"test","schedule":{"kind":"at","at":"2099-01-01T00:00:00.000Z"},"target":{"kind":"external","leaseSeconds":30},"payload":{"tiny":1e-200,"huge":1e200,"big":12345678901234567891}}`;
    const created = await scheduler.api('POST', '/v1/jobs', body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { jobId } = created.body.job;
    expect((await scheduler.api('GET', `/v1/jobs/${jobId}`)).body.payload).toEqual(JSON.parse(`{"tiny":1e-200,"huge":1e200,"big":12345678901234567891}`));
    const triggered = await scheduler.api('POST', `/v1/jobs/${jobId}/trigger`, '{"payload":{"tiny":1e-300,"huge":1e300}}');
    expect(triggered.status, JSON.stringify(triggered.body)).toBe(202);
    expect((await scheduler.api('GET', `/v1/jobs/${jobId}/runs`)).status).toBe(200);
    expect((await tick(scheduler.deps)).unreadable).toBe(0);
  });

  it('refuses an oversized progress or result with a 400 that names the field, and changes nothing', async () => {
    const { runId, leaseToken } = await claimedRun('poison-size');
    const big = 'x'.repeat(70 * 1024);
    const beat = await scheduler.api('POST', `/v1/runs/${runId}/heartbeat`, { leaseToken, progress: { big } });
    expect(beat.status).toBe(400);
    expect(beat.body.errors).toEqual([expect.objectContaining({ path: 'progress', message: expect.stringMatching(/at most 65536 bytes/) })]);
    // A result may be 1 MiB where results are stored apart (decision 0163): a byte more is refused.
    const completed = await scheduler.api('POST', `/v1/runs/${runId}/complete`, { leaseToken, result: { big: 'x'.repeat(1024 * 1024) } });
    expect(completed.status).toBe(400);
    expect(completed.body.errors).toEqual([expect.objectContaining({ path: 'result', message: expect.stringMatching(/at most 1048576 bytes/) })]);
    const run = await getRun(runId);
    expect(run).toMatchObject({ status: 'RUNNING' });
    expect(run.progress ?? null).toBeNull();
  });
});

describe('a tick with an unreadable item in the time index', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    // Runs more than 2 s away wait in the time index; the ticker looks 5 s ahead. No workers.
    scheduler = await startScheduler({ workerConcurrency: 0, tuning: { nearHorizonSeconds: 2, tickerHorizonSeconds: 5 } });
  });
  afterAll(() => scheduler.stop());

  it('skips and counts the partition it cannot read, releases every other one, and holds the cursor for it', async () => {
    const due = Date.now() + 4_000;
    const runIds: string[] = [];
    for (let i = 0; i < 12; i++) {
      const created = await scheduler.api('POST', '/v1/jobs', {
        name: `at-${i}`,
        type: 'test',
        schedule: { kind: 'at', at: new Date(due).toISOString() },
        target: { kind: 'http', url: 'http://127.0.0.1:9/none' },
      });
      expect(created.status).toBe(201);
      runIds.push(created.body.job.nextRunId);
    }
    const [poisoned, ...others] = runIds as [string, ...string[]];
    // What a heartbeat stored before progress was JSON text: a number the emulator cannot read back
    // (its queries of the item's partition fail from then on).
    await scheduler.clients.dynamo.send(
      new UpdateCommand({
        TableName: scheduler.config.runsTable,
        Key: runKey(poisoned),
        UpdateExpression: 'SET progress = :p',
        ExpressionAttributeValues: { ':p': { pct: 1e-200 } },
      }),
    );
    const partitionOf = async (runId: string) =>
      (await scheduler.clients.dynamo.send(new GetCommand({ TableName: scheduler.config.runsTable, Key: runKey(runId) }))).Item?.gateKey as string;
    const poisonedPartition = await partitionOf(poisoned);
    const sharing = (await Promise.all(others.map(async (runId) => ((await partitionOf(runId)) === poisonedPartition ? runId : null)))).filter(Boolean);
    const cursorBefore = (await scheduler.deps.state.ticker()).cursor;

    const report = await tick(scheduler.deps);
    expect(report.unreadable).toBe(1);
    expect(report.released).toBe(others.length - sharing.length);
    for (const runId of others) {
      expect((await scheduler.deps.runs.get(runId))?.status, runId).toBe(sharing.includes(runId) ? 'SCHEDULED' : 'QUEUED');
    }
    // The cursor does not pass the unreadable partition's minute.
    const cursor = (await scheduler.deps.state.ticker()).cursor ?? 0;
    expect(cursor).toBeLessThanOrEqual(Date.parse(`${poisonedPartition.slice(0, 16)}:00.000Z`));
    if (cursorBefore !== null) expect(cursor).toBeGreaterThanOrEqual(cursorBefore);
    expect(scheduler.metricLines.join('\n')).not.toContain('TickerErrors');

    // Once the item can be read again, the next tick releases what waited behind it.
    await scheduler.clients.dynamo.send(
      new UpdateCommand({ TableName: scheduler.config.runsTable, Key: runKey(poisoned), UpdateExpression: 'REMOVE progress' }),
    );
    const next = await tick(scheduler.deps);
    expect(next.unreadable).toBe(0);
    expect(next.released).toBe(sharing.length + 1);
  });
});
