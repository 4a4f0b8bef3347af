// Backfills through the API and the ticker (issue 19 item 6): a run per fire time in [from, to)
// that has none, the chain's own run ids, oldest first at the tick's budget, idempotent on the same
// range, refused past the maximum; a ticker that dies between writing a page and moving the cursor,
// or two tickers at once, write each run once.
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planRun } from '../../lambdas/app/plan-run';
import { releaseBackfills } from '../../lambdas/app/backfills';
import { runIdFor } from '../../lambdas/domain/run';
import type { Scheduler } from './harness';
import { startScheduler, tick } from './harness';

const MINUTE = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

describe('a backfill', () => {
  let scheduler: Scheduler;
  let jobId: string;
  const lastMinute = Math.floor(Date.now() / MINUTE) * MINUTE;
  const from = lastMinute - 12 * MINUTE;
  const to = lastMinute - 2 * MINUTE;
  const fireTimes = Array.from({ length: 10 }, (_, i) => from + i * MINUTE);

  beforeAll(async () => {
    // Runs kept 400 days (RUN_RETENTION_DAYS): a backfill may reach back more than a year.
    scheduler = await startScheduler({ workerConcurrency: 0, tuning: { backfillReleasePerTick: 4 }, config: { runRetentionDays: 400 } });
    const created = await scheduler.api('POST', '/v1/jobs', {
      name: 'minutely',
      type: 'report',
      schedule: { kind: 'cron', expression: '* * * * *' },
      target: { kind: 'http', url: 'http://127.0.0.1:9/hook' },
    });
    expect(created.status).toBe(201);
    jobId = created.body.job.jobId as string;
  });
  afterAll(() => scheduler.stop());

  const runsOfRange = async () =>
    (await scheduler.deps.runs.getMany(fireTimes.map((at) => runIdFor(jobId, iso(at), 1)))).sort((a, b) => a.scheduledFor.localeCompare(b.scheduledFor));
  const progress = async (backfillId: string) =>
    (await scheduler.api('GET', `/v1/jobs/${jobId}/backfills/${backfillId}`)).body.backfill as { released: number; status: string };

  it('refuses bad ranges with a 400 naming the field, and writes nothing', async () => {
    const ahead = await scheduler.api('POST', `/v1/jobs/${jobId}/backfill`, { from: iso(from), to: iso(Date.now() + 5 * MINUTE) });
    expect(ahead.status).toBe(400);
    expect(ahead.body.errors[0].path).toBe('to');
    const backwards = await scheduler.api('POST', `/v1/jobs/${jobId}/backfill`, { from: iso(to), to: iso(from) });
    expect(backwards.status).toBe(400);
    const tooMany = await scheduler.api('POST', `/v1/jobs/${jobId}/backfill`, { from: iso(to - 390 * 24 * 60 * MINUTE), to: iso(to) });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.errors[0].message).toMatch(/more than 527040 fire times/);
    // Occurrences older than the runs kept may have lost their runs: a backfill would run them again.
    const pastRetention = await scheduler.api('POST', `/v1/jobs/${jobId}/backfill`, {
      from: iso(to - 400 * 24 * 60 * MINUTE),
      to: iso(to - 300 * 24 * 60 * MINUTE),
    });
    expect(pastRetention.status).toBe(400);
    expect(pastRetention.body.errors[0]).toMatchObject({ path: 'from', message: expect.stringMatching(/RUN_RETENTION_DAYS/) });
    const malformed = await scheduler.api('POST', `/v1/jobs/${jobId}/backfill`, { from: 'yesterday', to: iso(to) });
    expect(malformed.status).toBe(400);
    expect(await runsOfRange()).toEqual([]);
  });

  it('writes one run per fire time without one, oldest first at the budget, and keeps the run an occurrence had', async () => {
    // An occurrence in the range already has its run, written as the chain writes it.
    const job = (await scheduler.deps.jobs.get(scheduler.tenantId, jobId))!;
    const chained = planRun(scheduler.config, job, { scheduledFor: fireTimes[3]!, attempt: 1, trigger: 'schedule' }, Date.now());
    expect(await scheduler.deps.runs.create(chained)).toBe(true);

    const requested = await scheduler.api('POST', `/v1/jobs/${jobId}/backfill`, { from: iso(from), to: iso(to) });
    expect(requested.status).toBe(202);
    expect(requested.body.backfill).toMatchObject({ jobId, from: iso(from), to: iso(to), total: 10, released: 0, status: 'ACTIVE' });
    const { backfillId } = requested.body.backfill as { backfillId: string };
    // The same range again is the same backfill.
    const again = await scheduler.api('POST', `/v1/jobs/${jobId}/backfill`, { from: iso(from), to: iso(to) });
    expect(again.status).toBe(202);
    expect(again.body.backfill.backfillId).toBe(backfillId);

    await tick(scheduler.deps);
    expect(await progress(backfillId)).toMatchObject({ released: 4, status: 'ACTIVE' });
    // Oldest first: the first four fire times have runs, the rest none yet (but the chained one).
    expect((await runsOfRange()).map((run) => run.scheduledFor)).toEqual([...fireTimes.slice(0, 4)].map(iso));

    await tick(scheduler.deps);
    await tick(scheduler.deps);
    expect(await progress(backfillId)).toMatchObject({ released: 10, status: 'DONE' });
    const runs = await runsOfRange();
    expect(runs.map((run) => run.scheduledFor)).toEqual(fireTimes.map(iso));
    expect(runs.every((run) => run.attempt === 1 && run.trigger === 'schedule' && run.status === 'QUEUED')).toBe(true);
    expect(runs.filter((run) => run.reason === `backfill ${backfillId}`)).toHaveLength(9);
    expect(runs[3]!.reason).toBeNull();
    // Ended, it is out of what the ticker reads every tick; the same range again still finds it,
    // ended, and releases nothing again.
    const read = await scheduler.clients.dynamo.send(
      new QueryCommand({ TableName: scheduler.config.jobsTable, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': 'BACKFILLS' } }),
    );
    expect((read.Items ?? []).map((item) => item.backfillId)).not.toContain(backfillId);
    const afterEnd = await scheduler.api('POST', `/v1/jobs/${jobId}/backfill`, { from: iso(from), to: iso(to) });
    expect(afterEnd.status).toBe(202);
    expect(afterEnd.body.backfill).toMatchObject({ backfillId, released: 10, status: 'DONE' });
    await tick(scheduler.deps);
    expect(await progress(backfillId)).toMatchObject({ released: 10, status: 'DONE' });

    // Audited once, for the request that wrote it.
    const audit = await scheduler.api('GET', `/v1/audit?objectId=${jobId}`);
    expect(audit.body.items.filter((entry: { action: string }) => entry.action === 'job.backfill')).toHaveLength(1);
  });

  it('writes each run once when a ticker dies between a page and its cursor, or two tick at once', async () => {
    const start = from - 30 * MINUTE;
    const end = from - 20 * MINUTE;
    const requested = await scheduler.api('POST', `/v1/jobs/${jobId}/backfill`, { from: iso(start), to: iso(end) });
    const { backfillId } = requested.body.backfill as { backfillId: string };
    // A ticker that writes its page's runs and dies before moving the cursor.
    const dying = scheduler.workerDeps('dying-ticker');
    Object.assign(dying.backfills, { advance: () => Promise.reject(new Error('killed')) });
    await tick(dying);
    expect(await progress(backfillId)).toMatchObject({ released: 0 });
    // Two tickers at once, then the rest.
    await Promise.all([tick(scheduler.workerDeps('ticker-a')), tick(scheduler.workerDeps('ticker-b'))]);
    for (let i = 0; i < 3 && (await progress(backfillId)).status !== 'DONE'; i++) await tick(scheduler.deps);
    expect(await progress(backfillId)).toMatchObject({ released: 10, status: 'DONE' });
    const ids = Array.from({ length: 10 }, (_, i) => runIdFor(jobId, iso(start + i * MINUTE), 1));
    expect((await scheduler.deps.runs.getMany(ids)).length).toBe(10);
    const { runs } = await scheduler.countJobAndRunItems();
    // Nineteen backfilled runs (nine and ten), the chained one and the job's pending run: nothing twice.
    expect(runs).toBe(19 + 1 + 1);
  });

  it("holds the tick's budget however many backfills are active, each getting its turn in later ticks", async () => {
    // Six backfills of three fire times each, with a budget of 4 a tick: before, each took at least one (6).
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const start = from - (60 - 5 * i) * MINUTE;
      const requested = await scheduler.api('POST', `/v1/jobs/${jobId}/backfill`, { from: iso(start), to: iso(start + 3 * MINUTE) });
      expect(requested.status, JSON.stringify(requested.body)).toBe(202);
      ids.push(requested.body.backfill.backfillId as string);
    }
    const now = Date.now();
    const first = await tick(scheduler.workerDeps('budget-0', () => now));
    expect(first.backfilled).toBe(4);
    // Minute by minute, the rotating set reaches every backfill.
    for (let minute = 1; minute <= 8; minute++) {
      const report = await tick(scheduler.workerDeps(`budget-${minute}`, () => now + minute * MINUTE));
      expect(report.backfilled).toBeLessThanOrEqual(4);
    }
    for (const backfillId of ids) expect(await progress(backfillId)).toMatchObject({ released: 3, status: 'DONE' });
    expect(await scheduler.deps.backfills.active()).toEqual([]);
  });

  it("answers 429 past the tenant's active backfills, and takes one again once one has ended", async () => {
    const limited = await startScheduler({ workerConcurrency: 0, tuning: { backfillReleasePerTick: 10 }, tenantLimits: { maxActiveBackfills: 2 } });
    try {
      const job = await limited.api('POST', '/v1/jobs', {
        type: 'report',
        schedule: { kind: 'cron', expression: '* * * * *' },
        target: { kind: 'http', url: 'http://127.0.0.1:9/hook' },
      });
      const limitedJobId = job.body.job.jobId as string;
      const ask = (minutesBack: number) =>
        limited.api('POST', `/v1/jobs/${limitedJobId}/backfill`, {
          from: iso(lastMinute - minutesBack * MINUTE),
          to: iso(lastMinute - (minutesBack - 3) * MINUTE),
        });
      expect((await ask(10)).status).toBe(202);
      expect((await ask(20)).status).toBe(202);
      const third = await ask(30);
      expect(third.status).toBe(429);
      expect(third.body.detail).toMatch(/2 active backfills/);
      // A repeated request of an active one still finds it.
      expect((await ask(20)).status).toBe(202);
      // Nothing was written for the refused one.
      expect((await limited.deps.backfills.active()).map((active) => active.from)).toEqual(
        expect.arrayContaining([iso(lastMinute - 10 * MINUTE), iso(lastMinute - 20 * MINUTE)]),
      );
      expect(await limited.deps.backfills.active()).toHaveLength(2);
      await tick(limited.deps);
      expect((await ask(30)).status).toBe(202);
    } finally {
      await limited.stop();
    }
  });
});

