// MiniStack (PyPI `ministack`, MIT): a local AWS emulator that runs Node Lambda functions as local
// processes, which moto cannot do without Docker. The lambda target is tested against it. Installed
// into its own project-local virtual environment (apart from moto's, so their dependencies never
// meet) and started on a port of the caller's choosing, as a child of the caller.
import type { ChildProcess } from 'node:child_process';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { answers } from './emulator';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const stateDir = path.join(root, '.local');
const venv = path.join(stateDir, 'ministack-venv');
export const MINISTACK_REQUIREMENT = 'ministack>=1.5.33,<2';

/** The ministack command in its venv, installing it the first time. */
export function installMiniStack(): string {
  const binary = path.join(venv, 'bin', 'ministack');
  if (existsSync(binary)) return binary;
  mkdirSync(stateDir, { recursive: true });
  console.log(`Installing ${MINISTACK_REQUIREMENT} into ${path.relative(process.cwd(), venv) || venv} (once)...`);
  execFileSync('python3', ['-m', 'venv', venv], { stdio: 'inherit' });
  execFileSync(path.join(venv, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', MINISTACK_REQUIREMENT], { stdio: 'inherit' });
  if (!existsSync(binary)) throw new Error(`ministack was not installed at ${binary}`);
  return binary;
}

export interface MiniStack {
  readonly endpoint: string;
  readonly logFile: string;
  stop(): Promise<void>;
}

export interface MiniStackOptions {
  /**
   * Start it as the leader of a process group of its own, and stop the whole group: the Node
   * processes it runs functions in are its children and would outlive it otherwise.
   */
  readonly processGroup?: boolean;
  /** More environment for MiniStack (e.g. `AUTH=true`, or the `AWS_ENDPOINT_URL` its functions call). */
  readonly env?: Readonly<Record<string, string>>;
}

/** Starts MiniStack on `port` (127.0.0.1) and waits until it answers; `stop` ends that process. */
export async function startMiniStack(port: number, options: MiniStackOptions = {}): Promise<MiniStack> {
  const binary = installMiniStack();
  const endpoint = `http://127.0.0.1:${port}`;
  if (await answers(endpoint)) throw new Error(`something already answers at ${endpoint}; MiniStack needs a port of its own`);
  const logFile = path.join(stateDir, `ministack-${port}.log`);
  const out = openSync(logFile, 'a');
  const child: ChildProcess = spawn(binary, [], {
    stdio: ['ignore', out, out],
    env: { ...process.env, GATEWAY_PORT: String(port), MINISTACK_HOST: '127.0.0.1', LAMBDA_EXECUTOR: 'local', MINISTACK_REGION: 'us-east-1', ...options.env },
    detached: options.processGroup ?? false,
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const signal = (name: NodeJS.Signals): void => {
    if (options.processGroup && child.pid !== undefined) {
      try {
        process.kill(-child.pid, name); // its group: MiniStack and the function processes it started
      } catch {
        // the group is gone already
      }
    } else if (child.exitCode === null && child.signalCode === null) {
      child.kill(name);
    }
  };
  const stop = async (): Promise<void> => {
    signal('SIGTERM');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000))]);
    signal('SIGKILL');
  };
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`MiniStack exited with ${child.exitCode}; see ${logFile}`);
    if (await answers(`${endpoint}/_ministack/health`)) return { endpoint, logFile, stop };
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await stop();
  throw new Error(`MiniStack did not answer at ${endpoint} within 60 s; see ${logFile}`);
}
