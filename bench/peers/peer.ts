// Loads the BullMQ peer on demand. BullMQ and ioredis live in bench/peers/package.json, not in the
// scheduler's own dependencies: a lockfile written on one platform leaves out BullMQ's native
// optional builds for the others, which `npm ci` refuses, and nothing but this bench needs them.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { SystemUnderTest } from '../support';

export interface BullmqOptions {
  readonly host: string;
  readonly port: number;
  readonly targetUrl: string;
  /** Jobs processed at once by the worker. */
  readonly concurrency: number;
  /** What is known of Redis's durability, for the phase's notes (`redisNote` in redis.ts). */
  readonly redisNote: string;
}

interface BullmqPeerModule {
  readonly createBullmqSystem: (options: BullmqOptions) => SystemUnderTest;
}

const here = path.dirname(fileURLToPath(import.meta.url));

/** Installs the peer's packages if they are missing, then imports the peer. */
export async function loadBullmqPeer(): Promise<BullmqPeerModule['createBullmqSystem']> {
  if (!existsSync(path.join(here, 'node_modules', 'bullmq', 'package.json'))) {
    console.log('installing the peer (bench/peers: bullmq, ioredis)...');
    execFileSync('npm', ['--prefix', here, 'install', '--no-audit', '--no-fund', '--loglevel=error'], { stdio: 'inherit' });
  }
  // A computed specifier keeps the root typecheck from following it into a package it may not have.
  const specifier = pathToFileURL(path.join(here, 'bullmq.ts')).href;
  const peer = (await import(specifier)) as BullmqPeerModule;
  return peer.createBullmqSystem;
}
