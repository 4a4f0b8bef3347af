// Edges of the API found by a hostile review (issue 24): job type names, reserved target headers,
// capped validation errors, schedule changes of paused and completed jobs, the rate of manual
// triggers and replays, and listings whose filters must still fill a page.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patchJob } from '../../lambdas/app/job-lifecycle';
import { TooManyRequestsError } from '../../lambdas/core/errors';
import type { Scheduler, TargetServer } from './harness';
import { eventually, executeRun, jobBody, startScheduler, startTarget } from './harness';

const TARGET = 'http://127.0.0.1:9/hook';
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

describe('job type names', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler();
  });
  afterAll(() => scheduler.stop());

  it('lets a worker claim a job type with a colon, as jobs accept it', async () => {
    const created = await scheduler.api('POST', '/v1/jobs', {
      name: 'billing-eu',
      type: 'billing:eu',
      schedule: { kind: 'now' },
      target: { kind: 'external', leaseSeconds: 30 },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const runId: string = created.body.job.nextRunId;
    await eventually(
      () => scheduler.api('GET', `/v1/runs/${runId}`),
      (run) => run.body.status === 'QUEUED' && run.body.startedAt !== null,
    );
    const claimed = await scheduler.api('POST', '/v1/workers/claim', { jobType: 'billing:eu', waitSeconds: 5 });
    expect(claimed.status, JSON.stringify(claimed.body)).toBe(200);
    expect(claimed.body.run).toMatchObject({ runId, jobType: 'billing:eu', status: 'RUNNING' });
  });

  it('refuses the same names everywhere: a job, a claim and a listing filter', async () => {
    for (const type of ['billing#eu', ':billing', 'b'.repeat(65)]) {
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(TARGET, { type }));
      expect(created.status, type).toBe(400);
      expect(created.body.errors).toEqual([expect.objectContaining({ path: 'type' })]);
      const claimed = await scheduler.api('POST', '/v1/workers/claim', { jobType: type });
      expect(claimed.status, type).toBe(400);
      expect(claimed.body.errors).toEqual([expect.objectContaining({ path: 'jobType' })]);
      const listed = await scheduler.api('GET', `/v1/jobs?type=${encodeURIComponent(type)}`);
      expect(listed.status, type).toBe(400);
    }
  });
});

describe('target headers the scheduler sets', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
  });
  afterAll(() => scheduler.stop());

  it.each(['User-Agent', 'user-agent', 'Idempotency-Key', 'Content-Type', 'Host', 'X-Fencing-Token', 'Expect'])(
    'refuses a target header %s on create and on PATCH, and stores nothing',
    async (name) => {
      const created = await scheduler.api(
        'POST',
        '/v1/jobs',
        jobBody(TARGET, { target: { kind: 'http', url: TARGET, headers: { [name]: 'mine/1-reserved' } } }),
      );
      expect(created.status).toBe(400);
      expect(created.body.errors).toEqual([{ path: `target.headers.${name}`, message: expect.stringMatching(/set by the scheduler/) }]);

      const job = await scheduler.api('POST', '/v1/jobs', jobBody(TARGET, { schedule: { kind: 'delay', seconds: 3600 } }));
      expect(job.status).toBe(201);
      const patched = await scheduler.api('PATCH', `/v1/jobs/${job.body.job.jobId}`, {
        target: { kind: 'http', url: TARGET, headers: { [name]: 'mine/1-reserved' } },
      });
      expect(patched.status).toBe(400);
      const after = await scheduler.api('GET', `/v1/jobs/${job.body.job.jobId}`);
      expect(after.body).toMatchObject({ version: 1, target: { headers: {} } });
    },
  );
});

