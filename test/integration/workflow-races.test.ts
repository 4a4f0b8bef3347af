// Workflow runs under races and crashes: two workers finishing a step's last two dependencies at
// once, and a worker that dies between a step's outcome and the start of its dependants. The
// workers here are two sets of dependencies over the same tables and queues (as two Lambda
// containers), driven one message at a time; the runtime's own pollers are off.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SchedulerDeps } from '../../lambdas/app/deps';
import type { Scheduler, TargetServer } from './harness';
import { beforeFirstCall } from './support/before-first-call';
import { drainDispatch as drainQueue, eventually, executeRun, startScheduler, startTarget, tick } from './harness';
import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { runKey, workflowRunKey } from '../../lambdas/store/keys';
import { repairWorkflowRun } from '../../lambdas/app/workflow-repair';
import { continueWorkflow } from '../../lambdas/app/workflow-progress';
import { cancelWorkflowRun, retryWorkflowRun, startWorkflowRun } from '../../lambdas/app/workflow-runs';

describe('workflow runs under races', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  /** Calls wait here until `expected` of them arrived, then all answer at once. */
  let barrier: { expected: number; waiting: (() => void)[] } = { expected: 0, waiting: [] };
  /** Calls of a step id wait for its gate, if it has one, and then fail once if it is listed. */
  const gates = new Map<string, Promise<void>>();
  const failOnce = new Set<string>();

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
    target = await startTarget(async (call) => {
      if (barrier.expected > 0) {
        await new Promise<void>((resolve) => {
          barrier.waiting.push(resolve);
          if (barrier.waiting.length >= barrier.expected) for (const release of barrier.waiting.splice(0)) release();
        });
      }
      const id = call.path.split('/').pop()!;
      await gates.get(id);
      if (failOnce.delete(id)) return { status: 500 };
      return { status: 200, body: JSON.stringify({ step: call.path.slice(1) }) };
    });
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  const step = (id: string, dependsOn: string[] = []) => ({
    id,
    target: { kind: 'http', url: `${target.url}/${id}` },
    retryPolicy: { maxAttempts: 1 },
    dependsOn,
  });

  async function startRun(name: string, steps: unknown[]): Promise<{ workflowId: string; workflowRunId: string; path: string }> {
    const created = await scheduler.api('POST', '/v1/workflows', { name, steps });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const workflowId = created.body.workflowId as string;
    const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
    expect(started.status).toBe(202);
    return { workflowId, workflowRunId: started.body.workflowRunId, path: `/v1/workflows/${workflowId}/runs/${started.body.workflowRunId}` };
  }

  /** Time passing: the workflow run's last progress (its check-back) moves back past the grace period. */
  async function agePastGrace(path: string): Promise<void> {
    const [, , , workflowId, , workflowRunId] = path.split('/');
    const at = new Date(Date.now() - (scheduler.config.redeliveryGraceSeconds + 5) * 1000).toISOString();
    await scheduler.clients.dynamo.send(
      new UpdateCommand({
        TableName: scheduler.config.jobsTable,
        Key: workflowRunKey(workflowId!, workflowRunId!),
        UpdateExpression: 'SET nextRunAt = :at',
        ExpressionAttributeValues: { ':at': at },
      }),
    );
  }

  const runIdOf = async (path: string, stepId: string): Promise<string> => (await scheduler.api('GET', path)).body.steps[stepId].runId as string;

  /** Receives every waiting dispatch message, and answers the run ids they carry. */
  const drainDispatch = async (): Promise<string[]> => drainQueue(scheduler);

  it('two steps finishing at once on two workers start their common dependant exactly once', async () => {
    const workers = [scheduler.workerDeps('worker-1'), scheduler.workerDeps('worker-2')];
    for (let round = 0; round < 3; round++) {
      const { path } = await startRun(`fan-in-${round}`, [step('left'), step('right'), step('join', ['left', 'right'])]);
      const [left, right] = [await runIdOf(path, 'left'), await runIdOf(path, 'right')];
      expect((await drainDispatch()).sort()).toEqual([left, right].sort());

      barrier = { expected: 2, waiting: [] };
      expect(await Promise.all([executeRun(workers[0]!, left), executeRun(workers[1]!, right)])).toEqual(['succeeded', 'succeeded']);
      barrier = { expected: 0, waiting: [] };

      const join = await runIdOf(path, 'join');
      // One claim won: one run of the step, one message for it.
      expect(await drainDispatch()).toEqual([join]);
      expect(await executeRun(workers[round % 2]!, join)).toBe('succeeded');
      const run = (await scheduler.api('GET', path)).body;
      expect(run.status).toBe('SUCCEEDED');
      expect(target.calls.filter((call) => call.path.endsWith('/join'))).toHaveLength(round + 1);
    }
  });

  /** A worker that dies right after it recorded a step's outcome: every later read or write of a workflow or its runs fails. */

  function dyingAfterOutcome(deps: SchedulerDeps): SchedulerDeps {
    const killed = { get: () => () => Promise.reject(new Error('worker killed')) };
    // The read of its workflow run before the step runs (decision 0190) comes before the outcome.
    const readsBefore = {
      get: (runs: SchedulerDeps['workflowRuns'], property: string | symbol) =>
        property === 'getRunShared' ? runs.getRunShared.bind(runs) : () => Promise.reject(new Error('worker killed')),
    };
    return { ...deps, workflows: new Proxy(deps.workflows, killed), workflowRuns: new Proxy(deps.workflowRuns, readsBefore) };
  }

  it('a worker that dies between a step outcome and its dependants leaves nothing stuck: the ticker repairs it', async () => {
    const { path } = await startRun('killed', [step('first'), step('second', ['first'])]);
    const first = await runIdOf(path, 'first');
    expect(await drainDispatch()).toEqual([first]);

    expect(await executeRun(dyingAfterOutcome(scheduler.workerDeps('worker-killed')), first)).toBe('succeeded');
    expect((await scheduler.api('GET', `/v1/runs/${first}`)).body.status).toBe('SUCCEEDED');
    const stuck = (await scheduler.api('GET', path)).body;
    expect(stuck.steps.first.status).toBe('STARTED');
    expect(stuck.steps.second.status).toBe('WAITING');
    expect(await drainDispatch()).toEqual([]);

    // A tick soon after does not touch it; one past the grace period repairs it.
    await tick(scheduler.workerDeps('ticker'));
    expect((await scheduler.api('GET', path)).body.steps.second.status).toBe('WAITING');
    await agePastGrace(path);
    const report = await tick(scheduler.workerDeps('ticker'));
    expect(report.repairedJobs).toBeGreaterThanOrEqual(1);
    const repaired = (await scheduler.api('GET', path)).body;
    expect(repaired.steps.first).toMatchObject({ status: 'SUCCEEDED', runId: first });
    expect(repaired.steps.second.status).toBe('STARTED');
    const second = repaired.steps.second.runId as string;
    expect(await drainDispatch()).toEqual([second]);

    expect(await executeRun(scheduler.workerDeps('worker-1'), second)).toBe('succeeded');
    expect((await scheduler.api('GET', path)).body.status).toBe('SUCCEEDED');
  });

  it('two repairs of the same stopped run at once (two tickers) start the common dependant once', async () => {
    for (let round = 0; round < 3; round++) {
      const { path } = await startRun(`double-repair-${round}`, [step('left'), step('right'), step('join', ['left', 'right'])]);
      const [left, right] = [await runIdOf(path, 'left'), await runIdOf(path, 'right')];
      await drainDispatch();
      // Both workers die after their outcomes: neither step is recorded on the workflow run.
      await Promise.all([
        executeRun(dyingAfterOutcome(scheduler.workerDeps('worker-a')), left),
        executeRun(dyingAfterOutcome(scheduler.workerDeps('worker-b')), right),
      ]);
      await agePastGrace(path);
      await Promise.all([tick(scheduler.workerDeps('ticker-1')), tick(scheduler.workerDeps('ticker-2'))]);
      const join = await runIdOf(path, 'join');
      expect(await drainDispatch()).toEqual([join]);
      expect(await executeRun(scheduler.workerDeps('worker-1'), join)).toBe('succeeded');
      expect((await scheduler.api('GET', path)).body.status).toBe('SUCCEEDED');
    }
  });

  it('two continuations of the same outcome at once (a duplicate delivery, a repair beside the worker) start the dependant once', async () => {
    for (let round = 0; round < 3; round++) {
      const { path } = await startRun(`double-continue-${round}`, [step('left'), step('right'), step('join', ['left', 'right'])]);
      const [left, right] = [await runIdOf(path, 'left'), await runIdOf(path, 'right')];
      await drainDispatch();
      expect(await executeRun(scheduler.workerDeps('worker-a'), left)).toBe('succeeded');
      expect(await executeRun(dyingAfterOutcome(scheduler.workerDeps('worker-b')), right)).toBe('succeeded');
      expect(await drainDispatch()).toEqual([]);
      const ended = (await scheduler.deps.runs.get(right))!;
      await Promise.all([
        continueWorkflow(scheduler.workerDeps('worker-1'), ended, { status: 'SUCCEEDED' }),
        continueWorkflow(scheduler.workerDeps('worker-2'), ended, { status: 'SUCCEEDED' }),
      ]);
      const join = await runIdOf(path, 'join');
      expect(await drainDispatch()).toEqual([join]);
      expect(await executeRun(scheduler.workerDeps('worker-1'), join)).toBe('succeeded');
      expect((await scheduler.api('GET', path)).body.status).toBe('SUCCEEDED');
    }
  });

  it("a cancel after a step's run succeeded but before its outcome was recorded: the cancel records it, and a retry does not run it again", async () => {
    const { workflowId, workflowRunId, path } = await startRun('cancel-unrecorded', [step('first'), step('second', ['first'])]);
    const first = await runIdOf(path, 'first');
    expect(await drainDispatch()).toEqual([first]);
    // The worker dies after the run's outcome, before the workflow run records it.
    expect(await executeRun(dyingAfterOutcome(scheduler.workerDeps('worker-killed')), first)).toBe('succeeded');
    expect((await scheduler.api('GET', path)).body.steps.first.status).toBe('STARTED');

    expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/cancel`)).status).toBe(200);
    const cancelled = (await scheduler.api('GET', path)).body;
    expect(cancelled.status).toBe('CANCELLED');
    expect(cancelled.steps.first).toMatchObject({ status: 'SUCCEEDED', runId: first });
    expect(cancelled.steps.second.status).toBe('NOT_STARTED');

    const retried = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/retry`);
    expect(retried.status, JSON.stringify(retried.body)).toBe(202);
    expect(retried.body.steps.first).toMatchObject({ status: 'SUCCEEDED', runId: first });
    const second = await runIdOf(path, 'second');
    expect(await drainDispatch()).toEqual([second]);
    expect(await executeRun(scheduler.workerDeps('worker-1'), second)).toBe('succeeded');
    expect((await scheduler.api('GET', path)).body.status).toBe('SUCCEEDED');
    expect(target.calls.filter((call) => call.headers['x-run-id'] === first)).toHaveLength(1);
  });

  it("a cancel whose write a step's claim refused (the run moved on between its read and its write) is made again from a fresh read", async () => {
    const { workflowId, workflowRunId, path } = await startRun('cancel-again', [step('first'), step('second', ['first'])]);
    const first = await runIdOf(path, 'first');
    expect(await drainDispatch()).toEqual([first]);
    let moved = false;
    // The first step ends and claims the second after the cancel read the run.
    const movedUnder = beforeFirstCall(scheduler.workerDeps('api-cancel'), 'workflowRuns', 'finish', async () => {
      moved = true;
      expect(await executeRun(scheduler.workerDeps('worker-1'), first)).toBe('succeeded');
    });
    const cancelled = await cancelWorkflowRun(movedUnder, scheduler.tenantId, workflowId, workflowRunId);
    expect(moved).toBe(true);
    expect(cancelled.status).toBe('CANCELLED');
    const run = (await scheduler.api('GET', path)).body;
    expect(run.status).toBe('CANCELLED');
    expect(run.steps.first).toMatchObject({ status: 'SUCCEEDED', runId: first });
    // Claimed and sent before the cancel's second write, its run is cancelled with the workflow run.
    expect(run.steps.second.status).toBe('CANCELLED');
    expect((await scheduler.api('GET', `/v1/runs/${run.steps.second.runId as string}`)).body.status).toBe('CANCELLED');
    await drainDispatch();
  });

  it('a cancel or a retry that loses every write to contention answers 429 (try again), not 409; a retry another made first is a 409', async () => {
    const { workflowId, workflowRunId, path } = await startRun('contended', [step('first'), step('second', ['first'])]);
    const first = await runIdOf(path, 'first');
    expect(await drainDispatch()).toEqual([first]);
    /** Deps whose `workflowRuns[method]` always loses its condition, the run left as it is. */
    const losing = (method: 'finish' | 'retry'): SchedulerDeps => {
      const deps = scheduler.workerDeps('api-contended');
      const lose = async (run: { workflowId: string; workflowRunId: string }) => ({
        held: false,
        run: await deps.workflowRuns.getRun(run.workflowId, run.workflowRunId),
      });
      return { ...deps, workflowRuns: Object.assign(Object.create(deps.workflowRuns) as SchedulerDeps['workflowRuns'], { [method]: lose }) };
    };
    await expect(cancelWorkflowRun(losing('finish'), scheduler.tenantId, workflowId, workflowRunId)).rejects.toMatchObject({
      status: 429,
      headers: { 'retry-after': '1' },
    });
    expect((await scheduler.api('GET', path)).body.status).toBe('RUNNING');
    expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/cancel`)).status).toBe(200);
    await expect(retryWorkflowRun(losing('retry'), scheduler.tenantId, workflowId, workflowRunId)).rejects.toMatchObject({ status: 429 });
    // Another retry wrote first: the run is RUNNING again, which a retry cannot take.
    const retriedFirst = scheduler.workerDeps('api-retried-first');
    const beaten = beforeFirstCall(retriedFirst, 'workflowRuns', 'retry', async () => {
      expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/retry`)).status).toBe(202);
    });
    await expect(retryWorkflowRun(beaten, scheduler.tenantId, workflowId, workflowRunId)).rejects.toMatchObject({ status: 409 });
    await drainDispatch();
  });

  it("a cancel that finds a step's attempt failed and its retry written since its read cancels the retry", async () => {
    const { workflowId, workflowRunId, path } = await startRun('cancel-retry', [
      { ...step('flaky'), retryPolicy: { maxAttempts: 2, initialDelaySeconds: 1 } },
      step('after', ['flaky']),
    ]);
    const flaky = await runIdOf(path, 'flaky');
    expect(await drainDispatch()).toEqual([flaky]);
    let open: () => void = () => undefined;
    gates.set('flaky', new Promise<void>((resolve) => (open = resolve)));
    failOnce.add('flaky');
    // The attempt runs, held at its call: the cancel reads it RUNNING. (Its call, not its lease: a
    // cancel between the two is honoured before the call, decision 0190.)
    const running = executeRun(scheduler.workerDeps('worker-1'), flaky);
    await eventually(
      () => Promise.resolve(target.calls.filter((call) => call.path.endsWith('/flaky')).length),
      (calls) => calls === 1,
      30_000,
    );
    let raced = false;
    // Before the cancel's write, the attempt fails and its retry is written with its outcome.
    const racedUnder = beforeFirstCall(scheduler.workerDeps('api-cancel'), 'leases', 'cancelRunning', async () => {
      raced = true;
      open();
      expect(await running).toBe('failed');
    });
    expect((await cancelWorkflowRun(racedUnder, scheduler.tenantId, workflowId, workflowRunId)).status).toBe('CANCELLED');
    expect(raced).toBe(true);
    const run = (await scheduler.api('GET', path)).body;
    expect(run.steps.flaky).toMatchObject({ status: 'CANCELLED', attempt: 2 });
    const retry = run.steps.flaky.runId as string;
    expect(retry).not.toBe(flaky);
    expect((await scheduler.api('GET', `/v1/runs/${retry}`)).body.status).toBe('CANCELLED');
    gates.delete('flaky');
    await drainDispatch();
  });

  /** Deps whose `runs.retirePending` fails (a store error while a cancel retires the steps' queued runs). */
  function retireFails(deps: SchedulerDeps): SchedulerDeps {
    return {
      ...deps,
      runs: Object.assign(Object.create(deps.runs) as typeof deps.runs, { retirePending: () => Promise.reject(new Error('store unavailable')) }),
    };
  }

  it("a cancel that failed after its end's write is finished by a repeated cancel: no step runs after it", async () => {
    const { workflowId, workflowRunId, path } = await startRun('cancel-unfinished', [step('uf-a'), step('uf-b')]);
    const [a, b] = [await runIdOf(path, 'uf-a'), await runIdOf(path, 'uf-b')];
    expect((await drainDispatch()).sort()).toEqual([a, b].sort());
    await expect(cancelWorkflowRun(retireFails(scheduler.workerDeps('api-fails')), scheduler.tenantId, workflowId, workflowRunId)).rejects.toThrow(
      'store unavailable',
    );
    expect((await scheduler.api('GET', path)).body.status).toBe('CANCELLED');

    const again = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/cancel`);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.steps['uf-a']).toMatchObject({ status: 'CANCELLED', runId: a });
    expect(again.body.steps['uf-b']).toMatchObject({ status: 'CANCELLED', runId: b });
    for (const runId of [a, b]) {
      expect((await scheduler.api('GET', `/v1/runs/${runId}`)).body.status).toBe('CANCELLED');
      await executeRun(scheduler.workerDeps('worker-1'), runId);
    }
    expect(target.calls.filter((call) => call.path.endsWith('/uf-a') || call.path.endsWith('/uf-b'))).toHaveLength(0);
    // Settled: its check-back is gone, and a third cancel is a conflict as before.
    expect(
      (await scheduler.clients.dynamo.send(new GetCommand({ TableName: scheduler.config.jobsTable, Key: workflowRunKey(workflowId, workflowRunId) }))).Item
        ?.nextRunAt,
    ).toBeUndefined();
    expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/cancel`)).status).toBe(409);
  });

  it("a cancel that stopped after its end's write keeps the run's check-back: a tick a minute on cancels the started steps' runs", async () => {
    const { workflowId, workflowRunId, path } = await startRun('cancel-stopped', [step('st-a'), step('st-b')]);
    const [a, b] = [await runIdOf(path, 'st-a'), await runIdOf(path, 'st-b')];
    expect((await drainDispatch()).sort()).toEqual([a, b].sort());
    await expect(cancelWorkflowRun(retireFails(scheduler.workerDeps('api-dies')), scheduler.tenantId, workflowId, workflowRunId)).rejects.toThrow(
      'store unavailable',
    );

    // Not raced while a cancel may still be under way; a tick a minute on repairs it.
    await tick(scheduler.workerDeps('ticker'));
    expect((await scheduler.api('GET', `/v1/runs/${a}`)).body.status).toBe('QUEUED');
    const report = await tick(scheduler.workerDeps('ticker', () => Date.now() + 90_000));
    expect(report.repairedJobs).toBeGreaterThanOrEqual(1);
    const run = (await scheduler.api('GET', path)).body;
    expect(run.status).toBe('CANCELLED');
    expect(run.steps['st-a']).toMatchObject({ status: 'CANCELLED', runId: a });
    expect(run.steps['st-b']).toMatchObject({ status: 'CANCELLED', runId: b });
    for (const runId of [a, b]) {
      expect((await scheduler.api('GET', `/v1/runs/${runId}`)).body.status).toBe('CANCELLED');
      await executeRun(scheduler.workerDeps('worker-1'), runId);
    }
    expect(target.calls.filter((call) => call.path.endsWith('/st-a') || call.path.endsWith('/st-b'))).toHaveLength(0);
    expect(
      (await scheduler.clients.dynamo.send(new GetCommand({ TableName: scheduler.config.jobsTable, Key: workflowRunKey(workflowId, workflowRunId) }))).Item
        ?.nextRunAt,
    ).toBeUndefined();
  });

  it("a retry of a run whose cancel stopped before cancelling a step's run mid-call finishes the cancel first: the old attempt is cancelled before the new one is written", async () => {
    const { workflowId, workflowRunId, path } = await startRun('retry-half-cancelled', [step('hc-a')]);
    const older = await runIdOf(path, 'hc-a');
    expect(await drainDispatch()).toEqual([older]);
    let open: () => void = () => undefined;
    gates.set('hc-a', new Promise<void>((resolve) => (open = resolve)));
    let running: ReturnType<typeof executeRun> | undefined;
    try {
      // The step's attempt 1 runs, held at its call.
      running = executeRun(scheduler.workerDeps('worker-1'), older);
      await eventually(
        () => Promise.resolve(target.calls.filter((call) => call.path.endsWith('/hc-a')).length),
        (calls) => calls === 1,
        30_000,
      );
      // The cancel writes the workflow run CANCELLED, then its cancel of the running step's run fails.
      const api = scheduler.workerDeps('api-fails');
      const failing: SchedulerDeps = {
        ...api,
        leases: Object.assign(Object.create(api.leases) as typeof api.leases, { cancelRunning: () => Promise.reject(new Error('store unavailable')) }),
      };
      await expect(cancelWorkflowRun(failing, scheduler.tenantId, workflowId, workflowRunId)).rejects.toThrow('store unavailable');
      expect((await scheduler.api('GET', path)).body).toMatchObject({ status: 'CANCELLED', steps: { 'hc-a': { status: 'STARTED', runId: older } } });
      expect((await scheduler.api('GET', `/v1/runs/${older}`)).body.status).toBe('RUNNING');

      // A retry whose cancels of that run keep being refused (as when it keeps moving under them) does
      // not start the step beside it: 429, try again, and nothing written.
      const refusing: SchedulerDeps = {
        ...api,
        leases: Object.assign(Object.create(api.leases) as typeof api.leases, { cancelRunning: () => Promise.resolve(false) }),
      };
      await expect(retryWorkflowRun(refusing, scheduler.tenantId, workflowId, workflowRunId)).rejects.toMatchObject({
        status: 429,
        headers: { 'retry-after': '1' },
      });
      expect((await scheduler.api('GET', path)).body).toMatchObject({ status: 'CANCELLED', retries: 0, steps: { 'hc-a': { status: 'STARTED', attempt: 1 } } });
      expect((await scheduler.api('GET', `/v1/runs/${older}`)).body.status).toBe('RUNNING');

      // Retried within the minute, before the ticker's repair.
      const retried = await scheduler.api('POST', `${path}/retry`);
      expect(retried.status, JSON.stringify(retried.body)).toBe(202);
      // Before, attempt 1 ran on (RUNNING: its heartbeat looks at its run only) beside attempt 2,
      // written and sent: the target called twice at once. Now it is cancelled first (its call aborted
      // at its next heartbeat, its outcome fenced off), and recorded so on the step before the retry.
      expect((await scheduler.api('GET', `/v1/runs/${older}`)).body.status).toBe('CANCELLED');
      const newer = await runIdOf(path, 'hc-a');
      expect(newer).not.toBe(older);
      expect((await scheduler.api('GET', `/v1/runs/${newer}`)).body).toMatchObject({ attempt: 2, status: 'QUEUED' });
      open();
      expect(['fenced', 'cancelled']).toContain(await running);
      expect(await drainDispatch()).toEqual([newer]);
      expect(await executeRun(scheduler.workerDeps('worker-2'), newer)).toBe('succeeded');
      expect((await scheduler.api('GET', path)).body).toMatchObject({
        status: 'SUCCEEDED',
        retries: 1,
        steps: { 'hc-a': { status: 'SUCCEEDED', attempt: 2, runId: newer } },
      });
    } finally {
      open();
      await running?.catch(() => undefined);
      gates.delete('hc-a');
    }
  });

  it("a move or an end planned from a read before a cancel and a retry is refused: the retried run is not changed by the old run's states", async () => {
    const { workflowId, workflowRunId, path } = await startRun('stale-moves', [step('sm-a'), step('sm-b', ['sm-a'])]);
    await drainDispatch();
    // A writer (a repair, a continuation) read the run, and stalls.
    const stale = (await scheduler.deps.workflowRuns.getRun(workflowId, workflowRunId))!;
    expect(stale).toMatchObject({ status: 'RUNNING', retries: 0, steps: { 'sm-a': { status: 'STARTED' }, 'sm-b': { status: 'WAITING' } } });
    expect((await scheduler.api('POST', `${path}/cancel`)).status).toBe(200);
    expect((await scheduler.api('POST', `${path}/retry`)).status).toBe(202);
    const retried = (await scheduler.deps.workflowRuns.getRun(workflowId, workflowRunId))!;
    expect(retried).toMatchObject({ status: 'RUNNING', retries: 1, steps: { 'sm-a': { status: 'STARTED', attempt: 2 }, 'sm-b': { status: 'WAITING' } } });

    // Its writes, planned from that read, pass every other condition of the retried run (RUNNING,
    // `sm-b` WAITING again). Before, `sm-b` was ruled out and the retried run ended FAILED.
    const at = new Date().toISOString();
    const moved = await scheduler.deps.workflowRuns.moveSteps(stale, {
      'sm-b': { ...stale.steps['sm-b']!, status: 'NOT_STARTED', finishedAt: at, reason: 'dependency sm-a ended CANCELLED' },
    });
    expect(moved.held).toBe(false);
    // Refused, the run is answered as it is: its writer plans again from it.
    expect(moved.run).toMatchObject({ retries: 1, steps: { 'sm-b': { status: 'WAITING' } } });
    const ended = await scheduler.deps.workflowRuns.finish(stale, 'FAILED', ['sm-a'], Date.now());
    expect(ended.held).toBe(false);
    expect(await scheduler.deps.workflowRuns.getRun(workflowId, workflowRunId)).toEqual(retried);

    const again = retried.steps['sm-a']!.runId!;
    expect(await drainDispatch()).toEqual([again]);
    expect(await executeRun(scheduler.workerDeps('worker-1'), again)).toBe('succeeded');
    const next = await runIdOf(path, 'sm-b');
    expect(await drainDispatch()).toEqual([next]);
    expect(await executeRun(scheduler.workerDeps('worker-1'), next)).toBe('succeeded');
    expect((await scheduler.api('GET', path)).body.status).toBe('SUCCEEDED');
  });

  it("a continuation's end planned before a cancel and a retry does not end the retried run FAILED", async () => {
    const { workflowId, workflowRunId, path } = await startRun('stale-end', [step('se-a'), step('se-b', ['se-a'])]);
    const first = await runIdOf(path, 'se-a');
    expect(await drainDispatch()).toEqual([first]);
    failOnce.add('se-a');
    let raced = false;
    // The step dies; its continuation rules `se-b` out, then plans the end (FAILED). Before its end's
    // write, the run is cancelled (every step done: nothing to settle) and retried.
    const worker = beforeFirstCall(scheduler.workerDeps('worker-stale'), 'workflowRuns', 'finish', async () => {
      raced = true;
      expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/cancel`)).status).toBe(200);
      expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/retry`)).status).toBe(202);
    });
    expect(await executeRun(worker, first)).toBe('dead');
    expect(raced).toBe(true);
    // Before, the end's write (conditioned on RUNNING alone) ended the retried run FAILED, its step's
    // attempt 2 sent and running.
    const run = (await scheduler.api('GET', path)).body;
    expect(run).toMatchObject({
      status: 'RUNNING',
      retries: 1,
      failedSteps: [],
      steps: { 'se-a': { status: 'STARTED', attempt: 2 }, 'se-b': { status: 'WAITING' } },
    });
    const again = run.steps['se-a'].runId as string;
    expect(await drainDispatch()).toEqual([again]);
    expect(await executeRun(scheduler.workerDeps('worker-1'), again)).toBe('succeeded');
    const next = await runIdOf(path, 'se-b');
    expect(await drainDispatch()).toEqual([next]);
    expect(await executeRun(scheduler.workerDeps('worker-1'), next)).toBe('succeeded');
    expect((await scheduler.api('GET', path)).body).toMatchObject({ status: 'SUCCEEDED', failedSteps: [] });
  });

  it("a cancelled run that notified while a step's claimer had not written its run gives up its check-back once the repair settles that step", async () => {
    const created = await scheduler.api('POST', '/v1/workflows', {
      name: 'cancel-notified',
      steps: [step('cn-a')],
      notify: { events: ['cancelled'], destination: { kind: 'http', url: `${target.url}/hook` } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const workflowId = created.body.workflowId as string;
    const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
    const workflowRunId = started.body.workflowRunId as string;
    const path = `/v1/workflows/${workflowId}/runs/${workflowRunId}`;
    const a = await runIdOf(path, 'cn-a');
    await drainDispatch();
    // Its claimer died before it wrote the step's run: the step is STARTED with no run.
    await scheduler.clients.dynamo.send(new DeleteCommand({ TableName: scheduler.config.runsTable, Key: runKey(a) }));
    expect((await scheduler.api('POST', `${path}/cancel`)).status).toBe(200);
    const item = async () =>
      (await scheduler.clients.dynamo.send(new GetCommand({ TableName: scheduler.config.jobsTable, Key: workflowRunKey(workflowId, workflowRunId) }))).Item;
    // Its notification is made (the mark gone); the check-back stays while the step is STARTED.
    expect(await item()).toMatchObject({ nextRunAt: expect.any(String) });
    expect((await item())?.notifyEvent).toBeUndefined();

    const ticker = scheduler.workerDeps('ticker', () => Date.now() + 10 * 60_000);
    expect(await repairWorkflowRun(ticker, workflowId, workflowRunId)).toBe(true);
    expect((await scheduler.api('GET', path)).body.steps['cn-a']).toMatchObject({ status: 'NOT_STARTED' });
    // Before, it kept its check-back for good (its definition notifies), read again at every tick.
    expect((await item())?.nextRunAt).toBeUndefined();
    expect(await repairWorkflowRun(ticker, workflowId, workflowRunId)).toBe(false);
    await drainDispatch();
  });

  it("a cancel landing between a continuation's read and its write: the step's outcome is still recorded, and nothing starts", async () => {
    // A step's outcome and the claim of its dependant are one write (decision 0158). A cancel that
    // lands first refuses that write; the outcome is then written alone, as the run ended it.
    const { workflowId, workflowRunId, path } = await startRun('cancel-between', [step('first'), step('second', ['first'])]);
    const first = await runIdOf(path, 'first');
    await drainDispatch();
    let cancelled = false;
    const cancelFirst = beforeFirstCall(scheduler.workerDeps('worker-cancelled-under'), 'workflowRuns', 'moveSteps', async () => {
      cancelled = true;
      expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/cancel`)).status).toBe(200);
    });
    expect(await executeRun(cancelFirst, first)).toBe('succeeded');
    expect(cancelled).toBe(true);
    const run = (await scheduler.api('GET', path)).body;
    expect(run.status).toBe('CANCELLED');
    expect(run.steps.first).toMatchObject({ status: 'SUCCEEDED', runId: first });
    expect(run.steps.second.status).toBe('NOT_STARTED');
    expect(await drainDispatch()).toEqual([]);
  });

  it("a healthy run's progress leaves its check-back in place; a tick past the grace repairs nothing, then moves it on", async () => {
    const { workflowId, workflowRunId, path } = await startRun('healthy-long', [step('first'), step('second', ['first'])]);
    const checkBack = async (): Promise<unknown> =>
      (await scheduler.clients.dynamo.send(new GetCommand({ TableName: scheduler.config.jobsTable, Key: workflowRunKey(workflowId, workflowRunId) }))).Item
        ?.nextRunAt;
    const first = await runIdOf(path, 'first');
    await drainDispatch();
    const atStart = await checkBack();
    expect(typeof atStart).toBe('string');
    expect(await executeRun(scheduler.workerDeps('worker-1'), first)).toBe('succeeded');
    const second = await runIdOf(path, 'second');
    expect(await drainDispatch()).toEqual([second]);
    // The claim of `second` did not move the check-back (decision 0158: two index writes per step saved).
    expect(await checkBack()).toBe(atStart);

    await agePastGrace(path);
    const report = await tick(scheduler.workerDeps('ticker'));
    expect(report.repairedJobs).toBe(0);
    expect(await drainDispatch()).toEqual([]);
    const looked = (await scheduler.api('GET', path)).body;
    expect(looked.steps.second).toMatchObject({ status: 'STARTED', runId: second });
    // Looked at again a grace period from now, not at every tick.
    expect(Date.parse(String(await checkBack()))).toBeGreaterThan(Date.now() - 60_000);
    await tick(scheduler.workerDeps('ticker'));
    expect(await drainDispatch()).toEqual([]);

    expect(await executeRun(scheduler.workerDeps('worker-1'), second)).toBe('succeeded');
    expect((await scheduler.api('GET', path)).body.status).toBe('SUCCEEDED');
  });

  it('a claimed step whose run was never written (its writer died between the two) is written by the repair', async () => {
    const { path } = await startRun('claimed', [step('one'), step('two', ['one'])]);
    const one = await runIdOf(path, 'one');
    await drainDispatch();
    const worker = scheduler.workerDeps('worker-claims-then-dies');
    const dying: SchedulerDeps = {
      ...worker,
      runs: Object.assign(Object.create(worker.runs) as typeof worker.runs, { create: () => Promise.reject(new Error('worker killed')) }),
    };
    expect(await executeRun(dying, one)).toBe('succeeded');
    const claimed = (await scheduler.api('GET', path)).body;
    expect(claimed.steps.two.status).toBe('STARTED');
    expect((await scheduler.api('GET', `/v1/runs/${claimed.steps.two.runId}`)).status).toBe(404);

    await agePastGrace(path);
    await tick(scheduler.workerDeps('ticker'));
    expect(await drainDispatch()).toEqual([claimed.steps.two.runId]);
    expect(await executeRun(scheduler.workerDeps('worker-1'), claimed.steps.two.runId)).toBe('succeeded');
    expect((await scheduler.api('GET', path)).body.status).toBe('SUCCEEDED');
  });

  it('a start that stopped after its put: the roots claimed in the put (decision 0178) have their runs written by the repair', async () => {
    const created = await scheduler.api('POST', '/v1/workflows', { name: 'opened', steps: [step('root'), step('next', ['root'])] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const workflowId = created.body.workflowId as string;
    const api = scheduler.workerDeps('api-dies-after-put');
    const dying: SchedulerDeps = {
      ...api,
      runs: Object.assign(Object.create(api.runs) as typeof api.runs, { create: () => Promise.reject(new Error('api killed')) }),
    };
    // Committed, the start answers the run (202): a caller retrying an error would start a second one.
    const answered = await startWorkflowRun(dying, scheduler.tenantId, workflowId);
    expect(answered.status).toBe('RUNNING');
    const listed = (await scheduler.api('GET', `/v1/workflows/${workflowId}/runs`)).body.items as {
      workflowRunId: string;
      steps: Record<string, { status: string; runId: string }>;
    }[];
    expect(listed).toHaveLength(1);
    const opened = listed[0]!;
    expect(opened.workflowRunId).toBe(answered.workflowRunId);
    // The put claimed the root; its run was never written.
    expect(opened.steps.root!.status).toBe('STARTED');
    expect(opened.steps.next!.status).toBe('WAITING');
    expect((await scheduler.api('GET', `/v1/runs/${opened.steps.root!.runId}`)).status).toBe(404);
    expect(await drainDispatch()).toEqual([]);

    const path = `/v1/workflows/${workflowId}/runs/${opened.workflowRunId}`;
    await agePastGrace(path);
    await tick(scheduler.workerDeps('ticker'));
    expect(await drainDispatch()).toEqual([opened.steps.root!.runId]);
    expect(await executeRun(scheduler.workerDeps('worker-1'), opened.steps.root!.runId)).toBe('succeeded');
    const next = await runIdOf(path, 'next');
    expect(await drainDispatch()).toEqual([next]);
    expect(await executeRun(scheduler.workerDeps('worker-1'), next)).toBe('succeeded');
    expect((await scheduler.api('GET', path)).body.status).toBe('SUCCEEDED');
  });

  it('a retry whose steps could not be started after its write answers the run, and the repair starts them', async () => {
    const { workflowId, workflowRunId, path } = await startRun('retried-unstarted', [step('rs-once')]);
    const once = await runIdOf(path, 'rs-once');
    expect(await drainDispatch()).toEqual([once]);
    failOnce.add('rs-once');
    expect(await executeRun(scheduler.workerDeps('worker-1'), once)).toBe('dead');
    expect((await scheduler.api('GET', path)).body.status).toBe('FAILED');

    const api = scheduler.workerDeps('api-dies-after-retry');
    const dying: SchedulerDeps = {
      ...api,
      runs: Object.assign(Object.create(api.runs) as typeof api.runs, { create: () => Promise.reject(new Error('api killed')) }),
    };
    const retried = await retryWorkflowRun(dying, scheduler.tenantId, workflowId, workflowRunId);
    expect(retried).toMatchObject({ status: 'RUNNING', retries: 1 });
    const claimed = (await scheduler.api('GET', path)).body;
    expect(claimed.steps['rs-once'].status).toBe('STARTED');
    const again = claimed.steps['rs-once'].runId as string;
    expect((await scheduler.api('GET', `/v1/runs/${again}`)).status).toBe(404);
    expect(await drainDispatch()).toEqual([]);

    await agePastGrace(path);
    await tick(scheduler.workerDeps('ticker'));
    expect(await drainDispatch()).toEqual([again]);
    expect(await executeRun(scheduler.workerDeps('worker-1'), again)).toBe('succeeded');
    expect((await scheduler.api('GET', path)).body.status).toBe('SUCCEEDED');
  });
});
