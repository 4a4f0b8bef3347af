// `npm run dev`: the whole scheduler on this machine against a local AWS emulator.
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { createDeps } from '../lambdas/app/deps';
import { createAwsClients } from '../lambdas/store/aws';
import { tuningFromEnv } from '../lambdas/config/config';
import { emulatorEnvironment, ensureEmulator } from './local/emulator';
import { createLocalResources } from './local/resources';
import { localPoolsFromEnv } from './local/pools';
import { localHeaderSecretArnsFromEnv } from './local/header-secrets';
import { ECHO_PATH, startLocalRuntime } from './local/runtime';

const DEV_TENANT = 'dev';
const METRICS_FILE = path.resolve(import.meta.dirname, '..', '.local', 'metrics.jsonl');

function intFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number, got "${raw}"`);
  return value;
}

async function main(): Promise<void> {
  // A stray rejection (a store call that failed while nothing awaited it) is logged, and the runtime
  // keeps serving: in AWS it would end one invocation and Lambda would carry on with a fresh one.
  process.on('unhandledRejection', (reason) => console.error('local runtime: unhandled rejection (the runtime keeps serving):', reason));
  const port = intFromEnv('PORT', 3000);
  const emulator = await ensureEmulator();
  Object.assign(process.env, emulatorEnvironment(emulator.endpoint));

  const clients = createAwsClients();
  const config = {
    ...(await createLocalResources(clients, process.env.LOCAL_PREFIX ?? 'scheduler', tuningFromEnv(), {}, localPoolsFromEnv())),
    headerSecretArns: localHeaderSecretArnsFromEnv(),
  };
  // Metric lines (EMF) go to a file, as Lambda's go to CloudWatch Logs, not over the console.
  mkdirSync(path.dirname(METRICS_FILE), { recursive: true });
  const metricSink = (line: string): void => appendFileSync(METRICS_FILE, `${line}\n`);
  // The API and the workers apart, each with its own telemetry, as AWS runs them (two functions):
  // sharing one made every API request flush the workers' roll-ups.
  const deps = createDeps(config, clients, { workerId: `local-${process.pid}-api`, metricSink });
  const workerDeps = createDeps(config, clients, { workerId: `local-${process.pid}`, metricSink });

  const generated = !process.env.DEV_API_KEY;
  const apiKey = process.env.DEV_API_KEY ?? `dev_${randomBytes(18).toString('base64url')}`;
  if (apiKey.length < 16) throw new Error('DEV_API_KEY must be at least 16 characters');
  await deps.apiKeys.issue(apiKey, DEV_TENANT, Date.now());

  const runtime = await startLocalRuntime({
    deps,
    workerDeps,
    clients,
    port,
    host: process.env.HOST ?? '127.0.0.1',
    workerConcurrency: intFromEnv('WORKER_CONCURRENCY', 4),
    tickIntervalMs: intFromEnv('TICK_INTERVAL_SECONDS', 60) * 1000,
  });
  void runtime.tickNow();

  console.log(`
Job scheduler running locally
  API        http://localhost:${runtime.port}/v1
  Console    http://localhost:${runtime.port}/console/   (sign in with the API key below)
  API key    ${apiKey}   (tenant "${DEV_TENANT}"${generated ? '; set DEV_API_KEY to choose it' : ''})
  Metrics    ${path.relative(process.cwd(), METRICS_FILE)} (Embedded Metric Format lines, as Lambda would log them)
  Emulator   ${emulator.endpoint} (${emulator.origin === 'started' ? 'moto, started now; it keeps running after Ctrl-C, stop it with npm run emulator:stop' : 'already running, reused'})

Try it:
  curl -s -X POST http://localhost:${runtime.port}/v1/jobs \\
    -H "Authorization: Bearer ${apiKey}" -H 'content-type: application/json' \\
    -d '{"name":"hello","type":"demo","schedule":{"kind":"now"},"target":{"kind":"http","url":"http://localhost:${runtime.port}${ECHO_PATH}"}}'

Ctrl-C stops the runtime; jobs and runs stay in the emulator.
`);

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${signal}: stopping (finishing runs in progress)...`);
    runtime
      .stop()
      .then(() => process.exit(0))
      .catch((error: unknown) => {
        console.error(error);
        process.exit(1);
      });
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
