// Delivery semantics against the emulator, each shown by the crash that matters: a worker process
// (the local runtime, as `npm run dev` runs it) is killed with SIGKILL after its target has acted
// and before the outcome is recorded, then a fresh worker process takes over.
//
// - at-least-once: the target is called a second time (same idempotency key, higher fencing token);
// - at-most-once: the attempt was consumed before the call, so it is never called again and the
//   run ends DEAD with OUTCOME_UNKNOWN; a failed attempt is not retried either;
// - exactly-once: the second call carries the same Idempotency-Key, the ledger holds one effect for
//   the occurrence, and a later attempt (a replay) is not called at all.
import type { ChildProcess } from 'node:child_process';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayRun } from '../../lambdas/app/runs';
import { effectKey, runKey } from '../../lambdas/store/keys';
import { fencingTokenOf } from '../../lambdas/domain/delivery';
import { occurrenceKey } from '../../lambdas/domain/run';
import type { Run } from '../../lambdas/domain/run';
import type { SchedulerDeps } from '../../lambdas/app/deps';
import type { Scheduler, TargetCall, TargetServer } from './harness';
import { eventually, executeRun, jobBody, leaseRequest, startScheduler, startTarget } from './harness';
import { killProcess, startRuntimeProcess } from './worker-process';

type RunBody = Record<string, any>;

async function runsOf(scheduler: Scheduler, jobId: string): Promise<RunBody[]> {
  const { body } = await scheduler.api('GET', `/v1/jobs/${jobId}/runs?limit=100`);
  return (body.items as RunBody[]).sort((a, b) => a.attempt - b.attempt);
}

const retryQuickly = { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 };

