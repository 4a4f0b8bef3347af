// `npm run ops:backfill-name-entries -- --jobs-table <name>`: between an upgrade's two deploys
// (decision 0192, docs/operations.md), copies the job names' guards written before it to the
// tenants' names partitions. Without the flag, the local runtime's table (which its start upgrades
// by itself).
import { parseArgs } from 'node:util';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { JOBS_BY_NAME_INDEX } from '../lambdas/store/schema';
import { createAwsClients } from '../lambdas/store/aws';
import { emulatorEnvironment, ensureEmulator } from './local/emulator';
import { createLocalResources } from './local/resources';
import { backfillNameEntries } from './ops/backfill-name-entries';

const { values } = parseArgs({ options: { 'jobs-table': { type: 'string' } } });
let jobsTable = values['jobs-table'];
if (!jobsTable) {
  const emulator = await ensureEmulator();
  Object.assign(process.env, emulatorEnvironment(emulator.endpoint));
  jobsTable = (await createLocalResources(createAwsClients(), process.env.LOCAL_PREFIX ?? 'scheduler')).jobsTable;
}
const clients = createAwsClients();
// Only while the table has byTenantName, i.e. during the upgrade: after it, an old guard is left
// behind by a job deleted since, and copying it would bring a stale guard back for nothing.
const { Table: table } = await clients.dynamo.send(new DescribeTableCommand({ TableName: jobsTable }));
if (!(table?.GlobalSecondaryIndexes ?? []).some((index) => index.IndexName === JOBS_BY_NAME_INDEX)) {
  console.log(`${jobsTable} has no ${JOBS_BY_NAME_INDEX} index: its names need no copy (the upgrade is done, or the stack never had it)`);
  process.exit(0);
}
const counts = await backfillNameEntries(clients.dynamo, jobsTable);
console.log(
  `copied ${counts.copied} name(s); ${counts.present} already there; ${counts.orphaned} old guard(s) of jobs that are gone or deleted, skipped; ${counts.deleted} deleted job(s) listed by name`,
);
for (const conflict of counts.conflicting) {
  console.log(
    `conflict: tenant ${conflict.tenantId}, name ${conflict.name}: the old guard names job ${conflict.guardJobId}, the entry job ${conflict.entryJobId}`,
  );
}
for (const left of counts.unresolved)
  console.log(`not copied (other writes at every try; run again): tenant ${left.tenantId}, name ${left.name}, job ${left.jobId}`);
if (counts.conflicting.length > 0 || counts.unresolved.length > 0) process.exitCode = 1;
