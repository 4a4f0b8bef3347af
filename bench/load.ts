// Throughput and start lag under load in local mode, against the emulator's own limit.
//
// 1. Raw limit: the minimal sequence of AWS calls an execution needs (a transactional put of a job
//    and its run, a send, a batched receive, a conditional lease update, an outcome update, a
//    batched visibility change and a batched delete), issued directly with no scheduler code, as
//    fast as the emulator answers, for `--seconds`: executions per second.
// 2. Scheduler at saturation: run-now and delayed jobs created through the scheduler's create path
//    at the raw limit's rate, across `--tenants` tenants, the real worker handler in the local
//    runtime; executions per second sustained, and the ratio to the raw limit.
// 3. Scheduler at half the raw limit: start lag (lease time minus due time) p50/p95/p99 and errors.
//
//   npm run bench:load -- [--seconds 20] [--tenants 4] [--mix now:0.5,delay:0.5] [--concurrency 8] [--rate N]
//
// `--rate` skips the raw phase and runs one scheduler phase at that rate.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { DeleteMessageBatchCommand, ChangeMessageVisibilityBatchCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createDeps } from '../lambdas/app/deps';
import { createJob } from '../lambdas/app/jobs';
import { logger } from '../lambdas/core/logger';
import { DEFAULT_TENANT_LIMITS } from '../lambdas/domain/tenant';
import type { AwsClients } from '../lambdas/store/aws';
import { createAwsClients } from '../lambdas/store/aws';
import { RunsRepository } from '../lambdas/store/runs-repository';
import { emulatorEnvironment, ensureEmulator } from '../scripts/local/emulator';
import { createLocalResources, deleteLocalResources } from '../scripts/local/resources';
import { startLocalRuntime } from '../scripts/local/runtime';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '20' },
    tenants: { type: 'string', default: '4' },
    mix: { type: 'string', default: 'now:0.5,delay:0.5' },
    concurrency: { type: 'string', default: '8' },
    rate: { type: 'string' },
  },
});
const seconds = Number(values.seconds);
const tenantCount = Number(values.tenants);
const workerConcurrency = Number(values.concurrency);
const mix = values.mix.split(',').map((part) => {
  const [kind, share] = part.split(':');
  if (kind !== 'now' && kind !== 'delay') throw new Error(`--mix: ${kind} is not now or delay`);
  return { kind, share: Number(share ?? 1) } as const;
});
const totalShare = mix.reduce((sum, entry) => sum + entry.share, 0);

logger.setLogLevel('ERROR');
const emulator = await ensureEmulator();
Object.assign(process.env, emulatorEnvironment(emulator.endpoint));

const target = createServer((request, response) => {
  request.resume();
  request.on('end', () => response.writeHead(200).end('{}'));
});
await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

/** Phase 1: the emulator's limit for an execution's calls, with no scheduler code in the way. */
async function rawLimit(): Promise<number> {
  const clients = createAwsClients();
  const config = await createLocalResources(clients, `bench-raw-${randomUUID().slice(0, 8)}`);
  const queueUrl = config.dispatchQueueUrl;
  let stopping = false;
  let executed = 0;
  const producer = async (): Promise<void> => {
    while (!stopping) {
      const id = randomUUID();
      await clients.dynamo.send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: { TableName: config.jobsTable, Item: { pk: `JOB#${id}`, sk: 'JOB', tenantId: 'raw', status: 'COMPLETED' }, ConditionExpression: 'attribute_not_exists(pk)' } },
            { Put: { TableName: config.runsTable, Item: { pk: `RUN#${id}`, sk: 'RUN', jobId: id, jobSort: id, status: 'QUEUED' }, ConditionExpression: 'attribute_not_exists(pk)' } },
          ],
        }),
      );
      await clients.sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: id, MessageGroupId: 'raw' }));
    }
  };
  const consumer = async (): Promise<void> => {
    while (!stopping) {
      const { Messages: messages = [] } = await clients.sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
      if (messages.length === 0) continue;
      const entries = messages.map((message, index) => ({ Id: String(index), ReceiptHandle: message.ReceiptHandle ?? '' }));
      const visibility = clients.sqs.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: queueUrl, Entries: entries.map((entry) => ({ ...entry, VisibilityTimeout: 60 })) }));
      await Promise.all(
        messages.map(async (message) => {
          const key = { pk: `RUN#${message.Body}`, sk: 'RUN' };
          await clients.dynamo.send(
            new UpdateCommand({ TableName: config.runsTable, Key: key, UpdateExpression: 'SET #s = :running', ConditionExpression: '#s = :queued', ExpressionAttributeNames: { '#s': 'status' }, ExpressionAttributeValues: { ':running': 'RUNNING', ':queued': 'QUEUED' } }),
          );
          await clients.dynamo.send(
            new UpdateCommand({ TableName: config.runsTable, Key: key, UpdateExpression: 'SET #s = :done', ConditionExpression: '#s = :running', ExpressionAttributeNames: { '#s': 'status' }, ExpressionAttributeValues: { ':done': 'SUCCEEDED', ':running': 'RUNNING' } }),
          );
        }),
      );
      await visibility;
      await clients.sqs.send(new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
      executed += messages.length;
    }
  };
  const loops = [...Array.from({ length: workerConcurrency }, producer), ...Array.from({ length: workerConcurrency }, consumer)];
  await sleep(2_000); // warm up
  const from = executed;
  const started = Date.now();
  await sleep(seconds * 1000);
  const rate = (executed - from) / ((Date.now() - started) / 1000);
  stopping = true;
  await Promise.allSettled(loops);
  await deleteLocalResources(clients, config);
  return rate;
}