describe('delivery semantics under a worker crash after the target call', () => {
  let target: TargetServer;
  const schedulers: Scheduler[] = [];
  const children: ChildProcess[] = [];
  /** The worker process the target kills when it has acted (the first call of each job). */
  let current: ChildProcess | undefined;
  /** Effects the target applied, by idempotency key (a target that deduplicates). */
  const effects = new Map<string, number>();
  const killOnFirstCall = new Set<string>();

  function worker(scheduler: Scheduler): ChildProcess {
    current = startRuntimeProcess(scheduler);
    children.push(current);
    return current;
  }

  beforeAll(async () => {
    target = await startTarget(async (call: TargetCall) => {
      const key = String(call.headers['idempotency-key']);
      // The target acts (idempotently, by key) before it answers...
      if (!effects.has(key)) effects.set(key, 1);
      const name = JSON.parse(call.body).name as string;
      if (killOnFirstCall.delete(name) && current) {
        // ...and the worker dies before it can record the outcome.
        await killProcess(current);
        return new Promise(() => undefined);
      }
      return { status: 200 };
    });
  });
  afterAll(async () => {
    await Promise.all(children.map(killProcess));
    await Promise.all(schedulers.map((scheduler) => scheduler.stop()));
    await target.stop();
  });

  /**
   * A job of this delivery on a scheduler of its own (a killed process's last long poll may still
   * take a message from its queue), whose first call kills the worker process making it.
   */
  async function crashAfterCall(delivery: string): Promise<{ scheduler: Scheduler; jobId: string; runId: string; name: string }> {
    // This process serves the API only; child processes are the workers. Leases: 4 s + 2 s margin.
    const scheduler = await startScheduler({ workerConcurrency: 0, tuning: { leaseMarginSeconds: 2 } });
    schedulers.push(scheduler);
    const name = `crash-${delivery}`;
    killOnFirstCall.add(name);
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { name, payload: { name }, delivery, timeoutSeconds: 4, retryPolicy: retryQuickly }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    worker(scheduler);
    await eventually(
      () => Promise.resolve(killOnFirstCall.has(name)),
      (pending) => !pending,
      30_000,
    );
    worker(scheduler); // restarted, as Lambda (or an operator) would
    return { scheduler, jobId: created.body.job.jobId, runId: created.body.job.nextRunId, name };
  }

  const callsOf = (name: string) => target.calls.filter((call) => JSON.parse(call.body).name === name);

  it('at-least-once: a crash after the call leads to a second call of the same occurrence', async () => {
    const { scheduler, jobId, name } = await crashAfterCall('at-least-once');
    const runs = await eventually(
      () => runsOf(scheduler, jobId),
      (items) => items.some((run) => run.status === 'SUCCEEDED'),
      45_000,
    );
    expect(runs.map((run) => [run.attempt, run.status, run.error?.code ?? null])).toEqual([
      [1, 'FAILED', 'WORKER_LOST'],
      [2, 'SUCCEEDED', null],
    ]);
    const calls = callsOf(name);
    expect(calls.map((call) => call.headers['x-attempt'])).toEqual(['1', '2']);
    // One occurrence, one key; the fencing token grows across the attempts (a new run each).
    expect(new Set(calls.map((call) => call.headers['idempotency-key'])).size).toBe(1);
    const tokens = calls.map((call) => Number(call.headers['x-fencing-token']));
    expect(tokens[1]).toBeGreaterThan(tokens[0]!);
    expect(tokens).toEqual(runs.map((run) => fencingTokenOf({ attempt: run.attempt, version: run.version })));
  });

  it('at-most-once: a consumed attempt is never called again; the run ends DEAD with OUTCOME_UNKNOWN', async () => {
    const { scheduler, jobId, runId, name } = await crashAfterCall('at-most-once');
    const dead = await eventually(
      async () => (await scheduler.api('GET', `/v1/runs/${runId}`)).body,
      (run) => run.status === 'DEAD',
      45_000,
    );
    expect(dead).toMatchObject({
      attempt: 1,
      delivery: 'at-most-once',
      consumedAt: expect.any(String),
      error: { code: 'OUTCOME_UNKNOWN', retryable: false },
      reason: expect.stringContaining('at-most-once'),
    });
    // The attempt was consumed before the call, not after.
    expect(Date.parse(dead.consumedAt)).toBeLessThanOrEqual(callsOf(name)[0]!.at);
    // No retry, no redelivery: the message that recovered the run does not call the target.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(callsOf(name)).toHaveLength(1);
    expect((await runsOf(scheduler, jobId)).map((run) => run.status)).toEqual(['DEAD']);
    expect((await scheduler.api('GET', `/v1/dead-runs?jobId=${jobId}`)).body.items.map((run: RunBody) => run.runId)).toEqual([runId]);
  });

  it('exactly-once: the second call carries the same Idempotency-Key, and the ledger records one effect', async () => {
    const { scheduler, jobId, name } = await crashAfterCall('exactly-once');
    const runs = await eventually(
      () => runsOf(scheduler, jobId),
      (items) => items.some((run) => run.status === 'SUCCEEDED'),
      45_000,
    );
    expect(runs.map((run) => [run.attempt, run.status])).toEqual([
      [1, 'FAILED'],
      [2, 'SUCCEEDED'],
    ]);
    const key = occurrenceKey(jobId, runs[0]!.scheduledFor);
    expect(callsOf(name).map((call) => call.headers['idempotency-key'])).toEqual([key, key]);
    expect(effects.get(key)).toBe(1); // the target deduplicated by the key
    expect(await scheduler.deps.leases.effectOf(key)).toMatchObject({ occurrence: key, runId: runs[1]!.runId, attempt: 2 });

    // A replay of the occurrence is another attempt: the ledger answers, the target is not called.
    const replayed = await scheduler.api('POST', `/v1/runs/${runs[1]!.runId}/replay`);
    expect(replayed.status).toBe(202);
    const skipped = await eventually(
      async () => (await scheduler.api('GET', `/v1/runs/${replayed.body.run.runId}`)).body,
      (run) => run.status === 'SKIPPED',
      30_000,
    );
    expect(skipped.reason).toContain(`recorded by run ${runs[1]!.runId}`);
    expect(callsOf(name)).toHaveLength(2);
    expect(await scheduler.deps.leases.effectOf(key)).toMatchObject({ runId: runs[1]!.runId });
  });
});

