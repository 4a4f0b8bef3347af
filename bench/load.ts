// Throughput and start lag under load in local mode, against the emulator's own limit.
//
//   npm run bench:load -- --rate 50 --seconds 30 --tenants 4 --mix now:0.5,delay:0.5 [--peer bullmq]
//
// In one invocation:
//   1. raw: the emulator's limit for the minimal calls of an execution, with no scheduler code
//      (bench/raw-limit.ts), at full concurrency;
//   2. the scheduler (the local runtime: real API, worker and ticker handlers against the emulator,
//      tenants and keys made with the admin module) offered --rate runs/s for --seconds, open loop,
//      over HTTP, run-now and delayed runs across --tenants tenants;
//   3. the scheduler again at half the raw limit (the issue's lag goal), and at half of what it
//      sustained in step 2 (its lag under a load it carries);
//   4. with --peer bullmq, phases 2 and 3 through BullMQ on a local Redis (bench/peers/).
// Start lag is lease time minus due time (startedAt - scheduledFor), read back from the runs table.
// Throughput counts executions that finished in the steady window (after the warm-up, before the
// load stops). Figures only: nothing here asserts a time.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createDeps } from '../lambdas/app/deps';
import { logger } from '../lambdas/core/logger';
import type { Run } from '../lambdas/domain/run';
import { isTerminal } from '../lambdas/domain/run';
import { createAwsClients } from '../lambdas/store/aws';
import { RequestCounter } from '../lambdas/store/request-counter';
import { RunRecords } from '../lambdas/store/run-records';
import { emulatorEnvironment, emulatorPidFile, ensureEmulator } from '../scripts/local/emulator';
import { createLocalResources, deleteLocalResources } from '../scripts/local/resources';
import { startLocalRuntime } from '../scripts/local/runtime';
import { auditAsAdmin, runAdmin } from '../scripts/ops/admin';
import { loadBullmqPeer } from './peers/peer';
import { ensureRedis, redisNote, stopRedis } from './peers/redis';
import { CallTimer } from './call-timer';
import { measureRawLimit } from './raw-limit';
import type { Execution, PhaseFigures, RunKind, SystemUnderTest, WorkloadSpec } from './support';
import { WORKLOAD_OPTIONS, drive, lagFigures, parseMix, phaseFigures, printTable, sleep, startTarget } from './support';

const { values } = parseArgs({
  options: {
    ...WORKLOAD_OPTIONS,
    concurrency: { type: 'string', default: '8' },
    'raw-seconds': { type: 'string', default: '20' },
    'raw-concurrency': { type: 'string', default: '16' },
    /** plain (the yardstick), scheduler (the same calls on the scheduler's tables and indexes), or both. */
    'raw-schema': { type: 'string', default: 'plain' },
    /** Skip the raw measurement and use this limit (executions/s) instead. */
    'raw-limit': { type: 'string' },
    'half-seconds': { type: 'string' },
    'drain-seconds': { type: 'string', default: '120' },
    /** The local ticker's period (s); 0 runs no ticker (every run here is within the near horizon, so none needs it). */
    'tick-seconds': { type: 'string', default: '60' },
    peer: { type: 'string' },
    /** 'no' skips the phase at half of the system's own sustained rate. */
    'half-own': { type: 'string', default: 'yes' },
    /** 'no' skips the phase at half the raw limit. */
    'half-raw': { type: 'string', default: 'yes' },
    /** Which systems to drive (comma-separated): scheduler, bullmq, or raw for the raw limit alone. */
    only: { type: 'string' },
  },
});
const number = (name: keyof typeof values): number => {
  const value = Number(values[name]);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
  return value;
};
const tenantCount = Math.floor(number('tenants'));
const mix = parseMix(values.mix);
const concurrency = Math.floor(number('concurrency'));
const seconds = number('seconds');
const maxDelaySeconds = Math.floor(number('max-delay'));
const drainMs = number('drain-seconds') * 1000;
// Delayed runs come due from 1 s to --max-delay after the first create: the window opens after that.
const warmupOf = (spec: WorkloadSpec): number => Math.min(spec.seconds / 2, maxDelaySeconds + 2);
if (values.peer !== undefined && values.peer !== 'bullmq') throw new Error('--peer: only bullmq is known');
const systems = (values.only ?? ['scheduler', ...(values.peer ? [values.peer] : [])].join(',')).split(',');

/**
 * CPU time the emulator has used so far (ms), when it is the moto this project started (its pid in
 * .local/moto-<port>.pid) on Linux; null otherwise. Per execution, it is the emulator's cost of an
 * execution, which the machine's noise (2 shared cores) disturbs far less than a rate does.
 */
