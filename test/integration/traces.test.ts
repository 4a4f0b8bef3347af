// Traces: the W3C traceparent of the request that makes a run travels with it. Its HTTP target gets
// the trace id with a span of each attempt's own, its SQS target gets it in the envelope, and every
// log line of the run's processing carries the trace id.
import { randomBytes, randomUUID } from 'node:crypto';
import { CreateQueueCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogCapture } from './support/log-capture';
import { captureLogs } from './support/log-capture';
import type { Scheduler, TargetServer } from './harness';
import { awsClients, eventually, jobBody, startScheduler, startTarget } from './harness';

type RunBody = Record<string, any>;
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;

describe('traces', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  let logs: LogCapture;

  beforeAll(async () => {
    logs = captureLogs('DEBUG');
    // Runs due within 2 s go straight to the queue; later ones wait for the ticker.
    scheduler = await startScheduler({ tuning: { nearHorizonSeconds: 2 } });
    let flaky = 0;
    let stepFailures = 0;
    target = await startTarget((call) => {
      if (call.path.endsWith('/step-fails-once') && stepFailures++ === 0) return { status: 500, headers: { 'x-retryable': 'false' } };
      return { status: call.path.endsWith('/flaky') && flaky++ === 0 ? 503 : 200 };
    });
  });
  afterAll(async () => {
    logs.stop();
    await scheduler.stop();
    await target.stop();
  });

  const runsOf = async (jobId: string): Promise<RunBody[]> =>
    ((await scheduler.api('GET', `/v1/jobs/${jobId}/runs?limit=10`)).body.items as RunBody[]).sort((a, b) => a.attempt - b.attempt);

  it("carries the request's trace id to every attempt's call, a span each, and onto every log line of the run", async () => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(`${target.url}/flaky`, { retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 } }),
      { traceparent: `00-${traceId}-${callerSpan}-01` },
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const jobId = created.body.job.jobId as string;
    const runs = await eventually(
      () => runsOf(jobId),
      (items) => items.some((run) => run.status === 'SUCCEEDED'),
      30_000,
    );
    expect(runs.map((run) => run.status)).toEqual(['FAILED', 'SUCCEEDED']);
    for (const run of runs) expect(run.traceparent).toBe(`00-${traceId}-${callerSpan}-01`);

    // At the target: the same trace id, a new span per attempt (neither the caller's).
    const calls = target.calls.filter((call) => call.headers['x-job-id'] === jobId);
    expect(calls).toHaveLength(2);
    const received = calls.map((call) => TRACEPARENT.exec(String(call.headers.traceparent)));
    expect(received.map((match) => match?.[1])).toEqual([traceId, traceId]);
    const spans = received.map((match) => match![2]);
    expect(new Set([...spans, callerSpan]).size).toBe(3);

    // In the logs: every line that names one of the run's ids carries its trace id, and there are
    // lines from the API (created, queued) and the worker (started, finished) among them.
    const runIds = new Set(runs.map((run) => run.runId as string));
    const lines = logs.records().filter((line) => runIds.has(String(line.runId)) || runIds.has(String(line.retryRunId)));
    expect(lines.map((line) => line.message)).toEqual(expect.arrayContaining(['run created', 'run queued', 'run started', 'run finished']));
    expect(lines.filter((line) => line.traceId !== traceId)).toEqual([]);
    // Nor does any other line mention the runs without the trace id.
    const mentioning = logs.lines.filter((line) => [...runIds].some((runId) => line.includes(runId)));
    expect(mentioning.filter((line) => !line.includes(`"traceId":"${traceId}"`))).toEqual([]);
  });

  it("carries a workflow start's trace to every step run, and a retry's to the steps it starts; every log line naming them carries it", async () => {
    const started = { traceId: randomBytes(16).toString('hex'), span: randomBytes(8).toString('hex') };
    const retried = { traceId: randomBytes(16).toString('hex'), span: randomBytes(8).toString('hex') };
    const created = await scheduler.api('POST', '/v1/workflows', {
      name: `traced-${randomUUID().slice(0, 8)}`,
      steps: [
        { id: 'a', target: { kind: 'http', url: `${target.url}/a` } },
        { id: 'b', target: { kind: 'http', url: `${target.url}/step-fails-once` }, dependsOn: ['a'], retryPolicy: { maxAttempts: 1 } },
        { id: 'c', target: { kind: 'http', url: `${target.url}/c` }, dependsOn: ['b'] },
      ],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const workflowId = created.body.workflowId as string;
    const start = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`, undefined, { traceparent: `00-${started.traceId}-${started.span}-01` });
    expect(start.status, JSON.stringify(start.body)).toBe(202);
    expect(start.body.traceparent).toBe(`00-${started.traceId}-${started.span}-01`);
    const path = `/v1/workflows/${workflowId}/runs/${start.body.workflowRunId}`;
    const failed = await eventually(
      () => scheduler.api('GET', path),
      (answer) => answer.body.status === 'FAILED',
      30_000,
    );
    const retry = await scheduler.api('POST', `${path}/retry`, undefined, { traceparent: `00-${retried.traceId}-${retried.span}-01` });
    expect(retry.status, JSON.stringify(retry.body)).toBe(202);
    const done = await eventually(
      () => scheduler.api('GET', path),
      (answer) => answer.body.status === 'SUCCEEDED',
      30_000,
    );

    // The step runs: the start's trace for a and the first b, the retry's for the second b and c.
    const traceOf = async (runId: string) => TRACEPARENT.exec((await scheduler.api('GET', `/v1/runs/${runId}`)).body.traceparent)?.[1];
    const runs: { a: string; b1: string; b2: string; c: string } = {
      a: failed.body.steps.a.runId,
      b1: failed.body.steps.b.runId,
      b2: done.body.steps.b.runId,
      c: done.body.steps.c.runId,
    };
    expect([await traceOf(runs.a), await traceOf(runs.b1), await traceOf(runs.b2), await traceOf(runs.c)]).toEqual([
      started.traceId,
      started.traceId,
      retried.traceId,
      retried.traceId,
    ]);
    // At the targets: each call in its trace, a span of its own.
    const callTrace = (suffix: string) =>
      target.calls
        .filter((call) => call.path.endsWith(suffix) && call.body.includes(workflowId))
        .map((call) => TRACEPARENT.exec(String(call.headers.traceparent))?.[1]);
    expect(callTrace('/a')).toEqual([started.traceId]);
    expect(callTrace('/step-fails-once')).toEqual([started.traceId, retried.traceId]);
    expect(callTrace('/c')).toEqual([retried.traceId]);

    // The logs: every line naming a step run carries its run's trace id; every line naming the workflow run one of the two.
    const expected = new Map<string, string>([
      [runs.a, started.traceId],
      [runs.b1, started.traceId],
      [runs.b2, retried.traceId],
      [runs.c, retried.traceId],
    ]);
    const stepLines = logs.records().filter((line) => expected.has(String(line.runId)));
    expect(stepLines.map((line) => line.message)).toEqual(expect.arrayContaining(['run created', 'run started', 'run finished']));
    expect(stepLines.filter((line) => line.traceId !== expected.get(String(line.runId)))).toEqual([]);
    const workflowLines = logs.records().filter((line) => line.workflowRunId === start.body.workflowRunId);
    expect(workflowLines.map((line) => line.message)).toEqual(expect.arrayContaining(['workflow run started', 'workflow run ended', 'workflow run retried']));
    expect(workflowLines.filter((line) => line.traceId !== started.traceId && line.traceId !== retried.traceId)).toEqual([]);
    const mentioning = logs.lines.filter((line) => [...expected.keys()].some((runId) => line.includes(runId)));
    expect(mentioning.filter((line) => !line.includes(`"traceId":"${started.traceId}"`) && !line.includes(`"traceId":"${retried.traceId}"`))).toEqual([]);
  });

  it('keeps the trace id on the log lines of a run the ticker releases', async () => {
    const traceId = randomBytes(16).toString('hex');
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: { kind: 'delay', seconds: 4 } }), {
      traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const jobId = created.body.job.jobId as string;
    expect((await runsOf(jobId))[0]!.status).toBe('SCHEDULED');
    await scheduler.runtime.tickNow();
    const [run] = await eventually(
      () => runsOf(jobId),
      (items) => items[0]?.status === 'SUCCEEDED',
      30_000,
    );
    const call = target.calls.find((c) => c.headers['x-run-id'] === run!.runId);
    expect(TRACEPARENT.exec(String(call?.headers.traceparent))?.[1]).toBe(traceId);
    const lines = logs.records().filter((line) => line.runId === run!.runId);
    expect(lines.map((line) => line.message)).toEqual(expect.arrayContaining(['run created', 'run queued', 'run started', 'run finished']));
    expect(lines.filter((line) => line.traceId !== traceId)).toEqual([]);
  });

  it('starts a new trace for a request without a traceparent, or with an invalid one (not an error)', async () => {
    const invalid = [
      undefined,
      'garbage',
      `00-${'0'.repeat(32)}-${randomBytes(8).toString('hex')}-01`,
      `ff-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`,
    ];
    const traceIds = new Set<string>();
    for (const traceparent of invalid) {
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url), traceparent === undefined ? {} : { traceparent });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const [run] = await eventually(
        () => runsOf(created.body.job.jobId),
        (items) => items[0]?.status === 'SUCCEEDED',
        30_000,
      );
      const match = TRACEPARENT.exec(run!.traceparent);
      expect(match, run!.traceparent).not.toBeNull();
      expect(match![1]).not.toBe('0'.repeat(32));
      traceIds.add(match![1]!);
    }
    expect(traceIds.size).toBe(invalid.length);
  });

  it("puts the attempt's traceparent in the envelope of an SQS target", async () => {
    const { QueueUrl: queueUrl } = await awsClients().sqs.send(new CreateQueueCommand({ QueueName: `it-trace-${randomUUID().slice(0, 8)}` }));
    const traceId = randomBytes(16).toString('hex');
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { target: { kind: 'sqs', queueUrl } }), {
      traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const received = await eventually(
      async () =>
        (await awsClients().sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 1, MessageAttributeNames: ['All'] }))).Messages ?? [],
      (messages) => messages.length > 0,
      30_000,
    );
    const envelope = JSON.parse(received[0]!.Body!);
    expect(TRACEPARENT.exec(envelope.traceparent)?.[1]).toBe(traceId);
    expect(received[0]!.MessageAttributes?.traceparent?.StringValue).toBe(envelope.traceparent);
  });
});