describe('validation errors', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
  });
  afterAll(() => scheduler.stop());

  it('lists the first 20 of thousands of field errors and says how many more there were', async () => {
    const headers = Object.fromEntries(Array.from({ length: 15_000 }, (_, i) => [`h ${i}`, '\n']));
    const body = JSON.stringify(jobBody(TARGET, { target: { kind: 'http', url: TARGET, headers } }));
    expect(body.length).toBeGreaterThan(200_000);
    const response = await fetch(`${scheduler.runtime.url}/v1/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${scheduler.apiKey}`, 'content-type': 'application/json' },
      body,
    });
    const text = await response.text();
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(text.length).toBeLessThan(8_000);
    const problem = JSON.parse(text);
    expect(problem.errors).toHaveLength(20);
    expect(problem.errors[0]).toMatchObject({ path: expect.stringMatching(/^target\.headers/) });
    expect(problem.errors.length + problem.errorsOmitted).toBeGreaterThanOrEqual(15_000); // one per bad entry at least
    expect(problem.detail).toMatch(new RegExp(`${problem.errorsOmitted} more omitted`));
    expect(await scheduler.countJobAndRunItems()).toEqual({ jobs: 0, runs: 0 });
  });

  it('lists every error, with no errorsOmitted, when there are 20 or fewer', async () => {
    const headers = Object.fromEntries(Array.from({ length: 3 }, (_, i) => [`X-Ok-${i}`, '\n']));
    const response = await scheduler.api('POST', '/v1/jobs', jobBody(TARGET, { target: { kind: 'http', url: TARGET, headers } }));
    expect(response.status).toBe(400);
    expect(response.body.errors).toHaveLength(3);
    expect(response.body).not.toHaveProperty('errorsOmitted');
  });
});

