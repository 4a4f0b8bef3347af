// Edges of the API found by a hostile review (issue 24): job type names, reserved target headers,
// capped validation errors, schedule changes of paused and completed jobs, the rate of manual
// triggers and replays, and listings whose filters must still fill a page.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scheduler } from './harness';
import { eventually, jobBody, startScheduler } from './harness';

const TARGET = 'http://127.0.0.1:9/hook';

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
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(TARGET, { target: { kind: 'http', url: TARGET, headers: { [name]: 'mine/1' } } }));
      expect(created.status).toBe(400);
      expect(created.body.errors).toEqual([{ path: `target.headers.${name}`, message: expect.stringMatching(/set by the scheduler/) }]);

      const job = await scheduler.api('POST', '/v1/jobs', jobBody(TARGET, { schedule: { kind: 'delay', seconds: 3600 } }));
      expect(job.status).toBe(201);
      const patched = await scheduler.api('PATCH', `/v1/jobs/${job.body.job.jobId}`, { target: { kind: 'http', url: TARGET, headers: { [name]: 'mine/1' } } });
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
