// The local AWS emulator. Uses whatever answers at the endpoint (moto, LocalStack, MiniStack);
// otherwise installs moto into a project-local virtual environment (so it works where the system
// Python refuses pip) and starts it detached, so that it outlives the runtime and keeps every
// job and run across restarts.
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { StopOutcome } from './pid-file';
import { stopByPidFileAndWait } from './pid-file';

// Local runs use the machine's Node; the functions themselves run on Node 22 in AWS. Set as this
// module loads, before any script makes a client (the SDK warns at a client's first request).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

export const DEFAULT_ENDPOINT = 'http://127.0.0.1:4566';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const stateDir = path.join(root, '.local');
const venv = path.join(stateDir, 'venv');
const LAUNCHER = path.join(root, 'scripts', 'local', 'moto_server.py');
const MOTO_REQUIREMENT = 'moto[server]>=5.1,<6';

/** The port an emulator endpoint listens on (the scheme's default when the URL names none). */
export function portOf(endpoint: string): number {
  const url = new URL(endpoint);
  return Number(url.port || (url.protocol === 'https:' ? 443 : 80));
}

/**
 * Where the pid of the moto started for an endpoint is kept: one file per port, so that emulators
 * on other ports (a bench's, a test's) neither overwrite nor answer for each other.
 */
export function emulatorPidFile(endpoint: string): string {
  return path.join(stateDir, `moto-${portOf(endpoint)}.pid`);
}

export function emulatorLogFile(endpoint: string): string {
  return path.join(stateDir, `moto-${portOf(endpoint)}.log`);
}

export interface Emulator {
  readonly endpoint: string;
  /** `started` when this call started moto, `reused` when something already answered. */
  readonly origin: 'started' | 'reused';
}

export async function answers(endpoint: string): Promise<boolean> {
  try {
    await fetch(endpoint, { signal: AbortSignal.timeout(1500) });
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether the endpoint is an AWS emulator: it answers a signed DynamoDB request (with the test
 * credentials every emulator accepts). A web server that merely answers HTTP is not one.
 */
export async function speaksAws(endpoint: string): Promise<boolean> {
  const client = new DynamoDBClient({
    endpoint,
    region: process.env.AWS_REGION ?? 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 1,
    requestHandler: { connectionTimeout: 1500, requestTimeout: 3000 },
  });
  try {
    await client.send(new ListTablesCommand({ Limit: 1 }));
    return true;
  } catch {
    return false;
  } finally {
    client.destroy();
  }
}

/** The venv's Python with moto installed (installing it the first time). */
function motoPython(): string {
  const python = path.join(venv, 'bin', 'python');
  const binary = path.join(venv, 'bin', 'moto_server');
  if (existsSync(binary)) return python;
  mkdirSync(stateDir, { recursive: true });
  console.log(`Installing ${MOTO_REQUIREMENT} into ${path.relative(process.cwd(), venv) || venv} (once)...`);
  execFileSync('python3', ['-m', 'venv', venv], { stdio: 'inherit' });
  execFileSync(path.join(venv, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', MOTO_REQUIREMENT], {
    stdio: 'inherit',
  });
  if (!existsSync(binary)) throw new Error(`moto_server was not installed at ${binary}`);
  return python;
}

export async function ensureEmulator(endpoint = process.env.AWS_ENDPOINT_URL ?? DEFAULT_ENDPOINT): Promise<Emulator> {
  if (await answers(endpoint)) {
    if (await speaksAws(endpoint)) return { endpoint, origin: 'reused' };
    throw new Error(
      `Something answers at ${endpoint}, but it is not an AWS emulator (it did not answer a DynamoDB request). ` +
        'Stop it, or set AWS_ENDPOINT_URL to a free port on 127.0.0.1 and moto is started there.',
    );
  }
  const url = new URL(endpoint);
  if (!['127.0.0.1', 'localhost'].includes(url.hostname)) {
    throw new Error(`Nothing answers at ${endpoint}, and moto is only started on this machine (127.0.0.1).`);
  }
  const python = motoPython();
  const logFile = emulatorLogFile(endpoint);
  const out = openSync(logFile, 'a');
  // Our launcher: moto with DynamoDB requests serialised, as atomic as the real service.
  const child = spawn(python, [LAUNCHER, '-H', '127.0.0.1', '-p', String(portOf(endpoint))], { detached: true, stdio: ['ignore', out, out] });
  child.unref();
  writeFileSync(emulatorPidFile(endpoint), String(child.pid));
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (await speaksAws(endpoint)) return { endpoint, origin: 'started' };
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`moto did not answer at ${endpoint} within 30 s; see ${logFile}`);
}

export interface EmulatorStop {
  readonly outcome: StopOutcome;
  /** What happened, for a person: `stopped` only when the process has exited. */
  readonly message: string;
}

/**
 * Stops the moto this project started for `endpoint` (AWS_ENDPOINT_URL by default) and waits for it
 * to exit; an emulator on another port, or one started by something else, is left alone and the
 * answer says so.
 */
export async function stopEmulator(endpoint = process.env.AWS_ENDPOINT_URL ?? DEFAULT_ENDPOINT): Promise<EmulatorStop> {
  // moto keeps everything in memory: one that has not exited 15 s after SIGTERM (a long-lived one
  // with a large heap, threads in long polls) is killed rather than left beside a new one.
  const outcome = await stopByPidFileAndWait(emulatorPidFile(endpoint), { expect: 'moto_server.py', killAfterWait: 5_000 });
  switch (outcome) {
    case 'stopped':
      return { outcome, message: `emulator at ${endpoint} stopped` };
    case 'still-running':
      return { outcome, message: `emulator at ${endpoint} was asked to stop but is still running` };
    default: {
      const other = (await answers(endpoint)) ? `; something else answers at ${endpoint} and was left running` : '';
      return { outcome, message: `no emulator started by this project runs at ${endpoint}${other}` };
    }
  }
}

/** Credentials and region for an emulator; they are never checked, only required by the SDK. */
export function emulatorEnvironment(endpoint: string): Record<string, string> {
  return {
    AWS_ENDPOINT_URL: endpoint,
    AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'test',
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'test',
    // Local runs use the machine's Node; the functions themselves run on Node 22 in AWS.
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
}