describe('schedule changes of paused and completed jobs', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0, tenantLimits: { maxActiveJobs: 3 } });
    target = await startTarget();
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  const worker = (at: number) => scheduler.workerDeps('edge-worker', () => at);
  /** Whole minutes ahead, far enough that the run waits in the time index. */
  const later = (days: number) => Math.ceil((Date.now() + days * DAY) / MINUTE) * MINUTE;
  const daily = { kind: 'cron', expression: '0 9 * * *', timezone: 'UTC' };

  it('resumes a paused job from the schedule a PATCH set while paused, and the new `at` fires', async () => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: daily }));
    expect(created.status).toBe(201);
    const { jobId } = created.body.job;
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/pause`)).status).toBe(200);
    const at = later(30);
    const patched = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { schedule: { kind: 'at', at: new Date(at).toISOString() } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ status: 'PAUSED', nextRunAt: null });

    const resumed = await scheduler.api('POST', `/v1/jobs/${jobId}/resume`);
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ status: 'ACTIVE', nextRunAt: new Date(at).toISOString(), upcomingRuns: [new Date(at).toISOString()] });
    const runId: string = resumed.body.nextRunId;
    expect(await scheduler.deps.runs.get(runId)).toMatchObject({ status: 'SCHEDULED', scheduledFor: new Date(at).toISOString(), attempt: 1 });

    const calls = target.calls.length;
    expect(await executeRun(worker(at + 100), runId)).toBe('succeeded');
    expect(target.calls.length).toBe(calls + 1);
    expect((await scheduler.api('GET', `/v1/jobs/${jobId}`)).body).toMatchObject({ status: 'COMPLETED', nextRunAt: null });
  });

  it('resumes in the zone a PATCH set while paused', async () => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: daily }));
    const { jobId } = created.body.job;
    await scheduler.api('POST', `/v1/jobs/${jobId}/pause`);
    const patched = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { schedule: { ...daily, timezone: 'Asia/Kolkata' } });
    expect(patched.status).toBe(200);
    const resumed = await scheduler.api('POST', `/v1/jobs/${jobId}/resume`);
    // 09:00 in Kolkata (UTC+05:30) is 03:30 UTC.
    expect(resumed.body.nextRunAt).toMatch(/T03:30:00\.000Z$/);
    expect(Date.parse(resumed.body.nextRunAt)).toBeGreaterThan(Date.now());
    expect(Date.parse(resumed.body.nextRunAt)).toBeLessThanOrEqual(Date.now() + DAY);
    expect(await scheduler.api('DELETE', `/v1/jobs/${jobId}`)).toMatchObject({ status: 200 });
  });

  async function completedAtJob(): Promise<string> {
    const at = Date.now() + 2_000;
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: { kind: 'at', at: new Date(at).toISOString() } }));
    expect(created.status).toBe(201);
    expect(await executeRun(worker(at + 100), created.body.job.nextRunId)).toBe('succeeded');
    expect((await scheduler.api('GET', `/v1/jobs/${created.body.job.jobId}`)).body.status).toBe('COMPLETED');
    return created.body.job.jobId;
  }

  it('makes a COMPLETED job ACTIVE again when a PATCH gives it a new schedule, and the new occurrence fires', async () => {
    const jobId = await completedAtJob();
    const payloadOnly = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { payload: { v: 2 } });
    expect(payloadOnly.status).toBe(200);
    expect(payloadOnly.body).toMatchObject({ status: 'COMPLETED', nextRunAt: null, payload: { v: 2 } });

    const at = later(2);
    const patched = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { schedule: { kind: 'at', at: new Date(at).toISOString() } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ status: 'ACTIVE', nextRunAt: new Date(at).toISOString(), upcomingRuns: [new Date(at).toISOString()] });
    expect(await scheduler.deps.runs.get(patched.body.nextRunId)).toMatchObject({ status: 'SCHEDULED', trigger: 'schedule' });
    expect(await executeRun(worker(at + 100), patched.body.nextRunId)).toBe('succeeded');
    expect((await scheduler.api('GET', `/v1/jobs/${jobId}`)).body).toMatchObject({ status: 'COMPLETED', nextRunAt: null });
  });

  it('refuses to re-activate a COMPLETED job past the active-jobs limit (429) or with no occurrence left (400), and changes nothing', async () => {
    const jobId = await completedAtJob();
    const pastEnd = { kind: 'cron', expression: '* * * * *', timezone: 'UTC', endAt: new Date(Date.now() - DAY).toISOString() };
    const none = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { schedule: pastEnd });
    expect(none.status).toBe(400);
    expect(none.body.errors).toEqual([expect.objectContaining({ path: expect.stringMatching(/^schedule/) })]);

    // Fill the tenant's three live jobs.
    const live: string[] = [];
    for (let i = 0; i < 3; i++) {
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: daily }));
      expect(created.status).toBe(201);
      live.push(created.body.job.jobId);
    }
    const before = (await scheduler.api('GET', `/v1/jobs/${jobId}`)).body;
    const refused = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { schedule: daily });
    expect(refused.status).toBe(429);
    expect(refused.body.detail).toMatch(/active or paused jobs/);
    const after = (await scheduler.api('GET', `/v1/jobs/${jobId}`)).body;
    expect(after).toMatchObject({ status: 'COMPLETED', version: before.version, schedule: before.schedule, nextRunId: before.nextRunId });

    // A place freed, the same PATCH goes through.
    for (const id of live) await scheduler.api('DELETE', `/v1/jobs/${id}`);
    const accepted = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { schedule: daily });
    expect(accepted.status).toBe(200);
    expect(accepted.body.status).toBe('ACTIVE');
    expect(await scheduler.api('DELETE', `/v1/jobs/${jobId}`)).toMatchObject({ status: 200 });
  });
});

describe('contention on one job', () => {
  it('answers a change that kept losing its compare-and-swap with a 429 and Retry-After, as contention, and writes nothing', async () => {
    const scheduler = await startScheduler({ workerConcurrency: 0 });
    try {
      const created = await scheduler.api('POST', '/v1/jobs', jobBody('https://example.com/hook', { schedule: { kind: 'delay', seconds: 3600 } }));
      expect(created.status).toBe(201);
      const jobId = created.body.job.jobId as string;
      // Every write of the job loses to another writer (what many concurrent PATCHes make).
      const contended = scheduler.workerDeps('contended');
      let tries = 0;
      Object.assign(contended.jobs, {
        replace: () => {
          tries++;
          return Promise.resolve('conflict' as const);
        },
      });
      const error = await patchJob(contended, scheduler.tenantId, jobId, { timeoutSeconds: 99 }).then(
        () => null,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(TooManyRequestsError);
      expect(error).toMatchObject({ status: 429, headers: { 'retry-after': '1' } });
      expect(tries).toBeGreaterThan(1);
      expect((await scheduler.api('GET', `/v1/jobs/${jobId}`)).body).toMatchObject({ version: 1, timeoutSeconds: created.body.job.timeoutSeconds });
    } finally {
      await scheduler.stop();
    }
  });
});

describe('the rate of manual triggers and replays', () => {
  let scheduler: Scheduler;
  // The API's clock: each phase of the test is one second of its own, each call a millisecond on.
  const start = Math.ceil(Date.now() / 1000) * 1000 + 60_000;
  let base = start;
  let ticks = 0;
  const phase = (n: number) => {
    base = start + n * 10_000;
    ticks = 0;
  };

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0, clock: () => base + ticks++, tenantLimits: { createsPerSecond: 3 } });
  });
  afterAll(() => scheduler.stop());

  async function post(path: string, body?: unknown): Promise<{ status: number; retryAfter: string | null; body: any }> {
    const response = await fetch(`${scheduler.runtime.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${scheduler.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body: text ? JSON.parse(text) : null };
  }

  it('counts triggers, single replays and bulk replays against createsPerSecond: 429 with Retry-After, nothing written', async () => {
    // Three jobs whose one attempt ends DEAD (nothing listens on port 9).
    phase(0);
    const jobIds: string[] = [];
    const deadIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const created = await post('/v1/jobs', jobBody(TARGET, { retryPolicy: { maxAttempts: 1, initialDelaySeconds: 0, maxDelaySeconds: 0 } }));
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      jobIds.push(created.body.job.jobId);
      deadIds.push(created.body.job.nextRunId);
      await executeRun(
        scheduler.workerDeps('rate-worker', () => base + 5_000),
        created.body.job.nextRunId,
      );
      expect((await scheduler.deps.runs.get(created.body.job.nextRunId))?.status).toBe('DEAD');
    }
    const jobId = jobIds[0] as string;
    // Over the limit within the same second, and nothing is written.
    const overCreate = await post('/v1/jobs', jobBody(TARGET));
    expect(overCreate.status).toBe(429);

    phase(1);
    for (let i = 0; i < 3; i++) expect((await post(`/v1/jobs/${jobId}/trigger`)).status).toBe(202);
    const runsBefore = await scheduler.countItems('runs');
    const refused = await post(`/v1/jobs/${jobId}/trigger`);
    expect(refused.status).toBe(429);
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(refused.body).toMatchObject({ status: 429, detail: expect.stringMatching(/manual triggers and replays per second/) });
    expect(await scheduler.countItems('runs')).toBe(runsBefore);

    // Two triggers leave room for one replay: a bulk replay stops after it, saying more remain.
    phase(2);
    for (let i = 0; i < 2; i++) expect((await post(`/v1/jobs/${jobId}/trigger`)).status).toBe(202);
    const partial = await post('/v1/dead-runs/replay', {});
    expect(partial.status).toBe(202);
    expect(partial.body.replayed).toHaveLength(1);
    expect(partial.body.remaining).toBe(true);
    const single = await post(`/v1/runs/${deadIds[0]}/replay`);
    expect(single.status).toBe(429);
    expect(single.retryAfter).not.toBeNull();

    // A bulk replay that can replay nothing is a 429 too, and replays nothing.
    phase(3);
    for (let i = 0; i < 3; i++) expect((await post(`/v1/jobs/${jobId}/trigger`)).status).toBe(202);
    const deadBefore = (await scheduler.api('GET', '/v1/dead-runs')).body.items.length;
    const none = await post('/v1/dead-runs/replay', {});
    expect(none.status).toBe(429);
    expect(none.retryAfter).not.toBeNull();
    expect((await scheduler.api('GET', '/v1/dead-runs')).body.items.length).toBe(deadBefore);
    expect(deadBefore).toBe(2);

    // A new second: the rest go through.
    phase(4);
    const bulk = await post('/v1/dead-runs/replay', {});
    expect(bulk.status).toBe(202);
    expect(bulk.body).toMatchObject({ replayed: [expect.anything(), expect.anything()], remaining: false });
  });

  it('counts a PATCH that makes a COMPLETED job ACTIVE again, and a workflow version that gives it a schedule: each plans a first run', async () => {
    phase(6);
    const created = await post('/v1/jobs', jobBody(TARGET));
    expect(created.body.job.status).toBe('COMPLETED');
    const workflow = await post('/v1/workflows', { name: 'rate-counted-workflow', steps: [{ id: 'a', target: { kind: 'http', url: TARGET } }] });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
    const jobId = created.body.job.jobId as string;
    const workflowId = workflow.body.workflowId as string;

    phase(7);
    for (let i = 0; i < 3; i++) expect((await post(`/v1/jobs/${jobId}/trigger`)).status).toBe(202);
    const runsBefore = await scheduler.countItems('runs');
    // A PATCH that repeats the schedule reactivates nothing, writes nothing, and is not counted.
    expect((await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { schedule: { kind: 'now' } })).status).toBe(200);
    // Before, both were written: a way around the limit (a PATCH per completed job, a version per workflow).
    const patched = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { schedule: { kind: 'delay', seconds: 60 } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(429);
    const versioned = await scheduler.api('POST', `/v1/workflows/${workflowId}/versions`, {
      name: 'rate-counted-workflow',
      steps: [{ id: 'a', target: { kind: 'http', url: TARGET } }],
      schedule: { kind: 'delay', seconds: 60 },
    });
    expect(versioned.status, JSON.stringify(versioned.body)).toBe(429);
    expect(await scheduler.countItems('runs')).toBe(runsBefore);
    expect((await scheduler.api('GET', `/v1/jobs/${jobId}`)).body.status).toBe('COMPLETED');
    expect((await scheduler.api('GET', `/v1/workflows/${workflowId}`)).body.version).toBe(1);

    // A new second: both go through.
    phase(8);
    expect((await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { schedule: { kind: 'delay', seconds: 60 } })).body).toMatchObject({ status: 'ACTIVE' });
  });

  it('accepts exactly the limit of concurrent triggers in one second', async () => {
    phase(5);
    const created = await post('/v1/jobs', jobBody(TARGET, { schedule: { kind: 'delay', seconds: 3600 } }));
    expect(created.status).toBe(201);
    const runsBefore = await scheduler.countItems('runs');
    const answers = await Promise.all(Array.from({ length: 10 }, () => post(`/v1/jobs/${created.body.job.jobId}/trigger`)));
    expect(answers.filter((answer) => answer.status === 202)).toHaveLength(2); // the create took the third place
    expect(answers.filter((answer) => answer.status === 429)).toHaveLength(8);
    expect(await scheduler.countItems('runs')).toBe(runsBefore + 2);
  });
});

