// `npm run test:fuzz-api`: Schemathesis, a schema-driven API fuzzer, against the local runtime with
// the API's own OpenAPI document (GET /v1/openapi.json). It fails on any 5xx and on any response
// that breaks the document (status, content type or body). Schemathesis is installed once into
// .local/schemathesis-venv; the run uses its own tables and queues in the emulator and removes them.
// Bounded: FUZZ_MAX_EXAMPLES cases per operation (default 15), a fixed seed (FUZZ_SEED).
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { createDeps } from '../lambdas/app/deps';
import { createAwsClients } from '../lambdas/store/aws';
import { emulatorEnvironment, ensureEmulator } from './local/emulator';
import { createLocalResources, deleteLocalResources } from './local/resources';
import { startLocalRuntime } from './local/runtime';

const root = path.resolve(import.meta.dirname, '..');
const venv = path.join(root, '.local', 'schemathesis-venv');
const SCHEMATHESIS_REQUIREMENT = 'schemathesis>=4.32,<5';

/** The schemathesis command in its venv, installing it the first time. */
function schemathesis(): string {
  const binary = path.join(venv, 'bin', 'schemathesis');
  if (existsSync(binary)) return binary;
  mkdirSync(path.dirname(venv), { recursive: true });
  console.log(`Installing ${SCHEMATHESIS_REQUIREMENT} into ${path.relative(process.cwd(), venv)} (once)...`);
  execFileSync('python3', ['-m', 'venv', venv], { stdio: 'inherit' });
  execFileSync(path.join(venv, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', SCHEMATHESIS_REQUIREMENT], { stdio: 'inherit' });
  return binary;
}

async function main(): Promise<number> {
  const binary = schemathesis();
  const emulator = await ensureEmulator();
  Object.assign(process.env, emulatorEnvironment(emulator.endpoint));
  const clients = createAwsClients();
  const config = await createLocalResources(clients, `fuzz-${randomBytes(3).toString('hex')}`);
  // Generous tenant limits: a fuzzer's burst of creates should reach the API's checks, not its 429.
  const deps = createDeps({ ...config, tenantDefaults: { ...config.tenantDefaults, createsPerSecond: 1000, maxActiveJobs: 100_000 } }, clients, {
    workerId: 'fuzz-api',
  });
  const apiKey = `fuzz_${randomBytes(18).toString('base64url')}`;
  await deps.apiKeys.issue(apiKey, 'fuzz', Date.now());
  // The API alone: no workers, no ticker (runs stay queued; the fuzzer looks at the API's answers).
  const runtime = await startLocalRuntime({ deps, clients, port: 0, workerConcurrency: 0, tickIntervalMs: 24 * 3600_000 });
  const base = `http://127.0.0.1:${runtime.port}`;
  try {
    const args = [
      'run',
      `${base}/v1/openapi.json`,
      '--url',
      base,
      '--header',
      `Authorization: Bearer ${apiKey}`,
      '--checks',
      'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance',
      '--phases',
      'examples,coverage,fuzzing',
      '--max-examples',
      process.env.FUZZ_MAX_EXAMPLES ?? '15',
      '--seed',
      process.env.FUZZ_SEED ?? '17',
      '--workers',
      '2',
      '--request-timeout',
      '30',
      '--suppress-health-check',
      'too_slow,filter_too_much',
      '--no-color',
    ];
    return await new Promise<number>((resolve, reject) => {
      // Its caches (.hypothesis, .schemathesis) go under .local, not into the work tree.
      const cwd = path.join(root, '.local', 'schemathesis-run');
      mkdirSync(cwd, { recursive: true });
      const child = spawn(binary, args, { stdio: 'inherit', cwd });
      child.on('error', reject);
      child.on('exit', (code) => resolve(code ?? 1));
    });
  } finally {
    await runtime.stop();
    await deleteLocalResources(clients, config);
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
