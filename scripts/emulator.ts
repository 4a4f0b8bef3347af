// `npm run emulator:start` / `npm run emulator:stop`: the local AWS emulator on its own.
import { ensureEmulator, stopEmulator } from './local/emulator';

const command = process.argv[2];
if (command === 'start') {
  const emulator = await ensureEmulator();
  console.log(`emulator ${emulator.origin === 'started' ? 'started' : 'already running'} at ${emulator.endpoint}`);
} else if (command === 'stop') {
  // The emulator of AWS_ENDPOINT_URL (port 4566 when unset); each port has its own pid file.
  const stopped = await stopEmulator();
  console.log(stopped.message);
  if (stopped.outcome === 'still-running') process.exitCode = 1;
} else {
  console.error('usage: tsx scripts/emulator.ts start|stop');
  process.exit(2);
}
