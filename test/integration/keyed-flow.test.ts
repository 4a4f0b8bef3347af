// Keyed flow control through the local runtime (issue 19 items 8 and 9): a concurrency key holds at
// most `limit` runs at once tenant-wide, waiting runs burn no attempt, two workers racing for the
// last slot get one each way, a dead worker's slot comes back with its lease; a rate key delays
// starts over its rate and fails none.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Dispatch } from '../../lambdas/store/dispatch-queue';
import { flowScope, runKey } from '../../lambdas/store/keys';
import { waiterSortOf } from '../../lambdas/store/key-waiters';
import type { Scheduler, TargetServer } from './harness';
import { eventually, executeRun, jobBody, leaseRequest, startScheduler, startTarget } from './harness';

const statusOf = async (scheduler: Scheduler, runId: string) =>
  (await scheduler.api('GET', `/v1/runs/${runId}`)).body as { status: string; attempt: number; reason: string | null };

describe('a concurrency key', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  const running = new Map<string, number>();
  const peak = new Map<string, number>();

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 6 });
    target = await startTarget(async (call) => {
      const customer = (JSON.parse(call.body) as { customerId: string }).customerId;
      running.set(customer, (running.get(customer) ?? 0) + 1);
      peak.set(customer, Math.max(peak.get(customer) ?? 0, running.get(customer)!));
      // The recurring test's key is held long enough for its occurrence to find it taken.
      await new Promise((resolve) => setTimeout(resolve, customer === 'c' ? 3000 : 300));
      running.set(customer, running.get(customer)! - 1);
      return { status: 200 };
    });
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  it('runs at most `limit` runs of one key at once, across jobs, and the rest wait without burning attempts', async () => {
    const concurrency = { key: 'customer:{payload.customerId}', limit: 1 };
    const bodies = ['a', 'a', 'a', 'a', 'b', 'b'].map((customerId, i) =>
      jobBody(target.url, { name: `keyed-${i}`, payload: { customerId }, concurrency, retryPolicy: { maxAttempts: 1 } }),
    );
    const created = await Promise.all(bodies.map((body) => scheduler.api('POST', '/v1/jobs', body)));
    expect(created.map((response) => response.status)).toEqual([201, 201, 201, 201, 201, 201]);
    expect(created[0]!.body.job.concurrency).toEqual(concurrency);
    const runIds = created.map((response) => response.body.job.nextRunId as string);
    const runs = await eventually(
      () => Promise.all(runIds.map((runId) => statusOf(scheduler, runId))),
      (all) => all.every((run) => run.status === 'SUCCEEDED'),
      90_000,
    );
    // One attempt each (maxAttempts 1: a wait that burned one would have ended the run DEAD).
    expect(runs.map((run) => run.attempt)).toEqual([1, 1, 1, 1, 1, 1]);
    expect(target.calls).toHaveLength(6);
    expect(peak.get('a')).toBe(1);
    expect(peak.get('b')).toBe(1);
    expect(await scheduler.deps.keyedSlots.holders(flowScope(scheduler.tenantId, 'customer:a'))).toEqual([]);
  });

  it("a recurring job's occurrence that waits for the key runs when the slot frees (its chain moved on meanwhile)", async () => {
    const concurrency = { key: 'customer:{payload.customerId}', limit: 1 };
    // A short value: the key names it in log lines, and the leak check looks for longer payload values.
    const payload = { customerId: 'c' };
    const blocker = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'keyed-blocker', payload, concurrency }));
    expect(blocker.status).toBe(201);
    await eventually(
      () => statusOf(scheduler, blocker.body.job.nextRunId as string),
      (run) => run.status === 'RUNNING',
      30_000,
    );
    // Due a second from now: it is leased while the blocker holds the key, admitted (the chain moves
    // on to the next occurrence), and waits; leased again once the slot frees, it runs.
    const anchor = Math.ceil((Date.now() + 1_000) / 1000) * 1000;
    const recurring = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, {
        name: 'keyed-recurring',
        payload,
        concurrency,
        retryPolicy: { maxAttempts: 1 },
        schedule: { kind: 'every', interval: 'PT2M', anchor: new Date(anchor).toISOString() },
      }),
    );
    expect(recurring.status, JSON.stringify(recurring.body)).toBe(201);
    const occurrence = recurring.body.job.nextRunId as string;
    const run = await eventually(
      () => statusOf(scheduler, occurrence),
      (found) => ['SUCCEEDED', 'SKIPPED', 'CANCELLED', 'DEAD'].includes(found.status),
      60_000,
    );
    expect(run).toMatchObject({ status: 'SUCCEEDED', attempt: 1 });
    const job = (await scheduler.api('GET', `/v1/jobs/${recurring.body.job.jobId as string}`)).body;
    expect(job.nextRunAt).toBe(new Date(anchor + 120_000).toISOString());
    await scheduler.api('DELETE', `/v1/jobs/${recurring.body.job.jobId as string}`);
  });
});

