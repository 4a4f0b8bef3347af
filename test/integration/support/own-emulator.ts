// An emulator of a test's own (moto through the project's launcher, on a free port), which the test
// may stop (SIGSTOP: it stalls, as an overloaded or paused store does) and resume without touching
// the suite's emulator.
import { readFileSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { connect, createServer } from 'node:net';
import { emulatorLogFile, emulatorPidFile, ensureEmulator, stopEmulator } from '../../../scripts/local/emulator';

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
      // A test's emulator is on a port of its own each time: leave no log per port behind.
      rmSync(emulatorLogFile(endpoint), { force: true });
    },
  };
}

export interface FaultProxy {
  /** The endpoint to give the runtime: the emulator behind this proxy. */
  readonly endpoint: string;
  /** While set, a connection that carries a request of this SQS action is cut (the emulator "drops out" at that call). */
  cutAction: string | null;
  /** Connections cut so far. */
  readonly cuts: number;
  stop(): Promise<void>;
}

/**
 * A TCP proxy in front of an emulator that can cut the connection of chosen calls, so that a test
 * meets the store dropping out at a given step (the SDK sees a reset connection, as when moto dies).
 */
export async function startFaultProxy(upstream: string): Promise<FaultProxy> {
  const target = new URL(upstream);
  const sockets = new Set<Socket>();
  const state = { cutAction: null as string | null, cuts: 0 };
  const server = createServer((client) => {
    const remote = connect(Number(target.port), target.hostname);
    sockets.add(client).add(remote);
    const cut = (): void => {
      client.destroy();
      remote.destroy();
      sockets.delete(client);
      sockets.delete(remote);
    };
    client.on('data', (chunk: Buffer) => {
      if (state.cutAction && chunk.includes(`AmazonSQS.${state.cutAction}`)) {
        state.cuts++;
        cut();
        return;
      }
      remote.write(chunk);
    });
    remote.on('data', (chunk: Buffer) => client.write(chunk));
    client.on('close', cut).on('error', cut);
    remote.on('close', cut).on('error', cut);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    get cutAction() {
      return state.cutAction;
    },
    set cutAction(action: string | null) {
      state.cutAction = action;
    },
    get cuts() {
      return state.cuts;
    },
    async stop() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
