// What one execution costs in AWS requests, counted at the SDK against the emulator: the handlers'
// calls for a run-now job from create to success, for a further run of a recurring job, and for a
// run that fails once and is retried. Counts, not times: a change that adds a request per run fails
// here. (The SQS polling of the event source mapping is the runtime's and is not counted.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RequestCounter } from '../../lambdas/store/request-counter';
import { RunRecords } from '../../lambdas/store/run-records';
import { WorkflowRunsRepository } from '../../lambdas/store/workflow-runs';
import type { Scheduler, TargetServer } from './harness';
import { awsClients, clearOfMinuteEnd, eventually, inFreshSecond, jobBody, leaseRequest, startScheduler, startTarget } from './harness';
import { firstCheckAt } from '../../lambdas/domain/time-gate';

/** A workflow of two steps, `first -> second`, calling `targetUrl`. */
const twoStepWorkflow = (name: string, targetUrl: string) => ({
  name,
  steps: [
    { id: 'first', target: { kind: 'http', url: `${targetUrl}/first` } },
    { id: 'second', target: { kind: 'http', url: `${targetUrl}/second` }, dependsOn: ['first'] },
  ],
});

describe('requests per execution', () => {
  const counter = new RequestCounter();
  let scheduler: Scheduler;
  let target: TargetServer;
  // The test's own reads go through clients the counter does not see.
  let runs: RunRecords;

  beforeAll(async () => {
    scheduler = await startScheduler({ requestCounter: counter, workerConcurrency: 1 });
    runs = new RunRecords(awsClients().dynamo, scheduler.config.runsTable);
    let flakyCalls = 0;
    target = await startTarget((call) => ({ status: call.path.endsWith('/flaky') && flakyCalls++ === 0 ? 503 : 200 }));
    // The key's lookup is cached from here on, as the authorizer's answer is in AWS.
    expect((await scheduler.api('GET', '/v1/jobs?limit=1')).status).toBe(200);
    await warm();
  });

  /**
   * Likewise the tenant's limits and its signing secrets in the worker: each is read once a minute
   * per process, not per execution (a Query and a GetItem per tenant, process and minute). Warmed
   * again before each count, clear of a minute's end, so that a slow machine's minute does not land inside one
   * (nor the count straddle two minutes' roll-ups).
   */
  async function warm(): Promise<void> {
    await clearOfMinuteEnd();
    await scheduler.deps.tenantLimits.of(scheduler.tenantId);
    await scheduler.deps.signingCache.of(scheduler.tenantId);
    await inFreshSecond();
  }
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  async function finished(runId: string): Promise<void> {
    await eventually(
      () => runs.get(runId),
      (run) => run?.status === 'SUCCEEDED',
    );
    // The worker writes its roll-up when the batch ends, just after the outcome.
    await new Promise((resolve) => setTimeout(resolve, 300));
  }

  it('a run-now job: created, queued, leased, called and recorded', async () => {
    await warm();
    counter.reset();
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'count-now' }));
    await finished(created.body.job.nextRunId);
    const tally = counter.tally();
    expect(tally.calls).toEqual({
      'dynamodb.BatchWriteItem': 1, // the create's audit entry, under the tenant and under the job (decision 0079)
      // API: the creates-per-second counter on its own (decision 0155); the run on its own, then its
      // name's guard, then the job (COMPLETED from the start), each a conditional put (decisions
      // 0167, 0173); the message.
      'sqs.SendMessageBatch': 1,
      // The counter; worker: lease, read the job (one request per worker batch), message visibility
      // to the lease (likewise), record the outcome, the minute's roll-up (one per worker batch,
      // whatever its size).
      'dynamodb.UpdateItem': 3,
      'dynamodb.BatchGetItem': 1,
      'sqs.ChangeMessageVisibilityBatch': 1,
      'dynamodb.PutItem': 4, // the run, its name's guard and the job; the roll-up
    });
  });

  it('a run-now job without a name: its run and then the job, each one conditional put, no transaction (decision 0167)', async () => {
    await warm();
    counter.reset();
    const { name: _name, ...unnamed } = jobBody(target.url);
    const created = await scheduler.api('POST', '/v1/jobs', unnamed);
    await finished(created.body.job.nextRunId);
    expect(counter.tally().calls).toEqual({
      'dynamodb.BatchWriteItem': 1, // the audit entry
      'sqs.SendMessageBatch': 1,
      'dynamodb.UpdateItem': 3, // the create's counter, lease, outcome
      'dynamodb.BatchGetItem': 1,
      'sqs.ChangeMessageVisibilityBatch': 1,
      'dynamodb.PutItem': 3, // the run, the job, the roll-up
    });
  });

  it('a run-now job with a 60 KB payload: the requests and write units of a small one, and the payload PUT once and read once (decision 0162)', async () => {
    const countRun = async (name: string, payload: unknown) => {
      await warm();
      counter.reset();
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name, payload }));
      await finished(created.body.job.nextRunId);
      return counter.tally();
    };
    const small = await countRun('count-small-payload', { small: true });
    const large = await countRun('count-large-payload', { blob: 'x'.repeat(60_000) });
    expect(large.calls).toEqual({ ...small.calls, 's3.PutObject': 1, 's3.GetObject': 1 });
    // Inline, the payload alone would be 59 write units of the create's transaction (two per KB).
    expect(large.writeUnits).toBe(small.writeUnits);
  });

  it("a workflow of two steps (first -> second): each step a run, plus the workflow run item's writes", async () => {
    const created = await scheduler.api('POST', '/v1/workflows', twoStepWorkflow('count-workflow', target.url));
    expect(created.status).toBe(201);
    await warm();
    counter.reset();
    const started = await scheduler.api('POST', `/v1/workflows/${created.body.workflowId}/runs`);
    expect(started.status).toBe(202);
    // Read through the test's own client: the API's reads would be counted.
    const workflows = new WorkflowRunsRepository(awsClients().dynamo, scheduler.config.jobsTable);
    await eventually(
      () => workflows.getRun(created.body.workflowId, started.body.workflowRunId),
      (run) => run?.status === 'SUCCEEDED',
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const tally = counter.tally();
    expect(tally.calls).toEqual({
      // API: the workflow and its version (read once per process: versions never change), the
      // creates-per-second counter, the workflow run with the root step claimed in it (decision 0178: not
      // a write of its own after it), the root's run, its message,
      // the workflow run read again (a cancel meanwhile retires the runs just written), the audit entry.
      'dynamodb.BatchWriteItem': 1,
      // Each step run as any run: lease, outcome, its job (the version item; one per worker batch),
      // the message following the lease, the minute's roll-up. Then the continuation: the workflow
      // run read, the step's outcome recorded with the dependants' claim in one write (decision
      // 0158), their parents' results read, their runs written, the workflow run read again; the
      // last step's outcome is written with the workflow run's end. The second step is run by the
      // worker that ran the first (decision 0179): written leased by it (no lease write), no message
      // of its own, no visibility change, and one roll-up for the two (one invocation); its run is
      // read once before it starts, with its workflow run (a cancel since its write is honoured, one
      // of the workflow run that stopped before it cancelled the run too). Before: 2 sends, 2
      // visibility changes, 5 puts, 7 updates.
      'dynamodb.GetItem': 9, // API 4 (the workflow read again after its run's write: a delete between), first step 2, second step 3 (its run and its workflow run read before it starts, the workflow run)
      'dynamodb.UpdateItem': 6, // API 1 (rate counter), first step 3 (lease, outcome, step recorded with the claim), second 2 (outcome, step recorded with the end)
      'dynamodb.PutItem': 4, // API 2 (workflow run, step run), the second step's run (leased), the invocation's roll-up
      // each step's job (the first's in one request with its workflow run, decision 0190: a cancel that
      // stopped before it cancelled the steps' runs is honoured), the first step's result for the second
      'dynamodb.BatchGetItem': 3,
      'sqs.SendMessageBatch': 1, // the root's, from the API
      'sqs.ChangeMessageVisibilityBatch': 1, // the root's message following its lease
    });
  });

  it('a delayed run: the same, the message held by SQS until due', async () => {
    await warm();
    counter.reset();
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'count-delay', schedule: { kind: 'delay', seconds: 1 } }));
    await finished(created.body.job.nextRunId);
    const tally = counter.tally();
    expect(tally.calls).toEqual({
      'dynamodb.BatchWriteItem': 1, // the create's audit entry, under the tenant and under the job (decision 0079)
      // Create: the name's guard on its own (decision 0173), then the job and its run; the worker
      // marking the one-shot job COMPLETED as its run starts.
      'dynamodb.TransactWriteItems': 2,
      'sqs.SendMessageBatch': 1,
      'dynamodb.UpdateItem': 3, // the create's counter, lease, outcome
      'dynamodb.BatchGetItem': 1,
      'sqs.ChangeMessageVisibilityBatch': 1,
      'dynamodb.PutItem': 2, // the name's guard; the roll-up
    });
  });

  it('a run that fails once and is retried: the failed attempt and its retry written together', async () => {
    await warm();
    counter.reset();
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(`${target.url}/flaky`, { name: 'count-retry', retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 } }),
    );
    const first = created.body.job.nextRunId as string;
    await eventually(
      () => runs.get(first),
      (run) => run?.status === 'FAILED',
    );
    // The retry is the same occurrence's attempt 2: the run id ends in its attempt.
    await finished(first.replace(/\.1$/, '.2'));
    const tally = counter.tally();
    expect(tally.calls).toEqual({
      'dynamodb.BatchWriteItem': 1, // the create's audit entry, under the tenant and under the job (decision 0079)
      'dynamodb.TransactWriteItems': 1, // the failed attempt with its retry run
      'sqs.SendMessageBatch': 2, // the first run; the retry
      'dynamodb.UpdateItem': 4, // the create's counter, two leases, one success (the failure is in the transaction)
      'dynamodb.BatchGetItem': 2, // the job, read by each attempt
      'sqs.ChangeMessageVisibilityBatch': 2,
      'dynamodb.PutItem': 5, // the first run, its name's guard and the job (decisions 0167, 0173); a roll-up per worker batch
    });
  });

  it('an at-most-once run: the same, plus the write that consumes the attempt before the call', async () => {
    await warm();
    counter.reset();
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'count-at-most-once', delivery: 'at-most-once' }));
    await finished(created.body.job.nextRunId);
    expect(counter.tally().calls).toEqual({
      'dynamodb.BatchWriteItem': 1, // the create's audit entry, under the tenant and under the job (decision 0079)
      'sqs.SendMessageBatch': 1,
      'dynamodb.UpdateItem': 4, // the create's counter, lease, consume, outcome
      'dynamodb.BatchGetItem': 1,
      'sqs.ChangeMessageVisibilityBatch': 1,
      'dynamodb.PutItem': 4, // the run, its name's guard and the job (decisions 0167, 0173); the roll-up
    });
  });

  it('an exactly-once run: the ledger read before the call, and the outcome written with its effect', async () => {
    await warm();
    counter.reset();
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'count-exactly-once', delivery: 'exactly-once' }));
    await finished(created.body.job.nextRunId);
    expect(counter.tally().calls).toEqual({
      'dynamodb.BatchWriteItem': 1, // the create's audit entry, under the tenant and under the job (decision 0079)
      'dynamodb.TransactWriteItems': 1, // the outcome with the occurrence's effect
      'sqs.SendMessageBatch': 1,
      'dynamodb.UpdateItem': 2, // the create's counter, the lease
      'dynamodb.BatchGetItem': 1, // the job
      'dynamodb.GetItem': 1, // the ledger
      'sqs.ChangeMessageVisibilityBatch': 1,
      'dynamodb.PutItem': 4, // the run, its name's guard and the job (decisions 0167, 0173); the roll-up
    });
  });
});