describe('runs waiting for a concurrency key', () => {
  let scheduler: Scheduler;
  let target: TargetServer;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 4 });
    target = await startTarget(async () => {
      await new Promise((resolve) => setTimeout(resolve, 700));
      return { status: 200 };
    });
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  it('start in the order they became due as the slot frees', async () => {
    const concurrency = { key: 'ordered', limit: 1 };
    const first = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'ordered-0', concurrency }));
    await eventually(
      () => Promise.resolve(target.calls.length),
      (n) => n === 1,
    );
    // Five more, due one after another while the first holds the slot.
    const runIds = [first.body.job.nextRunId as string];
    for (let i = 1; i <= 5; i++) {
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: `ordered-${i}`, concurrency }));
      runIds.push(created.body.job.nextRunId as string);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await eventually(
      () => Promise.resolve(target.calls.length),
      (n) => n === 6,
      60_000,
    );
    expect(target.calls.map((call) => call.headers['x-run-id'])).toEqual(runIds);
    expect(await scheduler.deps.keyWaiters.first(flowScope(scheduler.tenantId, 'ordered'), 10)).toEqual([]);
  });
});

describe('runs waiting for a concurrency key, by priority (decision 0191)', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  let releaseBlocker: () => void = () => {};
  const blockerHeld = new Promise<void>((resolve) => (releaseBlocker = resolve));

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 4 });
    // The first run holds the key until the others all wait in its queue.
    target = await startTarget(async (call) => {
      if (call.path.endsWith('/blocker')) await blockerHeld;
      return { status: 200 };
    });
  });
  afterAll(async () => {
    releaseBlocker();
    await scheduler.stop();
    await target.stop();
  });

  it('a high run starts before normal and low runs that became due before it, a normal one before low ones', async () => {
    const concurrency = { key: 'prioritised', limit: 1 };
    const create = async (name: string, priority: string, path = '/ok'): Promise<string> => {
      const created = await scheduler.api('POST', '/v1/jobs', { ...jobBody(`${target.url}${path}`, { name, concurrency }), priority });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      return created.body.job.nextRunId as string;
    };
    const blocker = await create('prioritised-blocker', 'normal', '/blocker');
    await eventually(
      () => Promise.resolve(target.calls.length),
      (n) => n === 1,
    );
    // Due in this order while the blocker holds the key: low, low, normal, high.
    const waiting: string[] = [];
    for (const [i, priority] of ['low', 'low', 'normal', 'high'].entries()) waiting.push(await create(`prioritised-${i}`, priority));
    const scope = flowScope(scheduler.tenantId, 'prioritised');
    const queue = await eventually(
      () => scheduler.deps.keyWaiters.first(scope, 10),
      (entries) => entries.length === 4,
      60_000,
    );
    const [low1, low2, normal, high] = waiting;
    expect(queue.map((entry) => entry.runId)).toEqual([high, normal, low1, low2]);
    releaseBlocker();
    await eventually(
      () => Promise.resolve(target.calls.length),
      (n) => n === 5,
      60_000,
    );
    expect(target.calls.map((call) => call.headers['x-run-id'])).toEqual([blocker, high, normal, low1, low2]);
    expect(await scheduler.deps.keyWaiters.first(scope, 10)).toEqual([]);
  });
});

