// Where a CPU profile's time went: self time by area (idle, GC, the AWS SDK, the scheduler's own
// code, the local runtime, Node internals) and the heaviest functions. For a profile written by
// `node --cpu-prof --import tsx bench/load.ts ...` (see docs/performance.md).
//
//   npm run bench:profile-summary -- <file.cpuprofile> [--top 25]
//   npm run bench:profile-summary -- <file.folded>     (py-spy record --format raw of the emulator)
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}
interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
}
interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '25' } } });
const file = positionals[0];
if (!file) throw new Error('usage: bench/profile-summary.ts <file.cpuprofile | file.folded> [--top 25]');

/** Where moto's samples went, by the deepest frame that says what the thread was doing. */
function motoAreaOf(frames: readonly string[]): string {
  const leaf = frames.at(-1) ?? '';
  if (/Condition\.wait|Event\.wait/.test(leaf)) return 'waiting (long polls, condition variables)';
  if (/select \(selectors|\.select \(/.test(leaf)) return 'waiting (sockets)';
  const has = (pattern: RegExp) => frames.some((frame) => pattern.test(frame));
  if (has(/_serialised_call_action/) && /acquire|_serialised_call_action \(moto_server/.test(leaf)) return 'waiting for the DynamoDB lock';
  if (has(/moto\/dynamodb\/(models|parsing|comparisons)/)) return 'DynamoDB work (moto/dynamodb models, expressions)';
  if (has(/moto\/sqs\/models/)) return 'SQS work (moto/sqs models)';
  if (has(/moto\/core\/(parse|serialize)|moto\/core\/responses|json \(|dynamo_json_dump|responses\.py/))
    return 'request parsing and response serialising (moto core)';
  if (has(/logging\//)) return 'access log (werkzeug)';
  if (has(/werkzeug|socketserver|socket\.py|http\/server|threading/)) return 'HTTP server, connections and threads';
  return 'other';
}

if (file.endsWith('.folded')) {
  // py-spy --format raw: one "frame;frame;... count" line per distinct stack.
  const areas = new Map<string, number>();
  let total = 0;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const cut = line.lastIndexOf(' ');
    if (cut <= 0) continue;
    const count = Number(line.slice(cut + 1));
    const area = motoAreaOf(line.slice(0, cut).split(';'));
    areas.set(area, (areas.get(area) ?? 0) + count);
    total += count;
  }
  console.log(`${file}: ${total} samples (threads not idle)`);
  for (const [area, count] of [...areas].sort((a, b) => b[1] - a[1])) console.log(`${((100 * count) / total).toFixed(1).padStart(5)} %  ${area}`);
  process.exit(0);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfMicros = new Map<number, number>();
profile.samples.forEach((id, index) => selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0)));

function areaOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (functionName === '(idle)') return 'idle (waiting on I/O: the emulator, timers)';
  if (functionName === '(garbage collector)') return 'garbage collection';
  if (functionName === '(program)') return 'V8/native (program)';
  if (url.includes('/node_modules/@aws-sdk/') || url.includes('/node_modules/@smithy/')) return 'AWS SDK (serialise, sign, parse)';
  if (url.includes('/node_modules/tsx/') || url.includes('/node_modules/esbuild')) return 'tsx/esbuild (loading)';
  if (url.includes('/node_modules/zod/')) return 'zod (validation)';
  if (url.includes('/node_modules/@aws-lambda-powertools/')) return 'powertools logger';
  if (url.includes('/node_modules/')) return 'other dependencies';
  if (url.includes('/lambdas/')) return 'scheduler code (lambdas/)';
  if (url.includes('/scripts/local/')) return 'local runtime (scripts/local/)';
  if (url.includes('/bench/')) return 'bench driver (bench/)';
  if (url.startsWith('node:') || url === '') return 'Node internals (http, streams, crypto)';
  return 'other';
}

const total = [...selfMicros.values()].reduce((sum, micros) => sum + micros, 0);
const areas = new Map<string, number>();
const functions = new Map<string, number>();
for (const [id, micros] of selfMicros) {
  const frame = byId.get(id)?.callFrame;
  if (!frame) continue;
  const area = areaOf(frame);
  areas.set(area, (areas.get(area) ?? 0) + micros);
  const where = frame.url.replace(/^.*\/(node_modules\/|lambdas\/|scripts\/|bench\/)/, '$1');
  const name = `${frame.functionName || '(anonymous)'} ${where}:${frame.lineNumber + 1}`;
  functions.set(name, (functions.get(name) ?? 0) + micros);
}

const percent = (micros: number): string => `${((100 * micros) / total).toFixed(1).padStart(5)} %`;
console.log(`${file}: ${(total / 1e6).toFixed(1)} s sampled`);
console.log('\nself time by area');
for (const [area, micros] of [...areas].sort((a, b) => b[1] - a[1])) console.log(`${percent(micros)}  ${(micros / 1e6).toFixed(1).padStart(6)} s  ${area}`);
console.log(`\nheaviest functions (self time, top ${values.top})`);
for (const [name, micros] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) console.log(`${percent(micros)}  ${name}`);
