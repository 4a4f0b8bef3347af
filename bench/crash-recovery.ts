// Recovery after a worker crash, in local mode. Each trial starts the local runtime (`scripts/dev.ts`)
// in a child process, lets it lease a run whose target hangs, kills it with SIGKILL, and starts
// fresh pollers in this process. It reports, per trial and as percentiles:
//   expiry -> recorded   the dead worker's lease expiry to its attempt being recorded WORKER_LOST
//   expiry -> lease      the lease expiry to the next attempt's lease (the recovery time)
//   kill -> lease        the kill to the next lease (what a user waits beyond the lease)
//
// With --lost-message, each trial is a worker that died between its lease and the visibility change
// (its message stays invisible for the queue's timeout): the bench takes the message for an hour and
// leases the run as a worker would, and only the ticker (here every --tick seconds, at a phase that
// has nothing to do with the leases, as in AWS) can find the lease expired in the time index.
//
//   npm run bench:crash-recovery -- [--trials 5] [--timeout 3] [--margin 2] [--initial-delay 0] [--lost-message] [--tick 60]
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { createDeps } from '../lambdas/app/deps';
import { tick } from '../lambdas/app/tick';
import { leaseCheckAt } from '../lambdas/domain/time-gate';
import { logger } from '../lambdas/core/logger';
import type { Run } from '../lambdas/domain/run';
import { createAwsClients } from '../lambdas/store/aws';
import { emulatorEnvironment, ensureEmulator } from '../scripts/local/emulator';
import { createLocalResources, deleteLocalResources } from '../scripts/local/resources';
import { startLocalRuntime } from '../scripts/local/runtime';
import { percentile, waitFor } from './support';

const { values } = parseArgs({
  options: {
    trials: { type: 'string', default: '5' },
    timeout: { type: 'string', default: '3' },
    margin: { type: 'string', default: '2' },
    'initial-delay': { type: 'string', default: '0' },
    'lost-message': { type: 'boolean', default: false },
    tick: { type: 'string', default: '60' },
  },
});
const trials = Number(values.trials);
const timeoutSeconds = Number(values.timeout);
const marginSeconds = Number(values.margin);
const initialDelaySeconds = Number(values['initial-delay']);
const lostMessage = values['lost-message'];
const tickSeconds = Number(values.tick);

logger.setLogLevel('WARN');
const root = path.resolve(import.meta.dirname, '..');
const emulator = await ensureEmulator();
Object.assign(process.env, emulatorEnvironment(emulator.endpoint));
const clients = createAwsClients();
const prefix = `bench-${randomUUID().slice(0, 8)}`;
const config = await createLocalResources(clients, prefix, { leaseMarginSeconds: marginSeconds });
const deps = createDeps(config, clients, { workerId: 'bench-api' });
const apiKey = `bench_${randomBytes(18).toString('base64url')}`;
await deps.apiKeys.issue(apiKey, 'bench', Date.now());
const api = await startLocalRuntime({ deps, clients, port: 0, workerConcurrency: 0, tickIntervalMs: 0 });
// The ticker, every --tick seconds from the start, whatever the trials do (as EventBridge Scheduler runs it).
let ticking = Promise.resolve();
const ticker = setInterval(() => {
  ticking = ticking.then(() =>
    tick(deps).then(
      () => undefined,
      (error: unknown) => console.error('tick failed', error),
    ),
  );
}, tickSeconds * 1000);