describe('the last slot of a key under contention', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  let answer: () => void = () => {};

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0, tuning: { leaseMarginSeconds: 2 } });
    target = await startTarget(() => new Promise((resolve) => (answer = () => resolve({ status: 200 }))));
  });
  afterAll(async () => {
    answer();
    await scheduler.stop();
    await target.stop();
  });

  it('goes to one of two racing workers; the other run waits QUEUED on the same attempt, then runs', async () => {
    const concurrency = { key: '{type}', limit: 1 };
    const [first, second] = await Promise.all(
      [0, 1].map((i) => scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: `race-${i}`, type: 'export', concurrency }))),
    );
    const runIds = [first!.body.job.nextRunId as string, second!.body.job.nextRunId as string];
    const workers = [scheduler.workerDeps('racer-1'), scheduler.workerDeps('racer-2')];
    const racing = runIds.map((runId, i) => executeRun(workers[i]!, runId));
    // Exactly one of them gets to the target; the other gives its lease back.
    const waited = await Promise.race(racing.map(async (result, i) => ({ result: await result, i })));
    expect(waited.result).toBe('waiting');
    await eventually(
      () => Promise.resolve(target.calls.length),
      (n) => n === 1,
    );
    const waiting = await statusOf(scheduler, runIds[waited.i]!);
    expect(waiting).toMatchObject({ status: 'QUEUED', attempt: 1 });
    expect(waiting.reason).toContain('concurrency key export');
    answer();
    expect(await racing[1 - waited.i]).toBe('succeeded');
    // The slot is free again: the waiting run takes it.
    const next = executeRun(workers[waited.i]!, runIds[waited.i]!);
    await eventually(
      () => Promise.resolve(target.calls.length),
      (n) => n === 2,
    );
    answer();
    expect(await next).toBe('succeeded');
    expect(await statusOf(scheduler, runIds[waited.i]!)).toMatchObject({ status: 'SUCCEEDED', attempt: 1 });
  });

  it('comes back with the lease of a worker that died holding it', async () => {
    const concurrency = { key: 'report:{label.region}', limit: 1 };
    const body = (i: number) => jobBody(target.url, { name: `dead-${i}`, labels: { region: 'eu' }, concurrency, timeoutSeconds: 1 });
    const dead = await scheduler.api('POST', '/v1/jobs', body(0));
    const deadRun = dead.body.job.nextRunId as string;
    // The dead worker's last acts: its lease (1 s + 2 s margin) and its keyed slot, taken past the
    // grace a slot of a run about to lease is given.
    const deadWorker = scheduler.workerDeps('dead-worker');
    const leased = await deadWorker.leases.lease(deadRun, leaseRequest(scheduler.config, 'dead-worker'));
    expect(leased.kind).toBe('leased');
    const scope = flowScope(scheduler.tenantId, 'report:eu');
    expect(await deadWorker.keyedSlots.acquire(scope, deadRun, 1, Date.now() - 20_000, () => Promise.resolve(new Map()))).toBe(0);

    const other = await scheduler.api('POST', '/v1/jobs', body(1));
    const otherRun = other.body.job.nextRunId as string;
    const worker = scheduler.workerDeps('live-worker');
    // While the dead worker's lease holds, the slot is its run's.
    expect(await executeRun(worker, otherRun)).toBe('waiting');
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    const run = executeRun(worker, otherRun);
    await eventually(
      () => Promise.resolve(target.calls.filter((call) => call.headers['x-run-id'] === otherRun).length),
      (n) => n === 1,
    );
    answer();
    expect(await run).toBe('succeeded');
    expect(await statusOf(scheduler, otherRun)).toMatchObject({ status: 'SUCCEEDED', attempt: 1 });
    expect(await scheduler.deps.keyedSlots.holders(scope)).toEqual([]);
  });
});