/**
 * A scheduler whose runs are taken a batch at a time: no pollers until the runs wait in the queue
 * (`startWorkers`), so that one receive takes them together. The emulator serialises the batch's
 * leases, which on a loaded machine trickle in further apart than the default 10 ms quiet time; a
 * wide window makes the sharing the test's subject, not the machine's speed.
 */
function startBatchScheduler(counter: RequestCounter): Promise<Scheduler> {
  // The cap outlasts a batch of ten whose leases, calls, outcomes and chains the emulator serialises
  // on two loaded cores (14 s seen in CI with a bench beside it: two sends at a 10 s cap).
  return startScheduler({ requestCounter: counter, workerConcurrency: 0, tuning: { batchCoalesceQuietMs: 3000, batchCoalesceCapMs: 40_000 } });
}

describe('requests per worker batch', () => {
  const counter = new RequestCounter();
  let scheduler: Scheduler;
  let target: TargetServer;

  beforeAll(async () => {
    scheduler = await startBatchScheduler(counter);
    target = await startTarget(() => ({ status: 200 }));
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  it('the runs of one batch share the job read and the visibility change', async () => {
    const runs = new RunRecords(awsClients().dynamo, scheduler.config.runsTable);
    // One roll-up is one per tenant and minute: the batch must not straddle a minute's end. Waited
    // for before the creates: a run leased past its first check-back costs its lease a second write
    // (decision 0170).
    await clearOfMinuteEnd(40_000);
    const created = await Promise.all(
      Array.from({ length: 10 }, (_, index) => scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: `count-batch-${index}` }))),
    );
    const runIds = created.map((response) => response.body.job.nextRunId as string);
    counter.reset();
    await scheduler.startWorkers(1);
    await eventually(
      () => runs.getMany(runIds),
      (found) => found.length === 10 && found.every((run) => run.status === 'SUCCEEDED'),
    );
    await new Promise((resolve) => setTimeout(resolve, 300)); // the batch's roll-up

    const { calls } = counter.tally();
    expect(calls['dynamodb.UpdateItem']).toBe(20); // a lease and an outcome each: conditional, per run
    expect(calls['dynamodb.GetItem']).toBe(1); // the tenant's limits, read once by the new worker process
    expect(calls['dynamodb.PutItem']).toBe(1); // one roll-up: the ten came in one batch
    // The job reads and the visibility changes share one request each, as on AWS, where a
    // batch's leases land within milliseconds. Ten would mean no sharing at all.
    expect(calls['dynamodb.BatchGetItem']).toBe(1);
    expect(calls['sqs.ChangeMessageVisibilityBatch']).toBe(1);
  });
});