describe('filtered listings', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
  });
  afterAll(() => scheduler.stop());

  type Listing = { status: number; body: { items: { jobId: string; runId?: string }[]; nextCursor: string | null } };
  /** Every page of a listing, following its cursors. */
  async function pages(path: string): Promise<string[][]> {
    const seen: string[][] = [];
    let cursor: string | null = null;
    do {
      const separator = path.includes('?') ? '&' : '?';
      const page: Listing = await scheduler.api('GET', `${path}${cursor ? `${separator}cursor=${cursor}` : ''}`);
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      seen.push(page.body.items.map((item) => item.runId ?? item.jobId));
      cursor = page.body.nextCursor;
      expect(seen.length).toBeLessThan(20);
    } while (cursor);
    return seen;
  }

  const active: string[] = [];
  const all: string[] = [];

  it('fills each page of jobs with up to `limit` matches, and has no cursor once nothing more matches', async () => {
    // Newest first: A C C A C A C C (A active, C completed run-now jobs).
    for (const kind of ['C', 'C', 'A', 'C', 'A', 'C', 'C', 'A']) {
      const schedule = kind === 'A' ? { kind: 'delay', seconds: 3600 } : { kind: 'now' };
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(TARGET, { schedule, type: kind === 'A' ? 'kind-a' : 'kind-c' }));
      expect(created.status).toBe(201);
      all.unshift(created.body.job.jobId);
      if (kind === 'A') active.unshift(created.body.job.jobId);
    }
    expect(await pages('/v1/jobs?status=ACTIVE&limit=3')).toEqual([active]);
    expect(await pages('/v1/jobs?status=ACTIVE&limit=2')).toEqual([active.slice(0, 2), active.slice(2)]);
    expect(await pages('/v1/jobs?type=kind-a&limit=3')).toEqual([active]);
    expect(await pages('/v1/jobs?status=PAUSED&limit=3')).toEqual([[]]);
    expect(await pages('/v1/jobs?type=kind-z')).toEqual([[]]);
    expect(await pages('/v1/jobs?limit=8')).toEqual([all]);
    expect(await pages('/v1/jobs?limit=5')).toEqual([all.slice(0, 5), all.slice(5)]);
  });

  it('stops a page at its read budget with a cursor that goes on where it stopped', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let requests = 0;
    do {
      // The status index holds only the ACTIVE jobs: a budget of one entry a request stops every page early.
      const page = await scheduler.deps.jobs.list(scheduler.tenantId, { status: 'ACTIVE' }, 3, cursor, 1);
      expect(page.items.length).toBeLessThanOrEqual(3);
      seen.push(...page.items.map((job) => job.jobId));
      cursor = page.nextCursor ?? undefined;
      requests++;
    } while (cursor && requests < 10);
    expect(seen).toEqual(active);
    expect(requests).toBeGreaterThan(1);
  });

  it('fills each page of dead runs filtered by job the same way', async () => {
    const worker = scheduler.workerDeps('list-worker', () => Date.now() + 1_000);
    const dead = (
      await scheduler.api(
        'POST',
        '/v1/jobs',
        jobBody(TARGET, { schedule: { kind: 'delay', seconds: 3600 }, retryPolicy: { maxAttempts: 1, initialDelaySeconds: 0, maxDelaySeconds: 0 } }),
      )
    ).body.job.jobId;
    const other = (
      await scheduler.api(
        'POST',
        '/v1/jobs',
        jobBody(TARGET, { schedule: { kind: 'delay', seconds: 3600 }, retryPolicy: { maxAttempts: 1, initialDelaySeconds: 0, maxDelaySeconds: 0 } }),
      )
    ).body.job.jobId;
    const ours: string[] = [];
    // Newest first: ours, other, other, ours, other, ours.
    for (const jobId of [dead, other, dead, other, other, dead]) {
      const runId = await triggerToDeath(scheduler, worker, jobId);
      if (jobId === dead) ours.unshift(runId);
    }
    expect(await pages(`/v1/dead-runs?jobId=${dead}&limit=3`)).toEqual([ours]);
    expect(await pages(`/v1/dead-runs?jobId=${dead}&limit=2`)).toEqual([ours.slice(0, 2), ours.slice(2)]);
    expect(await pages(`/v1/dead-runs?jobId=job_none&limit=2`)).toEqual([[]]);
    expect((await pages('/v1/dead-runs?limit=6')).flat()).toHaveLength(6);
    expect(await pages('/v1/dead-runs?limit=6')).toHaveLength(1);
  });
});

