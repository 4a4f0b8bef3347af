// The lambda target against MiniStack, which runs Node functions as local processes (moto cannot
// invoke a function without Docker). MiniStack is started on a port of its own; the scheduler's
// tables and queues stay in the emulator (AWS_ENDPOINT_URL) and only the lambda target's client
// points at MiniStack (LAMBDA_ENDPOINT_URL in a deployment's local mode). The function appends
// every event it receives to a file, so the test reads what the target saw.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CreateFunctionCommand, GetFunctionCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fencingTokenOf } from '../../lambdas/domain/delivery';
import { occurrenceKey } from '../../lambdas/domain/run';
import type { TargetEnvelope } from '../../lambdas/targets/envelope';
import type { MiniStack } from '../../scripts/local/ministack';
import { startMiniStack } from '../../scripts/local/ministack';
import type { Scheduler } from './harness';
import { awsClients, eventually, startScheduler } from './harness';
import { zipFiles } from './support/zip';

type RunBody = Record<string, any>;

const HANDLER = `
const fs = require('node:fs');
exports.handler = async (event) => {
  fs.appendFileSync(process.env.RECORD_FILE, JSON.stringify(event) + '\\n');
  const mode = event.payload && event.payload.mode;
  if (mode === 'flaky' && event.attempt === 1) throw new Error('the ledger service is busy');
  if (mode === 'permanent') throw new Error('[permanent] invoice 42 does not exist');
  return { done: true };
};
`;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('lambda target against MiniStack', () => {
  let ministack: MiniStack;
  let scheduler: Scheduler;
  let functionArn: string;
  let dir: string;
  const recordFile = () => path.join(dir, 'events.jsonl');
  const received = (): TargetEnvelope[] => {
    try {
      return readFileSync(recordFile(), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as TargetEnvelope);
    } catch {
      return [];
    }
  };

  beforeAll(async () => {
    awsClients(); // the emulator's region and credentials, which MiniStack accepts too
    dir = mkdtempSync(path.join(tmpdir(), 'lambda-target-'));
    ministack = await startMiniStack(await freePort());
    const lambda = new LambdaClient({ endpoint: ministack.endpoint });
    const created = await lambda.send(
      new CreateFunctionCommand({
        FunctionName: 'invoice-worker',
        Runtime: 'nodejs20.x',
        Role: 'arn:aws:iam::000000000000:role/invoice-worker',
        Handler: 'index.handler',
        Timeout: 10,
        Code: { ZipFile: zipFiles({ 'index.js': HANDLER }) },
        Environment: { Variables: { RECORD_FILE: recordFile() } },
      }),
    );
    functionArn = created.FunctionArn as string;
    await eventually(
      async () => (await lambda.send(new GetFunctionCommand({ FunctionName: 'invoice-worker' }))).Configuration?.State,
      (state) => state === 'Active',
    );
    scheduler = await startScheduler({ lambdaEndpoint: ministack.endpoint });
  }, 240_000); // the first run installs MiniStack
  afterAll(async () => {
    await scheduler?.stop();
    await ministack?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function runJob(payload: Record<string, unknown>, delivery = 'at-least-once'): Promise<{ jobId: string; runs: RunBody[] }> {
    const created = await scheduler.api('POST', '/v1/jobs', {
      name: `lambda-${String(payload.mode)}`,
      type: 'invoices',
      schedule: { kind: 'now' },
      target: { kind: 'lambda', functionArn },
      payload,
      delivery,
      retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const jobId = created.body.job.jobId as string;
    const runs = await eventually(
      async () => ((await scheduler.api('GET', `/v1/jobs/${jobId}/runs`)).body.items as RunBody[]).sort((a, b) => a.attempt - b.attempt),
      (items) => items.some((run) => run.status === 'SUCCEEDED' || run.status === 'DEAD'),
      30_000,
    );
    return { jobId, runs };
  }

  it('invokes the function synchronously with the envelope: job, run, attempt, idempotency key, fencing token, payload', async () => {
    const { jobId, runs } = await runJob({ mode: 'ok', invoice: 42 }, 'exactly-once');
    expect(runs.map((run) => run.status)).toEqual(['SUCCEEDED']);
    const events = received().filter((event) => event.job.jobId === jobId);
    expect(events).toHaveLength(1);
    expect(events[0]).toEqual({
      scheduler: 'job-scheduler/1',
      job: { jobId, name: 'lambda-ok', type: 'invoices', delivery: 'exactly-once' },
      run: { runId: runs[0]!.runId, attempt: 1, scheduledFor: runs[0]!.scheduledFor, trigger: 'schedule' },
      attempt: 1,
      idempotencyKey: occurrenceKey(jobId, runs[0]!.scheduledFor),
      fencingToken: fencingTokenOf({ attempt: 1, version: runs[0]!.version }),
      // The run's trace, a span of this attempt's own (decision 0111).
      traceparent: expect.stringMatching(new RegExp(`^00-${String(runs[0]!.traceparent).split('-')[1]}-[0-9a-f]{16}-01$`)),
      payload: { mode: 'ok', invoice: 42 },
    });
    expect(events[0]!.traceparent).not.toBe(runs[0]!.traceparent);
    expect(await scheduler.deps.leases.effectOf(occurrenceKey(jobId, runs[0]!.scheduledFor))).toMatchObject({ runId: runs[0]!.runId });
  });

  it('a function error is a retryable failure: the next attempt gets the same key and a higher token', async () => {
    const { jobId, runs } = await runJob({ mode: 'flaky' });
    expect(runs.map((run) => [run.attempt, run.status, run.error?.code ?? null, run.error?.retryable ?? null])).toEqual([
      [1, 'FAILED', 'LAMBDA_FUNCTION_ERROR', true],
      [2, 'SUCCEEDED', null, null],
    ]);
    expect(runs[0]!.error.message).toContain('the ledger service is busy');
    const events = received().filter((event) => event.job.jobId === jobId);
    expect(events.map((event) => event.attempt)).toEqual([1, 2]);
    expect(new Set(events.map((event) => event.idempotencyKey)).size).toBe(1);
    expect(events[1]!.fencingToken).toBeGreaterThan(events[0]!.fencingToken);
  });

  it('a function error the function marks permanent ends the run DEAD after one call', async () => {
    const { jobId, runs } = await runJob({ mode: 'permanent' });
    expect(runs.map((run) => [run.attempt, run.status])).toEqual([[1, 'DEAD']]);
    expect(runs[0]!.error).toMatchObject({ code: 'LAMBDA_FUNCTION_ERROR', retryable: false });
    expect(received().filter((event) => event.job.jobId === jobId)).toHaveLength(1);
  });
});