describe('delivery semantics without a crash', () => {
  let scheduler: Scheduler;

  beforeAll(async () => {
    scheduler = await startScheduler();
  });
  afterAll(() => scheduler.stop());

  it('at-most-once: a failed attempt is not retried, whatever its class', async () => {
    const target = await startTarget(() => ({ status: 503 }));
    try {
      const created = await scheduler.api(
        'POST',
        '/v1/jobs',
        jobBody(target.url, { delivery: 'at-most-once', retryPolicy: { maxAttempts: 5, initialDelaySeconds: 0, maxDelaySeconds: 1 } }),
      );
      const runId = created.body.job.nextRunId as string;
      const dead = await eventually(
        async () => (await scheduler.api('GET', `/v1/runs/${runId}`)).body,
        (run) => run.status === 'DEAD',
      );
      expect(dead).toMatchObject({
        error: { code: 'HTTP_503', retryable: true },
        reason: 'at-most-once: a failed attempt is not retried',
        consumedAt: expect.any(String),
      });
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(target.calls).toHaveLength(1);
    } finally {
      await target.stop();
    }
  });

  it('exactly-once: two attempts racing to record the effect of one occurrence record it once', async () => {
    const target = await startTarget(() => new Promise(() => undefined)); // never answers: the runs stay leased
    try {
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { delivery: 'exactly-once', schedule: { kind: 'delay', seconds: 3600 } }));
      const job = created.body.job;
      const first = (await scheduler.deps.runs.get(job.nextRunId)) as Run;
      // Two attempts of the same occurrence, each leased by its own worker.
      const second: Run = { ...first, runId: `${first.runId.replace(/\.1$/, '')}.2`, attempt: 2, status: 'QUEUED', availableAt: new Date(0).toISOString() };
      await scheduler.deps.runs.create({ run: { ...first, status: 'QUEUED', availableAt: new Date(0).toISOString() }, extras: {} }).catch(() => false);
      await scheduler.deps.runs.create({ run: second, extras: {} });
      await scheduler.deps.runs.retirePending(first.runId, 'SKIPPED', 'test', Date.now());
      const one = await scheduler.workerDeps('w1').leases.lease(second.runId, leaseRequest(scheduler.config, 'w1'));
      const third: Run = { ...second, runId: second.runId.replace(/\.2$/, '.3'), attempt: 3 };
      await scheduler.deps.runs.create({ run: third, extras: {} });
      const two = await scheduler.workerDeps('w2').leases.lease(third.runId, leaseRequest(scheduler.config, 'w2'));
      if (one.kind !== 'leased' || two.kind !== 'leased') throw new Error('both attempts should be leased');
      const occurrence = occurrenceKey(job.jobId, first.scheduledFor);
      const effectOf = (run: Run) => ({
        occurrence,
        runId: run.runId,
        attempt: run.attempt,
        fencingToken: fencingTokenOf(run),
        recordedAt: new Date().toISOString(),
      });
      const results = await Promise.all(
        [one.run, two.run].map((run) =>
          scheduler.deps.leases.finishAttempt(run, { status: 'SUCCEEDED', now: Date.now(), error: null }, null, { effect: effectOf(run) }),
        ),
      );
      expect(results.sort()).toEqual(['effect-exists', 'recorded']);
      const effect = await scheduler.deps.leases.effectOf(occurrence);
      expect([one.run.runId, two.run.runId]).toContain(effect?.runId);
      expect((await scheduler.deps.runs.get(one.run.runId))?.status).toBe('SUCCEEDED');
      expect((await scheduler.deps.runs.get(two.run.runId))?.status).toBe('SUCCEEDED');
    } finally {
      await target.stop();
    }
  });

  it('at-most-once: a worker lost before the consume write never called the target, so the run is retried and called once', async () => {
    const quick = await startScheduler({ workerConcurrency: 0, tuning: { leaseMarginSeconds: 2 } });
    const target = await startTarget();
    try {
      const created = await quick.api('POST', '/v1/jobs', jobBody(target.url, { delivery: 'at-most-once', timeoutSeconds: 1, retryPolicy: retryQuickly }));
      const { jobId, nextRunId: runId } = created.body.job;
      // A worker takes the lease (3 s) and dies before consuming the attempt.
      expect((await quick.workerDeps('ghost').leases.lease(runId, leaseRequest(quick.config, 'ghost'))).kind).toBe('leased');
      await quick.startWorkers(1);
      const runs = await eventually(
        () => runsOf(quick, jobId),
        (items) => items.some((run) => run.status === 'SUCCEEDED'),
        20_000,
      );
      expect(runs.map((run) => [run.attempt, run.status, run.error?.code ?? null, run.consumedAt ? 'consumed' : null])).toEqual([
        [1, 'FAILED', 'WORKER_LOST', null],
        [2, 'SUCCEEDED', null, 'consumed'],
      ]);
      expect(target.calls).toHaveLength(1);
    } finally {
      await target.stop();
      await quick.stop();
    }
  });
});

