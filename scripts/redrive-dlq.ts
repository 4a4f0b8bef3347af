// `npm run dlq:redrive -- [--pool NAME] [--max N]` moves a local pool's DLQ (the default pool's
// unless --pool names another) back to that pool's lanes.
// Against AWS: `npm run dlq:redrive -- --from <pool DLQ url> --to <pool standard lane url>`
// (or `aws sqs start-message-move-task --source-arn <dlq arn>`).
// Each message goes back to the lane it came from (its DeadLetterQueueSourceArn); one whose lane is
// not known goes to the standard lane. Exit 0: done; 1: stopped part way (the count moved is
// printed); 2: usage error, nothing touched. See scripts/ops/redrive.ts.
import { poolRoutesOf } from '../lambdas/config/config';
import { createAwsClients } from '../lambdas/store/aws';
import { DEFAULT_POOL_NAME } from '../lambdas/store/pools';
import { emulatorEnvironment, ensureEmulator } from './local/emulator';
import { createLocalResources } from './local/resources';
import { localPoolsFromEnv } from './local/pools';
import type { RedriveReport } from './ops/redrive';
import { lanesByArn, parseRedriveArgs, redrive, REDRIVE_USAGE, RedriveError, RedriveUsageError, sourceQueuesOf } from './ops/redrive';

function usageError(message: string): never {
  console.error(message);
  process.exit(2);
}

let args;
try {
  args = parseRedriveArgs(process.argv.slice(2));
} catch (error) {
  if (!(error instanceof RedriveUsageError)) throw error;
  usageError(error.message);
}
if (args.kind === 'help') {
  console.log(REDRIVE_USAGE);
  process.exit(0);
}

let from: string;
let to: string;
let laneUrls: string[];
if (args.kind === 'queues') {
  ({ from, to } = args);
  // The lanes that redrive into this DLQ, from SQS itself; without sqs:ListDeadLetterSourceQueues,
  // every message goes to --to.
  try {
    laneUrls = [to, ...(await sourceQueuesOf(createAwsClients().sqs, from))];
  } catch (error) {
    console.warn(
      `could not list the queues that redrive into ${from} (${error instanceof Error ? error.message : String(error)}): every message goes to ${to}`,
    );
    laneUrls = [to];
  }
} else {
  const name = args.pool ?? DEFAULT_POOL_NAME;
  const known = [DEFAULT_POOL_NAME, ...localPoolsFromEnv().map((pool) => pool.name)];
  if (!known.includes(name)) usageError(`no local pool ${name} (LOCAL_POOLS names the local pools: ${known.join(', ')})`);
  const emulator = await ensureEmulator();
  Object.assign(process.env, emulatorEnvironment(emulator.endpoint));
  const config = await createLocalResources(createAwsClients(), process.env.LOCAL_PREFIX ?? 'scheduler', {}, {}, localPoolsFromEnv());
  const pool = poolRoutesOf(config).find((candidate) => candidate.name === name);
  if (!pool) throw new Error(`no pool ${name} in the local configuration`);
  from = pool.dlqUrl;
  to = pool.queueUrl;
  laneUrls = [pool.queueUrl, ...(pool.highQueueUrl ? [pool.highQueueUrl] : []), ...(pool.lowQueueUrl ? [pool.lowQueueUrl] : [])];
}

const { sqs } = createAwsClients();
function print(report: RedriveReport): void {
  console.log(`moved ${report.moved} message(s) from ${from}`);
  for (const [url, count] of Object.entries(report.movedTo)) console.log(`  ${count} to ${url}`);
  if (report.toFallback > 0) console.log(`  ${report.toFallback} of them did not name a known source lane: sent to the standard lane ${to}`);
  for (const source of report.unknownSources) console.log(`  unknown source lane ${source}`);
}
try {
  print(await redrive(sqs, from, { fallbackUrl: to, lanes: await lanesByArn(sqs, laneUrls) }, args.max));
} catch (error) {
  if (!(error instanceof RedriveError)) throw error;
  print(error.report);
  console.error(`redrive stopped: ${error.message}`);
  process.exitCode = 1;
}
