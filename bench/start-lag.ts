// Start lag in local mode: creates jobs over the HTTP API of a local runtime (the real handlers
// against the emulator) and reports, per schedule kind, how long after its scheduled time each run
// was leased (startedAt - scheduledFor), and whether any started early.
//
//   npm run bench:start-lag -- [--count 20] [--kinds now,delay,at] [--concurrency 4]
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { createDeps } from '../lambdas/app/deps';
import { logger } from '../lambdas/core/logger';
import type { Run } from '../lambdas/domain/run';
import { createAwsClients } from '../lambdas/store/aws';
import { emulatorEnvironment, ensureEmulator } from '../scripts/local/emulator';
import { createLocalResources, deleteLocalResources } from '../scripts/local/resources';
import { startLocalRuntime } from '../scripts/local/runtime';
import { percentile } from './support';

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '20' },
    kinds: { type: 'string', default: 'now' },
    concurrency: { type: 'string', default: '4' },
  },
});
const count = Number(values.count);
const kinds = values.kinds.split(',') as ('now' | 'delay' | 'at')[];
for (const kind of kinds) if (!['now', 'delay', 'at'].includes(kind)) throw new Error(`unknown kind ${kind}`);

// Per-run INFO lines would drown the table.
logger.setLogLevel('WARN');
const emulator = await ensureEmulator();
Object.assign(process.env, emulatorEnvironment(emulator.endpoint));
const clients = createAwsClients();
const config = await createLocalResources(clients, `bench-${randomUUID().slice(0, 8)}`);
// Its metric lines (EMF) would drown the table too: the figures come from the runs.
const deps = createDeps(config, clients, { workerId: 'bench', metricSink: () => undefined });
const apiKey = `bench_${randomBytes(18).toString('base64url')}`;
await deps.apiKeys.issue(apiKey, 'bench', Date.now());
const runtime = await startLocalRuntime({ deps, clients, port: 0, workerConcurrency: Number(values.concurrency), tickIntervalMs: 0 });

const target = createServer((request, response) => {
  request.resume();
  request.on('end', () => response.writeHead(200).end('{}'));
});
await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/`;

function schedule(kind: 'now' | 'delay' | 'at', i: number): Record<string, unknown> {
  if (kind === 'now') return { kind: 'now' };
  if (kind === 'delay') return { kind: 'delay', seconds: 2 + (i % 9) };
  return { kind: 'at', at: new Date(Date.now() + 2_000 + (i % 9) * 1_000 + 137 * (i % 7)).toISOString() };
}

console.log(`emulator ${emulator.endpoint} (${emulator.origin}); ${count} jobs per kind; worker concurrency ${values.concurrency}`);
console.log('kind   runs   p50 ms   p95 ms   p99 ms   max ms   early');
try {
  for (const kind of kinds) {
    const runIds: string[] = [];
    for (let i = 0; i < count; i++) {
      const response = await fetch(`${runtime.url}/v1/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: `bench-${kind}-${i}-${randomUUID().slice(0, 6)}`,
          type: 'bench',
          schedule: schedule(kind, i),
          target: { kind: 'http', url: targetUrl },
        }),
      });
      if (response.status !== 201) throw new Error(`create failed: ${response.status} ${await response.text()}`);
      const body = (await response.json()) as { job: { nextRunId: string } };
      runIds.push(body.job.nextRunId);
      if (kind === 'now') await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const deadline = Date.now() + 120_000;
    let runs: (Run | null)[] = [];
    do {
      await new Promise((resolve) => setTimeout(resolve, 250));
      runs = await Promise.all(runIds.map((runId) => deps.runs.get(runId)));
    } while (runs.some((run) => run?.status !== 'SUCCEEDED') && Date.now() < deadline);
    const unfinished = runs.filter((run) => run?.status !== 'SUCCEEDED').length;
    if (unfinished > 0) throw new Error(`${unfinished} ${kind} runs did not succeed within 120 s`);
    const lags = runs.map((run) => Date.parse(run?.startedAt ?? '') - Date.parse(run?.scheduledFor ?? '')).sort((a, b) => a - b);
    const early = lags.filter((lag) => lag < 0).length;
    console.log(
      [
        kind.padEnd(5),
        String(lags.length).padStart(5),
        ...[50, 95, 99].map((p) => String(percentile(lags, p)).padStart(8)),
        String(lags.at(-1)).padStart(8),
        String(early).padStart(7),
      ].join(' '),
    );
  }
} finally {
  await runtime.stop();
  target.close();
  await deleteLocalResources(clients, config);
}
