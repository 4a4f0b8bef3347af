// What an execution costs in AWS requests and capacity, per kind of run, counted against the
// emulator: DynamoDB read and write units (bench/lib/capacity-model.ts: item sizes, index writes
// and transactions as DynamoDB bills them), SQS requests, worker invocations, and the price of a
// million executions at us-east-1 list prices beside EventBridge Scheduler's $1.00 per million.
//
// For each kind, N jobs are created with no worker running (the create's cost), then the workers
// start and the runs are waited for (the execution's cost). The ticker does not run: its cost is
// per minute and per shard, not per execution (docs/capacity.md).
//
// The `workflow` kind counts workflow runs instead (not in the default kinds): one workflow of
// `--workflow-steps` steps (a root, the middle ones in parallel after it, a join after them all),
// started N times through the use case the API calls with no worker running (the starts' cost),
// then run by the workers; its figures are per workflow run and per step.
//
//   npm run bench:cost -- [--count 100] [--kinds now,now-unnamed,delay,cron,retried,workflow] [--concurrency 4] [--workflow-steps 4]
//     [--payload-bytes N] (the jobs' payload, about N bytes of JSON: what a larger payload costs)
//     [--cron-occurrences N] (each cron job runs N occurrences, a minute apart; 5 average over a check-back's phases)
//     [--result-bytes N] (the target answers a JSON result of N bytes: a workflow step's result, stored apart over 4 KiB)
//     [--target-ms N] (the target answers after N ms: runs that take time, held and registered as in flight)
//   COST_TRACE=1 prints each write to stderr as the model bills it: table, operation, key, base units, index writes.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { createDeps } from '../lambdas/app/deps';
import { createJob } from '../lambdas/app/jobs';
import { jobSpecSchema } from '../lambdas/domain/job';
import { MAX_JOB_PAYLOAD_BYTES } from '../lambdas/domain/payload';
import { createWorkflow } from '../lambdas/app/workflows';
import { startWorkflowRun } from '../lambdas/app/workflow-runs';
import { MAX_STEP_DEPENDENCIES, MAX_STORED_STEP_RESULT_BYTES, workflowSpecSchema } from '../lambdas/domain/workflow';
import type { TenantLimits } from '../lambdas/domain/tenant';
import { WorkflowRunsRepository } from '../lambdas/store/workflow-runs';
import { logger } from '../lambdas/core/logger';
import { createAwsClients } from '../lambdas/store/aws';
import { RequestCounter } from '../lambdas/store/request-counter';
import type { RequestTally } from '../lambdas/store/request-counter';
import { RunRecords } from '../lambdas/store/run-records';
import { runIdFor } from '../lambdas/domain/run';
import { occurrenceOfRunId } from '../lambdas/domain/retention';
import { jobsTable, runsTable } from '../lambdas/store/schema';
import { emulatorEnvironment, ensureEmulator } from '../scripts/local/emulator';
import { createLocalResources, deleteLocalResources } from '../scripts/local/resources';
import { startLocalRuntime } from '../scripts/local/runtime';
import type { CapacityTally } from './lib/capacity-model';
import { CapacityModel } from './lib/capacity-model';

