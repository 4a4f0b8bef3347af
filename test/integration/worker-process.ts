// The local runtime as a separate worker process (`scripts/dev.ts`, as `npm run dev` starts it),
// over a test scheduler's tables and queues, so that a test can kill it with SIGKILL mid-run.
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { Scheduler } from './harness';
import { recordLogLines } from './support/leak-record';

const root = path.resolve(import.meta.dirname, '../..');
const tsxCli = path.join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs');

/** `npm run dev` in its own process group, over the scheduler's resources, with pollers only. */
export function startRuntimeProcess(
  scheduler: Pick<Scheduler, 'prefix'> & { readonly config: Pick<Scheduler['config'], 'leaseMarginSeconds'> },
  env: Record<string, string> = {},
): ChildProcess {
  const child = spawn(process.execPath, [tsxCli, path.join(root, 'scripts', 'dev.ts')], {
    cwd: root,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      LOCAL_PREFIX: scheduler.prefix,
      PORT: '0',
      TICK_INTERVAL_SECONDS: '0',
      WORKER_CONCURRENCY: '1',
      LEASE_MARGIN_SECONDS: String(scheduler.config.leaseMarginSeconds),
      // Every line, for the suite's leak check; none of it is printed.
      POWERTOOLS_LOG_LEVEL: 'DEBUG',
      ...env,
    },
  });
  for (const stream of [child.stdout, child.stderr]) {
    // Whole lines only: a value cut across two chunks would not be found.
    let partial = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (text: string) => {
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      recordLogLines(lines.join('\n'));
    });
    stream?.on('end', () => recordLogLines(partial));
  }
  return child;
}

/** SIGKILL to the whole group (tsx and the node process it runs); resolves when it has exited. */
export function killProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return Promise.resolve();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  process.kill(-child.pid, 'SIGKILL');
  return exited;
}
