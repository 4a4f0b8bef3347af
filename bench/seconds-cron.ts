// A cron with seconds in local mode: creates `*/5 * * * * *` jobs (and, with --jitter, the same
// with jitter) over the HTTP API of a local runtime, lets them run for --minutes, and reports for
// each occurrence how long after it was due it was leased (startedAt - availableAt: the fire time,
// plus its jitter), whether any started early, and whether the chain kept up: each occurrence is
// written before it is due (createdAt < scheduledFor) and none is missing between the first and
// the last.
//
//   npm run bench:seconds-cron -- [--minutes 5] [--jobs 1] [--expression '*/5 * * * * *'] [--jitter 0]
import { randomBytes, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createDeps } from '../lambdas/app/deps';
import { logger } from '../lambdas/core/logger';
import type { Run } from '../lambdas/domain/run';
import { createAwsClients } from '../lambdas/store/aws';
import { emulatorEnvironment, ensureEmulator } from '../scripts/local/emulator';
import { createLocalResources, deleteLocalResources } from '../scripts/local/resources';
import { startLocalRuntime } from '../scripts/local/runtime';
import { percentile, startTarget } from './support';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '5' },
    jobs: { type: 'string', default: '1' },
    expression: { type: 'string', default: '*/5 * * * * *' },
    jitter: { type: 'string', default: '0' },
    concurrency: { type: 'string', default: '4' },
  },
});
const minutes = Number(values.minutes);
const jitterSeconds = Number(values.jitter);

logger.setLogLevel('WARN');
const emulator = await ensureEmulator();
Object.assign(process.env, emulatorEnvironment(emulator.endpoint));
const clients = createAwsClients();
const config = await createLocalResources(clients, `bench-${randomUUID().slice(0, 8)}`);
// Its metric lines (EMF) would drown the table: the figures come from the runs.
const deps = createDeps(config, clients, { workerId: 'bench', metricSink: () => undefined });
const apiKey = `bench_${randomBytes(18).toString('base64url')}`;
await deps.apiKeys.issue(apiKey, 'bench', Date.now());
const runtime = await startLocalRuntime({ deps, clients, port: 0, workerConcurrency: Number(values.concurrency), tickIntervalMs: 60_000 });
const target = await startTarget();

const api = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: { job?: { jobId: string } } }> => {
  const response = await fetch(`${runtime.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as { job?: { jobId: string } } };
};

console.log(
  `emulator ${emulator.endpoint} (${emulator.origin}); ${values.jobs} job(s) "${values.expression}"${jitterSeconds ? `, jitter ${jitterSeconds} s` : ''}; ${minutes} min; worker concurrency ${values.concurrency}; Node ${process.version}`,
);
const jobIds: string[] = [];
try {
  for (let i = 0; i < Number(values.jobs); i++) {
    const created = await api('POST', '/v1/jobs', {
      name: `bench-seconds-${i}-${randomUUID().slice(0, 6)}`,
      type: 'bench',
      schedule: { kind: 'cron', expression: values.expression, timezone: 'UTC', ...(jitterSeconds ? { jitterSeconds } : {}) },
      target: { kind: 'http', url: target.url },
    });
    if (created.status !== 201) throw new Error(`create failed: ${created.status} ${JSON.stringify(created.body)}`);
    if (!created.body.job) throw new Error('create answered no job');
    jobIds.push(created.body.job.jobId);
  }
  await new Promise((resolve) => setTimeout(resolve, minutes * 60_000));
  for (const jobId of jobIds) await api('DELETE', `/v1/jobs/${jobId}`);
  // Let runs in flight finish.
  await new Promise((resolve) => setTimeout(resolve, 3_000));

  const runs: Run[] = [];
  for (const jobId of jobIds) {
    const job = await deps.jobs.getAnyTenant(jobId);
    if (!job) throw new Error(`job ${jobId} is gone`);
    let cursor: string | undefined;
    do {
      const page = await deps.runs.listByJob(job, 100, cursor);
      runs.push(...page.items);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }
  const started = runs.filter((run) => run.startedAt !== null);
  const lags = started.map((run) => Date.parse(run.startedAt ?? '') - Date.parse(run.availableAt)).sort((a, b) => a - b);
  const early = lags.filter((lag) => lag < 0).length;
  const plannedLate = runs.filter((run) => Date.parse(run.createdAt) >= Date.parse(run.scheduledFor)).length;
  const skipped = runs.filter((run) => run.status === 'SKIPPED' || run.status === 'CANCELLED').length;
  // Started but not succeeded: the lag of a run says when it began, not that its target answered.
  const failed = started.filter((run) => run.status !== 'SUCCEEDED' && run.status !== 'RUNNING').length;
  let missing = 0;
  for (const jobId of jobIds) {
    const times = [...new Set(runs.filter((run) => run.jobId === jobId).map((run) => Date.parse(run.scheduledFor)))].sort((a, b) => a - b);
    const step = times.length > 1 ? Math.min(...times.slice(1).map((t, i) => t - (times[i] ?? t))) : 0;
    for (let i = 1; i < times.length; i++) missing += Math.round(((times[i] ?? 0) - (times[i - 1] ?? 0)) / step) - 1;
  }
  console.log('occurrences  started  failed  p50 ms  p95 ms  p99 ms  max ms  early  planned late  missing  skipped');
  console.log(
    [
      runs.length,
      started.length,
      failed,
      percentile(lags, 50),
      percentile(lags, 95),
      percentile(lags, 99),
      lags.at(-1) ?? '-',
      early,
      plannedLate,
      missing,
      skipped,
    ]
      .map(String)
      .join('  '),
  );
  console.log(
    'start lag: startedAt - availableAt (the fire time plus its jitter); failed: started, ended other than SUCCEEDED (counted in the lags); planned late: written at or after its fire time',
  );
} finally {
  await runtime.stop();
  await target.close();
  await deleteLocalResources(clients, config);
}
