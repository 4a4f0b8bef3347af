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