describe('a rate key', () => {
  let scheduler: Scheduler;
  let target: TargetServer;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 4 });
    target = await startTarget(() => ({ status: 200 }));
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  it('delays starts over its rate, and fails none', async () => {
    const rateLimit = { key: 'partner-api', limit: 2, periodSeconds: 3 };
    const created = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: `rated-${i}`, rateLimit, retryPolicy: { maxAttempts: 1 } })),
      ),
    );
    expect(created.every((response) => response.status === 201)).toBe(true);
    const runIds = created.map((response) => response.body.job.nextRunId as string);
    const runs = await eventually(
      () => Promise.all(runIds.map((runId) => statusOf(scheduler, runId))),
      (all) => all.every((run) => run.status === 'SUCCEEDED'),
      90_000,
    );
    expect(runs.map((run) => run.attempt)).toEqual([1, 1, 1, 1, 1, 1]);
    // Two starts per 3 s: the six calls span at least two whole periods.
    const times = target.calls.map((call) => call.at).sort((a, b) => a - b);
    expect(times).toHaveLength(6);
    expect(times[5]! - times[0]!).toBeGreaterThanOrEqual(2 * 3_000 - 500);
    expect(times[2]! - times[0]!).toBeGreaterThanOrEqual(3_000 - 500);
  });

  it('lets a burst within its rate start at once: runs racing for marks spread over them instead of all taking the first free one', async () => {
    // No workers of its own: the twenty runs are executed below, all at the same moment.
    const idle = await startScheduler({ workerConcurrency: 0 });
    try {
      const rateLimit = { key: 'burst-api', limit: 20, periodSeconds: 60 };
      const created = await Promise.all(
        Array.from({ length: 20 }, (_, i) => idle.api('POST', '/v1/jobs', jobBody(target.url, { name: `burst-${i}`, rateLimit }))),
      );
      expect(created.every((response) => response.status === 201)).toBe(true);
      const outcomes = await Promise.all(created.map((response, i) => executeRun(idle.workerDeps(`burst-${i}`), response.body.job.nextRunId as string)));
      const started = outcomes.filter((outcome) => outcome === 'succeeded').length;
      // Each first looking at mark 0, 5 or 6 of 20 started (measured before); spread, 17 to 19 do.
      expect(started, JSON.stringify(outcomes)).toBeGreaterThanOrEqual(14);
    } finally {
      await idle.stop();
    }
  });
});

/** A scheduler without workers (runs are executed by the test) and a target that answers 200 at once, for one describe. */
function schedulerWithoutWorkers(): { readonly scheduler: () => Scheduler; readonly target: () => TargetServer } {
  let scheduler: Scheduler | undefined;
  let target: TargetServer | undefined;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
    target = await startTarget();
  });
  afterAll(async () => {
    await scheduler?.stop();
    await target?.stop();
  });
  return { scheduler: () => scheduler!, target: () => target! };
}

describe('a store error after a concurrency key slot is taken', () => {
  const setup = schedulerWithoutWorkers();
  let scheduler: Scheduler;
  let target: TargetServer;
  beforeAll(() => {
    scheduler = setup.scheduler();
    target = setup.target();
  });

  it("gives the slot back: the next run of the key does not wait for the failed one's lease to end", async () => {
    const body = (i: number) =>
      jobBody(target.url, {
        name: `slot-error-${i}`,
        timeoutSeconds: 600,
        concurrency: { key: 'acct', limit: 1 },
        rateLimit: { key: 'partner', limit: 100, periodSeconds: 60 },
      });
    const first = (await scheduler.api('POST', '/v1/jobs', body(1))).body.job.nextRunId as string;
    const second = (await scheduler.api('POST', '/v1/jobs', body(2))).body.job.nextRunId as string;
    // The first run's rate read is throttled after it took the key's slot.
    const deps = scheduler.workerDeps('throttled');
    const throttled = {
      ...deps,
      rateMarks: Object.assign(Object.create(deps.rateMarks) as typeof deps.rateMarks, {
        marks: () =>
          Promise.reject(Object.assign(new Error('Rate of requests exceeds the allowed throughput'), { name: 'ProvisionedThroughputExceededException' })),
      }),
    };
    await expect(executeRun(throttled, first)).rejects.toThrow(/allowed throughput/);
    expect(await scheduler.deps.keyedSlots.holders(flowScope(scheduler.tenantId, 'acct'))).toEqual([]);
    // Before, the slot stayed the first run's for its 10-minute lease: this one waited.
    expect(await executeRun(scheduler.workerDeps('next'), second)).toBe('succeeded');
  });
});