// `now-unnamed`: a run-now job created without a name (decision 0154), so with no name guard.
const KINDS = ['now', 'now-unnamed', 'delay', 'cron', 'retried', 'workflow'] as const;
type Kind = (typeof KINDS)[number];

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '100' },
    kinds: { type: 'string', default: 'now,now-unnamed,delay,cron,retried' },
    concurrency: { type: 'string', default: '4' },
    'workflow-steps': { type: 'string', default: '4' },
    /** The jobs' payload, about this many bytes of JSON (a small one by default). */
    'payload-bytes': { type: 'string', default: '0' },
    /** Occurrences of each cron job to run (a minute apart): 5 cover every phase of a cron job's check-back (decision 0161). */
    'cron-occurrences': { type: 'string', default: '1' },
    /** What the target answers: a JSON result of this many bytes (a workflow step's result; decision 0163), or no result. */
    'result-bytes': { type: 'string', default: '0' },
    /** The target answers after this many milliseconds: what a run that takes time costs (0: at once). */
    'target-ms': { type: 'string', default: '0' },
  },
});
const count = Number(values.count);
const workflowSteps = Number(values['workflow-steps']);
// The join depends on every middle step: at most MAX_STEP_DEPENDENCIES of them.
if (!Number.isInteger(workflowSteps) || workflowSteps < 3 || workflowSteps > MAX_STEP_DEPENDENCIES + 2) {
  throw new Error(`--workflow-steps must be a whole number from 3 to ${MAX_STEP_DEPENDENCIES + 2}`);
}
const cronOccurrences = Number(values['cron-occurrences']);
if (!Number.isInteger(cronOccurrences) || cronOccurrences < 1 || cronOccurrences > 10)
  throw new Error('--cron-occurrences must be a whole number from 1 to 10');
const payloadBytes = Number(values['payload-bytes']);
if (!Number.isInteger(payloadBytes) || payloadBytes < 0 || payloadBytes > MAX_JOB_PAYLOAD_BYTES) {
  throw new Error(`--payload-bytes must be a whole number from 0 to ${MAX_JOB_PAYLOAD_BYTES}`);
}
const resultBytes = Number(values['result-bytes']);
if (!Number.isInteger(resultBytes) || resultBytes < 0 || resultBytes > MAX_STORED_STEP_RESULT_BYTES) {
  throw new Error(`--result-bytes must be a whole number from 0 to ${MAX_STORED_STEP_RESULT_BYTES}`);
}
const targetMs = Number(values['target-ms']);
if (!Number.isInteger(targetMs) || targetMs < 0 || targetMs > 60_000) throw new Error('--target-ms must be a whole number from 0 to 60000');
// `{"pad":"…"}` is 10 bytes around the pad.
const resultBody = resultBytes > 0 ? JSON.stringify({ pad: 'r'.repeat(Math.max(0, resultBytes - 10)) }) : '{}';
const kinds = values.kinds.split(',').map((kind) => {
  if (!(KINDS as readonly string[]).includes(kind)) throw new Error(`--kinds: ${kind} is not one of ${KINDS.join(', ')}`);
  return kind as Kind;
});

// us-east-1 list prices (on-demand DynamoDB since November 2024; SQS standard; Lambda x86).
const PRICE = {
  writeUnit: 0.625 / 1e6,
  readUnit: 0.125 / 1e6,
  sqsRequest: 0.4 / 1e6,
  // S3 standard: PUT, COPY, POST, LIST (and PutObjectTagging) $0.005 per 1,000; GET $0.0004 per 1,000; DELETE free.
  s3Put: 5 / 1e6,
  s3Get: 0.4 / 1e6,
  invocation: 0.2 / 1e6,
  gbSecond: 0.0000166667,
};
const WORKER_MEMORY_GB = 1; // lib/scheduler-stack.ts
const ASSUMED_BATCH_SECONDS = 0.2; // a batch's wall time in AWS with a fast target; an assumption, not a measurement

logger.setLogLevel('ERROR');
/** The bench's tenant is not limited: its creates and starts come faster than a tenant's default rate. */
const unlimited: TenantLimits = { maxActiveJobs: null, maxInFlightRuns: null, createsPerSecond: null, maxActiveBackfills: null };
const emulator = await ensureEmulator();
Object.assign(process.env, emulatorEnvironment(emulator.endpoint));

let targetCalls = new Map<string, number>();
const target = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    // A retried kind fails its first call: the path names the job.
    const path = request.url ?? '/';
    const calls = (targetCalls.get(path) ?? 0) + 1;
    targetCalls.set(path, calls);
    const answer = () => {
      if (path.startsWith('/flaky/') && calls === 1) response.writeHead(503).end('{}');
      else response.writeHead(200, resultBytes > 0 ? { 'content-type': 'application/json' } : {}).end(resultBody);
    };
    if (targetMs > 0) setTimeout(answer, targetMs);
    else answer();
  });
});
await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;

