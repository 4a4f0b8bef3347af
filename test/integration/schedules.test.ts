// Issue 19's schedules through the local runtime: seconds in cron, intervals, jitter, an end after
// N occurrences, skips and excluded dates, pausing with a note until a time, and backfill of an
// interval. Second-level schedules run in real time on the runtime's own workers; the others are
// driven by workers with their own clocks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scheduler, TargetServer } from './harness';
import { eventually, executeRun, jobBody, leaseRequest, startScheduler, startTarget, tick } from './harness';
import { advanceChain, repairChain } from '../../lambdas/app/occurrence-chain';

interface RunView {
  runId: string;
  status: string;
  scheduledFor: string;
  availableAt: string;
  createdAt: string;
  startedAt: string | null;
  reason: string | null;
  attempt: number;
}

const MINUTE = 60_000;
const iso = (ms: number): string => new Date(ms).toISOString();

describe('schedules in real time', () => {
  let scheduler: Scheduler;
  let target: TargetServer;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 2 });
    target = await startTarget();
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  async function create(schedule: Record<string, unknown>, overrides: Record<string, unknown> = {}): Promise<string> {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule, ...overrides }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.job.jobId as string;
  }

  const runsOf = async (jobId: string): Promise<RunView[]> =>
    ((await scheduler.api('GET', `/v1/jobs/${jobId}/runs?limit=100`)).body.items as RunView[]).sort((a, b) => a.scheduledFor.localeCompare(b.scheduledFor));

  const succeeded = (jobId: string, count: number, timeoutMs = 40_000) =>
    eventually(
      () => runsOf(jobId),
      (runs) => runs.filter((run) => run.status === 'SUCCEEDED').length >= count,
      timeoutMs,
    );

  it('runs a cron with seconds every two seconds, each occurrence planned before it is due and none started early', async () => {
    const jobId = await create({ kind: 'cron', expression: '*/2 * * * * *', timezone: 'America/New_York' });
    const runs = (await succeeded(jobId, 4)).filter((run) => run.status === 'SUCCEEDED');
    await scheduler.api('DELETE', `/v1/jobs/${jobId}`);
    const times = runs.map((run) => Date.parse(run.scheduledFor));
    for (const [i, run] of runs.entries()) {
      expect(Date.parse(run.scheduledFor) % 2000).toBe(0);
      if (i > 0) expect(times[i]! - times[i - 1]!).toBe(2000);
      // The chain keeps up: each occurrence was written before it was due, and none started early.
      expect(Date.parse(run.createdAt)).toBeLessThan(Date.parse(run.scheduledFor));
      expect(Date.parse(run.startedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(run.availableAt));
    }
  });

  it('runs an interval from its anchor, never drifting, and completes after maxOccurrences', async () => {
    const anchor = Math.ceil((Date.now() + 1500) / 1000) * 1000 + 137;
    const jobId = await create({ kind: 'every', interval: 'PT2S', anchor: iso(anchor), maxOccurrences: 3 });
    expect((await scheduler.api('GET', `/v1/jobs/${jobId}`)).body.upcomingRuns).toEqual([iso(anchor), iso(anchor + 2000), iso(anchor + 4000)]);
    const runs = await succeeded(jobId, 3);
    expect(runs.map((run) => run.scheduledFor)).toEqual([iso(anchor), iso(anchor + 2000), iso(anchor + 4000)]);
    const job = await eventually(
      async () => (await scheduler.api('GET', `/v1/jobs/${jobId}`)).body,
      (view) => view.status === 'COMPLETED',
    );
    expect(job).toMatchObject({ nextRunAt: null, upcomingRuns: [] });
    expect(job.schedule.anchor).toBe(iso(anchor));
  });

  it("previews a schedule given with a job as a PATCH would take it: without an anchor, the job's anchor", async () => {
    const jobId = await create({ kind: 'every', interval: 'PT15M', anchor: '2030-01-01T09:07:00.000Z' });
    const preview = await scheduler.api('POST', '/v1/schedules/preview', {
      jobId,
      schedule: { kind: 'every', interval: 'PT15M', jitterSeconds: 5 },
      from: '2030-01-01T10:00:00.000Z',
      count: 3,
    });
    expect(preview.status, JSON.stringify(preview.body)).toBe(200);
    expect(preview.body.fireTimes).toEqual(['2030-01-01T10:07:00.000Z', '2030-01-01T10:22:00.000Z', '2030-01-01T10:37:00.000Z']);
    // Without a job, the interval is anchored as a create at `from` would anchor it: its first fire time one interval on.
    const alone = await scheduler.api('POST', '/v1/schedules/preview', {
      schedule: { kind: 'every', interval: 'PT15M' },
      from: '2030-01-01T10:00:00.000Z',
      count: 2,
    });
    expect(alone.body.fireTimes).toEqual(['2030-01-01T10:15:00.000Z', '2030-01-01T10:30:00.000Z']);
  });

  it('starts a jittered occurrence at its fire time plus the delay the preview shows, never before', async () => {
    const anchor = Math.ceil((Date.now() + 1000) / 1000) * 1000;
    const jobId = await create({ kind: 'every', interval: 'PT10S', anchor: iso(anchor), jitterSeconds: 4, maxOccurrences: 1 });
    const preview = await scheduler.api('POST', '/v1/schedules/preview', { jobId, from: iso(anchor - 1), count: 1 });
    expect(preview.status, JSON.stringify(preview.body)).toBe(200);
    const [occurrence] = preview.body.occurrences as { at: string; startsAt: string }[];
    expect(occurrence?.at).toBe(iso(anchor));
    const delay = Date.parse(occurrence?.startsAt ?? '') - anchor;
    expect(delay).toBeGreaterThanOrEqual(0);
    expect(delay).toBeLessThan(4000);
    const [run] = await succeeded(jobId, 1);
    expect(run).toMatchObject({ scheduledFor: iso(anchor), availableAt: occurrence?.startsAt });
    expect(Date.parse(run?.startedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(occurrence?.startsAt ?? ''));
  });
});