describe("a concurrency key's queue entry whose run no longer waits there (decision 0187)", () => {
  const setup = schedulerWithoutWorkers();
  let scheduler: Scheduler;
  let target: TargetServer;
  const concurrency = { key: 'acct:{label.acct}', limit: 1 };
  beforeAll(() => {
    scheduler = setup.scheduler();
    target = setup.target();
  });

  const scopeOf = (acct: string) => flowScope(scheduler.tenantId, `acct:${acct}`);
  const create = async (name: string, acct: string): Promise<string> => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name, labels: { acct }, concurrency, timeoutSeconds: 600 }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.job.nextRunId as string;
  };
  /** A run leased by a worker that holds its key's slot (its call under way). */
  const holding = async (name: string, acct: string): Promise<string> => {
    const runId = await create(name, acct);
    const holder = scheduler.workerDeps(`holder-${name}`);
    expect((await holder.leases.lease(runId, leaseRequest(scheduler.config, `holder-${name}`))).kind).toBe('leased');
    expect(await holder.keyedSlots.acquire(scopeOf(acct), runId, 1, Date.now(), () => Promise.resolve(new Map()))).toBe(0);
    return runId;
  };
  const queued = async (acct: string) => (await scheduler.deps.keyWaiters.first(scopeOf(acct), 10)).map((waiter) => waiter.runId);
  /** A run leased two minutes ago and running still (its lease is 600 s and more). */
  const runningForLong = async (name: string, acct: string): Promise<string> => {
    const runId = await create(name, acct);
    expect((await scheduler.workerDeps(`lessee-${name}`).leases.lease(runId, leaseRequest(scheduler.config, `lessee-${name}`))).kind).toBe('leased');
    await scheduler.clients.dynamo.send(
      new UpdateCommand({
        TableName: scheduler.config.runsTable,
        Key: runKey(runId),
        UpdateExpression: 'SET startedAt = :at',
        ExpressionAttributeValues: { ':at': new Date(Date.now() - 120_000).toISOString() },
      }),
    );
    return runId;
  };
  /** Puts a run's entry in the key's queue at `sort`. */
  const entry = async (acct: string, runId: string, sort: string): Promise<void> => {
    const run = (await scheduler.api('GET', `/v1/runs/${runId}`)).body as { tenantId: string; jobType: string };
    await scheduler.deps.keyWaiters.join(scopeOf(acct), { runId, sort, tenantId: run.tenantId, jobType: run.jobType, priority: 'normal' }, Date.now());
  };

  it('one whose job moved it to another key stops holding up the first key once its slot is free', async () => {
    const worker = scheduler.workerDeps('worker');
    const holderA = await holding('holder-a', 'a');
    const moved = await create('moved', 'a');
    expect(await executeRun(worker, moved)).toBe('waiting');
    expect(await queued('a')).toEqual([moved]);
    // Its job's key changes; leased again, it waits for the new key's slot.
    const { jobId } = (await scheduler.api('GET', `/v1/runs/${moved}`)).body as { jobId: string };
    expect((await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { labels: { acct: 'b' } })).status).toBe(200);
    await holding('holder-b', 'b');
    expect(await executeRun(worker, moved)).toBe('waiting');
    expect(await queued('b')).toEqual([moved]);
    // The first key's slot is given back: a run of it due after the moved one does not wait behind
    // the moved one's old entry (before, it did, for as long as the moved one waited for its new key).
    await scheduler.deps.keyedSlots.release(scopeOf('a'), 0, holderA);
    const after = await create('after', 'a');
    expect(await executeRun(worker, after)).toBe('succeeded');
    expect(await queued('a')).toEqual([]);
    expect(await queued('b')).toEqual([moved]);
  });

  it('one whose run has been running for long (its leave lost) stops holding up the key', async () => {
    const worker = scheduler.workerDeps('worker');
    // A run leased two minutes ago and running still, whose entry stayed in the key's queue.
    const long = await runningForLong('long', 'c');
    expect((await statusOf(scheduler, long)).status).toBe('RUNNING');
    await entry('c', long, waiterSortOf({ availableAt: '2000-01-01T00:00:00.000Z', runId: long }));
    // Before, a RUNNING run with a live lease counted as waiting, whenever it was leased.
    const fresh = await create('fresh', 'c');
    expect(await executeRun(worker, fresh)).toBe('succeeded');
    expect(await queued('c')).toEqual([]);
  });

  it('one moved to another key whose slot it got at once, then waiting for a rate mark, stops holding up the first key', async () => {
    const worker = scheduler.workerDeps('worker');
    const rateLimit = { key: 'partner-d', limit: 1, periodSeconds: 3600 };
    // The rate's one mark of the hour, taken.
    const burner = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'burner', rateLimit }));
    expect(await executeRun(worker, burner.body.job.nextRunId as string)).toBe('succeeded');
    const holderD = await holding('holder-d', 'd');
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'moved-rated', labels: { acct: 'd' }, concurrency, rateLimit }));
    const moved = created.body.job.nextRunId as string;
    expect(await executeRun(worker, moved)).toBe('waiting');
    expect(await queued('d')).toEqual([moved]);
    expect((await scheduler.api('PATCH', `/v1/jobs/${created.body.job.jobId as string}`, { labels: { acct: 'e' } })).status).toBe(200);
    // Key e's slot is free: the run takes it, then waits for the rate, giving the slot back.
    expect(await executeRun(worker, moved)).toBe('waiting');
    expect((await statusOf(scheduler, moved)).reason).toContain('over the rate of key partner-d');
    await scheduler.deps.keyedSlots.release(scopeOf('d'), 0, holderD);
    // Before, its give-back for the rate left the run's last key as d: its entry there still counted.
    const after = await create('after-d', 'd');
    expect(await executeRun(worker, after)).toBe('succeeded');
    expect(await queued('d')).toEqual([]);
  });

  it('a freed slot wakes the first run that still waits, not a stale entry ahead of it', async () => {
    // Two entries behind any run of the key: a run running for two minutes (its leave lost), then a queued one.
    const long = await runningForLong('stale-head', 'f');
    const live = await create('live-second', 'f');
    await entry('f', long, waiterSortOf({ availableAt: '2999-01-01T00:00:00.000Z', runId: long }));
    await entry('f', live, waiterSortOf({ availableAt: '2999-01-01T00:00:01.000Z', runId: live }));
    // A run of the key takes the slot, runs, and gives it back: the wake-up goes to the live one.
    const deps = scheduler.workerDeps('waker');
    const woken: string[] = [];
    const dispatch = Object.assign(Object.create(deps.dispatch) as typeof deps.dispatch, {
      send: (dispatches: Parameters<typeof deps.dispatch.send>[0], now: number) => {
        woken.push(...dispatches.map((sent) => sent.runId));
        return deps.dispatch.send(dispatches, now);
      },
    });
    const runner = await create('runner-f', 'f');
    expect(await executeRun({ ...deps, dispatch }, runner)).toBe('succeeded');
    expect(woken).toEqual([live]);
  });
});

