// `npm run ops:backfill-finding-keys -- --jobs-table <name> --runs-table <name>`: after deploying the
// finding indexes (decision 0095) to a stack that already has jobs and runs, gives the items written
// before them the indexes' keys. Without the flags, the local runtime's tables.
import { parseArgs } from 'node:util';
import { createAwsClients } from '../lambdas/store/aws';
import { emulatorEnvironment, ensureEmulator } from './local/emulator';
import { createLocalResources } from './local/resources';
import { backfillFindingKeys } from './ops/backfill-finding-keys';

const { values } = parseArgs({ options: { 'jobs-table': { type: 'string' }, 'runs-table': { type: 'string' } } });
// Both a deployment's, or neither (the local emulator): one alone must not quietly backfill the emulator.
if ((values['jobs-table'] === undefined) !== (values['runs-table'] === undefined)) {
  console.error(
    "--jobs-table and --runs-table go together (a deployment's: the stack outputs JobsTableName and RunsTableName), or neither (the local emulator)",
  );
  process.exit(2);
}
let jobsTable = values['jobs-table'];
let runsTable = values['runs-table'];
if (!jobsTable || !runsTable) {
  const emulator = await ensureEmulator();
  Object.assign(process.env, emulatorEnvironment(emulator.endpoint));
  const config = await createLocalResources(createAwsClients(), process.env.LOCAL_PREFIX ?? 'scheduler');
  jobsTable = config.jobsTable;
  runsTable = config.runsTable;
}
const counts = await backfillFindingKeys(createAwsClients().dynamo, jobsTable, runsTable);
console.log(`backfilled ${counts.jobs} job(s), ${counts.runs} run(s) and ${counts.workflows} workflow(s)`);