// The first call of each job hangs (its worker is killed during it); the retry's call answers.
const seen = new Map<string, number>();
let calls = 0;
const target = createServer((request, response) => {
  request.resume();
  calls++;
  const jobId = String(request.headers['x-job-id']);
  const count = (seen.get(jobId) ?? 0) + 1;
  seen.set(jobId, count);
  if (count === 1) {
    setTimeout(() => response.destroyed || response.writeHead(200).end('{}'), 60_000).unref();
  } else {
    request.on('end', () => response.writeHead(200).end('{}'));
  }
});
await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/`;

function startChild(): ChildProcess {
  const child = spawn(process.execPath, [path.join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'), path.join(root, 'scripts', 'dev.ts')], {
    cwd: root,
    detached: true,
    stdio: 'ignore',
    env: {
      ...process.env,
      LOCAL_PREFIX: prefix,
      PORT: '0',
      TICK_INTERVAL_SECONDS: '0',
      WORKER_CONCURRENCY: '1',
      LEASE_MARGIN_SECONDS: String(marginSeconds),
      POWERTOOLS_LOG_LEVEL: 'WARN',
    },
  });
  return child;
}

async function killChild(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  process.kill(-child.pid, 'SIGKILL');
  await exited;
}

console.log(
  `emulator ${emulator.endpoint} (${emulator.origin}); ${trials} trials; job timeout ${timeoutSeconds} s + lease margin ${marginSeconds} s = lease ${timeoutSeconds + marginSeconds} s; retry initial delay ${initialDelaySeconds} s`,
);
console.log(
  lostMessage
    ? `lost message: the worker died between its lease and the visibility change; ticker every ${tickSeconds} s`
    : 'the worker killed during its call',
);
console.log('trial   expiry->recorded ms   expiry->lease ms   kill->lease ms   target calls');
const recorded: number[] = [];
const recovery: number[] = [];
const afterKill: number[] = [];
try {
  for (let trial = 1; trial <= trials; trial++) {
    const response = await fetch(`${api.url}/v1/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: `crash-${trial}-${randomUUID().slice(0, 6)}`,
        type: 'bench',
        schedule: { kind: 'now' },
        target: { kind: 'http', url: targetUrl },
        timeoutSeconds,
        retryPolicy: { maxAttempts: 3, initialDelaySeconds, maxDelaySeconds: Math.max(1, initialDelaySeconds) },
      }),
    });
    if (response.status !== 201) throw new Error(`create failed: ${response.status} ${await response.text()}`);
    const { job } = (await response.json()) as { job: { jobId: string; tenantId: string; createdAt: string; nextRunId: string } };
    const callsBefore = calls;

    let killedAt: number;
    if (lostMessage) {
      // A random phase of the ticker: a lease ends at any moment between two ticks.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * tickSeconds * 1000));
      // The worker took the message and the lease, and died before it tied the one to the other
      // (and before its call: the retry's call is answered).
      seen.set(job.jobId, 1);
      let taken = 0;
      while (taken === 0) {
        const received = await clients.sqs.send(
          new ReceiveMessageCommand({ QueueUrl: config.dispatchQueueUrl, MaxNumberOfMessages: 1, VisibilityTimeout: 3_600, WaitTimeSeconds: 1 }),
        );
        taken = received.Messages?.length ?? 0;
      }
      const now = Date.now();
      const lease = await deps.leases.lease(job.nextRunId, {
        owner: `bench-ghost-${trial}`,
        now,
        checkBackAt: leaseCheckAt(now, config),
        shards: config.timeIndexShards,
      });
      if (lease.kind !== 'leased') throw new Error(`the ghost could not lease the run: ${lease.kind}`);
      killedAt = Date.now();
    } else {
      const child = startChild();
      try {
        await waitFor(
          () => Promise.resolve(calls),
          (n) => n > callsBefore,
          30_000,
          'the first call',
          50,
        );
      } finally {
        // Killed whether or not it called: a child left running would go on polling the emulator.
        await killChild(child);
      }
      killedAt = Date.now();
    }

    const workers = await startLocalRuntime({
      deps: createDeps(config, clients, { workerId: `bench-standby-${trial}` }),
      clients,
      port: 0,
      workerConcurrency: 2,
      tickIntervalMs: 0,
      pollWaitSeconds: 1,
    });
    const runs = await waitFor(
      async () => (await deps.runs.listByJob(job, 10)).items,
      (items: Run[]) => items.some((run) => run.status === 'SUCCEEDED'),
      lostMessage ? (tickSeconds + timeoutSeconds + marginSeconds) * 1000 + 60_000 : 60_000,
      'the retry to succeed',
      50,
    );
    await workers.stop();
    const lost = runs.find((run) => run.runId === job.nextRunId);
    const next = runs.find((run) => run.attempt === 2);
    if (!lost?.leaseExpiresAt || !lost.finishedAt || !next?.startedAt || lost.error?.code !== 'WORKER_LOST' || (lostMessage && calls !== callsBefore + 1)) {
      throw new Error(`unexpected runs: ${JSON.stringify(runs)}`);
    }
    const expiry = Date.parse(lost.leaseExpiresAt);
    recorded.push(Date.parse(lost.finishedAt) - expiry);
    recovery.push(Date.parse(next.startedAt) - expiry);
    afterKill.push(Date.parse(next.startedAt) - killedAt);
    console.log(
      `${String(trial).padStart(5)}   ${String(recorded.at(-1)).padStart(16)}   ${String(recovery.at(-1)).padStart(16)}   ${String(afterKill.at(-1)).padStart(14)}   ${String(seen.get(job.jobId)).padStart(12)}`,
    );
  }
  for (const [name, list] of [
    ['expiry->recorded', recorded],
    ['expiry->lease', recovery],
    ['kill->lease', afterKill],
  ] as const) {
    const sorted = [...list].sort((a, b) => a - b);
    console.log(`${name.padEnd(17)} p50 ${percentile(sorted, 50)} ms, p95 ${percentile(sorted, 95)} ms, max ${sorted.at(-1)} ms`);
  }
} finally {
  clearInterval(ticker);
  await ticking;
  await api.stop();
  target.closeAllConnections();
  target.close();
  await deleteLocalResources(clients, config);
}