function jobBody(kind: Kind, index: number): Record<string, unknown> {
  const schedule =
    kind === 'delay' ? { kind: 'delay', seconds: 2 } : kind === 'cron' ? { kind: 'cron', expression: '* * * * *', timezone: 'UTC' } : { kind: 'now' };
  return {
    ...(kind === 'now-unnamed' ? {} : { name: `${kind}-${index}` }),
    type: 'bench',
    schedule,
    target: { kind: 'http', url: kind === 'retried' ? `${targetUrl}/flaky/${index}` : `${targetUrl}/ok` },
    // `{"index":N,"pad":"…"}`: the pad brings it to about --payload-bytes.
    payload: payloadBytes > 0 ? { index, pad: 'x'.repeat(Math.max(0, payloadBytes - 30)) } : { index },
    ...(kind === 'retried' ? { retryPolicy: { maxAttempts: 3, initialDelaySeconds: 1, maxDelaySeconds: 1 } } : {}),
  };
}

/** A root, `steps - 2` middle steps after it, a join after them: fan-out and fan-in. */
function workflowSpec(steps: number) {
  const middle = Array.from({ length: steps - 2 }, (_, index) => `m${index}`);
  const step = (id: string, dependsOn: string[] = []) => ({ id, target: { kind: 'http', url: `${targetUrl}/ok` }, dependsOn });
  return workflowSpecSchema.parse({
    name: `bench-${randomUUID().slice(0, 8)}`,
    type: 'bench',
    steps: [step('root'), ...middle.map((id) => step(id, ['root'])), step('join', middle)],
  });
}

interface Measured {
  readonly kind: Kind;
  readonly create: { readonly calls: RequestTally; readonly capacity: CapacityTally };
  readonly execute: { readonly calls: RequestTally; readonly capacity: CapacityTally; readonly esm: RequestTally };
}

