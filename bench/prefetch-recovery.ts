// Recovery of runs a killed runtime had fetched ahead but not started, in local mode (issue 24
// item 9). The local runtime (`scripts/dev.ts`) runs in a child process with one worker, held by a
// target call that hangs; N run-now jobs are then created, which its fetchers receive into their
// buffer. The child is killed with SIGKILL, fresh pollers start in this process (no ticker runs), and
// the bench reports when each prefetched run was leased, counted from the kill.
//
//   npm run bench:prefetch-recovery -- [--runs 50]
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createDeps } from '../lambdas/app/deps';
import { logger } from '../lambdas/core/logger';
import { createAwsClients } from '../lambdas/store/aws';
import { emulatorEnvironment, ensureEmulator } from '../scripts/local/emulator';
import { createLocalResources, deleteLocalResources } from '../scripts/local/resources';
import { PREFETCH_VISIBILITY_SECONDS } from '../scripts/local/lane-consumer';
import { startLocalRuntime } from '../scripts/local/runtime';
import { percentile, waitFor } from './support';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '50' } } });
const count = Number(values.runs);

logger.setLogLevel('WARN');
const root = path.resolve(import.meta.dirname, '..');
const emulator = await ensureEmulator();
Object.assign(process.env, emulatorEnvironment(emulator.endpoint));
const clients = createAwsClients();
const prefix = `bench-${randomUUID().slice(0, 8)}`;
const config = await createLocalResources(clients, prefix, { leaseMarginSeconds: 2 });
const deps = createDeps(config, clients, { workerId: 'bench-api', metricSink: () => undefined });
const apiKey = `bench_${randomBytes(18).toString('base64url')}`;
await deps.apiKeys.issue(apiKey, 'bench', Date.now());
const api = await startLocalRuntime({ deps, clients, port: 0, workerConcurrency: 0, tickIntervalMs: 0 });

// The first call hangs (it holds the child's only worker); every other call answers at once.
let calls = 0;
const target = createServer((request, response) => {
  request.resume();
  calls++;
  if (calls === 1) setTimeout(() => response.destroyed || response.writeHead(200).end('{}'), 120_000).unref();
  else request.on('end', () => response.writeHead(200).end('{}'));
});
await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/`;

async function create(name: string): Promise<string> {
  const response = await fetch(`${api.url}/v1/jobs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, type: 'bench', schedule: { kind: 'now' }, target: { kind: 'http', url: targetUrl }, timeoutSeconds: 5 }),
  });
  if (response.status !== 201) throw new Error(`create failed: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { job: { nextRunId: string } }).job.nextRunId;
}

let child: ChildProcess | undefined;
try {
  await create('blocker');
  child = spawn(process.execPath, [path.join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'), path.join(root, 'scripts', 'dev.ts')], {
    cwd: root,
    detached: true,
    stdio: 'ignore',
    env: {
      ...process.env,
      LOCAL_PREFIX: prefix,
      PORT: '0',
      TICK_INTERVAL_SECONDS: '0',
      WORKER_CONCURRENCY: '1',
      LEASE_MARGIN_SECONDS: '2',
      POWERTOOLS_LOG_LEVEL: 'WARN',
    },
  });
  await waitFor(
    () => Promise.resolve(calls),
    (n) => n >= 1,
    60_000,
    'the first call',
  );
  const runIds: string[] = [];
  for (let i = 0; i < count; i++) runIds.push(await create(`prefetched-${i}`));
  await waitFor(
    () => deps.dispatch.depth(),
    (depth) => depth.visible === 0 && depth.delayed === 0 && depth.inFlight >= count + 1,
    60_000,
    'the child to fetch every message',
  );

  const exited = new Promise<void>((resolve) => child?.once('exit', () => resolve()));
  if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
  await exited;
  const killedAt = Date.now();
  const workers = await startLocalRuntime({
    deps: createDeps(config, clients, { workerId: 'bench-standby', metricSink: () => undefined }),
    clients,
    port: 0,
    workerConcurrency: 2,
    tickIntervalMs: 0,
    pollWaitSeconds: 1,
  });
  const runs = await waitFor(
    () => deps.runs.getMany(runIds),
    (items) => items.length === count && items.every((run) => run.status === 'SUCCEEDED'),
    900_000,
    'every prefetched run to succeed',
  );
  await workers.stop();
  const sinceKill = runs.map((run) => Date.parse(run.startedAt ?? '') - killedAt).sort((a, b) => a - b);
  console.log(
    `emulator ${emulator.endpoint}; ${count} runs fetched ahead by a runtime killed with SIGKILL; prefetch visibility ${PREFETCH_VISIBILITY_SECONDS} s; no ticker`,
  );
  console.log(
    `kill -> lease (s): p50 ${(percentile(sinceKill, 50) / 1000).toFixed(1)}  p99 ${(percentile(sinceKill, 99) / 1000).toFixed(1)}  max ${(percentile(sinceKill, 100) / 1000).toFixed(1)}; every run once: ${runs.every((run) => run.attempt === 1)}`,
  );
} finally {
  if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) process.kill(-child.pid, 'SIGKILL');
  await api.stop();
  target.close();
  await deleteLocalResources(clients, config);
}