describe('a backfill whose job was paused past the runs retention', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0, tuning: { backfillReleasePerTick: 4 }, config: { runRetentionDays: 400 } });
  });
  afterAll(() => scheduler.stop());

  it('passes over the fire times that aged past the runs retention while it waited, its job paused: their runs may have run and gone', async () => {
    const created = await scheduler.api('POST', '/v1/jobs', {
      name: 'paused-backfill',
      type: 'report',
      schedule: { kind: 'cron', expression: '* * * * *' },
      target: { kind: 'http', url: 'http://127.0.0.1:9/hook' },
    });
    const pausedJobId = created.body.job.jobId as string;
    const start = Math.floor(Date.now() / MINUTE) * MINUTE - 60 * MINUTE;
    const requested = await scheduler.api('POST', `/v1/jobs/${pausedJobId}/backfill`, { from: iso(start), to: iso(start + 3 * MINUTE) });
    expect(requested.status).toBe(202);
    const { backfillId } = requested.body.backfill as { backfillId: string };
    expect((await scheduler.api('POST', `/v1/jobs/${pausedJobId}/pause`)).status).toBe(200);
    expect(await releaseBackfills(scheduler.deps, Date.now())).toBe(0);
    // Resumed 400 days on (the runs are kept 400): before, the three runs were written then, and an
    // occurrence that had run, its run gone with the retention, would have run again.
    expect((await scheduler.api('POST', `/v1/jobs/${pausedJobId}/resume`)).status).toBe(200);
    const later = Date.now() + 400 * 24 * 60 * MINUTE;
    await releaseBackfills(
      scheduler.workerDeps('ticker', () => later),
      later,
    );
    expect((await scheduler.api('GET', `/v1/jobs/${pausedJobId}/backfills/${backfillId}`)).body.backfill).toMatchObject({ released: 0, status: 'DONE' });
    const ids = [0, 1, 2].map((i) => runIdFor(pausedJobId, iso(start + i * MINUTE), 1));
    expect(await scheduler.deps.runs.getMany(ids)).toEqual([]);
  });

  it("counts its runs' delays from their send, not from the tick's start: a page released well into the tick starts on time", async () => {
    const created = await scheduler.api('POST', '/v1/jobs', {
      name: 'late-in-tick',
      type: 'report',
      schedule: { kind: 'cron', expression: '* * * * *' },
      target: { kind: 'http', url: 'http://127.0.0.1:9/hook' },
    });
    const jobId = created.body.job.jobId as string;
    const start = Math.floor(Date.now() / MINUTE) * MINUTE - 30 * MINUTE;
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/backfill`, { from: iso(start), to: iso(start + 3 * MINUTE) })).status).toBe(202);
    // The tick started 20 s before this page is released (its release, resumes and repairs took that long).
    const tickStart = Date.now();
    const deps = scheduler.workerDeps('ticker', () => tickStart + 20_000);
    const send = deps.dispatch.send.bind(deps.dispatch);
    const sentAt: number[] = [];
    deps.dispatch.send = async (...args: Parameters<typeof send>) => {
      sentAt.push(args[1]);
      return send(...args);
    };
    expect(await releaseBackfills(deps, tickStart)).toBe(3);
    expect(sentAt.length).toBeGreaterThan(0);
    // Before, the tick's start: each message waited the 20 s the tick had spent, on top of its spread.
    for (const at of sentAt) expect(at).toBe(tickStart + 20_000);
  });
});