/** Triggers the job and runs the trigger's run with `worker` until it is DEAD (its target refuses); its run id. */
async function triggerToDeath(scheduler: Scheduler, worker: ReturnType<Scheduler['workerDeps']>, jobId: string): Promise<string> {
  const triggered = await scheduler.api('POST', `/v1/jobs/${jobId}/trigger`);
  expect(triggered.status).toBe(202);
  const runId = triggered.body.run.runId as string;
  await executeRun(worker, runId);
  await eventually(
    () => scheduler.deps.runs.get(runId),
    (run) => run?.status === 'DEAD',
  );
  await new Promise((resolve) => setTimeout(resolve, 5)); // distinct times of death
  return runId;
}

describe('cursors reused under other filters', () => {
  // A cursor is the key a listing stopped at. DynamoDB refuses a start key outside the query's key
  // condition (a 500 there; the emulator accepts it): a cursor used with a range or name filter
  // that excludes it is the caller's error, a 400 naming `cursor`. Filters that only drop items
  // (status, jobId) leave the key condition alone: the cursor goes on from where it stopped.
  let scheduler: Scheduler;
  let jobId: string;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(TARGET, { schedule: { kind: 'delay', seconds: 3600 }, retryPolicy: { maxAttempts: 1, initialDelaySeconds: 0, maxDelaySeconds: 0 } }),
    );
    expect(created.status).toBe(201);
    jobId = created.body.job.jobId;
    const worker = scheduler.workerDeps('cursor-worker', () => Date.now() + 1_000);
    for (let i = 0; i < 2; i++) await triggerToDeath(scheduler, worker, jobId);
  });
  afterAll(() => scheduler.stop());

  const PAST = '2020-01-01T00:00:00Z';
  const FUTURE = '2099-01-01T00:00:00Z';

  /** The cursor after the first item of a listing. */
  async function firstCursor(path: string): Promise<string> {
    const page = await scheduler.api('GET', `${path}${path.includes('?') ? '&' : '?'}limit=1`);
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    expect(page.body.nextCursor).toEqual(expect.any(String));
    return page.body.nextCursor as string;
  }

  async function expectRefused(path: string, message = /^was returned under another (from\/to|name or namePrefix): /): Promise<void> {
    const response = await scheduler.api('GET', path);
    expect(response.status, `${path}: ${JSON.stringify(response.body)}`).toBe(400);
    expect(response.body).toMatchObject({ status: 400, title: 'Invalid request', detail: 'Invalid cursor' });
    expect(response.body.errors).toEqual([{ path: 'cursor', message: expect.stringMatching(message) }]);
  }

  async function expectListed(path: string): Promise<void> {
    const response = await scheduler.api('GET', path);
    expect(response.status, `${path}: ${JSON.stringify(response.body)}`).toBe(200);
  }

  it.each([
    ['a job', () => `/v1/jobs/${jobId}/runs`],
    ['the tenant', () => '/v1/runs'],
  ])("refuses a cursor of %s's runs under a from/to that excludes it, and takes it under one that includes it", async (_name, base) => {
    const cursor = await firstCursor(base());
    await expectRefused(`${base()}?limit=1&to=${PAST}&cursor=${cursor}`);
    await expectRefused(`${base()}?limit=1&from=${FUTURE}&cursor=${cursor}`);
    await expectListed(`${base()}?limit=1&cursor=${cursor}`);
    await expectListed(`${base()}?limit=1&from=${PAST}&to=${FUTURE}&cursor=${cursor}`);
    await expectListed(`${base()}?limit=1&status=DEAD&cursor=${cursor}`);
    // A cursor returned under a range goes on under it.
    const ranged = await firstCursor(`${base()}?from=${PAST}&to=${FUTURE}`);
    await expectListed(`${base()}?limit=1&from=${PAST}&to=${FUTURE}&cursor=${ranged}`);
    await expectRefused(`${base()}?limit=1&to=${PAST}&cursor=${ranged}`);
    // `from` equal to `to`, or before it as an instant though later as text, is a range (empty here).
    await expectListed(`${base()}?from=${PAST}&to=${PAST}`);
    await expectListed(`${base()}?from=2026-01-01T00:30:00%2B01:00&to=2025-12-31T23:45:00Z`);
  });

  it('refuses a cursor of dead runs under a from/to that excludes it', async () => {
    const cursor = await firstCursor('/v1/dead-runs');
    await expectRefused(`/v1/dead-runs?limit=1&to=${PAST}&cursor=${cursor}`);
    await expectRefused(`/v1/dead-runs?limit=1&from=${FUTURE}&cursor=${cursor}`);
    await expectListed(`/v1/dead-runs?limit=1&cursor=${cursor}`);
    await expectListed(`/v1/dead-runs?limit=1&jobId=${jobId}&from=${PAST}&to=${FUTURE}&cursor=${cursor}`);
  });

  it('refuses a cursor of the audit trail under a from/to that excludes it', async () => {
    const cursor = await firstCursor('/v1/audit');
    await expectRefused(`/v1/audit?limit=1&to=${PAST}&cursor=${cursor}`);
    await expectRefused(`/v1/audit?limit=1&from=${FUTURE}&cursor=${cursor}`);
    await expectListed(`/v1/audit?limit=1&cursor=${cursor}`);
    await expectListed(`/v1/audit?limit=1&from=${PAST}&to=${FUTURE}&cursor=${cursor}`);
  });

  it('refuses a cursor of jobs by name prefix under a name or prefix that excludes it', async () => {
    for (const name of ['cursor-a-1', 'cursor-a-2', 'cursor-b-1']) {
      expect((await scheduler.api('POST', '/v1/jobs', jobBody(TARGET, { name, schedule: { kind: 'delay', seconds: 3600 } }))).status).toBe(201);
    }
    const cursor = await firstCursor('/v1/jobs?namePrefix=cursor-a');
    await expectRefused(`/v1/jobs?limit=1&namePrefix=cursor-b&cursor=${cursor}`);
    await expectRefused(`/v1/jobs?limit=1&name=cursor-b-1&cursor=${cursor}`);
    await expectListed(`/v1/jobs?limit=1&namePrefix=cursor-a&cursor=${cursor}`);
    await expectListed(`/v1/jobs?limit=1&namePrefix=cursor&cursor=${cursor}`);
  });

  it("refuses a cursor of a workflow's runs whose key is not a run's", async () => {
    const workflow = await scheduler.api('POST', '/v1/workflows', { name: 'cursor-workflow', steps: [{ id: 'a', target: { kind: 'http', url: TARGET } }] });
    expect(workflow.status).toBe(201);
    const workflowId = workflow.body.workflowId as string;
    const forged = Buffer.from(JSON.stringify({ pk: `WF#${workflowId}`, sk: 'WORKFLOW' })).toString('base64url');
    await expectRefused(`/v1/workflows/${workflowId}/runs?cursor=${forged}`, /^is not a cursor this listing returned$/);
  });
});
