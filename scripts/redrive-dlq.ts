// `npm run dlq:redrive -- [--max N]` moves the local dispatch DLQ back to the dispatch queue.
// Against AWS: `npm run dlq:redrive -- --from <DispatchDlqUrl> --to <DispatchQueueUrl>`
// (or `aws sqs start-message-move-task --source-arn <dlq arn>`).
import { parseArgs } from 'node:util';
import { createAwsClients } from '../lambdas/store/aws';
import { emulatorEnvironment, ensureEmulator } from './local/emulator';
import { createLocalResources } from './local/resources';
import { redriveMessages } from './ops/redrive';

const { values } = parseArgs({ options: { from: { type: 'string' }, to: { type: 'string' }, max: { type: 'string' } } });
const max = values.max ? Number(values.max) : Infinity;
let from = values.from;
let to = values.to;
if (!from || !to) {
  const emulator = await ensureEmulator();
  Object.assign(process.env, emulatorEnvironment(emulator.endpoint));
  const config = await createLocalResources(createAwsClients(), process.env.LOCAL_PREFIX ?? 'scheduler');
  from = config.dispatchDlqUrl;
  to = config.dispatchQueueUrl;
}
const moved = await redriveMessages(createAwsClients().sqs, from, to, max);
console.log(`moved ${moved} message(s) from ${from} to ${to}`);