/** A promise with its resolve, to hold one side of a race until the other has reached its point. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

/** Deps whose `store.method` goes through `around` on its first call (something landing before or inside it). */
function aroundFirstCall(
  deps: SchedulerDeps,
  store: 'leases' | 'signingCache',
  method: string,
  around: (call: () => Promise<unknown>) => Promise<unknown>,
): SchedulerDeps {
  let done = false;
  const proxy = new Proxy(deps[store], {
    get(object, property) {
      const value = Reflect.get(object, property) as unknown;
      if (typeof value !== 'function') return value;
      const bound = (value as (...args: unknown[]) => Promise<unknown>).bind(object);
      if (property !== method) return bound;
      return (...args: unknown[]) => {
        if (done) return bound(...args);
        done = true;
        return around(() => bound(...args));
      };
    },
  });
  return { ...deps, [store]: proxy };
}

describe('at-most-once: a consume racing the recovery of its lapsed lease', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    // No pollers: the workers of the race are driven here, each with its own clock.
    scheduler = await startScheduler({ workerConcurrency: 0 });
  });
  afterAll(() => scheduler.stop());

  /** Worker B's clock (and the retry's worker's): an hour on, long past worker A's lease. */
  const PAST_THE_LEASE_MS = 3_600_000;

  /**
   * Worker A leases an at-most-once run and stalls, `before-consume` (when it wakes its lease has
   * lapsed) or with its consume request on its way (made while the lease was live, it arrives late).
   * Worker B finds the lease lapsed and the attempt unconsumed, and A's consume lands (or is refused)
   * between B's read and B's write of the lost attempt. The target holds any call of A's until B is
   * done; then whatever B planned is run.
   */
  async function race(stall: 'before-consume' | 'consume-in-flight') {
    const recovered = deferred();
    const target = await startTarget(async () => {
      await recovered.promise;
      return { status: 200 };
    });
    try {
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { delivery: 'at-most-once', retryPolicy: retryQuickly }));
      expect(created.status).toBe(201);
      const { jobId, nextRunId: runId } = created.body.job as { jobId: string; nextRunId: string };
      const stalled = deferred();
      const wake = deferred();
      const consumeSettled = deferred();
      let skewA = 0;
      let a = scheduler.workerDeps('worker-a', () => Date.now() + skewA);
      if (stall === 'before-consume') {
        // Its last read before the delivery gate: it stalls there, and wakes past its lease.
        a = aroundFirstCall(a, 'signingCache', 'of', async (call) => {
          stalled.resolve();
          await wake.promise;
          skewA = PAST_THE_LEASE_MS;
          return call();
        });
      }
      a = aroundFirstCall(a, 'leases', 'consume', async (call) => {
        if (stall === 'consume-in-flight') {
          stalled.resolve();
          await wake.promise;
        }
        try {
          return await call();
        } finally {
          consumeSettled.resolve();
        }
      });
      const resultA = executeRun(a, runId);
      await stalled.promise;
      // B has read the attempt as lost and unconsumed; A's consume goes before B's write.
      const b = aroundFirstCall(
        scheduler.workerDeps('worker-b', () => Date.now() + PAST_THE_LEASE_MS),
        'leases',
        'finishAttempt',
        async (call) => {
          wake.resolve();
          await consumeSettled.promise;
          return call();
        },
      );
      const resultB = await executeRun(b, runId);
      recovered.resolve();
      const results = [await resultA, resultB];
      const later = scheduler.workerDeps('worker-c', () => Date.now() + PAST_THE_LEASE_MS);
      for (const run of await runsOf(scheduler, jobId)) {
        if (run.status === 'QUEUED' || run.status === 'SCHEDULED') await executeRun(later, run.runId);
      }
      const runs = await runsOf(scheduler, jobId);
      return {
        results,
        runs: runs.map((run) => [run.attempt, run.status, run.error?.code ?? null, run.consumedAt ? 'consumed' : null]),
        calls: target.calls.map((call) => call.headers['x-attempt']),
      };
    } finally {
      recovered.resolve();
      await target.stop();
    }
  }

  it('a worker whose lease lapsed before its consume cannot consume: only the retry calls the target, once', async () => {
    expect(await race('before-consume')).toEqual({
      results: ['fenced', 'worker-lost'],
      runs: [
        [1, 'FAILED', 'WORKER_LOST', null],
        [2, 'SUCCEEDED', null, 'consumed'],
      ],
      calls: ['2'],
    });
  });

  it('a consume that lands after the lost attempt was read unconsumed ends the attempt DEAD, never retried: one call', async () => {
    expect(await race('consume-in-flight')).toEqual({
      results: ['fenced', 'worker-lost'],
      runs: [[1, 'DEAD', 'OUTCOME_UNKNOWN', 'consumed']],
      calls: ['1'],
    });
  });
});

