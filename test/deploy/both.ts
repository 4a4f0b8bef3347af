// `npm run test:deploy`: the deploy test's two passes at once, each on a MiniStack of its own
// (test/deploy/deploy-test.ts): without IAM enforcement, and with it (`--auth`, MiniStack's
// AUTH=true), where a grant the stack lacks fails a scenario. Exits non-zero if either pass failed.
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const tsx = path.join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs');

function pass(args: string[]): { done: Promise<number>; stop: () => void } {
  const child = spawn(process.execPath, [tsx, path.join(here, 'deploy-test.ts'), ...args], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  return {
    done: new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)))),
    // The pass stops what it started when interrupted (its SIGINT handler).
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
    },
  };
}

const passes = [pass([]), pass(['--auth'])];
process.once('SIGINT', () => passes.forEach((p) => p.stop()));
const codes = await Promise.all(passes.map((p) => p.done));
console.log(`\nDeploy test passes: without IAM enforcement ${codes[0] === 0 ? 'pass' : 'FAIL'}, with (AUTH=true) ${codes[1] === 0 ? 'pass' : 'FAIL'}`);
process.exitCode = codes.some((code) => code !== 0) ? 1 : 0;
