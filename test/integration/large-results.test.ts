// Workflow steps' results over 4 KiB live in the payload bucket (decision 0163): the step run's item
// names the object, a dependant's run keeps the reference and its worker (or an external worker's
// claim) reads the result to deliver it, and the API shows it. Up to 1 MiB is accepted; a step whose
// payload and inputs are more than its target takes ends DEAD; a deployment without a bucket keeps
// 4 KiB. Against the emulator's S3 (moto), with real HTTP targets and external workers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DeleteObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { runKey } from '../../lambdas/store/keys';
import { recordOutcome } from '../../lambdas/app/record-outcome';
import { asFunction } from '../../scripts/local/function-role';
import { MAX_STEP_RESULT_BYTES, MAX_STORED_STEP_RESULT_BYTES } from '../../lambdas/domain/workflow';
import type { Scheduler, TargetCall, TargetServer } from './harness';
import { awsClients, eventually, startScheduler, startTarget } from './harness';

/** A JSON value of exactly `bytes` bytes: `{"blob":"x…x"}` is 11 bytes around the text. */
const resultOf = (bytes: number, fill = 'r') => ({ blob: fill.repeat(bytes - 11) });
const stepOf = (call: TargetCall): string => call.path.split('/').pop() ?? '';
interface StepBody {
  readonly workflow?: { readonly workflowRunId: string };
  readonly results: Record<string, unknown>;
}
const bodyOf = (call: TargetCall): StepBody => JSON.parse(call.body) as StepBody;

