// What an execution costs in AWS requests and capacity, per kind of run, counted against the
// emulator: DynamoDB read and write units (bench/lib/capacity-model.ts: item sizes, index writes
// and transactions as DynamoDB bills them), SQS requests, worker invocations, and the price of a
// million executions at us-east-1 list prices beside EventBridge Scheduler's $1.00 per million.
//
// For each kind, N jobs are created with no worker running (the create's cost), then the workers
// start and the runs are waited for (the execution's cost). The ticker does not run: its cost is
// per minute and per shard, not per execution (docs/capacity.md).
//
//   npm run bench:cost -- [--count 100] [--kinds now,delay,cron,retried] [--concurrency 4]
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { createDeps } from '../lambdas/app/deps';
import { createJob } from '../lambdas/app/jobs';
import { jobSpecSchema } from '../lambdas/domain/job';
import { logger } from '../lambdas/core/logger';
import { createAwsClients } from '../lambdas/store/aws';
import { RequestCounter } from '../lambdas/store/request-counter';
import type { RequestTally } from '../lambdas/store/request-counter';
import { RunRecords } from '../lambdas/store/run-records';
import { jobsTable, runsTable } from '../lambdas/store/schema';
import { emulatorEnvironment, ensureEmulator } from '../scripts/local/emulator';
import { createLocalResources, deleteLocalResources } from '../scripts/local/resources';
import { startLocalRuntime } from '../scripts/local/runtime';
import type { CapacityTally } from './lib/capacity-model';
import { CapacityModel } from './lib/capacity-model';

const KINDS = ['now', 'delay', 'cron', 'retried'] as const;
type Kind = (typeof KINDS)[number];

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '100' },
    kinds: { type: 'string', default: KINDS.join(',') },
    concurrency: { type: 'string', default: '4' },
  },
});
const count = Number(values.count);
const kinds = values.kinds.split(',').map((kind) => {
  if (!(KINDS as readonly string[]).includes(kind)) throw new Error(`--kinds: ${kind} is not one of ${KINDS.join(', ')}`);
  return kind as Kind;
});

// us-east-1 list prices (on-demand DynamoDB since November 2024; SQS standard; Lambda x86).
const PRICE = {
  writeUnit: 0.625 / 1e6,
  readUnit: 0.125 / 1e6,
  sqsRequest: 0.4 / 1e6,
  invocation: 0.2 / 1e6,
  gbSecond: 0.0000166667,
};
const WORKER_MEMORY_GB = 1; // lib/scheduler-stack.ts
const ASSUMED_BATCH_SECONDS = 0.2; // a batch's wall time in AWS with a fast target; an assumption, not a measurement

logger.setLogLevel('ERROR');
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
    response.writeHead(path.startsWith('/flaky/') && calls === 1 ? 503 : 200).end('{}');
  });
});
await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;

function jobBody(kind: Kind, index: number): Record<string, unknown> {
  const schedule =
    kind === 'delay' ? { kind: 'delay', seconds: 2 } : kind === 'cron' ? { kind: 'cron', expression: '* * * * *', timezone: 'UTC' } : { kind: 'now' };
  return {
    name: `${kind}-${index}`,
    type: 'bench',
    schedule,
    target: { kind: 'http', url: kind === 'retried' ? `${targetUrl}/flaky/${index}` : `${targetUrl}/ok` },
    payload: { index },
    ...(kind === 'retried' ? { retryPolicy: { maxAttempts: 3, initialDelaySeconds: 1, maxDelaySeconds: 1 } } : {}),
  };
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
  try {
    // Creates, ten at a time, with no worker running.
    const runIds: string[] = [];
    for (let start = 0; start < count; start += 10) {
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
      // The runs to wait for: the first attempt, or for the retried kind its second.
      const awaited = kind === 'retried' ? runIds.map((runId) => runId.replace(/\.1$/, '.2')) : runIds;
      const deadline = Date.now() + (kind === 'cron' ? 150_000 : 90_000);
      for (;;) {
        const runs = await reader.getMany(awaited);
        const done = runs.filter((run) => run.status === 'SUCCEEDED').length;
        if (done === awaited.length) break;
        if (Date.now() > deadline) throw new Error(`${kind}: ${done} of ${awaited.length} runs succeeded before the deadline`);
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
const sum = (calls: Record<string, number>, prefix: string): number =>
  Object.entries(calls).reduce((total, [name, n]) => (name.startsWith(prefix) ? total + n : total), 0);

console.log(`emulator ${emulator.endpoint}; ${count} executions per kind; worker concurrency ${values.concurrency}; per execution:`);
const rows: string[] = [];
for (const kind of kinds) {
  const { create, execute } = await measure(kind);
  const batches = execute.esm.calls['sqs.DeleteMessageBatch'] ?? 0;
  const handlerSqs = sum(execute.calls.calls, 'sqs.');
  const esmSqs = 2 * batches; // a receive and a delete per batch, as the event source mapping does them
  const executeWrites = execute.capacity.writeUnits + execute.capacity.indexWriteUnits;
  const createWrites = create.capacity.writeUnits + create.capacity.indexWriteUnits;
  const createSqs = sum(create.calls.calls, 'sqs.');
  const dollars =
    ((executeWrites + createWrites) * PRICE.writeUnit +
      (execute.capacity.readUnits + create.capacity.readUnits) * PRICE.readUnit +
      (handlerSqs + esmSqs + createSqs) * PRICE.sqsRequest +
      batches * (PRICE.invocation + WORKER_MEMORY_GB * ASSUMED_BATCH_SECONDS * PRICE.gbSecond)) *
    (1e6 / count);
  rows.push(
    `| ${kind} | ${per(createWrites)} | ${per(create.capacity.readUnits)} | ${per(createSqs)} | ${per(executeWrites)} (${per(execute.capacity.indexWriteUnits)} index) | ${per(execute.capacity.readUnits)} | ${per(handlerSqs)} + ${per(esmSqs)} | ${per(batches)} | $${dollars.toFixed(2)} |`,
  );
  console.log(`\n[${kind}] create: ${JSON.stringify(create.calls.calls)}\n  write units by operation: ${JSON.stringify(create.capacity.writesByOperation)}`);
  console.log(
    `[${kind}] execute: ${JSON.stringify(execute.calls.calls)}\n  write units by operation: ${JSON.stringify(execute.capacity.writesByOperation)}\n  event source mapping side: ${JSON.stringify(execute.esm.calls)}`,
  );
}
target.close();
console.log(
  '\n| kind | create WCU | create RCU | create SQS | execution WCU | execution RCU | execution SQS (handler + ESM) | worker invocations | $ per million, create + execution |',
);
console.log('|---|---|---|---|---|---|---|---|---|');
for (const row of rows) console.log(row);
console.log(
  `\nPrices: DynamoDB on demand $0.625/M write units, $0.125/M read units; SQS $0.40/M requests; Lambda $0.20/M invocations + ${WORKER_MEMORY_GB} GB x ${ASSUMED_BATCH_SECONDS} s per batch (assumed). EventBridge Scheduler: $1.00/M invocations.`,
);