describe('requests per worker batch of recurring jobs', () => {
  const counter = new RequestCounter();
  let scheduler: Scheduler;
  let target: TargetServer;
  let runs: RunRecords;

  beforeAll(async () => {
    scheduler = await startBatchScheduler(counter);
    target = await startTarget(() => ({ status: 200 }));
    runs = new RunRecords(awsClients().dynamo, scheduler.config.runsTable);
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  it("the successors the runs of one batch write (recurring jobs' next occurrences) share one SendMessageBatch", async () => {
    // Ten jobs on one anchor: their first occurrences fall at the same instant and come in one batch.
    const anchor = Math.ceil((Date.now() + 6_000) / 1000) * 1000;
    const created = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        scheduler.api(
          'POST',
          '/v1/jobs',
          jobBody(target.url, { name: `count-successors-${index}`, schedule: { kind: 'every', interval: 'PT2M', anchor: new Date(anchor).toISOString() } }),
        ),
      ),
    );
    for (const response of created) expect(response.status, JSON.stringify(response.body)).toBe(201);
    const runIds = created.map((response) => response.body.job.nextRunId as string);
    // Every message visible (a delay is whole seconds, rounded up) before the worker's first receive.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, anchor + 2_500 - Date.now())));
    counter.reset();
    await scheduler.startWorkers(1);
    await eventually(
      () => runs.getMany(runIds),
      (found) => found.length === 10 && found.every((run) => run.status === 'SUCCEEDED'),
      60_000,
    );
    const jobs = await Promise.all(created.map((response) => scheduler.api('GET', `/v1/jobs/${response.body.job.jobId}`)));
    // Each chain moved on to its next occurrence, two minutes on, and sent it: ten messages, one request.
    for (const job of jobs) expect(job.body.nextRunAt).toBe(new Date(anchor + 120_000).toISOString());
    expect(counter.tally().calls['sqs.SendMessageBatch']).toBe(1);
  });
});

