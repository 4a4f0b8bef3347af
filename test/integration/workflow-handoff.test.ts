// A workflow step's dependants run by the worker that ran it (decision 0179), against the emulator:
// a worker given its invocation's deadline (`eagerUntil`, as the worker function's adapter gives it)
// runs the steps its run's outcome starts itself, and sends none of them; one whose invocation ends
// too soon sends them; a handed-off run that fails before its lease is sent; and a worker that dies
// holding a handed-off run's lease leaves it to the ticker, which recovers it as a lost worker's.
// The runtime's own pollers are off: each test drives the messages itself.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SchedulerDeps } from '../../lambdas/app/deps';
import { parseStepJobId } from '../../lambdas/domain/workflow-jobs';
import type { RunPlan } from '../../lambdas/app/plan-run';
import type { Run } from '../../lambdas/domain/run';
import type { WorkflowRun } from '../../lambdas/domain/workflow-run';
import { cancelWorkflowRun } from '../../lambdas/app/workflow-runs';
import { settleCancelledSteps } from '../../lambdas/app/workflow-repair';
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { runKey } from '../../lambdas/store/keys';
import type { Scheduler, TargetServer } from './harness';
import { drainDispatch as drainQueue, executeRun, setTickerCursor, startScheduler, startTarget, tick } from './harness';

