// Stopping a background process by its pid file: a process that ignores SIGTERM is reported still
// running, or killed when the caller says it holds nothing worth a clean exit (the emulator).
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isRunning, stopByPidFileAndWait } from '../../scripts/local/pid-file';

const started: number[] = [];
afterEach(() => {
  for (const pid of started.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
});

/** A node process that ignores SIGTERM, and the pid file that names it. */
async function stubborn(): Promise<{ pid: number; pidFile: string; exit: Promise<NodeJS.Signals | null> }> {
  const child = spawn(process.execPath, ['-e', "process.on('SIGTERM', () => {}); console.log('ready'); setInterval(() => {}, 1000);"], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const exit = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  child.unref();
  const pid = child.pid!;
  started.push(pid);
  const pidFile = path.join(mkdtempSync(path.join(tmpdir(), 'pid-file-')), 'stubborn.pid');
  writeFileSync(pidFile, String(pid));
  return { pid, pidFile, exit };
}

describe('stopByPidFileAndWait', () => {
  it('says a process that ignores SIGTERM is still running, and keeps its pid file', async () => {
    const { pid, pidFile } = await stubborn();
    expect(await stopByPidFileAndWait(pidFile, { expect: 'SIGTERM', waitMs: 300 })).toBe('still-running');
    expect(isRunning(pid)).toBe(true);
    expect(existsSync(pidFile)).toBe(true);
  });

  it('kills it after the wait when asked, and removes the pid file', async () => {
    const { pidFile, exit } = await stubborn();
    expect(await stopByPidFileAndWait(pidFile, { expect: 'SIGTERM', waitMs: 300, killAfterWait: 10_000 })).toBe('stopped');
    expect(await exit).toBe('SIGKILL');
    expect(existsSync(pidFile)).toBe(false);
  });

  it('leaves a process alone whose command line is not the one expected', async () => {
    const { pid, pidFile } = await stubborn();
    expect(await stopByPidFileAndWait(pidFile, { expect: 'moto_server.py', waitMs: 300, killAfterWait: 1_000 })).toBe('not-running');
    expect(isRunning(pid)).toBe(true);
  });
});
