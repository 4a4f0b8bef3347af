// A worker process killed during a run. The local runtime (`scripts/dev.ts`, as `npm run dev` starts
// it) runs in a child process over this test's tables and queues; it is killed with SIGKILL while
// the target is answering, then started again. The emulator keeps running throughout. The last two
// tests kill processes at random moments of their leases and lose every message: the ticker alone
// must bring each run back (issue 24), and each workflow run of a diamond must end SUCCEEDED with each
// step succeeded once (issue 20 item 5).
import type { ChildProcess } from 'node:child_process';
import { PurgeQueueCommand } from '@aws-sdk/client-sqs';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { Run } from '../../lambdas/domain/run';
import type { Scheduler, TargetAnswer, TargetCall, TargetServer } from './harness';
import { eventually, jobBody, leaseRequest, startScheduler, startTarget, tick } from './harness';
import { killProcess as kill, startRuntimeProcess } from './worker-process';

/** How long a worker process may take to make its first call on a loaded machine. */
const FIRST_CALL_WAIT_MS = 150_000;

describe('a worker process killed during a run', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    // This process only serves the API; the child processes are the workers. Lease margin 2 s.
    scheduler = await startScheduler({ workerConcurrency: 0, tuning: { leaseMarginSeconds: 2 } });
    // The first call never answers in time (its worker dies during it); later calls succeed.
    target = await startTarget((_call, index) =>
      index === 0 ? new Promise((resolve) => setTimeout(() => resolve({ status: 200 }), 30_000)) : { status: 200 },
    );
  });
  afterAll(async () => {
    await Promise.all(children.map(kill));
    await scheduler.stop();
    await target.stop();
  });

  /** Whether a run is RUNNING, under a lease with more than `leftMs` left. */
  async function holdsLease(on: Scheduler, leftMs: number): Promise<boolean> {
    const { Items: items = [] } = await on.clients.dynamo.send(
      new ScanCommand({ TableName: on.config.runsTable, ProjectionExpression: '#status, leaseExpiresAtMs', ExpressionAttributeNames: { '#status': 'status' } }),
    );
    const now = Date.now();
    return items.some((item) => item.status === 'RUNNING' && typeof item.leaseExpiresAtMs === 'number' && item.leaseExpiresAtMs > now + leftMs);
  }

  /**
   * Starts worker processes in turn and kills each with SIGKILL, then purges the queue: whatever
   * became of the messages (tied to the queue's timeout, to a lease, or not yet received), only the
   * time index can bring the runs back. Until a kill has lost a lease, a kill waits for the first
   * call that the target will hold open a second more, under a live lease, and checks it again just
   * before the signal: a call near its end (or one its worker has timed out already, on a loaded
   * machine) loses no lease. Once one has, each kill lands at a random moment of a lease (0 to one
   * lease's length after the process's first call). Rounds are added (three at most) while runs are
   * still open and no kill has lost a lease. Returns when each kill came, for a failure's message.
   */
  async function killWorkersInTurn(
    on: Scheduler,
    calledAt: TargetServer,
    openFor: (ms: number) => boolean,
    options: { readonly rounds: number; readonly leaseMs: number; readonly redeliveryGraceSeconds: number },
  ): Promise<number[]> {
    const kills: number[] = [];
    let lost = false;
    for (let round = 0; round < options.rounds || (!lost && round < options.rounds + 3 && (await anyOpen(on))); round++) {
      const calls = calledAt.calls.length;
      const child = startRuntimeProcess(on, { WORKER_CONCURRENCY: '2', REDELIVERY_GRACE_SECONDS: String(options.redeliveryGraceSeconds) });
      children.push(child);
      // A worker process starts slowly on a loaded machine (tsx compiles it first): wait for its
      // first call as long as the test allows, not a time that assumes a fast machine.
      const started = Date.now();
      while (calledAt.calls.length === calls && Date.now() - started < FIRST_CALL_WAIT_MS) await new Promise((resolve) => setTimeout(resolve, 50));
      if (round === 0) expect(calledAt.calls.length, 'the first worker process made no call').toBeGreaterThan(calls);
      if (lost) {
        const wait = Math.round(Math.random() * options.leaseMs);
        kills.push(wait);
        await new Promise((resolve) => setTimeout(resolve, wait));
      } else {
        // The first suitable moment: a random wait first could outlast the work (a loaded machine
        // makes the target's calls the only time that does not stretch).
        while (!(openFor(1_000) && (await holdsLease(on, 1_000)) && openFor(300)) && Date.now() - started < FIRST_CALL_WAIT_MS) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        kills.push(Date.now() - started);
      }
      await kill(child);
      // No worker is alive now: a run still RUNNING lost its lease with the process.
      lost ||= await holdsLease(on, -Infinity);
    }
    await on.clients.sqs.send(new PurgeQueueCommand({ QueueUrl: on.config.dispatchQueueUrl }));
    return kills;
  }

  /** Whether any run is still SCHEDULED, QUEUED or RUNNING. */
  async function anyOpen(on: Scheduler): Promise<boolean> {
    const { Items: items = [] } = await on.clients.dynamo.send(
      new ScanCommand({ TableName: on.config.runsTable, ProjectionExpression: '#status', ExpressionAttributeNames: { '#status': 'status' } }),
    );
    return items.some((item) => ['SCHEDULED', 'QUEUED', 'RUNNING'].includes(String(item.status)));
  }

  /**
   * A target whose calls each take `minMs` to `maxMs`, and whether one of its calls, not aborted,
   * will stay open at least `ms` longer.
   */
  async function startSlowTarget(minMs: number, maxMs: number, answer: (call: TargetCall) => TargetAnswer = () => ({ status: 200 })) {
    const open = new Map<TargetCall, number>();
    const target = await startTarget(
      (call) =>
        new Promise<TargetAnswer>((resolve) => {
          const duration = minMs + Math.random() * (maxMs - minMs);
          open.set(call, Date.now() + duration);
          setTimeout(() => {
            open.delete(call);
            resolve(answer(call));
          }, duration);
        }),
    );
    const openFor = (ms: number): boolean => [...open].some(([call, endsAt]) => call.abortedAt === undefined && endsAt - Date.now() >= ms);
    return { target, openFor };
  }

  it('finishes the run after the lease expires, records the lost attempt, and calls the target at most twice', async () => {
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { timeoutSeconds: 4, retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 } }),
    );
    expect(created.status).toBe(201);
    const { jobId, nextRunId: runId } = created.body.job;

    const first = startRuntimeProcess(scheduler);
    children.push(first);
    await eventually(
      () => Promise.resolve(target.calls.length),
      (n) => n === 1,
      30_000,
    );
    const leased = (await scheduler.api('GET', `/v1/runs/${runId}`)).body;
    expect(leased).toMatchObject({ status: 'RUNNING', leaseOwner: expect.stringMatching(/^local-\d+$/) });
    await kill(first);

    // Restart the runtime, as an operator (or Lambda) would.
    const second = startRuntimeProcess(scheduler);
    children.push(second);
    const runs = await eventually(
      async () => (await scheduler.api('GET', `/v1/jobs/${jobId}/runs`)).body.items as Record<string, any>[],
      (items) => items.some((run) => run.status === 'SUCCEEDED'),
      45_000,
    );
    const [retry, lost] = runs; // newest first
    expect(lost).toMatchObject({ runId, attempt: 1, status: 'FAILED', leaseOwner: leased.leaseOwner, error: { code: 'WORKER_LOST', retryable: true } });
    expect(retry).toMatchObject({ attempt: 2, trigger: 'retry', status: 'SUCCEEDED', leaseOwner: expect.stringMatching(/^local-\d+$/) });
    expect(retry!.leaseOwner).not.toBe(lost!.leaseOwner);
    // The new attempt was leased only after the dead worker's lease had expired.
    expect(Date.parse(retry!.startedAt)).toBeGreaterThan(Date.parse(lost!.leaseExpiresAt));
    expect(target.calls.length).toBeLessThanOrEqual(2);
    expect(target.calls.map((call) => call.headers['x-attempt'])).toEqual(['1', '2']);
    expect(target.calls[0]?.abortedAt).toBeDefined(); // the killed process's connection dropped
  });

  it('keeps a message that arrives while a lease is about to end, and recovers the run with it', async () => {
    // Its own queue: a killed process's last long poll may still take a message from the old one.
    const scheduler = await startScheduler({ workerConcurrency: 0, tuning: { leaseMarginSeconds: 2 } });
    onTestFinished(() => scheduler.stop());
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { timeoutSeconds: 1, retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 } }),
    );
    const { jobId, nextRunId: runId } = created.body.job;
    // A worker takes the lease (3 s) and dies at once, before it could touch the message.
    const ghost = await scheduler.workerDeps('ghost').leases.lease(runId, leaseRequest(scheduler.config, 'ghost'));
    expect(ghost.kind).toBe('leased');
    const calls = target.calls.length;

    // The message reaches a live worker while the lease still holds: it must not be dropped.
    await scheduler.startWorkers(1);
    const runs = await eventually(
      async () => (await scheduler.api('GET', `/v1/jobs/${jobId}/runs`)).body.items as Record<string, any>[],
      (items) => items.some((run) => run.status === 'SUCCEEDED'),
      20_000,
    );
    expect(runs.map((run) => [run.attempt, run.status, run.error?.code ?? null])).toEqual([
      [2, 'SUCCEEDED', null],
      [1, 'FAILED', 'WORKER_LOST'],
    ]);
    expect(runs[1]).toMatchObject({ runId, leaseOwner: 'ghost' });
    expect(target.calls.length - calls).toBe(1);
  });

  it(
    'recovers every run when worker processes are killed at random moments across their leases and their messages are lost',
    async () => {
      // Leases of 3 + 2 s; a queued run whose message is lost is sent again after 5 s.
      const tuning = { leaseMarginSeconds: 2, redeliveryGraceSeconds: 5 };
      const scheduler = await startScheduler({ workerConcurrency: 0, tuning });
      onTestFinished(() => scheduler.stop());
      // Calls take 0.3-2.5 s, so that a kill finds runs at every point of their leases.
      const { target, openFor } = await startSlowTarget(300, 2_500);
      onTestFinished(() => target.stop());
      const jobIds: string[] = [];
      for (let i = 0; i < 30; i++) {
        const created = await scheduler.api(
          'POST',
          '/v1/jobs',
          jobBody(target.url, { timeoutSeconds: 3, retryPolicy: { maxAttempts: 6, initialDelaySeconds: 0, maxDelaySeconds: 1 } }),
        );
        expect(created.status).toBe(201);
        jobIds.push(created.body.job.jobId);
      }
      const leaseMs = (3 + tuning.leaseMarginSeconds) * 1000;

      // Three worker processes in turn, each killed at a random moment of a lease.
      const kills = await killWorkersInTurn(scheduler, target, openFor, { rounds: 3, leaseMs, redeliveryGraceSeconds: tuning.redeliveryGraceSeconds });
      const workers = await scheduler.startWorkers(2);
      onTestFinished(() => workers.stop());

      const runsOfAll = async (): Promise<Run[][]> =>
        Promise.all(jobIds.map(async (jobId) => (await scheduler.deps.runs.listByJob((await scheduler.deps.jobs.getAnyTenant(jobId))!, 20)).items));
      const settled = (runs: Run[][]) =>
        runs.every(
          (ofJob) => ofJob.some((run) => run.status === 'SUCCEEDED') && ofJob.every((run) => !['SCHEDULED', 'QUEUED', 'RUNNING'].includes(run.status)),
        );
      // The ticker, driven here (every second rather than every minute), until every job has succeeded.
      const deadline = Date.now() + 150_000;
      let runs = await runsOfAll();
      while (!settled(runs)) {
        if (Date.now() > deadline) {
          const open = runs.flat().filter((run) => ['SCHEDULED', 'QUEUED', 'RUNNING'].includes(run.status));
          throw new Error(
            `kills after ${kills.join(', ')} ms; not recovered: ${JSON.stringify(open.map((run) => [run.runId, run.status, run.leaseOwner, run.leaseExpiresAt]))}`,
          );
        }
        await tick(scheduler.deps);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        runs = await runsOfAll();
      }
      for (const ofJob of runs) {
        // One success, the newest attempt; every attempt before it was lost with its worker or timed out.
        expect(ofJob.filter((run) => run.status === 'SUCCEEDED')).toHaveLength(1);
        expect(ofJob[0]?.status).toBe('SUCCEEDED');
        for (const run of ofJob.slice(1)) expect(run.error?.code, JSON.stringify(run)).toMatch(/^(WORKER_LOST|TIMEOUT)$/);
      }
      expect(runs.flat().filter((run) => run.error?.code === 'WORKER_LOST').length).toBeGreaterThanOrEqual(1);
    },
    (3 + 3) * FIRST_CALL_WAIT_MS + 240_000,
  );
  it(
    'finishes every workflow run, each step once, when worker processes are killed at random moments and their messages are lost',
    async () => {
      const tuning = { leaseMarginSeconds: 2, redeliveryGraceSeconds: 5 };
      const scheduler = await startScheduler({ workerConcurrency: 0, tuning });
      onTestFinished(() => scheduler.stop());
      const { target, openFor } = await startSlowTarget(300, 1_800, (call) => ({ status: 200, body: JSON.stringify({ step: call.path.split('/').pop() }) }));
      onTestFinished(() => target.stop());
      // A diamond: a, then b and c, then d once both are done.
      const step = (id: string, dependsOn: string[] = []) => ({
        id,
        target: { kind: 'http', url: `${target.url}/${id}` },
        timeoutSeconds: 3,
        retryPolicy: { maxAttempts: 6, initialDelaySeconds: 0, maxDelaySeconds: 1 },
        dependsOn,
      });
      const created = await scheduler.api('POST', '/v1/workflows', {
        name: 'crash-diamond',
        steps: [step('a'), step('b', ['a']), step('c', ['a']), step('d', ['b', 'c'])],
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const workflowId = created.body.workflowId as string;
      const workflowRunIds: string[] = [];
      for (let i = 0; i < 6; i++) {
        const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
        expect(started.status).toBe(202);
        workflowRunIds.push(started.body.workflowRunId);
        await new Promise((resolve) => setTimeout(resolve, 5)); // one millisecond apart at least: each its own run
      }
      const leaseMs = (3 + tuning.leaseMarginSeconds) * 1000;

      // Two worker processes in turn, each killed at a random moment of a lease: between a step's
      // call and its outcome, or between its outcome and its dependants' start.
      const kills = await killWorkersInTurn(scheduler, target, openFor, { rounds: 2, leaseMs, redeliveryGraceSeconds: tuning.redeliveryGraceSeconds });
      const workers = await scheduler.startWorkers(2);
      onTestFinished(() => workers.stop());

      const read = () => Promise.all(workflowRunIds.map(async (id) => (await scheduler.api('GET', `/v1/workflows/${workflowId}/runs/${id}`)).body));
      const deadline = Date.now() + 150_000;
      let runs = await read();
      while (runs.some((run) => run.status === 'RUNNING')) {
        if (Date.now() > deadline) {
          throw new Error(
            `kills after ${kills.join(', ')} ms; still running: ${JSON.stringify(runs.filter((run) => run.status === 'RUNNING').map((run) => run.steps))}`,
          );
        }
        await tick(scheduler.deps);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        runs = await read();
      }
      let lost = 0;
      for (const run of runs) {
        expect(run.status, JSON.stringify(run.steps)).toBe('SUCCEEDED');
        // Each step succeeded once: its dependants were started once, whatever the kills interrupted.
        for (const stepId of ['a', 'b', 'c', 'd']) {
          // A step's runs are the tenant's runs of its occurrence (they have no byJob entry, decision 0174).
          const occurrence = await scheduler.deps.runs.listByTenant(scheduler.tenantId, 100, { from: run.scheduledFor, to: `${run.scheduledFor}~` });
          expect(occurrence.nextCursor ?? null).toBeNull();
          const stepRuns = occurrence.items.filter((stepRun) => stepRun.jobId === `${workflowId}.v1.${stepId}`);
          expect(
            stepRuns.filter((stepRun) => stepRun.status === 'SUCCEEDED'),
            `${run.workflowRunId} ${stepId}`,
          ).toHaveLength(1);
          for (const stepRun of stepRuns.filter((other) => other.status !== 'SUCCEEDED')) {
            expect(stepRun.error?.code).toMatch(/^(WORKER_LOST|TIMEOUT)$/);
            if (stepRun.error?.code === 'WORKER_LOST') lost++;
          }
        }
      }
      // The first kill landed during a call: at least one step's lease was lost with its worker.
      expect(lost).toBeGreaterThanOrEqual(1);
    },
    (2 + 3) * FIRST_CALL_WAIT_MS + 240_000,
  );
});
