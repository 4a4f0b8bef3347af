// Traces: the W3C traceparent of the request that makes a run travels with it. Its HTTP target gets
// the trace id with a span of each attempt's own, its SQS target gets it in the envelope, and every
// log line of the run's processing carries the trace id: also a run's notifications, a run that
// waits for its concurrency key or its tenant's in-flight slot, a debounced trigger's run, a
// backfill's runs, and the lines of messages whose run or notification cannot be read.
import { randomBytes, randomUUID } from 'node:crypto';
import { CreateQueueCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeps } from '../../lambdas/app/deps';
import { runIdFor } from '../../lambdas/domain/run';
import { createAwsClients } from '../../lambdas/store/aws';
import { encodeDispatchMessage } from '../../lambdas/store/dispatch-queue';
import { processDispatchBatch } from '../../lambdas/worker/adapter';
import type { LogCapture } from './support/log-capture';
import { captureLogs } from './support/log-capture';
import type { Scheduler, TargetServer } from './harness';
import { awsClients, eventually, jobBody, startScheduler, startTarget } from './harness';

type RunBody = Record<string, any>;
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;
/** Runs and notifications are tried by the workers of a loaded machine: generous, never a claim on speed. */
const WAIT_MS = 60_000;

function newTrace(): { traceId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  return { traceId, traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` };
}

/** Every captured line (structured or not) that names one of the runs, without the trace id on it. */
function untraced(logs: LogCapture, runIds: readonly string[], traceId: string): string[] {
  return logs.lines.filter((line) => runIds.some((runId) => line.includes(runId)) && !line.includes(`"traceId":"${traceId}"`));
}

/** The messages of the structured lines that name one of the runs. */
function messagesAbout(logs: LogCapture, runIds: readonly string[]): string[] {
  return logs
    .records()
    .filter((line) => runIds.includes(String(line.runId)))
    .map((line) => String(line.message));
}

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

  it("keeps the trace id on the lines of a run's notifications: made, a failed try, sent, and one refused for good", async () => {
    const hooks = await startTarget((call) => {
      if (call.path.endsWith('/refuse')) return { status: 400 };
      // Each notification's first try fails: it is tried again after 5 s, on its own budget. Its tries
      // are told apart by the body's notification id (unsigned, they carry no webhook-id header).
      const idOf = (one: { body: string }) => (JSON.parse(one.body) as { notificationId?: string }).notificationId;
      return { status: hooks.calls.filter((other) => idOf(other) === idOf(call)).length === 1 ? 503 : 200 };
    });
    try {
      const [sent, refused] = [newTrace(), newTrace()];
      const create = async (path: string, trace: { traceparent: string }) => {
        const created = await scheduler.api(
          'POST',
          '/v1/jobs',
          jobBody(target.url, { notify: { events: ['succeeded'], destination: { kind: 'http', url: `${hooks.url}/${path}` } } }),
          { traceparent: trace.traceparent },
        );
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        return created.body.job.nextRunId as string;
      };
      const sentRun = await create('flaky', sent);
      const refusedRun = await create('refuse', refused);
      const [sentRecord, refusedRecord] = await Promise.all(
        [sentRun, refusedRun].map((runId) =>
          eventually(
            () => scheduler.deps.notifications.get(runId, 'succeeded'),
            (record) => record !== null && record.status !== 'PENDING',
            WAIT_MS,
          ),
        ),
      );
      expect([sentRecord?.status, refusedRecord?.status]).toEqual(['SENT', 'DEAD']);
      // At the target: each run's call carries its trace.
      for (const [runId, trace] of [
        [sentRun, sent],
        [refusedRun, refused],
      ] as const) {
        expect(TRACEPARENT.exec(String(target.calls.find((c) => c.headers['x-run-id'] === runId)?.headers.traceparent))?.[1]).toBe(trace.traceId);
      }

      expect(messagesAbout(logs, [sentRun])).toEqual(
        expect.arrayContaining(['run finished', 'notification made', 'notification try failed; tried again later', 'notification sent']),
      );
      expect(messagesAbout(logs, [refusedRun])).toEqual(
        expect.arrayContaining(['notification made', 'notification dead: its budget is spent or its destination refused it']),
      );
      expect(untraced(logs, [sentRun], sent.traceId)).toEqual([]);
      expect(untraced(logs, [refusedRun], refused.traceId)).toEqual([]);
    } finally {
      await hooks.stop();
    }
  });

  it("keeps the trace id on a debounced trigger's run: the trace of the trigger that opened the window", async () => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: { kind: 'cron', expression: '0 0 1 1 *' } }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const jobId = created.body.job.jobId as string;
    const [opening, joining] = [newTrace(), newTrace()];
    const first = await scheduler.api('POST', `/v1/jobs/${jobId}/trigger`, { debounceSeconds: 2 }, { traceparent: opening.traceparent });
    const second = await scheduler.api('POST', `/v1/jobs/${jobId}/trigger`, { debounceSeconds: 2 }, { traceparent: joining.traceparent });
    expect([first.status, second.status]).toEqual([202, 202]);
    const runId = first.body.run.runId as string;
    expect(second.body.run.runId).toBe(runId);
    expect(TRACEPARENT.exec(String(first.body.run.traceparent))?.[1]).toBe(opening.traceId);

    await eventually(
      async () => (await scheduler.api('GET', `/v1/runs/${runId}`)).body.status as string,
      (status) => status === 'SUCCEEDED',
      WAIT_MS,
    );
    const call = target.calls.find((c) => c.headers['x-run-id'] === runId);
    expect(TRACEPARENT.exec(String(call?.headers.traceparent))?.[1]).toBe(opening.traceId);
    expect(messagesAbout(logs, [runId])).toEqual(
      expect.arrayContaining(['debounce window opened', 'trigger coalesced into the open window', 'run started', 'run finished']),
    );
    expect(untraced(logs, [runId], opening.traceId)).toEqual([]);
    // The joining request's trace says where it went.
    const coalesced = logs.records().find((line) => line.runId === runId && line.message === 'trigger coalesced into the open window');
    expect(coalesced?.requestTraceId).toBe(joining.traceId);
  });

  it("puts a backfill's runs in the trace of the request that asked for it", async () => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: { kind: 'cron', expression: '* * * * *' } }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const jobId = created.body.job.jobId as string;
    // One fire time: a page's runs are spread over the ticker's minute, and one is due at once.
    const from = Math.floor(Date.now() / 60_000) * 60_000 - 3 * 60_000;
    const trace = newTrace();
    const requested = await scheduler.api(
      'POST',
      `/v1/jobs/${jobId}/backfill`,
      { from: new Date(from).toISOString(), to: new Date(from + 60_000).toISOString() },
      { traceparent: trace.traceparent },
    );
    expect(requested.status, JSON.stringify(requested.body)).toBe(202);
    expect(requested.body.backfill.total).toBe(1);
    await scheduler.runtime.tickNow();
    const runId = runIdFor(jobId, new Date(from).toISOString(), 1);
    const run = await eventually(
      async () => (await scheduler.api('GET', `/v1/runs/${runId}`)).body,
      (body) => body?.status === 'SUCCEEDED',
      WAIT_MS,
    );
    expect(TRACEPARENT.exec(String(run.traceparent))?.[1]).toBe(trace.traceId);
    const call = target.calls.find((c) => c.headers['x-run-id'] === runId);
    expect(TRACEPARENT.exec(String(call?.headers.traceparent))?.[1]).toBe(trace.traceId);
    expect(messagesAbout(logs, [runId])).toEqual(expect.arrayContaining(['run created', 'run started', 'run finished']));
    expect(untraced(logs, [runId], trace.traceId)).toEqual([]);
  });

  it('keeps the trace id on the lines of messages whose run or notification cannot be read', async () => {
    const missing = { trace: newTrace(), runId: `job_${randomUUID().slice(0, 8)}.missing.1` };
    const notified = { trace: newTrace(), runId: `job_${randomUUID().slice(0, 8)}.unnotified.1` };
    const failing = { trace: newTrace(), runId: `job_${randomUUID().slice(0, 8)}.unreadable.1` };
    const record = (body: string, id: string) => ({
      messageId: id,
      receiptHandle: id,
      body,
      attributes: { ApproximateReceiveCount: '1', SentTimestamp: '0', SenderId: 'test', ApproximateFirstReceiveTimestamp: '0' },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:none',
      awsRegion: 'us-east-1',
    });
    // A run that does not exist, and a notification that does not: dropped, with the message's trace.
    await processDispatchBatch(scheduler.deps, {
      Records: [
        record(encodeDispatchMessage(missing.runId, { tenantId: scheduler.tenantId, traceparent: missing.trace.traceparent }), 'm1'),
        record(encodeDispatchMessage(notified.runId, { tenantId: scheduler.tenantId, notify: 'dead', traceparent: notified.trace.traceparent }), 'm2'),
      ],
    });
    // A message the worker cannot process at all (its store unreachable): the error line keeps the trace.
    const unreachable = createDeps(scheduler.config, createAwsClients('http://127.0.0.1:9'), { workerId: 'unreachable', metricSink: () => undefined });
    const answer = await processDispatchBatch(unreachable, {
      Records: [record(encodeDispatchMessage(failing.runId, { tenantId: scheduler.tenantId, traceparent: failing.trace.traceparent }), 'm3')],
    });
    expect(answer.batchItemFailures).toEqual([{ itemIdentifier: 'm3' }]);

    expect(messagesAbout(logs, [missing.runId])).toEqual(['dispatch message for a run that does not exist; dropped']);
    expect(messagesAbout(logs, [notified.runId])).toEqual(['notification message for a notification that does not exist; dropped']);
    expect(messagesAbout(logs, [failing.runId])).toEqual(['dispatch message failed; it will be delivered again']);
    for (const { runId, trace } of [missing, notified, failing]) expect(untraced(logs, [runId], trace.traceId)).toEqual([]);
  });
});

describe('traces of runs that wait', () => {
  let target: TargetServer;
  let logs: LogCapture;

  beforeAll(async () => {
    logs = captureLogs('DEBUG');
    target = await startTarget(async () => {
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      return { status: 200 };
    });
  });
  afterAll(async () => {
    logs.stop();
    await target.stop();
  });

  /** Two slow runs at once, each of its own trace, that cannot both start: the second waits. */
  async function twoRunsThatContend(scheduler: Scheduler, overrides: Record<string, unknown>) {
    const traces = [newTrace(), newTrace()];
    const created = await Promise.all(
      traces.map((trace) => scheduler.api('POST', '/v1/jobs', jobBody(target.url, overrides), { traceparent: trace.traceparent })),
    );
    expect(created.map((answer) => answer.status)).toEqual([201, 201]);
    const runIds = created.map((answer) => answer.body.job.nextRunId as string);
    await eventually(
      () => Promise.all(runIds.map(async (runId) => (await scheduler.api('GET', `/v1/runs/${runId}`)).body.status as string)),
      (statuses) => statuses.every((status) => status === 'SUCCEEDED'),
      WAIT_MS,
    );
    return runIds.map((runId, i) => ({ runId, traceId: traces[i]!.traceId }));
  }

  it('keeps the trace id on the lines of a run that waits for its concurrency key', async () => {
    const scheduler = await startScheduler({ workerConcurrency: 4 });
    try {
      const runs = await twoRunsThatContend(scheduler, { concurrency: { key: `traced-${randomUUID().slice(0, 8)}`, limit: 1 } });
      const messages = runs.flatMap(({ runId }) => messagesAbout(logs, [runId]));
      expect(messages).toContain('run waits for its key');
      for (const { runId, traceId } of runs) {
        expect(TRACEPARENT.exec(String(target.calls.find((c) => c.headers['x-run-id'] === runId)?.headers.traceparent))?.[1]).toBe(traceId);
        expect(untraced(logs, [runId], traceId)).toEqual([]);
      }
    } finally {
      await scheduler.stop();
    }
  });

  it("keeps the trace id on the lines of a run that waits for its tenant's in-flight slot", async () => {
    const scheduler = await startScheduler({ workerConcurrency: 4, tenantLimits: { maxInFlightRuns: 1 } });
    try {
      const runs = await twoRunsThatContend(scheduler, {});
      const messages = runs.flatMap(({ runId }) => messagesAbout(logs, [runId]));
      expect(messages).toContain('run deferred: tenant at its in-flight limit');
      for (const { runId, traceId } of runs) {
        expect(TRACEPARENT.exec(String(target.calls.find((c) => c.headers['x-run-id'] === runId)?.headers.traceparent))?.[1]).toBe(traceId);
        expect(untraced(logs, [runId], traceId)).toEqual([]);
      }
    } finally {
      await scheduler.stop();
    }
  });
});
