// An emulator of a test's own (moto through the project's launcher, on a free port), which the test
// may stop (SIGSTOP: it stalls, as an overloaded or paused store does) and resume without touching
// the suite's emulator.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { emulatorPidFile, ensureEmulator, stopEmulator } from '../../../scripts/local/emulator';

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface OwnEmulator {
  readonly endpoint: string;
  /** SIGSTOP until `resume` (or, as a watchdog, until `maxMs` have passed). */
  pause(maxMs: number): void;
  resume(): void;
  /** Whether the watchdog had to resume it (the test did not get its answer while it was paused). */
  readonly resumedByWatchdog: boolean;
  stop(): Promise<void>;
}

export async function startOwnEmulator(): Promise<OwnEmulator> {
  const endpoint = `http://127.0.0.1:${await freePort()}`;
  const started = await ensureEmulator(endpoint);
  if (started.origin !== 'started') throw new Error(`something already answers at ${endpoint}`);
  const pid = Number(readFileSync(emulatorPidFile(endpoint), 'utf8'));
  let watchdog: NodeJS.Timeout | undefined;
  let paused = false;
  let byWatchdog = false;
  const resume = (): void => {
    clearTimeout(watchdog);
    if (paused) process.kill(pid, 'SIGCONT');
    paused = false;
  };
  return {
    endpoint,
    pause(maxMs) {
      process.kill(pid, 'SIGSTOP');
      paused = true;
      byWatchdog = false;
      watchdog = setTimeout(() => {
        byWatchdog = true;
        resume();
      }, maxMs);
    },
    resume,
    get resumedByWatchdog() {
      return byWatchdog;
    },
    async stop() {
      resume();
      await stopEmulator(endpoint);
    },
  };
}
