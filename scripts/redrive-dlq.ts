// `npm run dlq:redrive -- [--pool NAME] [--max N]` moves a local pool's DLQ (the default pool's
// unless --pool names another) back to that pool's standard lane.
// Against AWS: `npm run dlq:redrive -- --from <pool DLQ url> --to <pool queue url>`
// (or `aws sqs start-message-move-task --source-arn <dlq arn>`, which returns each message to the
// lane it came from).
import { parseArgs } from 'node:util';
import { poolRoutesOf } from '../lambdas/config/config';
import { createAwsClients } from '../lambdas/store/aws';
import { DEFAULT_POOL_NAME } from '../lambdas/store/pools';
import { emulatorEnvironment, ensureEmulator } from './local/emulator';
import { createLocalResources } from './local/resources';
import { localPoolsFromEnv } from './local/pools';
import { redriveMessages } from './ops/redrive';

const { values } = parseArgs({ options: { from: { type: 'string' }, to: { type: 'string' }, max: { type: 'string' }, pool: { type: 'string' } } });
const max = values.max ? Number(values.max) : Infinity;
let from = values.from;
let to = values.to;
if (!from || !to) {
  const emulator = await ensureEmulator();
  Object.assign(process.env, emulatorEnvironment(emulator.endpoint));
  const config = await createLocalResources(createAwsClients(), process.env.LOCAL_PREFIX ?? 'scheduler', {}, {}, localPoolsFromEnv());
  const name = values.pool ?? DEFAULT_POOL_NAME;
  const pool = poolRoutesOf(config).find((candidate) => candidate.name === name);
  if (!pool) throw new Error(`no pool ${name} (LOCAL_POOLS names the local pools)`);
  from = pool.dlqUrl;
  to = pool.queueUrl;
}
const moved = await redriveMessages(createAwsClients().sqs, from, to, max);
console.log(`moved ${moved} message(s) from ${from} to ${to}`);
