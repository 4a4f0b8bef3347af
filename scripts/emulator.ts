// `npm run emulator:start` / `npm run emulator:stop`: the local AWS emulator on its own.
import { ensureEmulator, stopEmulator } from './local/emulator';

const command = process.argv[2];
if (command === 'start') {
  const emulator = await ensureEmulator();
  console.log(`emulator ${emulator.origin === 'started' ? 'started' : 'already running'} at ${emulator.endpoint}`);
} else if (command === 'stop') {
  console.log(stopEmulator() ? 'emulator stopped' : 'no emulator started by this project is running');
} else {
  console.error('usage: tsx scripts/emulator.ts start|stop');
  process.exit(2);
}
