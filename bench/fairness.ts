// Fairness in local mode: one tenant ("noisy") holds a backlog of run-now runs in the dispatch
// queue; a quiet tenant then creates run-now jobs one at a time. Reports how long after its time
// each quiet run started (startedAt - scheduledFor) and how much of the noisy backlog was still
// waiting then. Fairness comes from two places, as in AWS: the dispatch queue hands out a quiet
// tenant's messages before a noisy tenant's (SQS fair queues; the emulator launcher orders
// deliveries the same way, decision 0028) and the noisy tenant's in-flight limit keeps it from
// holding every worker. `--runs N` repeats the measurement with fresh tables and queues;
// `--buffer N` overrides the local runtime's fetch-ahead buffer.
//
//   npm run bench:fairness -- [--backlog 1000] [--quiet 10] [--in-flight 8] [--concurrency 4] [--target-ms 100] [--runs 1]
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { createDeps } from '../lambdas/app/deps';
import { createJob } from '../lambdas/app/jobs';
import { jobSpecSchema } from '../lambdas/domain/job';
import { logger } from '../lambdas/core/logger';
import { DEFAULT_TENANT_LIMITS } from '../lambdas/domain/tenant';
import { createAwsClients } from '../lambdas/store/aws';
import { emulatorEnvironment, ensureEmulator } from '../scripts/local/emulator';
import { createLocalResources, deleteLocalResources } from '../scripts/local/resources';
import { startLocalRuntime } from '../scripts/local/runtime';
import { percentile } from './support';

const { values } = parseArgs({
  options: {
    backlog: { type: 'string', default: '1000' },
    quiet: { type: 'string', default: '10' },
    'in-flight': { type: 'string', default: '8' },
    concurrency: { type: 'string', default: '4' },
    'target-ms': { type: 'string', default: '100' },
    runs: { type: 'string', default: '1' },
    buffer: { type: 'string' },
  },
});
const backlog = Number(values.backlog);
const quietCount = Number(values.quiet);
const inFlight = Number(values['in-flight']);
const targetMs = Number(values['target-ms']);

logger.setLogLevel('ERROR');
const emulator = await ensureEmulator();
Object.assign(process.env, emulatorEnvironment(emulator.endpoint));
const clients = createAwsClients();

const target = createServer((request, response) => {
  request.resume();
  request.on('end', () => setTimeout(() => response.writeHead(200).end('{}'), targetMs));
});
await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/`;
const job = (name: string, type = 'noisy') => ({ name, type, schedule: { kind: 'now' }, target: { kind: 'http', url: targetUrl }, payload: {} });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function measure(mode: string): Promise<number[]> {
  const config = await createLocalResources(clients, `bench-fair-${randomUUID().slice(0, 8)}`);
  const schedulingLags: number[] = [];
  const deps = createDeps(config, clients, {
    workerId: `bench-${mode.replace(' ', '-')}`,
    metricSink: (line) => {
      const doc = JSON.parse(line) as { JobType?: string; SchedulingLag?: number | number[] };
      if (doc.JobType === 'quiet' && doc.SchedulingLag !== undefined) schedulingLags.push(...[doc.SchedulingLag].flat());
    },
  });
  const at = new Date().toISOString();
  const noisyLimits = { ...DEFAULT_TENANT_LIMITS, maxActiveJobs: null, createsPerSecond: null, maxInFlightRuns: inFlight };
  await deps.tenants.create({ tenantId: 'noisy', name: 'noisy', limits: noisyLimits, createdAt: at, updatedAt: at });

  // The backlog first, with no worker running: every noisy message is ahead of the quiet ones.
  const started = Date.now();
  for (let i = 0; i < backlog; i += 25) {
    await Promise.all(
      Array.from({ length: Math.min(25, backlog - i) }, (_, k) => createJob(deps, 'noisy', jobSpecSchema.parse(job(`noisy-${i + k}`)), undefined, noisyLimits)),
    );
  }
  const depth = await deps.dispatch.depth();
  console.log(`[${mode}] backlog of ${depth.visible + depth.delayed} noisy runs queued in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  const runtime = await startLocalRuntime({
    deps,
    clients,
    port: 0,
    workerConcurrency: Number(values.concurrency),
    tickIntervalMs: 0,
    pollWaitSeconds: 1,
    ...(values.buffer ? { fairBufferSize: Number(values.buffer) } : {}),
  });
  const lags: number[] = [];
  const waiting: number[] = [];
  try {
    for (let q = 0; q < quietCount; q++) {
      const created = await createJob(deps, 'quiet', jobSpecSchema.parse(job(`quiet-${q}`, 'quiet')));
      const runId = created.job.nextRunId!;
      const deadline = Date.now() + 60_000;
      let run = await deps.runs.get(runId);
      while (run?.status !== 'SUCCEEDED' && run?.status !== 'RUNNING' && Date.now() < deadline) {
        await sleep(20);
        run = await deps.runs.get(runId);
      }
      if (!run?.startedAt) throw new Error(`quiet run ${runId} did not start within 60 s`);
      lags.push(Date.parse(run.startedAt) - Date.parse(run.scheduledFor));
      const now = await deps.dispatch.depth();
      waiting.push(now.visible + now.delayed + now.inFlight);
      await sleep(300);
    }
  } finally {
    await runtime.stop();
    await deleteLocalResources(clients, config);
  }
  const sorted = [...lags].sort((a, b) => a - b);
  console.log(
    `[${mode}] quiet run-now start lag over ${lags.length} runs: p50 ${percentile(sorted, 50)} ms, p95 ${percentile(sorted, 95)} ms, max ${sorted.at(-1)} ms; ` +
      `noisy messages still queued at those moments: ${Math.min(...waiting)}..${Math.max(...waiting)}`,
  );
  console.log(`[${mode}] of which message to worker (scheduling lag), ms: ${schedulingLags.join(' ')}; start lags, ms: ${lags.join(' ')}`);
  return lags;
}

console.log(
  `emulator ${emulator.endpoint}; noisy backlog ${backlog} (in-flight limit ${inFlight}, target ${targetMs} ms); ${quietCount} quiet run-now jobs; worker concurrency ${values.concurrency}`,
);
try {
  const all: number[] = [];
  for (let run = 1; run <= Number(values.runs); run++) all.push(...(await measure(`run ${run}`)));
  const sorted = [...all].sort((a, b) => a - b);
  const late = all.filter((lag) => lag > 2_000).length;
  console.log(`all ${all.length} quiet runs: p50 ${percentile(sorted, 50)} ms, p95 ${percentile(sorted, 95)} ms, max ${sorted.at(-1)} ms; over 2 s: ${late}`);
} finally {
  target.close();
}