/**
 * What an execution costs in DynamoDB write units as AWS bills them (item sizes, index writes,
 * transactions at twice the units: bench/lib/capacity-model.ts), which `npm run bench:cost` reports
 * per kind (docs/performance.md). Held here so that a change that adds a write, an index entry or a
 * transaction to a create or an execution fails a test, not just a figure.
 */
describe('write units per execution', () => {
  const counter = new RequestCounter();
  let scheduler: Scheduler;
  let target: TargetServer;
  let runs: RunRecords;

  beforeAll(async () => {
    // No pollers in the API's runtime: each measure starts a worker once the create is counted, so
    // that a lease never lands among the create's writes.
    scheduler = await startScheduler({ requestCounter: counter, capacityModel: true, workerConcurrency: 0 });
    runs = new RunRecords(awsClients().dynamo, scheduler.config.runsTable);
    target = await startTarget();
    expect((await scheduler.api('GET', '/v1/jobs?limit=1')).status).toBe(200);
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  const units = () => {
    const tally = scheduler.capacity!.tally();
    return { total: tally.writeUnits + tally.indexWriteUnits, byOperation: tally.writesByOperation };
  };
  async function measure(body: Record<string, unknown>): Promise<{ create: ReturnType<typeof units>; execution: ReturnType<typeof units> }> {
    await clearOfMinuteEnd();
    await scheduler.deps.tenantLimits.of(scheduler.tenantId);
    await scheduler.deps.signingCache.of(scheduler.tenantId);
    await inFreshSecond();
    scheduler.capacity!.reset();
    const created = await scheduler.api('POST', '/v1/jobs', body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const create = units();
    scheduler.capacity!.reset();
    const worker = await scheduler.startWorkers(1);
    try {
      await eventually(
        () => runs.get(created.body.job.nextRunId),
        (run) => run?.status === 'SUCCEEDED',
      );
      // The worker writes its roll-up when the batch ends, just after the outcome.
      await new Promise((resolve) => setTimeout(resolve, 300));
    } finally {
      await worker.stop();
    }
    return { create, execution: units() };
  }

  it('a run-now job without a name: a create of 6 write units, plus its audit entry (decisions 0165-0167, 0186, 0188)', async () => {
    const { name: _name, ...unnamed } = jobBody(target.url);
    const { create, execution } = await measure(unnamed);
    expect(create.byOperation).toEqual({
      // The run on its own (1) and its two index entries: the tenant's runs and its check-back. Its
      // job's listing finds it through the tenant's (decision 0188): no byJob entry.
      'Runs.PutItem': 3,
      // The job on its own (1), in the tenant's index (no name, no status: COMPLETED; no type index: decision 0186).
      'Jobs.PutItem': 2,
      'Jobs.UpdateItem': 1, // the creates-per-second counter
      'Jobs.BatchWriteItem': 2, // the audit entry, under the tenant and under the job
    });
    expect(create.total).toBe(8);
    expect(execution.byOperation).toEqual({
      // The lease (1), its check-back's entry kept where the create put it and showing nothing the
      // lease changes (decisions 0170, 0171); the outcome (1) removing it (1).
      'Runs.UpdateItem': 3,
      'Jobs.PutItem': 1, // the roll-up of this worker batch (of one run)
    });
  });

  it("a run-now job with a name: the name's guard on its own, then the job with its tenant's index entry (decisions 0173, 0192)", async () => {
    const { create } = await measure(jobBody(target.url, { name: 'units-named' }));
    expect(create.byOperation).toEqual({
      'Runs.PutItem': 3,
      // The name's guard (1), then the job (1) and the tenant's index entry (1). In one transaction
      // (before decision 0173) the guard and the job were 2 each; the type's index was one more
      // (before decision 0186), and so was the name's (before decision 0192: the guard finds it now).
      'Jobs.PutItem': 3,
      'Jobs.UpdateItem': 1,
      'Jobs.BatchWriteItem': 2,
    });
  });

  it('a cron occurrence: its lease and outcome, and the chain writing the next run and then the job, each one conditional put (decision 0175)', async () => {
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { name: 'units-cron', schedule: { kind: 'cron', expression: '*/5 * * * * *' } }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const jobId: string = created.body.job.jobId;
    const succeeded = async () => (await scheduler.api('GET', `/v1/jobs/${jobId}/runs?status=SUCCEEDED`)).body.items.length as number;
    const worker = await scheduler.startWorkers(1);
    try {
      await eventually(succeeded, (count) => count >= 1, 30_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      scheduler.capacity!.reset();
      // Three more occurrences, each leased, recorded and chained to the next; stopped well before a fourth.
      await eventually(succeeded, (count) => count >= 4, 45_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
    } finally {
      await worker.stop();
    }
    const { byOperation } = units();
    expect((await scheduler.api('DELETE', `/v1/jobs/${jobId}`)).status).toBe(200);
    // Lease (1) keeping the check-back (decisions 0170, 0171); outcome (1) removing it (1). A lease
    // tried before its time, as a delayed message that comes early made one, fails its condition and
    // is billed all the same (1): none is (decision 0172).
    expect(byOperation['Runs.UpdateItem']).toBe(3 * 3);
    // The next run on its own (1, decision 0175; 2 in the chain's transaction before) and its three index entries.
    expect(byOperation['Runs.PutItem']).toBe(3 * 4);
    // The job on its own (1; 2 in the transaction before), and a roll-up per worker batch (1); its
    // keys-only indexes are not written (decision 0165). Its byNextRun entry moves (2) only when the
    // occurrence crosses a 150 s window (decision 0161).
    expect([3 * 2, 3 * 2 + 2]).toContain(byOperation['Jobs.PutItem']);
    expect(Object.keys(byOperation).sort()).toEqual(['Jobs.PutItem', 'Runs.PutItem', 'Runs.UpdateItem']);
  });

  it("a workflow's step runs: each put with its tenant's and its check-back's index entries, not the byJob index's (decision 0174)", async () => {
    const created = await scheduler.api('POST', '/v1/workflows', twoStepWorkflow('units-workflow', target.url));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await clearOfMinuteEnd();
    scheduler.capacity!.reset();
    const started = await scheduler.api('POST', `/v1/workflows/${created.body.workflowId}/runs`);
    expect(started.status).toBe(202);
    const workflows = new WorkflowRunsRepository(awsClients().dynamo, scheduler.config.jobsTable);
    const worker = await scheduler.startWorkers(1);
    try {
      await eventually(
        () => workflows.getRun(created.body.workflowId, started.body.workflowRunId),
        (run) => run?.status === 'SUCCEEDED',
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
    } finally {
      await worker.stop();
    }
    const { byOperation } = units();
    // Two step runs, each put once (1) with two index entries: the tenant's runs and its check-back.
    // Their job is a step of the version, which no route lists: no byJob entry (4 each before).
    expect(byOperation['Runs.PutItem']).toBe(2 * 3);
    const listed = await scheduler.api('GET', '/v1/runs?limit=10');
    const stepRuns = (listed.body.items as { jobId: string }[]).filter((run) => run.jobId.startsWith(`${created.body.workflowId}.v`));
    expect(stepRuns).toHaveLength(2);
  });

  it("a lease taken when its run's check-back is near: the refused keep, then the lease moving it (decision 0170)", async () => {
    const { name: _name, ...unnamed } = jobBody(target.url);
    const created = await scheduler.api('POST', '/v1/jobs', unnamed);
    expect(created.status).toBe(201);
    const run = (await runs.get(created.body.job.nextRunId))!;
    const firstCheck = firstCheckAt(Date.parse(run.availableAt), Date.parse(run.enqueuedAt!), scheduler.config);
    scheduler.capacity!.reset();
    // A worker that takes it a second before its first check-back (a backlog of half a minute).
    const lease = await scheduler.deps.leases.lease(run.runId, leaseRequest(scheduler.config, 'late-worker', firstCheck - 1_000));
    expect(lease.kind).toBe('leased');
    // The keep refused (1: DynamoDB bills a write whose condition failed), then the lease (1) with
    // its entry's key changed (2). A lease in time is 1.
    expect(units().byOperation).toEqual({ 'Runs.UpdateItem': 4 });
    expect(
      await scheduler.deps.leases.complete(run.runId, lease.kind === 'leased' ? lease.run.version : 0, {
        status: 'CANCELLED',
        now: Date.now(),
        error: null,
        reason: 'test',
      }),
    ).toBe('recorded');
  });
});