describe('schedules driven by the clock', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  /** The API's clock runs `offset` ms ahead of real time. */
  let offset = 0;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0, clock: () => Date.now() + offset });
    target = await startTarget();
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  const worker = (at: number, id = 'worker') => scheduler.workerDeps(id, () => at);
  const job = async (jobId: string) => (await scheduler.api('GET', `/v1/jobs/${jobId}`)).body;
  const runsOf = async (jobId: string): Promise<RunView[]> =>
    ((await scheduler.api('GET', `/v1/jobs/${jobId}/runs?limit=100`)).body.items as RunView[]).sort((a, b) => a.scheduledFor.localeCompare(b.scheduledFor));

  async function createCron(schedule: Record<string, unknown> = {}, overrides: Record<string, unknown> = {}) {
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { schedule: { kind: 'cron', expression: '* * * * *', timezone: 'UTC', ...schedule }, ...overrides }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return { jobId: created.body.job.jobId as string, runId: created.body.job.nextRunId as string, at: Date.parse(created.body.job.nextRunAt) };
  }

  it('skips the next two occurrences on request: recorded SKIPPED with who asked, passed over by the chain, shown in the preview', async () => {
    const { jobId, runId, at } = await createCron();
    const skipped = await scheduler.api('POST', `/v1/jobs/${jobId}/skip`, { next: 2 });
    expect(skipped.status, JSON.stringify(skipped.body)).toBe(200);
    expect(skipped.body).toMatchObject({ status: 'ACTIVE', nextRunAt: iso(at + 2 * MINUTE), skippedOccurrences: [iso(at), iso(at + MINUTE)] });
    const runs = await runsOf(jobId);
    const reason = expect.stringMatching(/^skipped on request by key_/);
    expect(runs.slice(0, 2)).toEqual([
      expect.objectContaining({ runId, scheduledFor: iso(at), status: 'SKIPPED', reason }),
      expect.objectContaining({ scheduledFor: iso(at + MINUTE), status: 'SKIPPED', reason }),
    ]);
    expect(runs[2]).toMatchObject({ scheduledFor: iso(at + 2 * MINUTE), status: 'QUEUED' });
    // The skipped occurrence's message, still queued, runs nothing.
    expect(await executeRun(worker(at + 100), runId)).toBe('duplicate');
    const preview = await scheduler.api('POST', '/v1/schedules/preview', { jobId, from: iso(at - 1), count: 3 });
    expect(preview.body.occurrences).toEqual([
      { at: iso(at), startsAt: null, skipped: 'skipped on request' },
      { at: iso(at + MINUTE), startsAt: null, skipped: 'skipped on request' },
      { at: iso(at + 2 * MINUTE), startsAt: iso(at + 2 * MINUTE), skipped: null },
    ]);
    expect(preview.body.fireTimes).toEqual([iso(at + 2 * MINUTE), iso(at + 3 * MINUTE), iso(at + 4 * MINUTE)]);
    // The audit trail says who skipped what.
    const audit = await scheduler.api('GET', `/v1/audit?objectId=${jobId}`);
    expect(audit.body.items[0]).toMatchObject({ action: 'job.skip', actor: expect.stringMatching(/^key_/), objectId: jobId });
  });

  it('skips named fire times ahead, once each, and the chain runs around them', async () => {
    const { jobId, runId, at } = await createCron();
    const named = [iso(at + MINUTE), iso(at + 3 * MINUTE)];
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/skip`, { occurrences: named })).status).toBe(200);
    // Asked again: skipped once.
    const again = await scheduler.api('POST', `/v1/jobs/${jobId}/skip`, { occurrences: [named[1]] });
    expect(again.body.skippedOccurrences).toEqual(named);
    expect((await runsOf(jobId)).filter((run) => run.status === 'SKIPPED').map((run) => run.scheduledFor)).toEqual(named);
    // The pending occurrence runs and the chain hands on past the skipped one.
    expect(await executeRun(worker(at + 100), runId)).toBe('succeeded');
    const after = await job(jobId);
    expect(after.nextRunAt).toBe(iso(at + 2 * MINUTE));
    expect(await executeRun(worker(at + 2 * MINUTE + 100), after.nextRunId)).toBe('succeeded');
    expect((await job(jobId)).nextRunAt).toBe(iso(at + 4 * MINUTE));
  });

  it('refuses skips that name no fire time, a past one, both forms or neither, and changes nothing', async () => {
    const { jobId, at } = await createCron();
    const before = await job(jobId);
    const refused = async (body: unknown, status = 400) => {
      const answer = await scheduler.api('POST', `/v1/jobs/${jobId}/skip`, body);
      expect(answer.status, JSON.stringify(answer.body)).toBe(status);
      return (answer.body.errors as { path: string; message: string }[]).map((error) => `${error.path}: ${error.message}`);
    };
    expect(await refused({ occurrences: [iso(at + 30_000)] })).toEqual([expect.stringMatching(/^occurrences\.0: .* is not a fire time of the job's schedule/)]);
    expect(await refused({ occurrences: [iso(at - MINUTE)] })).toEqual([expect.stringMatching(/^occurrences\.0: .* is before the job's next occurrence/)]);
    expect(await refused({ next: 2, occurrences: [iso(at)] })).toEqual([expect.stringMatching(/give next or occurrences, not both/)]);
    expect(await refused({})).toEqual([expect.stringMatching(/give next or occurrences/)]);
    expect(await refused({ next: 101 })).toEqual([expect.stringMatching(/^next: /)]);
    const oneShot = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: { kind: 'delay', seconds: 600 } }));
    expect((await scheduler.api('POST', `/v1/jobs/${oneShot.body.job.jobId}/skip`, { next: 1 })).status).toBe(409);
    expect(await job(jobId)).toEqual(before);
  });

  it('skips the occurrence a paused job resumes from', async () => {
    const { jobId, at } = await createCron();
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/pause`)).status).toBe(200);
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/skip`, { next: 1 })).body.pausedPending).toEqual({ runId: null, scheduledFor: iso(at + MINUTE) });
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/resume`)).body).toMatchObject({ status: 'ACTIVE', nextRunAt: iso(at + MINUTE) });
  });

  it('resumes a paused job whose schedule a PATCH changed from its first occurrence not skipped on request', async () => {
    const hourly = { expression: '0 * * * *' };
    const { jobId, at } = await createCron(hourly);
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/pause`)).status).toBe(200);
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/skip`, { next: 1 })).body.pausedPending).toEqual({
      runId: null,
      scheduledFor: iso(at + 60 * MINUTE),
    });
    // The same fire times with a jitter: a new schedule, under which the skip still stands.
    const patched = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { schedule: { kind: 'cron', timezone: 'UTC', ...hourly, jitterSeconds: 1 } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({ skippedOccurrences: [iso(at)], pausedPending: { scheduledFor: iso(at + 60 * MINUTE) } });
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/resume`)).body).toMatchObject({ status: 'ACTIVE', nextRunAt: iso(at + 60 * MINUTE) });
  });

  it('keeps a due occurrence not yet started when a PATCH changes the schedule to one that still fires at it', async () => {
    offset = 0;
    const { jobId, runId, at } = await createCron({ expression: '0 * * * *' });
    try {
      // Ten minutes past the occurrence, which no worker has leased (none runs here).
      offset = at + 10 * MINUTE - Date.now();
      const patched = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, {
        schedule: { kind: 'cron', expression: '0 * * * *', timezone: 'UTC', jitterSeconds: 1800 },
      });
      expect(patched.status, JSON.stringify(patched.body)).toBe(200);
      expect(patched.body.nextRunAt).toBe(iso(at));
      const replanned = await scheduler.deps.runs.get(patched.body.nextRunId);
      expect(replanned).toMatchObject({ scheduledFor: iso(at), attempt: 2 });
      expect((await scheduler.deps.runs.get(runId))?.status).toBe('SKIPPED');
      // A schedule that no longer fires then moves on to its own next fire time.
      const moved = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { schedule: { kind: 'cron', expression: '30 * * * *', timezone: 'UTC' } });
      expect(moved.body.nextRunAt).toBe(iso(at + 30 * MINUTE));
    } finally {
      offset = 0;
    }
  });

  it('leaves out excluded dates in the job zone, in upcoming runs and in the preview', async () => {
    const now = Date.now();
    const tomorrow = new Date(now + 86_400_000).toISOString().slice(0, 10);
    const { jobId } = await createCron({ expression: '0 12 * * *', excludeDates: [tomorrow] });
    const view = await job(jobId);
    expect(view.upcomingRuns.some((run: string) => run.startsWith(tomorrow))).toBe(false);
    const preview = await scheduler.api('POST', '/v1/schedules/preview', { jobId, count: 3 });
    expect(preview.body.occurrences.filter((o: { skipped: string | null }) => o.skipped === 'excluded date')).toEqual([
      { at: `${tomorrow}T12:00:00.000Z`, startsAt: null, skipped: 'excluded date' },
    ]);
  });

  it('pauses with a note until a time: shown on the job, and the ticker resumes it once the time has come', async () => {
    offset = 0;
    const { jobId, at } = await createCron();
    const until = iso(Date.now() + 10 * MINUTE);
    const paused = await scheduler.api('POST', `/v1/jobs/${jobId}/pause`, { note: 'supplier down, INC-2231', until });
    expect(paused.status, JSON.stringify(paused.body)).toBe(200);
    expect(paused.body).toMatchObject({ status: 'PAUSED', pauseNote: 'supplier down, INC-2231', pausedUntil: until, nextRunAt: null });
    expect((await job(jobId)).pauseNote).toBe('supplier down, INC-2231');
    // Pausing again changes the note (and keeps the end when none is given).
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/pause`, { note: 'still down', until })).body).toMatchObject({
      pauseNote: 'still down',
      pausedUntil: until,
    });

    // Not yet: a tick leaves it paused.
    expect((await tick(scheduler.deps)).resumed).toBe(0);
    expect((await job(jobId)).status).toBe('PAUSED');
    // Its time has come: the ticker resumes it by its misfire policy (fire-once: the latest missed occurrence, now).
    offset = 10 * MINUTE + 1000;
    const report = await tick(scheduler.workerDeps('ticker', () => Date.now() + offset));
    expect(report.resumed).toBe(1);
    const resumed = await job(jobId);
    expect(resumed).toMatchObject({ status: 'ACTIVE', pauseNote: null, pausedUntil: null });
    expect(Date.parse(resumed.nextRunAt)).toBeGreaterThan(at);
    // A second tick has nothing to resume.
    expect((await tick(scheduler.workerDeps('ticker', () => Date.now() + offset))).resumed).toBe(0);
    offset = 0;
  });

  it("resumes a pause that ended at a fire time with that fire time, due, whatever the misfire policy: the tick came after the pause's end, not the occurrence", async () => {
    offset = 0;
    for (const misfirePolicy of ['skip', 'fire-once'] as const) {
      const { jobId, at } = await createCron({ expression: '0 * * * *' }, { misfirePolicy });
      // Paused until its pending occurrence's own time, the common case ("until the next run").
      expect((await scheduler.api('POST', `/v1/jobs/${jobId}/pause`, { until: iso(at) })).status).toBe(200);
      try {
        // The first tick after the end, 59 s on: before, skip took the occurrence for missed and
        // planned the next hour's, and fire-once planned it as a misfire.
        offset = at + 59_000 - Date.now();
        expect((await tick(scheduler.workerDeps('ticker', () => Date.now() + offset))).resumed).toBeGreaterThanOrEqual(1);
        const resumed = await job(jobId);
        expect(resumed, misfirePolicy).toMatchObject({ status: 'ACTIVE', nextRunAt: iso(at) });
        const run = await scheduler.deps.runs.get(resumed.nextRunId);
        expect(run?.reason ?? null, misfirePolicy).toBeNull();
        // Its lateness counts from the resume: leased 65 s after its fire time, it runs, where
        // admission would have skipped it under skip as a misfire (over 60 s late).
        expect(
          await executeRun(
            scheduler.workerDeps('worker', () => at + 65_000),
            resumed.nextRunId,
          ),
          misfirePolicy,
        ).toBe('succeeded');
      } finally {
        offset = 0;
      }
    }
  });

  it('refuses a pause until a past time or a year ahead, and a note too long, changing nothing', async () => {
    const { jobId } = await createCron();
    for (const body of [{ until: iso(Date.now() - 1000) }, { until: iso(Date.now() + 367 * 86_400_000) }, { note: 'x'.repeat(501) }]) {
      const answer = await scheduler.api('POST', `/v1/jobs/${jobId}/pause`, body);
      expect(answer.status, JSON.stringify(answer.body)).toBe(400);
    }
    expect((await job(jobId)).status).toBe('ACTIVE');
  });

  it('backfills the fire times of an interval in a range', async () => {
    const anchor = Date.now() - 65 * MINUTE;
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: { kind: 'every', interval: 'PT10M', anchor: iso(anchor) } }));
    const jobId = created.body.job.jobId as string;
    const backfill = await scheduler.api('POST', `/v1/jobs/${jobId}/backfill`, { from: iso(anchor), to: iso(anchor + 60 * MINUTE) });
    expect(backfill.status, JSON.stringify(backfill.body)).toBe(202);
    expect(backfill.body.backfill.total).toBe(6);
  });

  it('keeps a resumed occurrence at the same jittered start (a replacement run of the same occurrence)', async () => {
    const { jobId, runId } = await createCron({ expression: '0 * * * *', jitterSeconds: 1800 });
    const first = await scheduler.deps.runs.get(runId);
    expect(Date.parse(first?.availableAt ?? '') - Date.parse(first?.scheduledFor ?? '')).toBeLessThan(1_800_000);
    await scheduler.api('POST', `/v1/jobs/${jobId}/pause`);
    const resumed = await scheduler.api('POST', `/v1/jobs/${jobId}/resume`);
    const again = await scheduler.deps.runs.get(resumed.body.nextRunId);
    expect(again).toMatchObject({ scheduledFor: first?.scheduledFor, availableAt: first?.availableAt, attempt: 2 });
  });

  it('keeps the skips a new schedule still fires at, and the chain runs past them', async () => {
    const { jobId, at } = await createCron();
    const skips = [iso(at + MINUTE), iso(at + 2 * MINUTE)];
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/skip`, { occurrences: skips })).status).toBe(200);
    // A new end keeps them. Before, any schedule PATCH cleared them: the chain then planned a skipped
    // occurrence under the id its SKIPPED record holds, and stalled there for good.
    const patched = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, {
      schedule: { kind: 'cron', expression: '* * * * *', timezone: 'UTC', endAt: iso(at + 60 * MINUTE) },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({ nextRunAt: iso(at), skippedOccurrences: skips });
    expect(await executeRun(worker(at + 100), patched.body.nextRunId)).toBe('succeeded');
    expect((await job(jobId)).nextRunAt).toBe(iso(at + 3 * MINUTE));
    // A new expression keeps the skip it still fires at and drops the other.
    const even = [at + MINUTE, at + 2 * MINUTE].find((t) => (t / MINUTE) % 2 === 0)!;
    const repatched = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { schedule: { kind: 'cron', expression: '*/2 * * * *', timezone: 'UTC' } });
    expect(repatched.status, JSON.stringify(repatched.body)).toBe(200);
    expect(repatched.body.skippedOccurrences).toEqual([iso(even)]);
  });

  it('a schedule PATCH back to an occurrence an earlier edit retired plans it anew', async () => {
    const { jobId, runId, at } = await createCron();
    const hourly = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { schedule: { kind: 'cron', expression: '0 * * * *', timezone: 'UTC' } });
    expect(hourly.status, JSON.stringify(hourly.body)).toBe(200);
    expect((await scheduler.deps.runs.get(runId))?.status).toBe('SKIPPED');
    // Back: its first occurrence is the retired one again (unless the minute turned meanwhile).
    // Before, the plan met the retired run's id and the PATCH answered 409 until that minute passed.
    const back = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { schedule: { kind: 'cron', expression: '* * * * *', timezone: 'UTC' } });
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    expect(Date.parse(back.body.nextRunAt)).toBeGreaterThanOrEqual(at);
    expect((await scheduler.deps.runs.get(back.body.nextRunId))?.status).toBe('QUEUED');
  });

  it('moves the chain past a skip recorded between its read of the job and its successor write', async () => {
    const { jobId, runId, at } = await createCron();
    const read = await scheduler.deps.jobs.getAnyTenant(jobId);
    // The skip lands (its SKIPPED record under the successor's id) while the worker holds the job it read.
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/skip`, { occurrences: [iso(at + MINUTE)] })).status).toBe(200);
    const started = await scheduler.deps.runs.get(runId);
    // Before, it met the record, planned the same occurrence again, and gave up: the chain stalled.
    expect(await advanceChain(scheduler.deps, read!, started!, { scheduledFor: at + MINUTE }, true, at + 100)).toBe(true);
    expect((await job(jobId)).nextRunAt).toBe(iso(at + 2 * MINUTE));
  });

  it('a backfilling chain keeps the past skips it has not reached, and runs around them', async () => {
    const { jobId, runId, at } = await createCron({}, { misfirePolicy: 'backfill', backfillLimit: 5 });
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/skip`, { occurrences: [iso(at + 2 * MINUTE)] })).status).toBe(200);
    // Started 4 minutes late: the chain backfills from the next occurrence, before the skip.
    const late = at + 4 * MINUTE + 100;
    expect(await executeRun(worker(late), runId)).toBe('succeeded');
    const behind = await job(jobId);
    // Before, the skip (in the past) was dropped here, and the chain then planned it.
    expect(behind).toMatchObject({ nextRunAt: iso(at + MINUTE), skippedOccurrences: [iso(at + 2 * MINUTE)] });
    expect(await executeRun(worker(late + 100), behind.nextRunId)).toBe('succeeded');
    expect((await job(jobId)).nextRunAt).toBe(iso(at + 3 * MINUTE));
  });

  it('repairs a chain whose next fire time holds an ended run the job no longer lists as skipped', async () => {
    const { jobId, runId, at } = await createCron();
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/skip`, { occurrences: [iso(at + MINUTE)] })).status).toBe(200);
    // A job the earlier PATCH left so: the skip's record stands, the job lists no skips, and its
    // pending occurrence has ended without moving the chain on.
    const stalled = (await scheduler.deps.jobs.getAnyTenant(jobId))!;
    expect(await scheduler.deps.jobs.replace({ ...stalled, skippedOccurrences: [], version: stalled.version + 1 }, stalled)).toBe('replaced');
    expect(await scheduler.deps.runs.retirePending(runId, 'SKIPPED', 'lost', at)).toBe(true);
    // Before, the repair planned the recorded occurrence, met its run, and failed at every tick.
    const ticker = scheduler.workerDeps('ticker', () => at + 30_000);
    expect(await repairChain(ticker, jobId, at + 10 * MINUTE)).toBe(true);
    expect((await job(jobId)).nextRunAt).toBe(iso(at + 2 * MINUTE));
  });

  it('resumes from an occurrence a worker leased and gave back to wait (buffer-one) before the pause retired it: its target was never called', async () => {
    const { jobId, runId, at } = await createCron({}, { misfirePolicy: 'backfill' });
    const w = scheduler.workerDeps('w');
    const lease = await w.leases.lease(runId, leaseRequest(scheduler.config, 'w', at + 100));
    expect(lease.kind).toBe('leased');
    const version = lease.kind === 'leased' ? lease.run.version : -1;
    // As overlap buffer-one does: the lease given back, the run QUEUED behind the one before it.
    expect(
      await w.leases.giveBack(runId, version, at + 100, at + 30_000, scheduler.config.timeIndexShards, 'overlap: waits', { bufferedSince: at + 100 }),
    ).toBe(true);
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/pause`)).body).toMatchObject({ status: 'PAUSED', pausedPending: { runId } });
    expect(await scheduler.deps.runs.get(runId)).toMatchObject({ status: 'SKIPPED', reason: 'job paused' });
    offset = at + 30_000 - Date.now();
    try {
      const resumed = await scheduler.api('POST', `/v1/jobs/${jobId}/resume`);
      expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
      // Before, its lease's startedAt counted as a start: the job resumed from the next minute, and
      // this occurrence never ran.
      expect(resumed.body).toMatchObject({ status: 'ACTIVE', nextRunAt: iso(at) });
      expect(resumed.body.nextRunId).not.toBe(runId);
    } finally {
      offset = 0;
    }
  });

  it('a PATCH that plans a buffered occurrence again keeps its wait behind the one before it: not taken for a misfire', async () => {
    const { jobId, runId, at } = await createCron({}, { overlapPolicy: 'buffer-one', misfirePolicy: 'skip' });
    const w = scheduler.workerDeps('w');
    const lease = await w.leases.lease(runId, leaseRequest(scheduler.config, 'w', at + 100));
    const version = lease.kind === 'leased' ? lease.run.version : -1;
    // As overlap buffer-one does: the lease given back, the occurrence waiting behind the one before it.
    expect(
      await w.leases.giveBack(runId, version, at + 100, at + 30_000, scheduler.config.timeIndexShards, 'overlap: waits', { bufferedSince: at + 100 }),
    ).toBe(true);
    // Five minutes on, still waiting, its timeout is changed: the same occurrence is planned again.
    const patched = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { timeoutSeconds: 120 });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const replanned = (patched.body.job ?? patched.body) as { nextRunId: string; nextRunAt: string };
    expect(replanned.nextRunAt).toBe(iso(at));
    expect(replanned.nextRunId).not.toBe(runId);
    // Before, the new run had no bufferedSince: due 5 minutes ago under misfire skip, it was skipped.
    expect(await executeRun(worker(at + 5 * MINUTE), replanned.nextRunId)).toBe('succeeded');
    expect((await scheduler.deps.runs.get(replanned.nextRunId))?.reason).toMatch(/^overlap: waited \d+ s for the occurrence before it/);
  });

  it('resumes after the occurrence a worker leased as the pause landed, not again from it', async () => {
    const { jobId, runId, at } = await createCron({}, { misfirePolicy: 'backfill' });
    // The worker leases the pending occurrence; the pause commits, and its retire of the run fails.
    expect((await scheduler.workerDeps('w').leases.lease(runId, leaseRequest(scheduler.config, 'w', at + 100))).kind).toBe('leased');
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/pause`)).body).toMatchObject({ status: 'PAUSED', pausedPending: { runId } });
    expect((await scheduler.deps.runs.get(runId))?.status).toBe('RUNNING');
    // Resumed once it was due: before, backfill planned it again (attempt 2), and it ran twice.
    offset = at + 30_000 - Date.now();
    try {
      const resumed = await scheduler.api('POST', `/v1/jobs/${jobId}/resume`);
      expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
      expect(resumed.body).toMatchObject({ status: 'ACTIVE', nextRunAt: iso(at + MINUTE) });
    } finally {
      offset = 0;
    }
  });
});
