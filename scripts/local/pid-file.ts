// The processes the local scripts start in the background (moto, MiniStack, Redis for the bench)
// are remembered by a pid file, so that a later command can stop exactly what was started.
import { existsSync, readFileSync, rmSync } from 'node:fs';

/** Stops the process a pid file names and removes the file; false when there was none to stop. */
export function stopByPidFile(pidFile: string): boolean {
  if (!existsSync(pidFile)) return false;
  const pid = Number(readFileSync(pidFile, 'utf8'));
  rmSync(pidFile);
  try {
    process.kill(pid, 'SIGTERM');
    return true;
  } catch {
    return false;
  }
}

/** What stopping a process named by a pid file came to. */
export type StopOutcome =
  /** The process was running and has exited. */
  | 'stopped'
  /** No pid file: nothing was started here. */
  | 'no-pid-file'
  /** The pid file named a process that is gone, or one that is not what was started (a reused pid). */
  | 'not-running'
  /** Signalled, but still running when the wait ended. */
  | 'still-running';

export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The command line of a process where the system tells it (Linux's /proc), else null. */
function commandLineOf(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return null;
  }
}

/**
 * Stops the process a pid file names and waits until it has exited, so that the caller can say
 * what happened. `expect` guards against a pid reused by another process since the file was
 * written: where the command line can be read, it must contain `expect`. The file is removed
 * unless the process is still running.
 */
export async function stopByPidFileAndWait(
  pidFile: string,
  options: {
    expect?: string;
    waitMs?: number;
    /** Still running after `waitMs`: SIGKILL it and wait this long again (a process that holds nothing worth a clean exit). */
    killAfterWait?: number;
  } = {},
): Promise<StopOutcome> {
  if (!existsSync(pidFile)) return 'no-pid-file';
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  const commandLine = Number.isInteger(pid) && pid > 0 ? commandLineOf(pid) : null;
  const ours =
    Number.isInteger(pid) && pid > 0 && isRunning(pid) && (options.expect === undefined || commandLine === null || commandLine.includes(options.expect));
  if (!ours) {
    rmSync(pidFile, { force: true });
    return 'not-running';
  }
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    rmSync(pidFile, { force: true });
    return 'not-running';
  }
  if (await exitedWithin(pid, options.waitMs ?? 15_000)) {
    rmSync(pidFile, { force: true });
    return 'stopped';
  }
  if (options.killAfterWait !== undefined) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
    if (await exitedWithin(pid, options.killAfterWait)) {
      rmSync(pidFile, { force: true });
      return 'stopped';
    }
  }
  return 'still-running';
}

async function exitedWithin(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (!isRunning(pid) || isZombie(pid)) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A process that has exited and waits for its parent to reap it (state Z in /proc). */
function isZombie(pid: number): boolean {
  try {
    return /\)\s+Z\s/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
