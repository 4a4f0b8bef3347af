// Workflows end to end through the local runtime: definitions over HTTP, workflow runs whose steps
// are ordinary runs leased and called by the workers, results handed from step to step, and the
// operations on a workflow run. The targets record the order of their calls.
import { randomUUID } from 'node:crypto';
import { CreateQueueCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scheduler, TargetCall, TargetServer } from './harness';
import { eventually, startScheduler, startTarget } from './harness';

interface StepBody {
  readonly payload: unknown;
  readonly workflow: { workflowId: string; workflowRunId: string; stepId: string; version: number };
  readonly results: Record<string, unknown>;
}

const stepOf = (call: TargetCall): string => call.path.split('/').pop() ?? '';
const bodyOf = (call: TargetCall): StepBody => JSON.parse(call.body) as StepBody;

describe('workflows', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  /** Steps whose calls answer 500 (not retryable), by name; and calls held until released. */
  const failing = new Set<string>();
  const held = new Map<string, () => void>();

  beforeAll(async () => {
    // A short lease margin: a step's heartbeat comes every third of its lease, so a cancel reaches a
    // running step (timeoutSeconds 6: a beat every 2.7 s) within seconds.
    scheduler = await startScheduler({ workerConcurrency: 4, tuning: { leaseMarginSeconds: 2 } });
    target = await startTarget(async (call) => {
      const step = stepOf(call);
      if (step.startsWith('slow')) await new Promise<void>((resolve) => held.set(step, resolve));
      if (failing.has(step)) return { status: 500, headers: { 'x-retryable': 'false' } };
      return { status: 200, body: JSON.stringify({ from: step, payload: bodyOf(call).payload }) };
    });
  });
  afterAll(async () => {
    for (const release of held.values()) release();
    await scheduler.stop();
    await target.stop();
  });

  const step = (id: string, dependsOn: string[] = [], extra: Record<string, unknown> = {}) => ({
    id,
    target: { kind: 'http', url: `${target.url}/${typeof extra.path === 'string' ? extra.path : id}` },
    payload: { step: id },
    retryPolicy: { maxAttempts: 1 },
    dependsOn,
    ...Object.fromEntries(Object.entries(extra).filter(([key]) => key !== 'path')),
  });

  async function create(name: string, steps: unknown[]): Promise<string> {
    const created = await scheduler.api('POST', '/v1/workflows', { name, steps });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.workflowId as string;
  }

  async function start(workflowId: string): Promise<string> {
    const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    return started.body.workflowRunId as string;
  }

  async function finished(workflowId: string, workflowRunId: string, timeoutMs = 30_000) {
    const response = await eventually(
      () => scheduler.api('GET', `/v1/workflows/${workflowId}/runs/${workflowRunId}`),
      (answer) => answer.body.status !== 'RUNNING',
      timeoutMs,
    );
    return response.body;
  }

  const callsOf = (workflowRunId: string) => target.calls.filter((call) => bodyOf(call).workflow?.workflowRunId === workflowRunId);

  it('runs a diamond: A first, B and C after it, D once both are done, with their results', async () => {
    const workflowId = await create('diamond', [step('A'), step('B', ['A']), step('C', ['A']), step('D', ['B', 'C'])]);
    const workflowRunId = await start(workflowId);
    const run = await finished(workflowId, workflowRunId);
    expect(run).toMatchObject({ status: 'SUCCEEDED', version: 1, failedSteps: [] });
    for (const id of ['A', 'B', 'C', 'D']) expect(run.steps[id]).toMatchObject({ status: 'SUCCEEDED', attempt: 1, runId: expect.any(String) });

    const order = callsOf(workflowRunId).map(stepOf);
    expect(order).toHaveLength(4);
    expect(order[0]).toBe('A');
    expect(order.slice(1, 3).sort()).toEqual(['B', 'C']);
    expect(order[3]).toBe('D');
    const d = bodyOf(callsOf(workflowRunId)[3]!);
    expect(d).toEqual({
      payload: { step: 'D' },
      workflow: { workflowId, workflowRunId, stepId: 'D', version: 1 },
      results: { B: { from: 'B', payload: { step: 'B' } }, C: { from: 'C', payload: { step: 'C' } } },
    });
    // A step run is an ordinary run, with its result.
    const a = await scheduler.api('GET', `/v1/runs/${run.steps.A.runId}`);
    expect(a.body).toMatchObject({ status: 'SUCCEEDED', result: { from: 'A', payload: { step: 'A' } } });
  });

  it('fans out to 50 steps and fans in to one that runs once, with all 50 results', async () => {
    const middle = Array.from({ length: 50 }, (_, index) => step(`m${index}`, ['root']));
    const workflowId = await create('fan', [
      step('root'),
      ...middle,
      step(
        'join',
        middle.map((m) => m.id),
      ),
    ]);
    const workflowRunId = await start(workflowId);
    const run = await finished(workflowId, workflowRunId, 90_000);
    expect(run.status).toBe('SUCCEEDED');
    const order = callsOf(workflowRunId).map(stepOf);
    expect(order).toHaveLength(52);
    expect(order[0]).toBe('root');
    expect(order[51]).toBe('join');
    expect(order.filter((id) => id === 'join')).toHaveLength(1);
    expect(Object.keys(bodyOf(callsOf(workflowRunId)[51]!).results).sort()).toEqual(middle.map((m) => m.id).sort());
  }, 120_000);

  it('a failing middle step: its dependant never starts (with the reason), the cleanup step runs, the run FAILS naming it', async () => {
    failing.add('mid-fail');
    const workflowId = await create('failing', [
      step('first'),
      step('middle', ['first'], { path: 'mid-fail' }),
      step('after', ['middle']),
      step('cleanup', ['middle'], { runIf: 'all-done' }),
    ]);
    const workflowRunId = await start(workflowId);
    const run = await finished(workflowId, workflowRunId);
    expect(run).toMatchObject({ status: 'FAILED', failedSteps: ['middle'] });
    expect(run.steps.middle).toMatchObject({ status: 'DEAD', reason: expect.stringContaining('HTTP_500') });
    expect(run.steps.after).toMatchObject({ status: 'NOT_STARTED', runId: null, reason: 'dependency middle ended DEAD' });
    expect(run.steps.cleanup.status).toBe('SUCCEEDED');
    expect(callsOf(workflowRunId).map(stepOf)).toEqual(['first', 'mid-fail', 'cleanup']);
    // The cleanup step sees the results of the dependencies that succeeded: none here.
    expect(bodyOf(callsOf(workflowRunId)[2]!).results).toEqual({});

    // Retried from the failed step: `first` is not called again, its result is reused.
    failing.delete('mid-fail');
    const retried = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/retry`);
    expect(retried.status, JSON.stringify(retried.body)).toBe(202);
    expect(retried.body).toMatchObject({ status: 'RUNNING', retries: 1 });
    const after = await finished(workflowId, workflowRunId);
    expect(after).toMatchObject({ status: 'SUCCEEDED', failedSteps: [] });
    expect(after.steps.first).toEqual(run.steps.first);
    expect(after.steps.middle).toMatchObject({ status: 'SUCCEEDED', attempt: 2 });
    // Succeeded steps (the cleanup too) are not run again.
    expect(callsOf(workflowRunId).map(stepOf)).toEqual(['first', 'mid-fail', 'cleanup', 'mid-fail', 'after']);
    expect(bodyOf(callsOf(workflowRunId)[3]!).results).toEqual({ first: { from: 'first', payload: { step: 'first' } } });
    const again = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/retry`);
    expect(again.status).toBe(409);
  });

  it('a replay of a dead step, then a retry of the workflow run: the retry starts the step after the replay, and does not wait for a repair', async () => {
    failing.add('replayed-fail');
    const workflowId = await create('replay-then-retry', [step('one'), step('two', ['one'], { path: 'replayed-fail' }), step('three', ['two'])]);
    const workflowRunId = await start(workflowId);
    const failed = await finished(workflowId, workflowRunId);
    expect(failed).toMatchObject({ status: 'FAILED', failedSteps: ['two'] });
    // The dead step's run is replayed (as any dead run may be) and dies again.
    const replay = await scheduler.api('POST', `/v1/runs/${failed.steps.two.runId}/replay`);
    expect(replay.status, JSON.stringify(replay.body)).toBe(202);
    await eventually(
      () => scheduler.api('GET', `/v1/runs/${replay.body.run.runId}`),
      (answer) => answer.body.status === 'DEAD',
    );
    failing.delete('replayed-fail');
    const retried = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/retry`);
    expect(retried.status, JSON.stringify(retried.body)).toBe(202);
    // No ticker runs here: a step left waiting for the repair would never move.
    const after = await finished(workflowId, workflowRunId, 15_000);
    expect(after).toMatchObject({ status: 'SUCCEEDED', failedSteps: [] });
    expect(after.steps.two).toMatchObject({ status: 'SUCCEEDED', attempt: 3 });
    expect(after.steps.two.runId).not.toBe(replay.body.run.runId);
    expect(callsOf(workflowRunId).map(stepOf)).toEqual(['one', 'replayed-fail', 'replayed-fail', 'replayed-fail', 'three']);
  });

  it('a retry after replays that took a dead step more than 20 attempts past its own starts the step after the newest, and sends it', async () => {
    failing.add('replayed-often');
    const workflowId = await create('replayed-often', [step('often', [], { path: 'replayed-often' })]);
    const workflowRunId = await start(workflowId);
    const failed = await finished(workflowId, workflowRunId);
    expect(failed.steps.often).toMatchObject({ status: 'DEAD', attempt: 1 });
    // Replayed 25 times, each replay of the one before, each dying: its runs reach attempt 26.
    let last = failed.steps.often.runId as string;
    for (let round = 0; round < 25; round++) {
      const replay = await scheduler.api('POST', `/v1/runs/${last}/replay`);
      expect(replay.status, JSON.stringify(replay.body)).toBe(202);
      last = replay.body.run.runId as string;
      await eventually(
        () => scheduler.api('GET', `/v1/runs/${last}`),
        (answer) => answer.body.status === 'DEAD',
      );
    }
    expect((await scheduler.api('GET', `/v1/runs/${last}`)).body.attempt).toBe(26);
    failing.delete('replayed-often');
    const retried = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/retry`);
    expect(retried.status, JSON.stringify(retried.body)).toBe(202);
    // Before, the retry looked 20 attempts ahead and planned attempt 22, whose run exists: nothing was
    // written or sent, and the step sat STARTED on that old run (no ticker runs here to repair it).
    expect(retried.body.steps.often).toMatchObject({ status: 'STARTED', attempt: 27 });
    const after = await finished(workflowId, workflowRunId, 15_000);
    expect(after).toMatchObject({ status: 'SUCCEEDED', failedSteps: [] });
    expect(after.steps.often).toMatchObject({ status: 'SUCCEEDED', attempt: 27 });
    expect(callsOf(workflowRunId)).toHaveLength(27);
  });

  it('a replay of a dead step that succeeds is kept by the retry of the workflow run: the step is not called again, its dependants start', async () => {
    failing.add('replay-ok');
    const workflowId = await create('replay-succeeds', [step('one'), step('two', ['one'], { path: 'replay-ok' }), step('three', ['two'])]);
    const workflowRunId = await start(workflowId);
    const failed = await finished(workflowId, workflowRunId);
    expect(failed.status).toBe('FAILED');
    failing.delete('replay-ok');
    const replay = await scheduler.api('POST', `/v1/runs/${failed.steps.two.runId}/replay`);
    expect(replay.status).toBe(202);
    await eventually(
      () => scheduler.api('GET', `/v1/runs/${replay.body.run.runId}`),
      (answer) => answer.body.status === 'SUCCEEDED',
    );
    // The finished workflow run is not changed by the replay's outcome.
    expect((await scheduler.api('GET', `/v1/workflows/${workflowId}/runs/${workflowRunId}`)).body.status).toBe('FAILED');
    const retried = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/retry`);
    expect(retried.status).toBe(202);
    const after = await finished(workflowId, workflowRunId, 15_000);
    expect(after).toMatchObject({ status: 'SUCCEEDED' });
    expect(after.steps.two).toMatchObject({ status: 'SUCCEEDED', attempt: 2, runId: replay.body.run.runId });
    expect(callsOf(workflowRunId).map(stepOf)).toEqual(['one', 'replay-ok', 'replay-ok', 'three']);
    expect(bodyOf(callsOf(workflowRunId)[3]!).results).toEqual({ two: { from: 'replay-ok', payload: { step: 'two' } } });
  });

  it("an external step: its claims carry its parents' results (the retry's too), a result over 1 MiB is a 400 that changes nothing, and its result reaches its dependant", async () => {
    const workflowId = await create('external-step', [
      step('source'),
      { id: 'ext', type: 'ext-step', target: { kind: 'external' }, retryPolicy: { maxAttempts: 2, initialDelaySeconds: 0 }, dependsOn: ['source'] },
      step('sink', ['ext']),
    ]);
    const workflowRunId = await start(workflowId);
    const claim = () =>
      eventually(
        () => scheduler.api('POST', '/v1/workers/claim', { jobType: 'ext-step', waitSeconds: 1 }),
        (answer) => answer.status === 200,
      );
    const inputs = { workflow: { workflowId, workflowRunId, stepId: 'ext', version: 1 }, results: { source: { from: 'source', payload: { step: 'source' } } } };
    const first = await claim();
    expect(first.body).toMatchObject({ attempt: 1, ...inputs });
    const failed = await scheduler.api('POST', `/v1/runs/${first.body.run.runId}/fail`, {
      leaseToken: first.body.leaseToken,
      error: { code: 'BUSY', message: 'try later', retryable: true },
    });
    expect(failed.status, JSON.stringify(failed.body)).toBe(200);
    // The retry's claim sees the inputs the first attempt saw.
    const second = await claim();
    expect(second.body).toMatchObject({ attempt: 2, ...inputs });

    const tooLarge = await scheduler.api('POST', `/v1/runs/${second.body.run.runId}/complete`, {
      leaseToken: second.body.leaseToken,
      result: { data: 'x'.repeat(1024 * 1024) },
    });
    expect(tooLarge.status).toBe(400);
    expect(tooLarge.body.errors[0]).toMatchObject({ path: 'result', message: expect.stringContaining('at most 1048576 bytes') });
    expect((await scheduler.api('GET', `/v1/runs/${second.body.run.runId}`)).body).toMatchObject({ status: 'RUNNING' });
    expect((await scheduler.api('GET', `/v1/workflows/${workflowId}/runs/${workflowRunId}`)).body.steps.ext.status).toBe('STARTED');

    const completed = await scheduler.api('POST', `/v1/runs/${second.body.run.runId}/complete`, { leaseToken: second.body.leaseToken, result: { rows: 3 } });
    expect(completed.status, JSON.stringify(completed.body)).toBe(200);
    const run = await finished(workflowId, workflowRunId);
    expect(run).toMatchObject({ status: 'SUCCEEDED' });
    expect(bodyOf(callsOf(workflowRunId).find((call) => stepOf(call) === 'sink')!).results).toEqual({ ext: { rows: 3 } });
  });

  it('a cancel mid-run cancels the running step, and the waiting ones never start', async () => {
    const workflowId = await create('cancel', [step('first'), step('slow-step', ['first'], { timeoutSeconds: 6 }), step('last', ['slow-step'])]);
    const workflowRunId = await start(workflowId);
    await eventually(
      () => Promise.resolve(held.has('slow-step')),
      (value) => value,
    );
    const cancelled = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/cancel`);
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect(cancelled.body.status).toBe('CANCELLED');
    expect(cancelled.body.steps['slow-step'].status).toBe('CANCELLED');
    expect(cancelled.body.steps.last).toMatchObject({ status: 'NOT_STARTED', reason: 'the workflow run was cancelled' });
    const slowRun = await eventually(
      () => scheduler.api('GET', `/v1/runs/${cancelled.body.steps['slow-step'].runId}`),
      (answer) => answer.body.status === 'CANCELLED',
    );
    expect(slowRun.body.status).toBe('CANCELLED');
    // Cooperatively: the worker's next heartbeat found the run cancelled and aborted the call it was making.
    const slowCall = callsOf(workflowRunId).find((call) => stepOf(call) === 'slow-step')!;
    await eventually(
      () => Promise.resolve(slowCall.abortedAt),
      (abortedAt) => abortedAt !== undefined,
    );
    expect(slowCall.abortedAt! - slowCall.at).toBeLessThan(6_000);
    held.get('slow-step')?.();
    // The worker's call was aborted at its heartbeat or its outcome fenced; nothing else starts.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(callsOf(workflowRunId).map(stepOf)).toEqual(['first', 'slow-step']);
    const after = await scheduler.api('GET', `/v1/workflows/${workflowId}/runs/${workflowRunId}`);
    expect(after.body.status).toBe('CANCELLED');
    expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/cancel`)).status).toBe(409);

    const listed = await scheduler.api('GET', `/v1/workflows/${workflowId}/runs?status=CANCELLED`);
    expect(listed.body.items.map((item: { workflowRunId: string }) => item.workflowRunId)).toEqual([workflowRunId]);
    expect((await scheduler.api('GET', `/v1/workflows/${workflowId}/runs?status=SUCCEEDED`)).body.items).toEqual([]);
  });

  it('a new version leaves a started run on its own version', async () => {
    const workflowId = await create('versions', [step('slow-v'), step('next', ['slow-v'])]);
    const workflowRunId = await start(workflowId);
    await eventually(
      () => Promise.resolve(held.has('slow-v')),
      (value) => value,
    );
    const updated = await scheduler.api(
      'POST',
      `/v1/workflows/${workflowId}/versions`,
      { name: 'versions', steps: [step('slow-v'), step('next', ['slow-v'], { payload: { step: 'next', v: 2 } })] },
      { 'If-Match': '1' },
    );
    expect(updated.status, JSON.stringify(updated.body)).toBe(201);
    expect(updated.body.version).toBe(2);
    // A stale If-Match is a 412, as a job's is; another name is a 400 naming the field.
    expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/versions`, { name: 'versions', steps: [step('x')] }, { 'If-Match': '1' })).status).toBe(
      412,
    );
    const renamed = await scheduler.api('POST', `/v1/workflows/${workflowId}/versions`, { name: 'other-name', steps: [step('x')] });
    expect(renamed.status).toBe(400);
    expect(renamed.body.errors).toEqual([{ path: 'name', message: 'the workflow is named versions; a new version keeps the name' }]);
    held.get('slow-v')?.();
    const run = await finished(workflowId, workflowRunId);
    expect(run).toMatchObject({ status: 'SUCCEEDED', version: 1 });
    expect(bodyOf(callsOf(workflowRunId).find((call) => stepOf(call) === 'next')!).payload).toEqual({ step: 'next' });
    expect((await scheduler.api('GET', `/v1/workflows/${workflowId}?version=1`)).body.definition.steps[1].payload).toEqual({ step: 'next' });
    expect((await scheduler.api('GET', `/v1/workflows/${workflowId}`)).body.definition.steps[1].payload).toEqual({ step: 'next', v: 2 });
  });

  it('a cancelled step run (the run, not the workflow run): its dependant is NOT_STARTED with the reason, the workflow run FAILS naming it', async () => {
    const workflowId = await create('cancel-a-step', [step('slow-c'), step('after-c', ['slow-c']), step('tidy', ['slow-c'], { runIf: 'all-done' })]);
    const workflowRunId = await start(workflowId);
    await eventually(
      () => Promise.resolve(held.has('slow-c')),
      (value) => value,
    );
    const running = await scheduler.api('GET', `/v1/workflows/${workflowId}/runs/${workflowRunId}`);
    const cancelled = await scheduler.api('POST', `/v1/runs/${running.body.steps['slow-c'].runId}/cancel`);
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    const run = await finished(workflowId, workflowRunId);
    held.get('slow-c')?.();
    expect(run).toMatchObject({ status: 'FAILED', failedSteps: ['slow-c'] });
    expect(run.steps['slow-c'].status).toBe('CANCELLED');
    expect(run.steps['after-c']).toMatchObject({ status: 'NOT_STARTED', runId: null, reason: 'dependency slow-c ended CANCELLED' });
    expect(run.steps.tidy.status).toBe('SUCCEEDED');
  });

  it("a step's own retry policy: its second attempt runs with the inputs the first had, and a replay of its run too", async () => {
    let flakyCalls = 0;
    const flaky = await startTarget(() => ({ status: flakyCalls++ === 0 ? 503 : 200, body: JSON.stringify({ attempt: flakyCalls }) }));
    try {
      const workflowId = await create('step-retries', [
        step('source'),
        {
          id: 'flaky',
          target: { kind: 'http', url: `${flaky.url}/flaky` },
          retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 },
          dependsOn: ['source'],
        },
      ]);
      const workflowRunId = await start(workflowId);
      const run = await finished(workflowId, workflowRunId);
      expect(run).toMatchObject({ status: 'SUCCEEDED' });
      expect(run.steps.flaky).toMatchObject({ status: 'SUCCEEDED', attempt: 2 });
      const inputs = { source: { from: 'source', payload: { step: 'source' } } };
      const bodies = flaky.calls.map((call) => JSON.parse(call.body) as StepBody);
      expect(bodies.map((body) => body.results)).toEqual([inputs, inputs]);
      expect(bodies.map((body) => body.workflow)).toEqual([1, 2].map(() => ({ workflowId, workflowRunId, stepId: 'flaky', version: 1 })));
      // Its runs: attempt 1 FAILED (a retry followed), attempt 2 SUCCEEDED.
      const first = (await scheduler.api('GET', `/v1/runs/${run.steps.flaky.runId.replace(/\.2$/, '.1')}`)).body;
      expect(first).toMatchObject({ status: 'FAILED', attempt: 1 });

      // A replay of the step's run, later, is called with the same inputs again.
      const replay = await scheduler.api('POST', `/v1/runs/${run.steps.flaky.runId}/replay`);
      expect(replay.status, JSON.stringify(replay.body)).toBe(202);
      await eventually(
        () => scheduler.api('GET', `/v1/runs/${replay.body.run.runId}`),
        (answer) => answer.body.status === 'SUCCEEDED',
      );
      expect(flaky.calls).toHaveLength(3);
      expect((JSON.parse(flaky.calls[2]!.body) as StepBody).results).toEqual(inputs);
    } finally {
      await flaky.stop();
    }
  });

  it("an SQS step target receives the envelope with its workflow and its dependencies' results", async () => {
    const { QueueUrl: queueUrl } = await scheduler.clients.sqs.send(new CreateQueueCommand({ QueueName: `it-wf-step-${randomUUID().slice(0, 8)}` }));
    const workflowId = await create('sqs-step', [
      step('source'),
      { id: 'to-queue', target: { kind: 'sqs', queueUrl }, payload: { n: 1 }, dependsOn: ['source'] },
    ]);
    const workflowRunId = await start(workflowId);
    const run = await finished(workflowId, workflowRunId);
    expect(run.status).toBe('SUCCEEDED');
    const messages = await eventually(
      async () => (await scheduler.clients.sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 1 }))).Messages ?? [],
      (received) => received.length > 0,
    );
    const envelope = JSON.parse(messages[0]!.Body!);
    expect(envelope).toMatchObject({
      scheduler: 'job-scheduler/1',
      payload: { n: 1 },
      workflow: { workflowId, workflowRunId, stepId: 'to-queue', version: 1 },
      results: { source: { from: 'source', payload: { step: 'source' } } },
      run: { runId: run.steps['to-queue'].runId },
    });
    // An SQS step answers nothing: its dependants would see null.
    expect((await scheduler.api('GET', `/v1/runs/${run.steps['to-queue'].runId}`)).body.result).toBeUndefined();
  });

  it("lists the tenant's workflows newest first or by name, a page at a time; another tenant's are not among them; a foreign cursor is a 400", async () => {
    const names = ['list-b', 'list-a', 'list-c'];
    const ids: string[] = [];
    for (const name of names) ids.push(await create(name, [step('x')]));
    const otherKey = `key_other_${Date.now()}`;
    await scheduler.deps.apiKeys.issue(otherKey, `other-${scheduler.tenantId}`, Date.now());
    const other = await fetch(`${scheduler.runtime.url}/v1/workflows`, {
      method: 'POST',
      headers: { authorization: `Bearer ${otherKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'list-other', steps: [step('x')] }),
    });
    expect(other.status).toBe(201);

    const first = await scheduler.api('GET', '/v1/workflows?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.items.map((workflow: { workflowId: string }) => workflow.workflowId)).toEqual([ids[2], ids[1]]);
    expect(first.body.items[0]).toMatchObject({ name: 'list-c', version: 1, stepCount: 1, tenantId: scheduler.tenantId });
    expect(first.body.items[0]).not.toHaveProperty('definition');
    const second = await scheduler.api('GET', `/v1/workflows?limit=2&cursor=${first.body.nextCursor}`);
    expect(second.body.items[0].workflowId).toBe(ids[0]);
    const byName = await scheduler.api('GET', '/v1/workflows?namePrefix=list-&limit=100');
    expect(byName.body.items.map((workflow: { name: string }) => workflow.name)).toEqual(['list-a', 'list-b', 'list-c']);
    expect(byName.body.nextCursor).toBeNull();
    // A page that holds the last of them has no cursor to an empty page.
    const exactly = await scheduler.api('GET', '/v1/workflows?namePrefix=list-&limit=3');
    expect(exactly.body.items).toHaveLength(3);
    expect(exactly.body.nextCursor).toBeNull();
    const all = await scheduler.api('GET', '/v1/workflows?order=name&limit=100');
    expect(all.body.items.map((workflow: { name: string }) => workflow.name)).not.toContain('list-other');
    // A cursor of the other order, or of another tenant's list, is refused.
    expect((await scheduler.api('GET', `/v1/workflows?order=name&cursor=${first.body.nextCursor}`)).status).toBe(400);
    const foreign = (await (await fetch(`${scheduler.runtime.url}/v1/workflows?limit=1`, { headers: { authorization: `Bearer ${otherKey}` } })).json()) as {
      items: { name: string }[];
    };
    expect(foreign.items.map((workflow: { name: string }) => workflow.name)).toEqual(['list-other']);
    expect(
      (
        await scheduler.api(
          'GET',
          `/v1/workflows?limit=1&cursor=${Buffer.from(JSON.stringify({ pk: `WFLIST#other-${scheduler.tenantId}`, sk: 'C#2' })).toString('base64url')}`,
        )
      ).status,
    ).toBe(400);
  });

  it('refuses a graph with a cycle, an unknown or duplicate id, or an unreachable step, naming the step; and changes nothing', async () => {
    const refused = async (steps: unknown[]) => {
      const answer = await scheduler.api('POST', '/v1/workflows', { name: 'bad', steps });
      expect(answer.status).toBe(400);
      return (answer.body.errors as { path: string; message: string }[]).map((error) => error.message).join(' | ');
    };
    expect(await refused([step('a', ['c']), step('b', ['a']), step('c', ['b'])])).toMatch(/step a: is on a cycle/);
    expect(await refused([step('a'), step('b', ['nope'])])).toMatch(/step b: depends on unknown step nope/);
    expect(await refused([step('a'), step('a')])).toMatch(/step a: the id is used twice/);
    expect(await refused([step('a', ['b']), step('b', ['a']), step('c', ['a'])])).toMatch(/step c: is unreachable: it depends on step a/);
    expect(await refused(Array.from({ length: 101 }, (_, index) => step(`s${index}`)))).toMatch(/100/);
    expect((await scheduler.api('GET', '/v1/workflows/wf_none')).status).toBe(404);
  });

  it("a step's job is not a job of the API: reading or changing it is a 404, and nothing moves", async () => {
    const workflowId = await create('step-as-job', [step('only')]);
    const stepJobId = `${workflowId}.v1.only`;
    const calls: [string, string, unknown?][] = [
      ['GET', `/v1/jobs/${stepJobId}`],
      ['GET', `/v1/jobs/${stepJobId}/runs`],
      ['DELETE', `/v1/jobs/${stepJobId}`],
      ['PATCH', `/v1/jobs/${stepJobId}`, { timeoutSeconds: 30 }],
      ['POST', `/v1/jobs/${stepJobId}/pause`],
      ['POST', `/v1/jobs/${stepJobId}/resume`],
      ['POST', `/v1/jobs/${stepJobId}/trigger`, {}],
      ['POST', `/v1/jobs/${stepJobId}/skip`, { next: 1 }],
      ['POST', `/v1/jobs/${stepJobId}/backfill`, { from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' }],
    ];
    for (const [method, path, body] of calls) {
      const answer = await scheduler.api(method, path, body);
      expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBe(404);
    }
    expect((await scheduler.api('GET', `/v1/workflows/${workflowId}`)).body.version).toBe(1);
  });

  it('lists workflow runs in pages of up to limit matches, with no cursor after the last (a status filter read on, not cut by Limit)', async () => {
    const workflowId = await create('paging', [step('only')]);
    const started: string[] = [];
    for (let i = 0; i < 3; i++) {
      started.push(await start(workflowId));
      // Workflow run ids are by time: a millisecond apart at least.
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    for (const workflowRunId of started) expect((await finished(workflowId, workflowRunId)).status).toBe('SUCCEEDED');
    const all = await scheduler.api('GET', `/v1/workflows/${workflowId}/runs?limit=3`);
    expect(all.body.items).toHaveLength(3);
    expect(all.body.nextCursor).toBeNull();
    const first = await scheduler.api('GET', `/v1/workflows/${workflowId}/runs?status=SUCCEEDED&limit=2`);
    expect(first.body.items).toHaveLength(2);
    expect(first.body.nextCursor).not.toBeNull();
    const second = await scheduler.api('GET', `/v1/workflows/${workflowId}/runs?status=SUCCEEDED&limit=2&cursor=${first.body.nextCursor}`);
    expect(second.body.items).toHaveLength(1);
    expect(second.body.nextCursor).toBeNull();
    expect([...first.body.items, ...second.body.items].map((run: { workflowRunId: string }) => run.workflowRunId).sort()).toEqual([...started].sort());
    const none = await scheduler.api('GET', `/v1/workflows/${workflowId}/runs?status=FAILED&limit=2`);
    expect(none.body).toEqual({ items: [], nextCursor: null });
  });
});
