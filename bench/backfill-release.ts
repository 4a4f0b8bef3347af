// The release rate of a backfill, in local mode against the emulator. A minutely cron job is
// backfilled over the last --hours hours; the ticker (called here back to back, as it is every minute
// in AWS) releases the backfill a page per tick at its share of BACKFILL_RELEASE_PER_TICK, each page
// spread over the minute. It reports:
//   per tick         fire times released by each tick (the bound), and the tick's duration
//   write rate       fire times released per second of ticker work (what the emulator allows)
//   release rate     the bound in AWS: per tick / 60 s, and how long a year of minutely fires takes
//   spread           the most runs of one tick due in any one second (what reaches the workers)
//
//   npm run bench:backfill -- [--hours 24] [--per-tick 1200]
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createDeps } from '../lambdas/app/deps';
import { createJob } from '../lambdas/app/jobs';
import { requestBackfill } from '../lambdas/app/backfills';
import { tick } from '../lambdas/app/tick';
import { logger } from '../lambdas/core/logger';
import { jobSpecSchema } from '../lambdas/domain/job';
import { runIdFor } from '../lambdas/domain/run';
import { createAwsClients } from '../lambdas/store/aws';
import { emulatorEnvironment, ensureEmulator } from '../scripts/local/emulator';
import { createLocalResources, deleteLocalResources } from '../scripts/local/resources';
import { percentile } from './support';

const { values } = parseArgs({ options: { hours: { type: 'string', default: '24' }, 'per-tick': { type: 'string', default: '1200' } } });
const hours = Number(values.hours);
const perTick = Number(values['per-tick']);

logger.setLogLevel('WARN');
const emulator = await ensureEmulator();
Object.assign(process.env, emulatorEnvironment(emulator.endpoint));
const clients = createAwsClients();
const prefix = `bench-${randomUUID().slice(0, 8)}`;
const config = await createLocalResources(clients, prefix, { backfillReleasePerTick: perTick });
const deps = createDeps(config, clients, { workerId: 'bench-ticker' });
const tenantId = 'bench';

const spec = jobSpecSchema.parse({
  name: 'minutely',
  type: 'report',
  schedule: { kind: 'cron', expression: '* * * * *' },
  target: { kind: 'http', url: 'http://127.0.0.1:9/hook' },
});
const { job } = await createJob(deps, tenantId, spec);
const to = Math.floor(Date.now() / 60_000) * 60_000;
const from = to - hours * 3_600_000;
const requestedAt = Date.now();
const { backfill } = await requestBackfill(deps, tenantId, job.jobId, { from: new Date(from).toISOString(), to: new Date(to).toISOString() });
const requestMs = Date.now() - requestedAt;
console.log(`backfill ${backfill.backfillId}: ${backfill.total} fire times (counted in ${requestMs} ms), ${perTick} per tick`);

const durations: number[] = [];
let released = 0;
let spread = 0;
const started = Date.now();
for (let ticks = 0; released < backfill.total && ticks < Math.ceil(backfill.total / perTick) + 3; ticks++) {
  const tickStart = Date.now();
  const report = await tick(deps);
  durations.push(Date.now() - tickStart);
  if (ticks === 0) {
    // How the first page reaches the workers: the runs' due times, per second.
    const ids = Array.from({ length: Math.min(perTick, backfill.total) }, (_, i) => runIdFor(job.jobId, new Date(from + i * 60_000).toISOString(), 1));
    const runs = (
      await Promise.all(Array.from({ length: Math.ceil(ids.length / 100) }, (_, i) => deps.runs.getMany(ids.slice(i * 100, i * 100 + 100))))
    ).flat();
    const perSecond = new Map<number, number>();
    for (const run of runs)
      perSecond.set(Math.floor(Date.parse(run.availableAt) / 1000), (perSecond.get(Math.floor(Date.parse(run.availableAt) / 1000)) ?? 0) + 1);
    spread = Math.max(...perSecond.values());
  }
  released += report.backfilled;
  console.log(`tick ${String(ticks + 1).padStart(3)}: released ${String(report.backfilled).padStart(5)} in ${durations.at(-1)} ms`);
}
const workMs = Date.now() - started;
const progress = await deps.backfills.get(job.jobId, backfill.backfillId);
const sorted = [...durations].sort((a, b) => a - b);
console.log('');
console.log(`released       ${progress?.released} of ${backfill.total}, ${progress?.status}, in ${durations.length} ticks`);
console.log(`tick duration  p50 ${percentile(sorted, 50)} ms, max ${sorted.at(-1)} ms`);
console.log(`write rate     ${Math.round((released / workMs) * 1000)} fire times/s of ticker work (emulator)`);
console.log(
  `release rate   ${perTick} per tick = ${(perTick / 60).toFixed(1)}/s with AWS's one tick a minute; a year of minutely fires (525,600) in ${(525_600 / perTick / 60).toFixed(1)} h`,
);
console.log(`spread         at most ${spread} runs of a tick due in any one second`);
await deleteLocalResources(clients, config);