const DAY_MS = 86_400_000;

describe('exactly-once: the ledger kept as long as a run of its occurrence can be replayed (decision 0159, amended)', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0, config: { runRetentionDays: 7 } });
    target = await startTarget();
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  const expiryOf = async (key: Record<string, string>, table: string): Promise<number> =>
    Number((await scheduler.clients.dynamo.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true }))).Item?.expiresAtEpoch);

  it('a replay made six days on, and the SKIPPED run it ends as, leave no replayable run without its effect', async () => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { delivery: 'exactly-once' }));
    const runId = created.body.job.nextRunId as string;
    expect(await executeRun(scheduler.workerDeps('w'), runId)).toBe('succeeded');
    const run = (await scheduler.deps.runs.get(runId))!;
    const effect = effectKey(occurrenceKey(run.jobId, run.scheduledFor));
    const recorded = await expiryOf(effect, scheduler.config.runsTable);

    // Six days on, the run is replayed: the replay ends SKIPPED (the effect is recorded), and is kept 7 days from then.
    const sixDaysOn = Date.now() + 6 * DAY_MS;
    const later = scheduler.workerDeps('later', () => sixDaysOn);
    const replay = await replayRun(later, scheduler.tenantId, runId);
    expect(await executeRun(later, replay.runId)).toBe('skipped');
    const skippedUntil = await expiryOf(runKey(replay.runId), scheduler.config.runsTable);
    // Before, the effect left 7 days after the first run, 6 days before the SKIPPED run it had ended,
    // whose replay then found no effect and called the target again.
    const kept = await expiryOf(effect, scheduler.config.runsTable);
    expect(kept).toBeGreaterThan(recorded);
    expect(kept).toBeGreaterThanOrEqual(skippedUntil);
  });
});