describe('a rate wait longer than SQS delays a message (decision 0193)', () => {
  const setup = schedulerWithoutWorkers();

  it('is sent again for the rest of the wait when its message comes back early: no lease, no give-back', async () => {
    const scheduler = setup.scheduler();
    const rateLimit = { key: 'hourly-api', limit: 1, periodSeconds: 3600 };
    const body = (i: number) => jobBody(setup.target().url, { name: `hourly-${i}`, rateLimit });
    const first = (await scheduler.api('POST', '/v1/jobs', body(1))).body.job.nextRunId as string;
    const second = (await scheduler.api('POST', '/v1/jobs', body(2))).body.job.nextRunId as string;
    expect(await executeRun(scheduler.workerDeps('first'), first)).toBe('succeeded');
    // The second waits for the hour's one mark: SQS holds its message 900 s, not the hour.
    expect(await executeRun(scheduler.workerDeps('second'), second)).toBe('waiting');
    const versionOf = async () =>
      (await scheduler.clients.dynamo.send(new GetCommand({ TableName: scheduler.config.runsTable, Key: runKey(second), ConsistentRead: true }))).Item!
        .version as number;
    const waiting = await versionOf();

    const deps = scheduler.workerDeps('early');
    const sent: Dispatch[] = [];
    const send = deps.dispatch.send.bind(deps.dispatch);
    deps.dispatch.send = (dispatches, now, options) => {
      sent.push(...dispatches);
      return send(dispatches, now, options);
    };
    const notBefore = Date.now() + 2_700_000;
    const message = { tenantId: scheduler.tenantId, queueUrl: scheduler.config.dispatchQueueUrl, notBefore, deferrals: 1 };
    expect(await executeRun(deps, second, message)).toBe('requeued');
    // Before, the run was leased, found its mark taken and gave its lease back (two writes).
    expect(await versionOf()).toBe(waiting);
    expect(await statusOf(scheduler, second)).toMatchObject({ status: 'QUEUED', attempt: 1 });
    expect(sent).toEqual([{ runId: second, tenantId: scheduler.tenantId, availableAt: notBefore, queueUrl: message.queueUrl, deferrals: 1 }]);

    // Back on time (or with no time on it), it is leased as any message is: it still waits for the mark.
    expect(await executeRun(scheduler.workerDeps('on-time'), second, { ...message, notBefore: Date.now() })).toBe('waiting');
    expect(await versionOf()).toBeGreaterThan(waiting);
  });
});

