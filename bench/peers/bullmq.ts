// The peer: the same workload (run-now and delayed runs, several tenants, one HTTP call each)
// through BullMQ on a local Redis. A run-now job is `queue.add`, a delayed one `queue.add` with
// `delay`; a worker with the same number of parallel executions as the scheduler's pollers calls
// the target. Start lag is when the processor began minus the job's timestamp plus its delay.
//
// BullMQ's open-source queue has no per-tenant isolation (groups are BullMQ Pro), so the tenant
// only travels in the job's data. Used by `npm run bench:load -- --peer bullmq`, or on its own:
//
// Its packages are bench/peers' own (see peer.ts); `npm run bench:peer:bullmq` installs them first.
//
//   npm run bench:peer:bullmq -- [--rate 50] [--seconds 30] [--tenants 4] [--mix now:0.5,delay:0.5]
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import type { Job } from 'bullmq';
import { Queue, Worker } from 'bullmq';
import type { Execution, RunKind, SystemUnderTest, WorkItem, WorkloadSpec } from '../support';
import { WORKLOAD_OPTIONS, drive, parseMix, phaseFigures, printTable, sleep, startTarget } from '../support';
import type { BullmqOptions } from './peer';
import { ensureRedis, redisNote, stopRedis } from './redis';

interface BenchJobData {
  readonly tenant: string;
  readonly kind: RunKind;
}

interface Tracked {
  readonly kind: RunKind;
  dueAt?: number;
  startedAt?: number;
  finishedAt?: number;
  succeeded?: boolean;
}

export function createBullmqSystem(options: BullmqOptions): SystemUnderTest {
  const connection = { host: options.host, port: options.port, maxRetriesPerRequest: null };
  let queue: Queue<BenchJobData> | null = null;
  let worker: Worker<BenchJobData> | null = null;
  let tracked = new Map<string, Tracked>();

  const closePhase = async () => {
    await worker?.close();
    if (queue) {
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
    }
    worker = null;
    queue = null;
  };

  return {
    name: 'bullmq',
    async beginPhase() {
      // A queue of its own per phase: nothing left over from the last one.
      await closePhase();
      const name = `bench-${randomUUID().slice(0, 8)}`;
      const phaseTracked = new Map<string, Tracked>();
      tracked = phaseTracked;
      queue = new Queue<BenchJobData>(name, { connection });
      worker = new Worker<BenchJobData>(
        name,
        async (job: Job<BenchJobData>) => {
          const startedAt = Date.now();
          const entry = phaseTracked.get(job.id ?? '');
          if (entry) {
            entry.startedAt = startedAt;
            entry.dueAt = job.timestamp + (job.opts.delay ?? 0);
          }
          const response = await fetch(options.targetUrl, {
            method: 'POST',
            body: JSON.stringify({ tenant: job.data.tenant }),
            headers: { 'content-type': 'application/json', 'x-run-id': job.id ?? '' },
          });
          await response.arrayBuffer();
          if (!response.ok) throw new Error(`target answered ${response.status}`);
        },
        { connection, concurrency: options.concurrency },
      );
      worker.on('completed', (job) => {
        const entry = phaseTracked.get(job.id ?? '');
        if (entry) Object.assign(entry, { finishedAt: job.finishedOn ?? Date.now(), succeeded: true });
      });
      worker.on('failed', (job) => {
        const entry = job ? phaseTracked.get(job.id ?? '') : undefined;
        if (entry) Object.assign(entry, { finishedAt: Date.now(), succeeded: false });
      });
      // Once per phase: a worker that cannot reach Redis says so on every retry.
      let reported = false;
      worker.on('error', (error) => {
        if (!reported) console.error('bullmq worker error (further ones not shown)', error.message);
        reported = true;
      });
    },
    async submit(item: WorkItem) {
      if (!queue) throw new Error('beginPhase first');
      const job = await queue.add(
        'run',
        { tenant: item.tenant, kind: item.kind },
        { delay: item.delaySeconds * 1000, removeOnComplete: false, removeOnFail: false },
      );
      tracked.set(job.id ?? '', { kind: item.kind });
    },
    async collect(timeoutMs: number): Promise<Execution[]> {
      const deadline = Date.now() + timeoutMs;
      while ([...tracked.values()].some((entry) => entry.finishedAt === undefined) && Date.now() < deadline) await sleep(200);
      return [...tracked.values()].map((entry) => ({
        kind: entry.kind,
        dueAt: entry.dueAt ?? Number.NaN,
        startedAt: entry.startedAt ?? null,
        finishedAt: entry.finishedAt ?? null,
        succeeded: entry.succeeded === true,
      }));
    },
    phaseNotes() {
      return [`worker concurrency ${options.concurrency}; ${options.redisNote}`];
    },
    stop: closePhase,
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      ...WORKLOAD_OPTIONS,
      concurrency: { type: 'string', default: '80' },
    },
  });
  const redis = await ensureRedis();
  const target = await startTarget();
  const system = createBullmqSystem({
    host: redis.host,
    port: redis.port,
    targetUrl: target.url,
    concurrency: Number(values.concurrency),
    redisNote: redisNote(redis),
  });
  const spec: WorkloadSpec = {
    rate: Number(values.rate),
    seconds: Number(values.seconds),
    tenants: Array.from({ length: Number(values.tenants) }, (_, i) => `tenant-${i}`),
    mix: parseMix(values.mix),
    maxDelaySeconds: Number(values['max-delay']),
  };
  try {
    await system.beginPhase();
    const driven = await drive(spec, 64, (item) => system.submit(item));
    const executions = await system.collect(60_000);
    printTable([
      phaseFigures(
        'bullmq',
        `rate ${spec.rate}/s`,
        spec,
        driven,
        executions,
        Math.min(spec.seconds / 2, spec.maxDelaySeconds + 2),
        system.phaseNotes(executions.length),
      ),
    ]);
  } finally {
    await system.stop();
    await target.close();
    if (redis.origin === 'started') stopRedis();
  }
}