function emulatorCpuMs(): number | null {
  try {
    const pid = readFileSync(emulatorPidFile(emulator.endpoint), 'utf8').trim();
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    // utime and stime (fields 14 and 15 of stat; 12 and 13 after the command name), in ticks of 10 ms.
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}
const emulatorCpuNote = (before: number | null, executions: number): string[] => {
  const after = emulatorCpuMs();
  return before === null || after === null || executions === 0 ? [] : [`emulator CPU ${((after - before) / executions).toFixed(1)} ms per execution`];
};

const terminalStatus = (status: string): boolean => isTerminal(status as Parameters<typeof isTerminal>[0]);

/** The scheduler as the load bench drives it: its local runtime over tables and queues of its own. */
async function createSchedulerSystem(targetUrl: string): Promise<SystemUnderTest> {
  // The handlers' and pollers' clients are counted; the bench's own reads go through others.
  const clients = createAwsClients();
  const counter = new RequestCounter();
  counter.attach(clients);
  const timer = new CallTimer();
  timer.attach(clients);
  const readClients = createAwsClients();
  const prefix = `load-${randomUUID().slice(0, 8)}`;
  const config = await createLocalResources(readClients, prefix);
  // The API and the workers as AWS runs them: apart, each with its own telemetry. One process
  // sharing one deps would flush the workers' roll-ups after every API request (a PutItem each).
  const deps = createDeps(config, clients, { workerId: `${prefix}-api`, metricSink: () => undefined });
  // The worker's EMF lines carry SchedulingLag: when a run's message reached the worker, minus due.
  const schedulingLags: number[] = [];
  const workerDeps = createDeps(config, clients, {
    workerId: `${prefix}-worker`,
    metricSink: (line) => {
      const doc = JSON.parse(line) as { SchedulingLag?: number | number[] };
      if (doc.SchedulingLag !== undefined) schedulingLags.push(...[doc.SchedulingLag].flat());
    },
  });
  const runs = new RunRecords(readClients.dynamo, config.runsTable);
  const keys: string[] = [];
  for (let i = 0; i < tenantCount; i++) {
    const created = await runAdmin(['tenant', 'create', `${prefix}-t${i}`, '--creates-per-second', 'none', '--max-active-jobs', 'none'], {
      tenants: deps.tenants,
      apiKeys: deps.apiKeys,
      defaults: config.tenantDefaults,
      now: Date.now,
      audit: auditAsAdmin(deps),
    });
    if (typeof created.apiKey !== 'string') throw new Error('admin: tenant create returned no API key');
    keys.push(created.apiKey);
  }
  const runtime = await startLocalRuntime({ deps, clients, port: 0, workerConcurrency: 0, tickIntervalMs: 0 });
  const workers = await startLocalRuntime({
    deps: workerDeps,
    clients,
    port: 0,
    workerConcurrency: concurrency,
    tickIntervalMs: Number(values['tick-seconds']) * 1000,
  });
  let submitted: { runId: string; kind: RunKind }[] = [];
  let phase = '';
  /** Runs that ended otherwise than SUCCEEDED, by status and error code. */
  const notSucceeded = new Map<string, number>();
  /** The bench's own reads of the runs that failed (and were asked again), this phase. */
  let readFailures = 0;

  return {
    name: 'scheduler',
    beginPhase() {
      submitted = [];
      phase = randomUUID().slice(0, 6);
      counter.reset();
      timer.reset();
      schedulingLags.length = 0;
      notSucceeded.clear();
      readFailures = 0;
      return Promise.resolve();
    },
    async submit(item) {
      const tenantIndex = Number(item.tenant.slice('tenant-'.length));
      const response = await fetch(`${runtime.url}/v1/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys[tenantIndex % keys.length] ?? ''}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: `load-${phase}-${item.index}`,
          type: 'bench',
          schedule: item.kind === 'now' ? { kind: 'now' } : { kind: 'delay', seconds: item.delaySeconds },
          target: { kind: 'http', url: targetUrl },
        }),
      });
      const text = await response.text();
      if (response.status !== 201) throw new Error(`POST /v1/jobs answered ${response.status}: ${text.slice(0, 200)}`);
      const body = JSON.parse(text) as { job?: { nextRunId?: unknown } };
      const runId = body.job?.nextRunId;
      if (typeof runId !== 'string') throw new Error('POST /v1/jobs answered without a nextRunId');
      submitted.push({ runId, kind: item.kind });
    },
    async collect(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      const ended = new Map<string, Execution>();
      const kinds = new Map(submitted.map(({ runId, kind }) => [runId, kind]));
      for (;;) {
        const open = submitted.filter(({ runId }) => !ended.has(runId)).map(({ runId }) => runId);
        if (open.length === 0 || Date.now() > deadline) break;
        let read: Run[];
        try {
          read = await runs.getMany(open);
        } catch (error) {
          // The bench's own read back can time out like any store call when the emulator is
          // saturated; it is asked again at the next poll rather than ending the whole run.
          readFailures++;
          if (readFailures === 1) console.error(`[scheduler] reading runs back failed; polling on: ${error instanceof Error ? error.message : String(error)}`);
          await sleep(3000);
          continue;
        }
        for (const run of read) {
          if (!terminalStatus(run.status)) continue;
          if (run.status !== 'SUCCEEDED') {
            const why = `${run.status}${run.error ? ` ${run.error.code}` : ''}`;
            notSucceeded.set(why, (notSucceeded.get(why) ?? 0) + 1);
          }
          ended.set(run.runId, {
            kind: kinds.get(run.runId) ?? 'now',
            dueAt: Date.parse(run.scheduledFor),
            startedAt: run.startedAt ? Date.parse(run.startedAt) : null,
            finishedAt: run.finishedAt ? Date.parse(run.finishedAt) : null,
            succeeded: run.status === 'SUCCEEDED',
          });
        }
        // Every 3 s: these reads are the emulator's work too, and the runs carry their own timestamps.
        if (ended.size < submitted.length) await sleep(3000);
      }
      // Runs that never ended count as errors.
      return submitted.map(({ runId, kind }) => ended.get(runId) ?? { kind, dueAt: Number.NaN, startedAt: null, finishedAt: null, succeeded: false });
    },
    phaseNotes(executions) {
      const { calls } = counter.tally();
      const per = (filter: (name: string) => boolean) =>
        (Object.entries(calls).reduce((sum, [name, count]) => (filter(name) ? sum + count : sum), 0) / Math.max(1, executions)).toFixed(2);
      return [
        `AWS requests per execution ${per(() => true)} (DynamoDB ${per((name) => name.startsWith('dynamodb.'))}, SQS ${per((name) => name.startsWith('sqs.'))}, incl. the pollers' receives and deletes)`,
        `worker pollers ${concurrency} x batches of 10`,
        // Of the start lag, the part before the message reached a worker (SQS delivery, polling, buffering).
        ...(schedulingLags.length > 0
          ? [(({ p50, p95, p99 }) => `message reached a worker p50/p95/p99 ${p50}/${p95}/${p99} ms after due`)(lagFigures(schedulingLags))]
          : []),
        // Where the handlers waited: time per call as the SDK saw it, the heaviest first.
        `calls (count, mean ms): ${timer
          .report()
          .slice(0, 8)
          .map(([name, times]) => `${name} ${times.count} x ${times.meanMs.toFixed(1)}`)
          .join(', ')}`,
        ...(readFailures > 0 ? [`the bench's own reads of the runs failed ${readFailures} times (asked again)`] : []),
        ...(notSucceeded.size > 0 ? [`not succeeded: ${[...notSucceeded].map(([why, count]) => `${count} ${why}`).join(', ')}`] : []),
      ];
    },
    async stop() {
      await Promise.all([runtime.stop(), workers.stop()]);
      await deleteLocalResources(readClients, config);
    },
  };
}

async function runPhase(system: SystemUnderTest, phase: string, spec: WorkloadSpec): Promise<PhaseFigures> {
  console.log(`[${system.name}] ${phase}: offering ${spec.rate.toFixed(1)} runs/s for ${spec.seconds} s ...`);
  await system.beginPhase();
  const cpuBefore = system.name === 'scheduler' ? emulatorCpuMs() : null;
  const driven = await drive(spec, 64, (item) => system.submit(item));
  const executions = await system.collect(drainMs);
  // (The collect's own reads, a BatchGetItem of up to 100 open runs a second, are in the CPU figure.)
  const notes = [...system.phaseNotes(executions.length), ...emulatorCpuNote(cpuBefore, executions.filter((execution) => execution.succeeded).length)];
  const figures = phaseFigures(system.name, phase, spec, driven, executions, warmupOf(spec), notes);
  console.log(`[${system.name}] ${phase}: ${figures.executionsPerSecond.toFixed(1)} executions/s, lag p99 ${figures.lag.p99} ms, errors ${figures.errors}`);
  // Let the emulator settle (deletes, idle polls) between phases.
  await sleep(2000);
  return figures;
}

// Per-run INFO lines would drown the table.
logger.setLogLevel('ERROR');
const emulator = await ensureEmulator();
Object.assign(process.env, emulatorEnvironment(emulator.endpoint));
const target = await startTarget();
const tenants = Array.from({ length: tenantCount }, (_, i) => `tenant-${i}`);
const workload = (rate: number, phaseSeconds = seconds): WorkloadSpec => ({ rate, seconds: phaseSeconds, tenants, mix, maxDelaySeconds });

console.log(
  `emulator ${emulator.endpoint} (${emulator.origin}); ${tenantCount} tenants; mix now ${mix.now.toFixed(2)} / delay ${mix.delay.toFixed(2)} (1-${maxDelaySeconds} s); ` +
    `${seconds} s per phase, warm-up ${warmupOf(workload(1))} s; node ${process.version}, pid ${process.pid}`,
);

let rawLimit: number;
const rawNotes: string[] = [];
if (values['raw-limit']) {
  rawLimit = number('raw-limit');
  rawNotes.push(`raw limit given: ${rawLimit} executions/s`);
} else {
  const schemas = values['raw-schema'] === 'both' ? (['plain', 'scheduler'] as const) : ([values['raw-schema']] as const);
  rawLimit = Number.NaN;
  for (const schema of schemas) {
    if (schema !== 'plain' && schema !== 'scheduler') throw new Error('--raw-schema: plain, scheduler or both');
    console.log(`[raw ${schema}] the minimal calls per execution, ${values['raw-concurrency']} producers and consumers, ${values['raw-seconds']} s ...`);
    const cpuBefore = emulatorCpuMs();
    const raw = await measureRawLimit({
      seconds: number('raw-seconds'),
      concurrency: Math.floor(number('raw-concurrency')),
      maxBacklog: 200,
      warmupSeconds: 3,
      targetUrl: target.url,
      schema,
    });
    // The yardstick is the plain one: the least any design on these services pays.
    if (schema === 'plain' || schemas.length === 1) rawLimit = raw.executionsPerSecond;
    const perExecution = Object.entries(raw.requestsPerExecution)
      .map(([name, count]) => `${name} ${count.toFixed(2)}`)
      .join(', ');
    const note =
      `raw (${schema} tables): ${raw.executionsPerSecond.toFixed(1)} executions/s (${raw.executions} executions, ${raw.unfinished} created and unfinished, ${raw.errors} errors${raw.firstError ? `, first: ${raw.firstError}` : ''}); ` +
      `requests per finished execution (the unfinished ones' creates included): ${perExecution}${emulatorCpuNote(cpuBefore, raw.executions)
        .map((text) => `; ${text}`)
        .join('')}`;
    rawNotes.push(note);
    console.log(note);
  }
}
const rawNote = rawNotes.join('\n');
const halfRate = rawLimit / 2;
const halfSeconds = values['half-seconds'] ? number('half-seconds') : seconds;

const rows: PhaseFigures[] = [];
try {
  for (const name of systems) {
    // `--only raw`: the emulator's raw limit alone.
    if (name === 'raw') continue;
    let system: SystemUnderTest;
    let redisStarted = false;
    if (name === 'scheduler') system = await createSchedulerSystem(target.url);
    else if (name === 'bullmq') {
      const redis = await ensureRedis();
      redisStarted = redis.origin === 'started';
      // As many parallel executions as the scheduler's pollers (batches of 10, run concurrently).
      const createBullmqSystem = await loadBullmqPeer();
      system = createBullmqSystem({ host: redis.host, port: redis.port, targetUrl: target.url, concurrency: concurrency * 10, redisNote: redisNote(redis) });
    } else throw new Error(`--only: unknown system ${name}`);
    try {
      rows.push(await runPhase(system, `rate ${number('rate')}/s`, workload(number('rate'))));
      const own = rows.at(-1)?.executionsPerSecond ?? Number.NaN;
      if (values['half-raw'] !== 'no') rows.push(await runPhase(system, 'half raw', workload(halfRate, halfSeconds)));
      // And at half of what this system itself sustained: its lag under a load it carries.
      if (values['half-own'] !== 'no' && Number.isFinite(own) && own > 0) rows.push(await runPhase(system, 'half own', workload(own / 2, halfSeconds)));
    } finally {
      await system.stop();
      if (redisStarted) stopRedis();
    }
  }
} finally {
  await target.close();
}

console.log('');
console.log(rawNote);
printTable(rows);
const scheduler = rows.find((row) => row.system === 'scheduler' && row.phase.startsWith('rate'));
const half = rows.find((row) => row.system === 'scheduler' && row.phase === 'half raw');
if (scheduler) {
  const ratio = scheduler.executionsPerSecond / rawLimit;
  const saturated = scheduler.executionsPerSecond < 0.95 * scheduler.offeredRate;
  console.log(
    `ratio scheduler/raw: ${ratio.toFixed(2)} (goal >= 0.7)` +
      (saturated ? '' : `; the scheduler kept up with the offered ${scheduler.offeredRate}/s, so this is a lower bound: offer more to find its limit`),
  );
}
if (half) console.log(`start lag at half the raw limit (${halfRate.toFixed(1)}/s): p99 ${half.lag.p99} ms (goal < 500 ms)`);
process.exit(0);
