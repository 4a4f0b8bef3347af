// `npm run payloads:sweep -- [--older-than-hours 24] [--dry-run]` tags the jobs' payload objects that
// no job names for the bucket's lifecycle rule (lambdas/app/payload-sweep.ts, decision 0162). Local
// emulator by default; against a deployment: `--bucket <payload bucket> --jobs-table <jobs table>`.
import { parseArgs } from 'node:util';
import { createAwsClients } from '../lambdas/store/aws';
import { JobsRepository } from '../lambdas/store/jobs-repository';
import { PayloadStore } from '../lambdas/store/payload-store';
import { sweepJobPayloads } from '../lambdas/app/payload-sweep';
import { emulatorEnvironment, ensureEmulator } from './local/emulator';
import { createLocalResources } from './local/resources';
import { localPoolsFromEnv } from './local/pools';

const usage = 'usage: npm run payloads:sweep -- [--bucket NAME --jobs-table NAME] [--older-than-hours N (default 24, at least 1)] [--dry-run]';
let values: { bucket?: string; 'jobs-table'?: string; 'older-than-hours': string; 'dry-run': boolean };
try {
  ({ values } = parseArgs({
    options: {
      bucket: { type: 'string' },
      'jobs-table': { type: 'string' },
      'older-than-hours': { type: 'string', default: '24' },
      'dry-run': { type: 'boolean', default: false },
    },
  }));
} catch (error) {
  console.error(`${error instanceof Error ? error.message : String(error)}\n${usage}`);
  process.exit(2);
}
const hours = Number(values['older-than-hours']);
// An hour at least: a younger object's writer may still be about to write the job that names it.
if (!Number.isFinite(hours) || hours < 1) {
  console.error(`--older-than-hours must be a number of at least 1, got "${values['older-than-hours']}"\n${usage}`);
  process.exit(2);
}
if ((values.bucket === undefined) !== (values['jobs-table'] === undefined)) {
  console.error(`--bucket and --jobs-table go together (a deployment's), or neither (the local emulator)\n${usage}`);
  process.exit(2);
}
let bucket = values.bucket;
let jobsTable = values['jobs-table'];
if (!bucket || !jobsTable) {
  const emulator = await ensureEmulator();
  Object.assign(process.env, emulatorEnvironment(emulator.endpoint));
  const config = await createLocalResources(createAwsClients(), process.env.LOCAL_PREFIX ?? 'scheduler', {}, {}, localPoolsFromEnv());
  bucket = config.payloadBucket!;
  jobsTable = config.jobsTable;
}
const clients = createAwsClients();
const jobs = new JobsRepository(clients.dynamo, jobsTable, '-');
const report = await sweepJobPayloads(
  { payloads: new PayloadStore(clients.s3, bucket), jobsById: (jobIds) => jobs.getManyAnyTenant(jobIds) },
  { storedBefore: Date.now() - hours * 3600_000, dryRun: values['dry-run'] },
);
console.log(JSON.stringify(report, null, 2));