describe("a recurring job's occurrence waiting for its key counts as running for the next one's overlap policy", () => {
  const setup = schedulerWithoutWorkers();

  it.each(['skip', 'buffer-one', 'cancel-running'] as const)('%s', async (policy) => {
    const scheduler = setup.scheduler();
    const key = `overlap-rate-${policy}`;
    const rateLimit = { key, limit: 1, periodSeconds: 3600 };
    // The key's one mark of the hour, taken: every start of the job waits for it.
    expect(await scheduler.deps.rateMarks.take(flowScope(scheduler.tenantId, key), 0, Date.now(), null, 3600)).toBe(true);
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(setup.target().url, { overlapPolicy: policy, rateLimit, schedule: { kind: 'cron', expression: '* * * * *', timezone: 'UTC' } }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const jobId = created.body.job.jobId as string;
    const first = created.body.job.nextRunId as string;
    const at = Date.parse(created.body.job.nextRunAt);
    // Occurrence 1 is admitted (the chain moves on, the job records it as started) and waits for the mark, QUEUED.
    expect(
      await executeRun(
        scheduler.workerDeps('w1', () => at + 100),
        first,
      ),
    ).toBe('waiting');
    expect(await statusOf(scheduler, first)).toMatchObject({ status: 'QUEUED', reason: expect.stringContaining(`over the rate of key ${key}`) });
    const second = (await scheduler.api('GET', `/v1/jobs/${jobId}`)).body.nextRunId as string;
    expect(second).not.toBe(first);
    const secondResult = await executeRun(
      scheduler.workerDeps('w2', () => at + 60_000 + 100),
      second,
    );
    // Before, occurrence 1 (QUEUED, no lease, not an external offer) did not count as running: the
    // next one was admitted and waited for the mark too, and both ran once it freed.
    if (policy === 'skip') {
      expect(secondResult).toBe('skipped');
      expect(await statusOf(scheduler, second)).toMatchObject({
        status: 'SKIPPED',
        reason: expect.stringContaining(`run ${first} is still running (overlapPolicy skip)`),
      });
    } else if (policy === 'buffer-one') {
      expect(secondResult).toBe('waiting');
      expect(await statusOf(scheduler, second)).toMatchObject({ status: 'QUEUED', reason: expect.stringContaining(`waiting for run ${first} to finish`) });
    } else {
      // Occurrence 1 is retired where it waits; occurrence 2 takes its place (and waits for the mark itself).
      expect(secondResult).toBe('waiting');
      expect(await statusOf(scheduler, first)).toMatchObject({ status: 'CANCELLED', reason: expect.stringMatching(/cancel-running/) });
      expect(await statusOf(scheduler, second)).toMatchObject({ status: 'QUEUED', reason: expect.stringContaining(`over the rate of key ${key}`) });
    }
    await scheduler.api('DELETE', `/v1/jobs/${jobId}`);
  });
});