describe('workflow steps handed to the worker that ran their parent', () => {
  let scheduler: Scheduler;
  let target: TargetServer;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
    target = await startTarget((call) => Promise.resolve({ status: 200, body: JSON.stringify({ step: call.path.split('/').pop() }) }));
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  const step = (name: string, id: string, dependsOn: string[] = [], extra: Record<string, unknown> = {}) => ({
    id,
    target: { kind: 'http', url: `${target.url}/${name}/${id}` },
    retryPolicy: { maxAttempts: 1 },
    dependsOn,
    ...extra,
  });

  async function startRun(name: string, steps: unknown[]): Promise<{ path: string; tenantId: string }> {
    const created = await scheduler.api('POST', '/v1/workflows', { name, steps });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const started = await scheduler.api('POST', `/v1/workflows/${created.body.workflowId}/runs`);
    expect(started.status).toBe(202);
    return { path: `/v1/workflows/${created.body.workflowId}/runs/${started.body.workflowRunId}`, tenantId: created.body.tenantId as string };
  }

  const runIdOf = async (path: string, stepId: string): Promise<string> => (await scheduler.api('GET', path)).body.steps[stepId].runId as string;
  const callsOf = (name: string): string[] =>
    target.calls
      .filter((call) => call.path.includes(`/${name}/`))
      .map((call) => call.path.split('/').pop()!)
      .sort();

  /** Receives every waiting dispatch message, and answers the run ids they carry (sorted). */
  const drainDispatch = async (): Promise<string[]> => (await drainQueue(scheduler)).sort();

  /** A worker whose lease or outcome writes fail for the runs `fails` picks (a store fault, or the worker's death). */
  function failingFor(deps: SchedulerDeps, operation: 'lease' | 'finishAttempt', fails: (runId: string, run: Run | null) => boolean): SchedulerDeps {
    const leases = new Proxy(deps.leases, {
      get(store, property) {
        const value = Reflect.get(store, property) as unknown;
        if (typeof value !== 'function') return value;
        const method = (value as (...args: unknown[]) => unknown).bind(store);
        if (property !== operation) return method;
        return (...args: unknown[]) => {
          const run = typeof args[0] === 'string' ? null : (args[0] as Run);
          const runId = run ? run.runId : (args[0] as string);
          return fails(runId, run) ? Promise.reject(new Error('worker killed')) : method(...args);
        };
      },
    });
    return { ...deps, leases };
  }

  /** A worker that finds every tenant under an in-flight limit: a run it takes is written QUEUED and leased when run. */
  function withInFlightLimit(deps: SchedulerDeps): SchedulerDeps {
    const tenantLimits = {
      of: async (tenantId: string) => ({ ...(await deps.tenantLimits.of(tenantId)), maxInFlightRuns: 100 }),
    } as unknown as SchedulerDeps['tenantLimits'];
    return { ...deps, tenantLimits };
  }

  /** A worker whose process throws right after it recorded the named step's outcome (its dependants' runs written by then). */
  function throwingAfterOutcome(deps: SchedulerDeps, stepId: string): SchedulerDeps {
    const telemetry = new Proxy(deps.telemetry, {
      get(store, property) {
        const value = Reflect.get(store, property) as unknown;
        if (typeof value !== 'function') return value;
        const method = (value as (...args: unknown[]) => unknown).bind(store);
        if (property !== 'runFinished') return method;
        return (run: Run, ...rest: unknown[]) => {
          if (parseStepJobId(run.jobId)?.stepId === stepId) throw new Error('process fault after the outcome');
          return method(run, ...rest);
        };
      },
    });
    return { ...deps, telemetry };
  }

  /**
   * A cancel of a workflow run that writes it CANCELLED, then fails (a store error) where it ends its
   * steps' runs: `runs.retirePending` for queued ones, `leases.cancelRunning` for RUNNING ones.
   */
  async function cancelStoppingAt(store: 'runs' | 'leases', method: string, tenantId: string, workflowId: string, workflowRunId: string): Promise<void> {
    const api = scheduler.workerDeps('api');
    const failing: SchedulerDeps = {
      ...api,
      [store]: Object.assign(Object.create(api[store]) as object, { [method]: () => Promise.reject(new Error('store unavailable')) }),
    };
    await expect(cancelWorkflowRun(failing, tenantId, workflowId, workflowRunId)).rejects.toThrow('store unavailable');
  }
  const cancelStoppingBeforeSteps = (tenantId: string, workflowId: string, workflowRunId: string) =>
    cancelStoppingAt('runs', 'retirePending', tenantId, workflowId, workflowRunId);
  const cancelStoppingBeforeRunningSteps = (tenantId: string, workflowId: string, workflowRunId: string) =>
    cancelStoppingAt('leases', 'cancelRunning', tenantId, workflowId, workflowRunId);

  /**
   * A worker whose claimer reads the workflow run after writing the named step's run, and right
   * after that read `meanwhile` lands (once), as another request would.
   */
  function interruptedAfterClaimerRead(deps: SchedulerDeps, stepId: string, meanwhile: () => Promise<void>): { worker: SchedulerDeps; landed: () => boolean } {
    let written = false;
    let landed = false;
    const writing = aroundCreate(deps, async (create, plan) => {
      const made = await create();
      if (parseStepJobId(plan.run.jobId)?.stepId === stepId) written = made;
      return made;
    });
    const worker = aroundGetRun(
      writing,
      () => written && !landed,
      async (read) => {
        const before = await read();
        landed = true;
        await meanwhile();
        return before;
      },
    );
    return { worker, landed: () => landed };
  }

  const until = () => Date.now() + 900_000;

  it('a worker with time left runs the dependants itself: the whole workflow in one call, no message sent but the root', async () => {
    const { path, tenantId } = await startRun('handoff-all', [
      step('handoff-all', 'fetch'),
      step('handoff-all', 'left', ['fetch']),
      step('handoff-all', 'right', ['fetch']),
      step('handoff-all', 'join', ['left', 'right']),
    ]);
    const root = await runIdOf(path, 'fetch');
    expect(await drainDispatch()).toEqual([root]);

    expect(await executeRun(scheduler.workerDeps('worker-1'), root, { tenantId, eagerUntil: until() })).toBe('succeeded');

    const run = (await scheduler.api('GET', path)).body;
    expect(run.status).toBe('SUCCEEDED');
    expect(Object.values(run.steps).map((state) => (state as { status: string }).status)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED']);
    expect(callsOf('handoff-all')).toEqual(['fetch', 'join', 'left', 'right']);
    // The dependants' runs are runs like any: leased by this worker, each recorded once.
    for (const stepId of ['left', 'right', 'join']) {
      const stepRun = (await scheduler.api('GET', `/v1/runs/${run.steps[stepId].runId}`)).body;
      expect(stepRun).toMatchObject({ status: 'SUCCEEDED', attempt: 1, leaseOwner: 'worker-1' });
    }
    expect(await drainDispatch()).toEqual([]);
  });

  it('a worker whose invocation ends before a dependant could finish sends it instead', async () => {
    const { path, tenantId } = await startRun('handoff-late', [step('handoff-late', 'first'), step('handoff-late', 'second', ['first'])]);
    const first = await runIdOf(path, 'first');
    expect(await drainDispatch()).toEqual([first]);

    // The second step's lease is its timeout (300 s) and the margin: 20 s left is not enough.
    expect(await executeRun(scheduler.workerDeps('worker-1'), first, { tenantId, eagerUntil: Date.now() + 20_000 })).toBe('succeeded');
    const second = await runIdOf(path, 'second');
    expect(await drainDispatch()).toEqual([second]);
    expect((await scheduler.api('GET', `/v1/runs/${second}`)).body.status).toBe('QUEUED');
    expect(await executeRun(scheduler.workerDeps('worker-2'), second, { tenantId })).toBe('succeeded');
    expect((await scheduler.api('GET', path)).body.status).toBe('SUCCEEDED');
  });

  it('without a deadline (the API, the ticker, a direct call) nothing is handed off', async () => {
    const { path } = await startRun('handoff-none', [step('handoff-none', 'first'), step('handoff-none', 'second', ['first'])]);
    const first = await runIdOf(path, 'first');
    expect(await drainDispatch()).toEqual([first]);
    expect(await executeRun(scheduler.workerDeps('worker-1'), first)).toBe('succeeded');
    expect(await drainDispatch()).toEqual([await runIdOf(path, 'second')]);
  });

  it('under an in-flight limit a handed-off run is leased when run; one whose lease fails is sent to the queue, and runs from there', async () => {
    const { path, tenantId } = await startRun('handoff-fault', [step('handoff-fault', 'first'), step('handoff-fault', 'second', ['first'])]);
    const first = await runIdOf(path, 'first');
    expect(await drainDispatch()).toEqual([first]);

    const worker = failingFor(withInFlightLimit(scheduler.workerDeps('worker-1')), 'lease', (runId) => runId !== first);
    expect(await executeRun(worker, first, { tenantId, eagerUntil: until() })).toBe('succeeded');
    const second = await runIdOf(path, 'second');
    expect((await scheduler.api('GET', `/v1/runs/${second}`)).body.status).toBe('QUEUED');
    expect(await drainDispatch()).toEqual([second]);
    expect(await executeRun(scheduler.workerDeps('worker-2'), second, { tenantId })).toBe('succeeded');
    expect((await scheduler.api('GET', path)).body.status).toBe('SUCCEEDED');
  });

  it('a worker whose execution throws after the outcome gives the runs it took back, and sends them', async () => {
    const { path, tenantId } = await startRun('handoff-throws', [step('handoff-throws', 'first'), step('handoff-throws', 'second', ['first'])]);
    const first = await runIdOf(path, 'first');
    expect(await drainDispatch()).toEqual([first]);

    const worker = throwingAfterOutcome(scheduler.workerDeps('worker-1'), 'first');
    await expect(executeRun(worker, first, { tenantId, eagerUntil: until() })).rejects.toThrow('process fault after the outcome');
    const second = await runIdOf(path, 'second');
    // Written leased by worker-1, given back: QUEUED again, its message sent.
    expect((await scheduler.api('GET', `/v1/runs/${second}`)).body).toMatchObject({ status: 'QUEUED', leaseOwner: 'worker-1' });
    expect(callsOf('handoff-throws')).toEqual(['first']);
    expect(await drainDispatch()).toEqual([second]);
    expect(await executeRun(scheduler.workerDeps('worker-2'), second, { tenantId })).toBe('succeeded');
    expect((await scheduler.api('GET', path)).body.status).toBe('SUCCEEDED');
  });

  /** A worker whose writes of new runs go through `around` (which calls `create` itself, or not). */
  function aroundCreate(deps: SchedulerDeps, around: (create: () => Promise<boolean>, plan: RunPlan) => Promise<boolean>): SchedulerDeps {
    const runs = new Proxy(deps.runs, {
      get(store, property) {
        const value = Reflect.get(store, property) as unknown;
        if (typeof value !== 'function') return value;
        const method = (value as (...args: unknown[]) => unknown).bind(store);
        if (property !== 'create') return method;
        return (plan: RunPlan) => around(() => method(plan) as Promise<boolean>, plan);
      },
    });
    return { ...deps, runs };
  }

  it('a dependant whose run a cancel ended between its write and its start is not run', async () => {
    const { path, tenantId } = await startRun('handoff-cancelled', [step('handoff-cancelled', 'first'), step('handoff-cancelled', 'second', ['first'])]);
    const first = await runIdOf(path, 'first');
    expect(await drainDispatch()).toEqual([first]);

    // The run is cancelled through the API just after its write: after the cancel check that follows
    // the writes, before the worker runs it.
    const worker = aroundCreate(scheduler.workerDeps('worker-1'), async (create, plan) => {
      const written = await create();
      if (written && parseStepJobId(plan.run.jobId)?.stepId === 'second') {
        expect((await scheduler.api('POST', `/v1/runs/${plan.run.runId}/cancel`)).status).toBe(200);
      }
      return written;
    });
    expect(await executeRun(worker, first, { tenantId, eagerUntil: until() })).toBe('succeeded');
    const second = await runIdOf(path, 'second');
    expect((await scheduler.api('GET', `/v1/runs/${second}`)).body).toMatchObject({ status: 'CANCELLED' });
    expect(callsOf('handoff-cancelled')).toEqual(['first']);
    expect(await drainDispatch()).toEqual([]);
  });

  it('a dependant whose write failed is not run: its step is left to the repair', async () => {
    const { path, tenantId } = await startRun('handoff-unwritten', [step('handoff-unwritten', 'first'), step('handoff-unwritten', 'second', ['first'])]);
    const first = await runIdOf(path, 'first');
    expect(await drainDispatch()).toEqual([first]);

    const worker = aroundCreate(scheduler.workerDeps('worker-1'), (create, plan) =>
      parseStepJobId(plan.run.jobId)?.stepId === 'second' ? Promise.reject(new Error('store unavailable')) : create(),
    );
    expect(await executeRun(worker, first, { tenantId, eagerUntil: until() })).toBe('succeeded');
    const second = await runIdOf(path, 'second');
    expect((await scheduler.api('GET', `/v1/runs/${second}`)).status).toBe(404);
    expect(callsOf('handoff-unwritten')).toEqual(['first']);
    expect(await drainDispatch()).toEqual([]);
  });

  /** A worker whose reads of workflow runs go through `around` once `armed()` says so (which calls `read` itself, or not). */
  function aroundGetRun(
    deps: SchedulerDeps,
    armed: () => boolean,
    around: (read: () => Promise<WorkflowRun | null>) => Promise<WorkflowRun | null>,
  ): SchedulerDeps {
    const workflowRuns = new Proxy(deps.workflowRuns, {
      get(store, property) {
        const value = Reflect.get(store, property) as unknown;
        if (typeof value !== 'function') return value;
        const method = (value as (...args: unknown[]) => unknown).bind(store);
        if (property !== 'getRun') return method;
        return (...args: unknown[]) => {
          const read = () => method(...args) as Promise<WorkflowRun | null>;
          return armed() ? around(read) : read();
        };
      },
    });
    return { ...deps, workflowRuns };
  }

  /** A dependant claimed, then its workflow run cancelled (finding no run for it), then its run written; the claimer's read of the workflow run after it fails. */
  function cancelledBeforeWriteUnread(deps: SchedulerDeps, path: string, stepId: string): SchedulerDeps {
    let written = false;
    const cancelling = aroundCreate(deps, async (create, plan) => {
      if (parseStepJobId(plan.run.jobId)?.stepId !== stepId) return create();
      expect((await scheduler.api('POST', `${path}/cancel`)).status).toBe(200);
      written = await create();
      return written;
    });
    return aroundGetRun(
      cancelling,
      () => written,
      () => Promise.reject(new Error('store unavailable')),
    );
  }

  for (const handedOff of [false, true]) {
    it(`a dependant written after a cancel whose claimer cannot read its workflow run again is not ${handedOff ? 'run' : 'sent'}; a tick a minute on retires it`, async () => {
      const name = handedOff ? 'unread-taken' : 'unread-sent';
      const { path, tenantId } = await startRun(name, [step(name, 'first'), step(name, 'second', ['first'])]);
      const first = await runIdOf(path, 'first');
      expect(await drainDispatch()).toEqual([first]);

      const worker = cancelledBeforeWriteUnread(scheduler.workerDeps('worker-1'), path, 'second');
      expect(await executeRun(worker, first, { tenantId, ...(handedOff ? { eagerUntil: until() } : {}) })).toBe('succeeded');
      const second = await runIdOf(path, 'second');
      expect((await scheduler.api('GET', path)).body).toMatchObject({ status: 'CANCELLED', steps: { second: { status: 'STARTED' } } });
      expect((await scheduler.api('GET', `/v1/runs/${second}`)).body.status).toBe('QUEUED');
      expect(await drainDispatch()).toEqual([]);
      expect(callsOf(name)).toEqual(['first']);

      // The cancel kept the workflow run's check-back (a step still STARTED): a tick a minute on retires the run.
      await tick(scheduler.workerDeps('ticker', () => Date.now() + 90_000));
      expect((await scheduler.api('GET', `/v1/runs/${second}`)).body.status).toBe('CANCELLED');
      expect((await scheduler.api('GET', path)).body.steps.second).toMatchObject({ status: 'CANCELLED', runId: second });
      await executeRun(scheduler.workerDeps('worker-2'), second, { tenantId });
      expect(callsOf(name)).toEqual(['first']);
    });
  }

  // The cancel lands just after the claimer's read that follows the writes, and its cancel of the
  // step's run fails: written leased for the worker (RUNNING), the run is read again before it
  // starts; written QUEUED (the tenant under an in-flight limit), it is read at its lease.
  it.each([
    ['written leased', 'handoff-cancel-stopped', (deps: SchedulerDeps) => deps, cancelStoppingBeforeRunningSteps],
    ['written QUEUED under an in-flight limit', 'queued-handoff-cancel', withInFlightLimit, cancelStoppingBeforeSteps],
  ] as const)(
    'a handed-off dependant %s whose workflow run a cancel ended after the claimer read it, and which stopped before cancelling the steps, is cancelled, not run',
    async (_, name, limited, cancel) => {
      const { path, tenantId } = await startRun(name, [step(name, 'first'), step(name, 'second', ['first'])]);
      const [, , , workflowId, , workflowRunId] = path.split('/');
      const first = await runIdOf(path, 'first');
      expect(await drainDispatch()).toEqual([first]);

      const { worker, landed } = interruptedAfterClaimerRead(limited(scheduler.workerDeps('worker-1')), 'second', () =>
        cancel(tenantId, workflowId!, workflowRunId!),
      );
      expect(await executeRun(worker, first, { tenantId, eagerUntil: until() })).toBe('succeeded');
      expect(landed()).toBe(true);
      const second = await runIdOf(path, 'second');
      expect((await scheduler.api('GET', `/v1/runs/${second}`)).body.status).toBe('CANCELLED');
      expect(callsOf(name)).toEqual(['first']);
      expect(await drainDispatch()).toEqual([]);
    },
  );

  it('a step run from its queue whose workflow run a cancel ended, and which stopped before cancelling the steps, is cancelled at its lease, not run', async () => {
    const { path, tenantId } = await startRun('queued-cancel-stopped', [step('queued-cancel-stopped', 'first'), step('queued-cancel-stopped', 'second')]);
    const [, , , workflowId, , workflowRunId] = path.split('/');
    const first = await runIdOf(path, 'first');
    const second = await runIdOf(path, 'second');
    expect(await drainDispatch()).toEqual([first, second].sort());

    // The cancel writes the workflow run CANCELLED, then its cancels of the steps' runs (QUEUED) fail.
    await cancelStoppingBeforeSteps(tenantId, workflowId!, workflowRunId!);
    expect((await scheduler.api('GET', `/v1/runs/${first}`)).body.status).toBe('QUEUED');

    // Their messages come to a worker (no deadline: nothing is handed off), in one batch.
    const worker = scheduler.workerDeps('worker-1');
    expect(await Promise.all([executeRun(worker, first, { tenantId }), executeRun(worker, second, { tenantId })])).toEqual(['cancelled', 'cancelled']);
    for (const runId of [first, second]) expect((await scheduler.api('GET', `/v1/runs/${runId}`)).body.status).toBe('CANCELLED');
    expect(callsOf('queued-cancel-stopped')).toEqual([]);
    expect(await drainDispatch()).toEqual([]);
  });

  /**
   * A one-step workflow run whose cancel stopped half-way (its step's run QUEUED), retried within the
   * minute. The retry finishes the cancel first, the older attempt's run CANCELLED (decision 0142,
   * amended 2026-11-29), and starts the step at its next attempt. `writtenLate`: the older attempt's
   * run is written only after the retry, as by a claimer whose write landed after the cancel's and
   * the retry's reads (the cancel then answers 200, nothing to settle), and is left QUEUED beside
   * the newer one: the case the lease's read of the workflow run is for (decision 0190).
   */
  async function cancelledHalfWayThenRetried(
    name: string,
    { beforeRetry, writtenLate = false }: { beforeRetry?: (workflowId: string, workflowRunId: string) => Promise<void>; writtenLate?: boolean } = {},
  ) {
    const { path, tenantId } = await startRun(name, [step(name, 'only')]);
    const [, , , workflowId, , workflowRunId] = path.split('/') as [string, string, string, string, string, string];
    const older = await runIdOf(path, 'only');
    expect(await drainDispatch()).toEqual([older]);
    const runsTable = scheduler.config.runsTable;
    const item = writtenLate ? (await scheduler.clients.dynamo.send(new GetCommand({ TableName: runsTable, Key: runKey(older) }))).Item : undefined;
    if (writtenLate) {
      await scheduler.clients.dynamo.send(new DeleteCommand({ TableName: runsTable, Key: runKey(older) }));
      expect((await scheduler.api('POST', `${path}/cancel`)).status).toBe(200);
    } else {
      await cancelStoppingBeforeSteps(tenantId, workflowId, workflowRunId);
    }
    await beforeRetry?.(workflowId, workflowRunId);
    expect((await scheduler.api('POST', `${path}/retry`)).status).toBe(202);
    if (item) await scheduler.clients.dynamo.send(new PutCommand({ TableName: runsTable, Item: item }));
    const newer = await runIdOf(path, 'only');
    expect((await scheduler.api('GET', `/v1/runs/${newer}`)).body).toMatchObject({ attempt: 2, trigger: 'replay', status: 'QUEUED' });
    expect((await scheduler.api('GET', `/v1/runs/${older}`)).body.status).toBe(writtenLate ? 'QUEUED' : 'CANCELLED');
    expect(await drainDispatch()).toEqual([newer]);
    return { path, tenantId, workflowId, workflowRunId, older, newer };
  }

  it("a retry of a workflow run whose cancel stopped half-way finishes the cancel first: the older attempt's run is cancelled, the new one runs, the target once", async () => {
    const { path, tenantId, older, newer } = await cancelledHalfWayThenRetried('retried-cancel-stopped');

    const worker = scheduler.workerDeps('worker-1');
    expect(await executeRun(worker, older, { tenantId })).toBe('duplicate');
    expect(await executeRun(worker, newer, { tenantId })).toBe('succeeded');
    expect(callsOf('retried-cancel-stopped')).toEqual(['only']);
    expect((await scheduler.api('GET', path)).body.status).toBe('SUCCEEDED');
  });

  it("an older attempt's run written after a retry of its cancelled workflow run is cancelled at its lease; the new one runs, the target once", async () => {
    const { path, tenantId, older, newer } = await cancelledHalfWayThenRetried('retried-written-late', { writtenLate: true });

    const worker = scheduler.workerDeps('worker-1');
    expect(await executeRun(worker, older, { tenantId })).toBe('cancelled');
    expect(await executeRun(worker, newer, { tenantId })).toBe('succeeded');
    expect(callsOf('retried-written-late')).toEqual(['only']);
    expect((await scheduler.api('GET', path)).body.status).toBe('SUCCEEDED');
  });

  it("a settle of the cancel from a read before the retry leaves the retry's step run alone: it runs, the retry is not undone", async () => {
    const name = 'retried-under-stale-settle';
    let stale: WorkflowRun | undefined;
    const { path, tenantId, workflowId, workflowRunId, newer } = await cancelledHalfWayThenRetried(name, {
      beforeRetry: async (workflowId, workflowRunId) => {
        // The ticker's repair read the run while it was CANCELLED, its step still STARTED.
        stale = (await scheduler.deps.workflowRuns.getRun(workflowId, workflowRunId))!;
      },
    });
    expect(stale).toMatchObject({ status: 'CANCELLED', steps: { only: { status: 'STARTED', attempt: 1 } } });
    // ... and settles after the retry landed. Before, it found the retry's run (the step's newest),
    // cancelled it and recorded the step CANCELLED on the retried run, which then ended FAILED.
    await settleCancelledSteps(scheduler.workerDeps('ticker'), name, stale!, Date.now(), 'record');
    expect((await scheduler.api('GET', `/v1/runs/${newer}`)).body.status).toBe('QUEUED');
    expect((await scheduler.deps.workflowRuns.getRun(workflowId, workflowRunId))?.steps.only).toMatchObject({ status: 'STARTED', attempt: 2 });
    expect(await executeRun(scheduler.workerDeps('worker-1'), newer, { tenantId })).toBe('succeeded');
    expect((await scheduler.api('GET', path)).body.status).toBe('SUCCEEDED');
  });

  it("a retried workflow run's step run (trigger replay) is checked too: such a cancel after the retry has it cancelled at its lease, not run", async () => {
    const { tenantId, workflowId, workflowRunId, older, newer } = await cancelledHalfWayThenRetried('retried-then-cancelled', { writtenLate: true });
    // Cancelled again, and again the cancel stops before the steps' runs.
    await cancelStoppingBeforeSteps(tenantId, workflowId, workflowRunId);

    const worker = scheduler.workerDeps('worker-1');
    expect(await executeRun(worker, older, { tenantId })).toBe('cancelled');
    expect(await executeRun(worker, newer, { tenantId })).toBe('cancelled');
    expect(callsOf('retried-then-cancelled')).toEqual([]);
  });

  it('a handed-off dependant written leased whose workflow run a cancel and a retry passed after the claimer read it is cancelled; the retry runs the step once', async () => {
    const { path, tenantId } = await startRun('handoff-retried', [step('handoff-retried', 'first'), step('handoff-retried', 'second', ['first'])]);
    const [, , , workflowId, , workflowRunId] = path.split('/');
    const first = await runIdOf(path, 'first');
    expect(await drainDispatch()).toEqual([first]);
    const { worker, landed } = interruptedAfterClaimerRead(scheduler.workerDeps('worker-1'), 'second', async () => {
      await cancelStoppingBeforeRunningSteps(tenantId, workflowId!, workflowRunId!);
      expect((await scheduler.api('POST', `${path}/retry`)).status).toBe(202);
    });
    expect(await executeRun(worker, first, { tenantId, eagerUntil: until() })).toBe('succeeded');
    expect(landed()).toBe(true);
    // The handed-off run (attempt 1) was not run; the retry's (attempt 2) comes from the queue.
    expect(callsOf('handoff-retried')).toEqual(['first']);
    const newer = await runIdOf(path, 'second');
    expect(await drainDispatch()).toEqual([newer]);
    expect(await executeRun(scheduler.workerDeps('worker-2'), newer, { tenantId })).toBe('succeeded');
    expect(callsOf('handoff-retried')).toEqual(['first', 'second']);
    expect((await scheduler.api('GET', path)).body.status).toBe('SUCCEEDED');
  });

  it('a replay of a step run of a cancelled workflow run runs: it was asked for by name', async () => {
    const { path, tenantId } = await startRun('replayed-after-cancel', [step('replayed-after-cancel', 'only')]);
    const first = await runIdOf(path, 'only');
    expect(await drainDispatch()).toEqual([first]);
    expect((await scheduler.api('POST', `${path}/cancel`)).status).toBe(200);
    expect((await scheduler.api('GET', `/v1/runs/${first}`)).body.status).toBe('CANCELLED');
    const replay = await scheduler.api('POST', `/v1/runs/${first}/replay`);
    expect(replay.status, JSON.stringify(replay.body)).toBe(202);
    const replayed = replay.body.run.runId as string;
    expect(await drainDispatch()).toEqual([replayed]);
    expect(await executeRun(scheduler.workerDeps('worker-1'), replayed, { tenantId })).toBe('succeeded');
    expect(callsOf('replayed-after-cancel')).toEqual(['only']);
  });

  it('a worker that dies holding a handed-off run: no message, and the ticker recovers it once its lease has ended', async () => {
    const { path, tenantId } = await startRun('handoff-dies', [
      step('handoff-dies', 'first'),
      step('handoff-dies', 'second', ['first'], { timeoutSeconds: 5, retryPolicy: { maxAttempts: 2, initialDelaySeconds: 0 } }),
    ]);
    const first = await runIdOf(path, 'first');
    expect(await drainDispatch()).toEqual([first]);

    // The worker dies after the second step's call, before its outcome.
    const dying = failingFor(scheduler.workerDeps('worker-dies'), 'finishAttempt', (_, run) => parseStepJobId(run?.jobId ?? '')?.stepId === 'second');
    expect(await executeRun(dying, first, { tenantId, eagerUntil: until() })).toBe('succeeded');
    const second = await runIdOf(path, 'second');
    const held = (await scheduler.api('GET', `/v1/runs/${second}`)).body;
    expect(held).toMatchObject({ status: 'RUNNING', leaseOwner: 'worker-dies' });
    expect(callsOf('handoff-dies')).toEqual(['first', 'second']);
    expect(await drainDispatch()).toEqual([]);

    // Past the lease's end, a tick finds it lapsed and sends it; the worker receiving it records the
    // lost attempt and writes its retry.
    const later = Date.parse(held.leaseExpiresAt) + 120_000;
    // The tests before ticked a minute ahead, past where this run's check-back was then written.
    await setTickerCursor(scheduler, Date.now());
    const report = await tick(scheduler.workerDeps('ticker', () => later));
    expect(report.lapsedLeases).toBeGreaterThanOrEqual(1);
    expect(await drainDispatch()).toContain(second);
    expect(
      await executeRun(
        scheduler.workerDeps('worker-2', () => later),
        second,
        { tenantId },
      ),
    ).toBe('worker-lost');
    const lost = (await scheduler.api('GET', `/v1/runs/${second}`)).body;
    expect(lost).toMatchObject({ status: 'FAILED', error: { code: 'WORKER_LOST' } });
  });
});