describe('large step results', () => {
  let scheduler: Scheduler;
  let bucketless: Scheduler;
  let target: TargetServer;
  /** What each step answers, by the last part of its path: `big-<bytes>` answers a result of that size. */
  const answer = (call: TargetCall) => {
    const size = /^big-(\d+)/.exec(stepOf(call))?.[1];
    return { status: 200, body: JSON.stringify(size ? resultOf(Number(size)) : { from: stepOf(call) }) };
  };

  beforeAll(async () => {
    target = await startTarget(answer);
    scheduler = await startScheduler({ workerConcurrency: 2 });
    bucketless = await startScheduler({ workerConcurrency: 1, config: { payloadBucket: undefined } });
  });
  afterAll(async () => {
    await scheduler?.stop();
    await bucketless?.stop();
    await target?.stop();
  });

  const bucket = () => scheduler.config.payloadBucket!;
  const runItem = async (runId: string) =>
    (await scheduler.clients.dynamo.send(new GetCommand({ TableName: scheduler.config.runsTable, Key: runKey(runId), ConsistentRead: true }))).Item!;
  const keysUnder = async (prefix: string) =>
    ((await scheduler.clients.s3.send(new ListObjectsV2Command({ Bucket: bucket(), Prefix: prefix }))).Contents ?? []).map((object) => object.Key!);
  const http = (id: string, path = id, dependsOn: string[] = []) => ({
    id,
    target: { kind: 'http', url: `${target.url}/${path}` },
    retryPolicy: { maxAttempts: 1 },
    dependsOn,
  });
  async function run(on: Scheduler, name: string, steps: unknown[]): Promise<{ workflowId: string; workflowRunId: string }> {
    const created = await on.api('POST', '/v1/workflows', { name: `${name}-${Date.now()}`, steps });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const workflowId = created.body.workflowId as string;
    const started = await on.api('POST', `/v1/workflows/${workflowId}/runs`);
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    return { workflowId, workflowRunId: started.body.workflowRunId as string };
  }
  const workflowRun = (on: Scheduler, ids: { workflowId: string; workflowRunId: string }, done = (body: Record<string, any>) => body.status !== 'RUNNING') =>
    eventually(async () => (await on.api('GET', `/v1/workflows/${ids.workflowId}/runs/${ids.workflowRunId}`)).body, done, 60_000);
  const callOf = (workflowRunId: string, path: string) =>
    target.calls.find((call) => stepOf(call) === path && bodyOf(call).workflow?.workflowRunId === workflowRunId);

  it("stores a result over 4 KiB apart, hands it to the dependant's call whole, and shows it on the run (in lists up to 64 KiB)", async () => {
    const ids = await run(scheduler, 'large-results', [
      http('big', 'big-200000'),
      http('medium', 'big-30000'),
      http('small', 'big-4096'),
      http('sink', 'sink', ['big', 'medium', 'small']),
    ]);
    const ended = await workflowRun(scheduler, ids);
    expect(ended.status, JSON.stringify(ended)).toBe('SUCCEEDED');
    expect(bodyOf(callOf(ids.workflowRunId, 'sink')!).results).toEqual({ big: resultOf(200_000), medium: resultOf(30_000), small: resultOf(4096) });

    const bigRun = ended.steps.big.runId as string;
    const item = await runItem(bigRun);
    expect(item.resultJson).toBeUndefined();
    expect(item.resultRef).toMatchObject({ bytes: 200_000, key: expect.stringMatching(new RegExp(`^runs/${scheduler.tenantId}/`)) });
    expect(JSON.stringify(item).length).toBeLessThan(3_000);
    // 4 KiB is kept in the item, as before.
    const smallItem = await runItem(ended.steps.small.runId);
    expect(smallItem.resultRef).toBeUndefined();
    expect(JSON.parse(String(smallItem.resultJson))).toEqual(resultOf(4096));
    // The dependant's run keeps references, not the results: its item stays small.
    const sinkItem = await runItem(ended.steps.sink.runId);
    expect(JSON.stringify(sinkItem).length).toBeLessThan(8_000);
    expect(Object.keys(JSON.parse(String(sinkItem.inputsJson)).storedResults).sort()).toEqual(['big', 'medium']);

    const shown = await scheduler.api('GET', `/v1/runs/${bigRun}`);
    expect(shown.body).toMatchObject({ status: 'SUCCEEDED', resultStored: { bytes: 200_000 }, result: resultOf(200_000) });
    const jobId = shown.body.jobId as string;
    const listed = await scheduler.api('GET', `/v1/runs?limit=100`);
    const inList = (runId: string) => (listed.body.items as Record<string, unknown>[]).find((one) => one.runId === runId);
    // Over 64 KiB: its size alone in a list; within it, the result.
    expect(inList(bigRun)).toMatchObject({ resultStored: { bytes: 200_000 } });
    expect(inList(bigRun)).not.toHaveProperty('result');
    expect(inList(ended.steps.medium.runId)).toMatchObject({ resultStored: { bytes: 30_000 }, result: resultOf(30_000) });
    expect(jobId).toContain('.big');
  });

  it('ends a step DEAD whose payload and inputs are more than its SQS target takes, and fails the workflow run naming it', async () => {
    const { QueueUrl: queueUrl } = await awsClients().sqs.send(new CreateQueueCommand({ QueueName: `it-results-${Date.now()}` }));
    const ids = await run(scheduler, 'too-large-inputs', [
      http('one', 'big-600000'),
      http('two', 'big-500000'),
      { id: 'queue', target: { kind: 'sqs', queueUrl }, retryPolicy: { maxAttempts: 3 }, dependsOn: ['one', 'two'] },
    ]);
    const ended = await workflowRun(scheduler, ids);
    expect(ended).toMatchObject({ status: 'FAILED', steps: { one: { status: 'SUCCEEDED' }, two: { status: 'SUCCEEDED' }, queue: { status: 'DEAD' } } });
    const queueRun = (await scheduler.api('GET', `/v1/runs/${ended.steps.queue.runId}`)).body;
    expect(queueRun).toMatchObject({ status: 'DEAD', attempt: 1, error: { code: 'INPUTS_TOO_LARGE', retryable: false } });
    expect(queueRun.error.message).toMatch(/more than a sqs target takes/);
  });

  it('an external step: its claim carries a parent result stored apart, it completes with a large result (over 1 MiB is a 400), and its dependant receives it', async () => {
    const ids = await run(scheduler, 'external-large', [
      http('source', 'big-50000'),
      { id: 'ext', type: 'ext-large', target: { kind: 'external' }, retryPolicy: { maxAttempts: 1 }, dependsOn: ['source'] },
      http('sink', 'sink', ['ext']),
    ]);
    const claim = await eventually(
      () => scheduler.api('POST', '/v1/workers/claim', { jobType: 'ext-large', waitSeconds: 1 }),
      (answer) => answer.status === 200,
      60_000,
    );
    expect(claim.body.results).toEqual({ source: resultOf(50_000) });
    const runId = claim.body.run.runId as string;

    const tooLarge = await scheduler.api('POST', `/v1/runs/${runId}/complete`, {
      leaseToken: claim.body.leaseToken,
      result: resultOf(MAX_STORED_STEP_RESULT_BYTES + 1),
    });
    expect(tooLarge.status).toBe(400);
    expect(tooLarge.body.errors[0]).toMatchObject({ path: 'result', message: expect.stringContaining(`at most ${MAX_STORED_STEP_RESULT_BYTES} bytes`) });
    expect((await runItem(runId)).status).toBe('RUNNING');

    const completed = await scheduler.api('POST', `/v1/runs/${runId}/complete`, {
      leaseToken: claim.body.leaseToken,
      result: resultOf(MAX_STORED_STEP_RESULT_BYTES, 'e'),
    });
    expect(completed.status, JSON.stringify(completed.body).slice(0, 300)).toBe(200);
    expect(completed.body).toMatchObject({ status: 'SUCCEEDED', resultStored: { bytes: MAX_STORED_STEP_RESULT_BYTES } });
    expect(completed.body.result).toEqual(resultOf(MAX_STORED_STEP_RESULT_BYTES, 'e'));
    expect((await workflowRun(scheduler, ids)).status).toBe('SUCCEEDED');
    expect(bodyOf(callOf(ids.workflowRunId, 'sink')!).results).toEqual({ ext: resultOf(MAX_STORED_STEP_RESULT_BYTES, 'e') });
  });

  it("ends a dependant DEAD with PAYLOAD_MISSING when a parent's result object is gone, and offers the next claim nothing", async () => {
    const ids = await run(scheduler, 'missing-result', [
      http('source', 'big-20000'),
      { id: 'ext', type: 'ext-missing', target: { kind: 'external' }, retryPolicy: { maxAttempts: 3 }, dependsOn: ['source'] },
    ]);
    const started = await workflowRun(scheduler, ids, (body) => body.steps?.ext?.status === 'STARTED');
    const key = (await runItem(started.steps.source.runId)).resultRef.key as string;
    await scheduler.clients.s3.send(new DeleteObjectCommand({ Bucket: bucket(), Key: key }));

    const claim = await scheduler.api('POST', '/v1/workers/claim', { jobType: 'ext-missing', waitSeconds: 1 });
    expect(claim.status, JSON.stringify(claim.body).slice(0, 400)).toBe(204);
    const ended = await workflowRun(scheduler, ids);
    expect(ended).toMatchObject({ status: 'FAILED', steps: { ext: { status: 'DEAD' } } });
    expect((await scheduler.api('GET', `/v1/runs/${ended.steps.ext.runId}`)).body).toMatchObject({
      status: 'DEAD',
      error: { code: 'PAYLOAD_MISSING', retryable: false },
      reason: "a dependency's result is no longer stored",
    });
    // The run whose object is gone still shows, with its size.
    expect((await scheduler.api('GET', `/v1/runs/${started.steps.source.runId}`)).body).toMatchObject({ status: 'SUCCEEDED', resultStored: { bytes: 20_000 } });
  });

  it('deletes the stored result of an attempt whose lease was lost before its outcome was written', async () => {
    const ids = await run(scheduler, 'fenced-result', [{ id: 'ext', type: 'ext-fenced', target: { kind: 'external' }, retryPolicy: { maxAttempts: 1 } }]);
    const claim = await eventually(
      () => scheduler.api('POST', '/v1/workers/claim', { jobType: 'ext-fenced', waitSeconds: 1 }),
      (answer) => answer.status === 200,
      60_000,
    );
    const runId = claim.body.run.runId as string;
    const leased = (await scheduler.deps.runs.get(runId))!;
    const job = (await scheduler.deps.jobs.getAnyTenant(leased.jobId))!;
    const prefix = `runs/${scheduler.tenantId}/${leased.jobId}/`;
    // An attempt under an older lease (version) is fenced: nothing is written, and its object is deleted.
    // As the worker records it (its requests are the worker's, for the grants check).
    const outcome = await asFunction('worker:default', () =>
      recordOutcome(scheduler.deps, job, { ...leased, version: leased.version - 1 }, 1, { ok: true, detail: 'late' }, Date.now(), null, {
        result: resultOf(10_000),
      }),
    );
    expect(outcome.recorded).toBe('fenced');
    expect(await keysUnder(prefix)).toEqual([]);
    expect((await runItem(runId)).status).toBe('RUNNING');
    // The lease's own attempt stores its result.
    const completed = await scheduler.api('POST', `/v1/runs/${runId}/complete`, { leaseToken: claim.body.leaseToken, result: resultOf(10_000) });
    expect(completed.body).toMatchObject({ status: 'SUCCEEDED', resultStored: { bytes: 10_000 } });
    expect(await keysUnder(prefix)).toHaveLength(1);
    expect((await workflowRun(scheduler, ids)).status).toBe('SUCCEEDED');
  });

  it("an external job's run (not a step): a 100 KB result is stored apart and shown by the run and its job; without a bucket 64 KiB holds", async () => {
    const complete = async (on: Scheduler, type: string, result: unknown) => {
      const created = await on.api('POST', '/v1/jobs', { name: `${type}-${Date.now()}`, type, schedule: { kind: 'now' }, target: { kind: 'external' } });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const claim = await eventually(
        () => on.api('POST', '/v1/workers/claim', { jobType: type, waitSeconds: 1 }),
        (answer) => answer.status === 200,
        60_000,
      );
      return {
        jobId: created.body.job.jobId as string,
        claim,
        completed: await on.api('POST', `/v1/runs/${claim.body.run.runId}/complete`, { leaseToken: claim.body.leaseToken, result }),
      };
    };
    const { jobId, completed } = await complete(scheduler, 'ext-plain-large', resultOf(100_000));
    expect(completed.status, JSON.stringify(completed.body).slice(0, 300)).toBe(200);
    expect(completed.body).toMatchObject({ status: 'SUCCEEDED', resultStored: { bytes: 100_000 } });
    expect((await runItem(completed.body.runId)).resultRef).toMatchObject({ bytes: 100_000 });
    // Over 64 KiB: the job's recent runs show its size; the run itself shows the result.
    const job = await scheduler.api('GET', `/v1/jobs/${jobId}`);
    expect(job.body.recentRuns[0]).toMatchObject({ runId: completed.body.runId, resultStored: { bytes: 100_000 } });
    expect(job.body.recentRuns[0]).not.toHaveProperty('result');
    expect((await scheduler.api('GET', `/v1/runs/${completed.body.runId}`)).body.result).toEqual(resultOf(100_000));

    const small = await complete(scheduler, 'ext-plain-small', resultOf(10_000));
    expect((await scheduler.api('GET', `/v1/jobs/${small.jobId}`)).body.recentRuns[0]).toMatchObject({
      resultStored: { bytes: 10_000 },
      result: resultOf(10_000),
    });

    const kept = await complete(bucketless, 'ext-plain-bucketless', resultOf(64 * 1024 + 1));
    expect(kept.completed.status).toBe(400);
    expect(kept.completed.body.errors[0]).toMatchObject({
      path: 'result',
      message: expect.stringContaining(`a run's result must be at most ${64 * 1024} bytes`),
    });
    const fits = await bucketless.api('POST', `/v1/runs/${kept.claim.body.run.runId}/complete`, {
      leaseToken: kept.claim.body.leaseToken,
      result: resultOf(64 * 1024),
    });
    expect(fits.body).toMatchObject({ status: 'SUCCEEDED', result: resultOf(64 * 1024) });
    expect(fits.body).not.toHaveProperty('resultStored');
  });

  it('keeps 4 KiB without a payload bucket: a larger answer fails the step with RESULT_TOO_LARGE', async () => {
    const ids = await run(bucketless, 'bucketless-results', [http('fits', `big-${MAX_STEP_RESULT_BYTES}`), http('over', `big-${MAX_STEP_RESULT_BYTES + 1}`)]);
    const ended = await workflowRun(bucketless, ids);
    expect(ended).toMatchObject({ status: 'FAILED', steps: { fits: { status: 'SUCCEEDED' }, over: { status: 'DEAD' } } });
    expect((await bucketless.api('GET', `/v1/runs/${ended.steps.fits.runId}`)).body.result).toEqual(resultOf(MAX_STEP_RESULT_BYTES));
    expect((await bucketless.api('GET', `/v1/runs/${ended.steps.over.runId}`)).body.error).toMatchObject({
      code: 'RESULT_TOO_LARGE',
      message: `a step's result is at most ${MAX_STEP_RESULT_BYTES} bytes of JSON (got ${MAX_STEP_RESULT_BYTES + 1})`,
    });
  });
});
