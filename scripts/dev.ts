// `npm run dev`: the whole scheduler on this machine against a local AWS emulator.
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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
/** The key `npm run dev` made when DEV_API_KEY was not set: used again by the next run, so the key you exported keeps working. */
const DEV_KEY_FILE = path.resolve(import.meta.dirname, '..', '.local', 'dev-api-key');

/** DEV_API_KEY, else the key an earlier run made, else a new one (kept for the next run). */
function devApiKey(): { readonly apiKey: string; readonly origin: 'env' | 'kept' | 'new' } {
  const chosen = process.env.DEV_API_KEY;
  if (chosen !== undefined) {
    if (chosen.length < 16) throw new Error('DEV_API_KEY must be at least 16 characters');
    return { apiKey: chosen, origin: 'env' };
  }
  const kept = existsSync(DEV_KEY_FILE) ? readFileSync(DEV_KEY_FILE, 'utf8').trim() : '';
  if (kept.length >= 16) return { apiKey: kept, origin: 'kept' };
  const apiKey = `dev_${randomBytes(18).toString('base64url')}`;
  mkdirSync(path.dirname(DEV_KEY_FILE), { recursive: true });
  writeFileSync(DEV_KEY_FILE, `${apiKey}\n`, { mode: 0o600 });
  return { apiKey, origin: 'new' };
}

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
  // Checked before anything is installed or started.
  const { apiKey, origin: keyOrigin } = devApiKey();
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

  // Stored again whenever it is missing (a fresh emulator); a key stored before is kept as it is.
  await deps.apiKeys.issue(apiKey, DEV_TENANT, Date.now());
  const keyNote = {
    env: 'from DEV_API_KEY',
    kept: `the one made before, kept in ${path.relative(process.cwd(), DEV_KEY_FILE)}; set DEV_API_KEY to choose another`,
    new: `made now and kept in ${path.relative(process.cwd(), DEV_KEY_FILE)} for the next run; set DEV_API_KEY to choose it`,
  }[keyOrigin];

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
  API        http://localhost:${runtime.port}   (its paths start with /v1; this base is SCHEDULER_URL for the CLI and the client's baseUrl)
  Console    http://localhost:${runtime.port}/console/   (sign in with the API key below)
  API key    ${apiKey}   (tenant "${DEV_TENANT}"; ${keyNote})
  Metrics    ${path.relative(process.cwd(), METRICS_FILE)} (Embedded Metric Format lines, as Lambda would log them)
  Emulator   ${emulator.endpoint} (${emulator.origin === 'started' ? 'moto, started now' : 'already running, reused'}; it keeps running after Ctrl-C and keeps the jobs; npm run emulator:stop stops it and discards them, so stop this runtime first)

Try it:
  curl -s -X POST http://localhost:${runtime.port}/v1/jobs \\
    -H "Authorization: Bearer ${apiKey}" -H 'content-type: application/json' \\
    -d '{"type":"demo","schedule":{"kind":"now"},"target":{"kind":"http","url":"http://localhost:${runtime.port}${ECHO_PATH}"}}'

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
