// A local Redis for the peer benchmark (Debian's `redis-server`), started detached on its own port
// with its data under .local/redis, as the emulator is. Append-only file with fsync every second,
// as BullMQ's production guide asks: the peer is measured with the persistence it would run with.
//
//   npm run bench:redis -- start|stop        (port: REDIS_PORT, default 6399)
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, openSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { stopByPidFile } from '../../scripts/local/pid-file';

export const DEFAULT_REDIS_PORT = 6399;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const dataDir = path.join(root, '.local', 'redis');
const pidFile = path.join(root, '.local', 'redis.pid');

export interface LocalRedis {
  readonly host: string;
  readonly port: number;
  /** `started` when this call started redis-server, `reused` when something already answered. */
  readonly origin: 'started' | 'reused';
}

/** True when a Redis answers PING on the port. */
export async function redisAnswers(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    const finish = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(1000, () => finish(false));
    socket.on('error', () => finish(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => finish(data.toString().startsWith('+PONG')));
  });
}

function redisServerBinary(): string {
  try {
    return execFileSync('which', ['redis-server'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('redis-server is not installed: on Debian, `apt-get install -y redis-server` (see docs/performance.md, the peer)');
  }
}

export async function ensureRedis(port = Number(process.env.REDIS_PORT ?? DEFAULT_REDIS_PORT)): Promise<LocalRedis> {
  const host = '127.0.0.1';
  if (await redisAnswers(port, host)) return { host, port, origin: 'reused' };
  const binary = redisServerBinary();
  mkdirSync(dataDir, { recursive: true });
  const out = openSync(path.join(dataDir, 'redis.log'), 'a');
  const child = spawn(
    binary,
    ['--port', String(port), '--bind', host, '--dir', dataDir, '--appendonly', 'yes', '--appendfsync', 'everysec', '--save', '', '--protected-mode', 'yes'],
    { detached: true, stdio: ['ignore', out, out] },
  );
  child.unref();
  writeFileSync(pidFile, String(child.pid));
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (await redisAnswers(port, host)) return { host, port, origin: 'started' };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`redis-server did not answer on ${host}:${port} within 10 s; see ${dataDir}/redis.log`);
}

/** Stops the redis-server this project started (if any). */
export function stopRedis(): boolean {
  return stopByPidFile(pidFile);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const command = process.argv[2];
  if (command === 'start') {
    const redis = await ensureRedis();
    console.log(`redis ${redis.origin === 'started' ? 'started' : 'already running'} at ${redis.host}:${redis.port}`);
  } else if (command === 'stop') {
    console.log(stopRedis() ? 'redis stopped' : 'no redis started by this project is running');
  } else {
    console.error('usage: tsx bench/peers/redis.ts start|stop');
    process.exit(2);
  }
}

/** What the bench knows of the Redis it uses: its settings only when it started it. */
export function redisNote(redis: { readonly host: string; readonly port: number; readonly origin: 'started' | 'reused' }): string {
  return redis.origin === 'started'
    ? 'Redis started by the bench: AOF fsync every second'
    : `a Redis already running at ${redis.host}:${redis.port}, its persistence settings not checked`;
}