async function measure(kind: Kind): Promise<Measured> {
  const setupClients = createAwsClients();
  const config = await createLocalResources(setupClients, `bench-cost-${randomUUID().slice(0, 8)}`);
  const handlerClients = createAwsClients();
  const counter = new RequestCounter();
  counter.attach(handlerClients);
  const model = new CapacityModel(
    new Map([
      [config.jobsTable, jobsTable],
      [config.runsTable, runsTable],
    ]),
  );
  model.attach(handlerClients.dynamo);
  // The runtime's own polling and deletes are the event source mapping's: counted apart.
  const runtimeClients = createAwsClients();
  const esm = new RequestCounter();
  esm.attach(runtimeClients);
  const deps = createDeps(config, handlerClients, { workerId: `bench-cost-${kind}`, metricSink: () => undefined });
  const reader = new RunRecords(setupClients.dynamo, config.runsTable);
  const tenantId = 'bench';
  targetCalls = new Map();
  const workflowRunStore = new WorkflowRunsRepository(setupClients.dynamo, config.jobsTable);
  try {
    // Creates, ten at a time, with no worker running; a workflow's starts one after another (a
    // workflow run's id is its workflow and its millisecond).
    const runIds: string[] = [];
    const workflowRuns: { workflowId: string; workflowRunId: string }[] = [];
    if (kind === 'workflow') {
      const workflow = await createWorkflow(deps, tenantId, workflowSpec(workflowSteps), unlimited);
      counter.reset();
      model.reset();
      for (let index = 0; index < count; index++) {
        const run = await startWorkflowRun(deps, tenantId, workflow.workflowId, unlimited);
        workflowRuns.push({ workflowId: run.workflowId, workflowRunId: run.workflowRunId });
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    }
    for (let start = 0; kind !== 'workflow' && start < count; start += 10) {
      const created = await Promise.all(
        Array.from({ length: Math.min(10, count - start) }, (_, k) => createJob(deps, tenantId, jobSpecSchema.parse(jobBody(kind, start + k)))),
      );
      runIds.push(...created.map((result) => result.job.nextRunId!));
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    const create = { calls: counter.tally(), capacity: model.tally() };
    counter.reset();
    model.reset();

    const runtime = await startLocalRuntime({
      deps,
      clients: runtimeClients,
      port: 0,
      workerConcurrency: Number(values.concurrency),
      tickIntervalMs: 0,
      pollWaitSeconds: 1,
    });
    try {
      // The runs to wait for: the first attempt, or for the retried kind its second; a workflow's runs.
      // A cron job's next occurrences are a minute apart, each with its deterministic run id.
      const awaited =
        kind === 'retried'
          ? runIds.map((runId) => runId.replace(/\.1$/, '.2'))
          : kind === 'cron'
            ? runIds.flatMap((runId) => {
                const occurrence = occurrenceOfRunId(runId)!;
                return Array.from({ length: cronOccurrences }, (_, k) => runIdFor(occurrence.jobId, new Date(occurrence.at + k * 60_000).toISOString(), 1));
              })
            : runIds;
      const deadline = Date.now() + (kind === 'cron' ? 150_000 + (cronOccurrences - 1) * 60_000 : kind === 'workflow' ? 300_000 : 90_000);
      for (;;) {
        const done =
          kind === 'workflow'
            ? (await Promise.all(workflowRuns.map((run) => workflowRunStore.getRun(run.workflowId, run.workflowRunId)))).filter(
                (run) => run?.status === 'SUCCEEDED',
              ).length
            : (await reader.getMany(awaited)).filter((run) => run.status === 'SUCCEEDED').length;
        const expected = kind === 'workflow' ? workflowRuns.length : awaited.length;
        if (done === expected) break;
        if (Date.now() > deadline) throw new Error(`${kind}: ${done} of ${expected} runs succeeded before the deadline`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      // The last batch's roll-up and visibility writes land just after its outcomes.
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      await runtime.stop();
    }
    return { kind, create, execute: { calls: counter.tally(), capacity: model.tally(), esm: esm.tally() } };
  } finally {
    await deleteLocalResources(setupClients, config);
  }
}

const per = (value: number): string => (value / count).toFixed(2);
/** Executions of a kind: a cron job runs --cron-occurrences of them. */
const executionsOf = (kind: Kind): number => (kind === 'cron' ? count * cronOccurrences : count);
const sum = (calls: Record<string, number>, prefix: string): number =>
  Object.entries(calls).reduce((total, [name, n]) => (name.startsWith(prefix) ? total + n : total), 0);

console.log(`emulator ${emulator.endpoint}; ${count} executions per kind; worker concurrency ${values.concurrency}; per execution:`);
const rows: string[] = [];
const workflowRows: string[] = [];
for (const kind of kinds) {
  const { create, execute } = await measure(kind);
  const batches = execute.esm.calls['sqs.DeleteMessageBatch'] ?? 0;
  const handlerSqs = sum(execute.calls.calls, 'sqs.');
  const esmSqs = 2 * batches; // a receive and a delete per batch, as the event source mapping does them
  const executeWrites = execute.capacity.writeUnits + execute.capacity.indexWriteUnits;
  const createWrites = create.capacity.writeUnits + create.capacity.indexWriteUnits;
  const createSqs = sum(create.calls.calls, 'sqs.');
  // Payloads stored apart (decision 0162): the create's PUT, each execution's GET.
  const s3Dollars = (calls: Record<string, number>): number =>
    ((calls['s3.PutObject'] ?? 0) + (calls['s3.PutObjectTagging'] ?? 0)) * PRICE.s3Put + (calls['s3.GetObject'] ?? 0) * PRICE.s3Get;
  const createS3 = sum(create.calls.calls, 's3.');
  const executeS3 = sum(execute.calls.calls, 's3.');
  // One create and one execution: the create's cost per job, the execution's per execution.
  const executions = executionsOf(kind);
  const perExecution = (value: number): string => (value / executions).toFixed(2);
  // A cron job's create is shared by all its occurrences: each carries its share, not a whole create.
  const createShare = kind === 'cron' ? executions : count;
  const dollars =
    ((createWrites * PRICE.writeUnit + create.capacity.readUnits * PRICE.readUnit + createSqs * PRICE.sqsRequest + s3Dollars(create.calls.calls)) /
      createShare +
      (executeWrites * PRICE.writeUnit +
        s3Dollars(execute.calls.calls) +
        execute.capacity.readUnits * PRICE.readUnit +
        (handlerSqs + esmSqs) * PRICE.sqsRequest +
        batches * (PRICE.invocation + WORKER_MEMORY_GB * ASSUMED_BATCH_SECONDS * PRICE.gbSecond)) /
        executions) *
    1e6;
  rows.push(
    `| ${kind === 'workflow' ? `workflow run of ${workflowSteps} steps` : kind === 'cron' && cronOccurrences > 1 ? `cron (${cronOccurrences} occurrences each)` : kind} | ${per(createWrites)} | ${per(create.capacity.readUnits)} | ${per(createSqs)} | ${perExecution(executeWrites)} (${perExecution(execute.capacity.indexWriteUnits)} index) | ${perExecution(execute.capacity.readUnits)} | ${perExecution(handlerSqs)} + ${perExecution(esmSqs)} | ${perExecution(batches)} | ${per(createS3)} + ${perExecution(executeS3)} | $${dollars.toFixed(2)} |`,
  );
  if (kind === 'workflow') {
    // Per step: the start's share and the execution's, over every step of every workflow run.
    const steps = count * workflowSteps;
    const perStep = (value: number): string => (value / steps).toFixed(2);
    const requests = (calls: Record<string, number>): number => Object.values(calls).reduce((total, n) => total + n, 0);
    workflowRows.push(
      `| per step (${workflowSteps}-step workflow) | ${perStep(createWrites + executeWrites)} | ${perStep(create.capacity.readUnits + execute.capacity.readUnits)} | ${perStep(sum(create.calls.calls, 'dynamodb.') + sum(execute.calls.calls, 'dynamodb.'))} | ${perStep(createSqs + handlerSqs + esmSqs)} | ${perStep(batches)} | $${((dollars * count) / steps).toFixed(2)} |`,
    );
    console.log(`[workflow] requests per step, start and execution: ${(requests({ ...create.calls.calls }) + requests(execute.calls.calls)) / steps}`);
  }
  console.log(`\n[${kind}] create: ${JSON.stringify(create.calls.calls)}\n  write units by operation: ${JSON.stringify(create.capacity.writesByOperation)}`);
  console.log(
    `[${kind}] execute: ${JSON.stringify(execute.calls.calls)}\n  write units by operation: ${JSON.stringify(execute.capacity.writesByOperation)}\n  event source mapping side: ${JSON.stringify(execute.esm.calls)}`,
  );
}
target.close();
console.log(
  '\n| kind | create WCU | create RCU | create SQS | execution WCU | execution RCU | execution SQS (handler + ESM) | worker invocations | S3 (create + execution) | $ per million, create + execution |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const row of rows) console.log(row);
if (workflowRows.length > 0) {
  console.log('\n| workflow step | WCU | RCU | DynamoDB requests | SQS requests (handler + ESM) | worker invocations | $ per million steps |');
  console.log('|---|---|---|---|---|---|---|');
  for (const row of workflowRows) console.log(row);
}
console.log(
  `\nPrices: DynamoDB on demand $0.625/M write units, $0.125/M read units; SQS $0.40/M requests; S3 $5/M PUTs, $0.40/M GETs (storage not counted); Lambda $0.20/M invocations + ${WORKER_MEMORY_GB} GB x ${ASSUMED_BATCH_SECONDS} s per batch (assumed). EventBridge Scheduler: $1.00/M invocations.`,
);