interface SchedulerFigures {
  readonly created: number;
  readonly succeeded: number;
  readonly createErrors: number;
  readonly notFinished: number;
  readonly executionsPerSecond: number;
  readonly lags: readonly number[];
}

/** Phases 2 and 3: jobs at `rate` per second through the scheduler. */
async function scheduler(rate: number): Promise<SchedulerFigures> {
  const clients: AwsClients = createAwsClients();
  const config = await createLocalResources(clients, `bench-load-${randomUUID().slice(0, 8)}`);
  const deps = createDeps(config, clients, { workerId: 'bench-load', metricSink: () => undefined });
  const reader = new RunsRepository(createAwsClients().dynamo, config.runsTable);
  const tenants = Array.from({ length: tenantCount }, (_, index) => `load-${index}`);
  const limits = { ...DEFAULT_TENANT_LIMITS, maxActiveJobs: null, createsPerSecond: null };
  const at = new Date().toISOString();
  for (const tenantId of tenants) await deps.tenants.create({ tenantId, name: tenantId, limits, createdAt: at, updatedAt: at });
  const runtime = await startLocalRuntime({ deps, clients: createAwsClients(), port: 0, workerConcurrency, tickIntervalMs: 1_000, pollWaitSeconds: 1 });
  const runIds: string[] = [];
  let createErrors = 0;
  const inFlight = new Set<Promise<void>>();
  try {
    const started = Date.now();
    let issued = 0;
    while (Date.now() - started < seconds * 1000) {
      const due = Math.floor(((Date.now() - started) / 1000) * rate);
      for (; issued < due; issued++) {
        const pick = (issued * 0.618) % 1; // a low-discrepancy walk through the mix
        let cumulative = 0;
        const kind = mix.find((entry) => (cumulative += entry.share / totalShare) > pick)?.kind ?? 'now';
        const body = {
          name: `load-${issued}`,
          type: kind,
          schedule: kind === 'now' ? { kind: 'now' } : { kind: 'delay', seconds: 1 + (issued % 5) },
          target: { kind: 'http', url: targetUrl },
          payload: { i: issued },
        };
        const create = createJob(deps, tenants[issued % tenants.length]!, body, undefined, limits)
          .then((result) => void runIds.push(result.job.nextRunId!))
          .catch(() => void createErrors++);
        inFlight.add(create);
        void create.finally(() => inFlight.delete(create));
      }
      await sleep(10);
    }
    await Promise.allSettled([...inFlight]);
    // Wait for the runs to end (up to 60 s after the last create).
    const deadline = Date.now() + 60_000;
    let runs = await reader.getMany(runIds);
    while (runs.filter((run) => run.status === 'SUCCEEDED').length < runIds.length && Date.now() < deadline) {
      await sleep(500);
      runs = await reader.getMany(runIds);
    }
    const succeeded = runs.filter((run) => run.status === 'SUCCEEDED');
    const lags = succeeded.map((run) => Date.parse(run.startedAt!) - Date.parse(run.availableAt)).sort((a, b) => a - b);
    // Sustained: executions finished while the load ran, per second of load.
    const window = succeeded.filter((run) => Date.parse(run.finishedAt!) <= started + seconds * 1000).length;
    return { created: runIds.length, succeeded: succeeded.length, createErrors, notFinished: runIds.length - succeeded.length, executionsPerSecond: window / seconds, lags };
  } finally {
    await runtime.stop();
    await deleteLocalResources(clients, config);
  }
}

function report(label: string, rate: number, figures: SchedulerFigures): void {
  const { lags } = figures;
  console.log(
    `${label}: offered ${rate.toFixed(1)}/s for ${seconds} s; created ${figures.created}, succeeded ${figures.succeeded}, create errors ${figures.createErrors}, not finished ${figures.notFinished}; ` +
      `sustained ${figures.executionsPerSecond.toFixed(1)} executions/s; start lag p50 ${percentile([...lags], 50)} ms, p95 ${percentile([...lags], 95)} ms, p99 ${percentile([...lags], 99)} ms, max ${lags.at(-1)} ms`,
  );
}

console.log(`emulator ${emulator.endpoint}; ${tenantCount} tenants; mix ${values.mix}; ${workerConcurrency} workers (and ${workerConcurrency} raw producers/consumers); ${seconds} s per phase`);
try {
  if (values.rate) {
    const rate = Number(values.rate);
    report('scheduler', rate, await scheduler(rate));
  } else {
    const limit = await rawLimit();
    console.log(`raw limit: ${limit.toFixed(1)} executions/s (the same calls, no scheduler code)`);
    const saturated = await scheduler(limit);
    report('scheduler at the raw limit', limit, saturated);
    console.log(`ratio: ${(saturated.executionsPerSecond / limit).toFixed(2)} (scheduler / raw)`);
    report('scheduler at half the raw limit', limit / 2, await scheduler(limit / 2));
  }
} finally {
  target.close();
}
