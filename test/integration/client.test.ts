// The typed client (clients/) against the local runtime: every method of every route group, the
// Idempotency-Key of creates, the iterators over paged lists, and refusals as SchedulerApiError
// carrying the API's problem.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobSpecInput, Run } from '../../clients/index';
import { LeaseLostError, SchedulerApiError, SchedulerClient } from '../../clients/index';
import type { Scheduler, TargetServer } from './harness';
import { eventually, jobBody, startScheduler, startTarget } from './harness';

describe('the typed client', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  let client: SchedulerClient;
  /** Headers of every request the client sent. */
  const sent: Headers[] = [];
  /** The target fails (permanently) calls whose payload says so. */
  const failing = { fail: true };

  beforeAll(async () => {
    scheduler = await startScheduler();
    target = await startTarget((call) => (call.body.includes('"fail":true') ? { status: 400 } : { status: 200 }));
    client = new SchedulerClient({
      baseUrl: scheduler.runtime.url,
      apiKey: scheduler.apiKey,
      workerId: 'client-test',
      fetch: (input, init) => {
        sent.push(new Headers(init?.headers));
        return fetch(input, init);
      },
    });
  });
  afterAll(async () => {
    await target?.stop();
    await scheduler?.stop();
  });

  const later = (name: string, overrides: Partial<JobSpecInput> = {}): JobSpecInput =>
    ({ ...jobBody(target.url), name, schedule: { kind: 'delay', seconds: 3600 }, ...overrides }) as JobSpecInput;

  it('creates a job with an Idempotency-Key of its own; the same key again is answered as a replay', async () => {
    const created = await client.jobs.create(later('client-create'));
    expect(created).toMatchObject({ replayed: false, job: { name: 'client-create', status: 'ACTIVE', version: 1 } });
    expect(created.nextRunAt).toBe(created.job.nextRunAt);
    expect(sent.at(-1)?.get('idempotency-key')).toMatch(/^[0-9a-f-]{36}$/);

    const first = await client.jobs.create(later('client-keyed'), { idempotencyKey: 'client-test-key-1' });
    const again = await client.jobs.create(later('client-keyed'), { idempotencyKey: 'client-test-key-1' });
    expect(again).toMatchObject({ replayed: true, job: { jobId: first.job.jobId } });
    // Another body under the key is a conflict, with the API's problem.
    const conflict = await client.jobs.create(later('client-keyed-other'), { idempotencyKey: 'client-test-key-1' }).catch((error: unknown) => error);
    expect(conflict).toBeInstanceOf(SchedulerApiError);
    expect(conflict).toMatchObject({ status: 409, type: 'urn:job-scheduler:problem:conflict', errors: [{ path: 'headers.Idempotency-Key' }] });
  });

  it('lists jobs a page at a time and iterates over every page', async () => {
    const type = 'client-paging';
    const made = new Set<string>();
    for (let i = 0; i < 5; i++) made.add((await client.jobs.create(later(`client-page-${i}`, { type }))).job.jobId);
    const page = await client.jobs.list({ type, limit: 2 });
    expect(page.items).toHaveLength(2);
    expect(page.nextCursor).not.toBeNull();

    const seen: string[] = [];
    const before = sent.length;
    for await (const job of client.jobs.iterate({ type, limit: 2 })) seen.push(job.jobId);
    expect(new Set(seen)).toEqual(made);
    expect(seen).toHaveLength(5);
    expect(sent.length - before).toBeGreaterThanOrEqual(3);

    const paused = await client.jobs.pause(seen[0]!);
    expect(paused.status).toBe('PAUSED');
    const pausedOnly = [];
    for await (const job of client.jobs.iterate({ type, status: 'PAUSED' })) pausedOnly.push(job.jobId);
    expect(pausedOnly).toEqual([seen[0]]);
  });

  it('reads, updates (with If-Match), pauses, resumes, triggers and deletes a job', async () => {
    const { job } = await client.jobs.create(later('client-lifecycle'));
    const detail = await client.jobs.get(job.jobId);
    expect(detail).toMatchObject({ jobId: job.jobId, upcomingRuns: [job.nextRunAt] });
    expect(detail.recentRuns.map((run) => run.runId)).toEqual([job.nextRunId]);

    const updated = await client.jobs.update(job.jobId, { priority: 'high' }, { ifMatch: 1 });
    expect(updated).toMatchObject({ priority: 'high', version: 2 });
    const stale = await client.jobs.update(job.jobId, { priority: 'low' }, { ifMatch: 1 }).catch((error: unknown) => error);
    expect(stale).toMatchObject({ name: 'SchedulerApiError', status: 412, type: 'urn:job-scheduler:problem:precondition-failed' });
    expect(sent.at(-1)?.get('if-match')).toBe('"1"');

    expect((await client.jobs.pause(job.jobId)).status).toBe('PAUSED');
    // Pausing again is no conflict: it keeps the job PAUSED (and would change a note or end).
    expect((await client.jobs.pause(job.jobId, { note: 'maintenance' })).pauseNote).toBe('maintenance');
    expect((await client.jobs.resume(job.jobId)).status).toBe('ACTIVE');

    const manual = await client.jobs.trigger(job.jobId, { payload: { manual: true } });
    expect(manual).toMatchObject({ jobId: job.jobId, trigger: 'manual' });
    await eventually(
      () => client.runs.get(manual.runId),
      (run) => run.status === 'SUCCEEDED',
    );
    expect(target.calls.some((call) => call.body.includes('"manual":true'))).toBe(true);

    const deleted = await client.jobs.delete(job.jobId);
    expect(deleted.status).toBe('CANCELLED');
    // Deleting again answers the deleted job.
    expect((await client.jobs.delete(job.jobId)).status).toBe('CANCELLED');
  });

  it("lists, iterates, reads, cancels and replays a job's runs", async () => {
    const { job } = await client.jobs.create(later('client-runs'));
    const pending = job.nextRunId!;
    const triggered: Run[] = [];
    for (let i = 0; i < 2; i++) triggered.push(await client.jobs.trigger(job.jobId));
    const page = await client.runs.list(job.jobId, { limit: 1 });
    expect(page.items).toHaveLength(1);
    const all: string[] = [];
    for await (const run of client.runs.iterate(job.jobId, { limit: 1 })) all.push(run.runId);
    expect(new Set(all)).toEqual(new Set([pending, ...triggered.map((run) => run.runId)]));

    const cancelled = await client.runs.cancel(pending);
    expect(cancelled).toMatchObject({ runId: pending, status: 'CANCELLED' });
    expect((await client.runs.get(pending)).status).toBe('CANCELLED');
    const replay = await client.runs.replay(pending);
    expect(replay).toMatchObject({ jobId: job.jobId, trigger: 'replay', attempt: 2 });
    await eventually(
      () => client.runs.get(replay.runId),
      (run) => run.status === 'SUCCEEDED',
    );
  });

  it('lists dead runs, replays one, and replays the rest in bulk', async () => {
    const jobIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { job } = await client.jobs.create({ ...later(`client-dead-${i}`), schedule: { kind: 'now' }, payload: failing, retryPolicy: { maxAttempts: 1 } });
      jobIds.push(job.jobId);
    }
    const deadOf = async (): Promise<Run[]> => {
      const runs: Run[] = [];
      for await (const run of client.deadRuns.iterate({ limit: 1 })) if (jobIds.includes(run.jobId)) runs.push(run);
      return runs;
    };
    const dead = await eventually(deadOf, (runs) => runs.length === 3, 30_000);
    expect(dead.every((run) => run.status === 'DEAD')).toBe(true);
    expect((await client.deadRuns.list({ jobId: jobIds[0] })).items.map((run) => run.jobId)).toEqual([jobIds[0]]);

    const one = await client.deadRuns.replay(dead[0]!.runId);
    expect(one).toMatchObject({ jobId: dead[0]!.jobId, trigger: 'replay', attempt: 2 });
    const bulk = await client.deadRuns.replayAll({ jobId: jobIds[1] });
    expect(bulk).toMatchObject({ remaining: false, replayed: [{ jobId: jobIds[1], trigger: 'replay' }] });
  });

  it('previews a schedule and reads the health report', async () => {
    const preview = await client.preview({ schedule: { kind: 'cron', expression: '0 9 * * 1' }, from: '2026-01-01T00:00:00Z', count: 2 });
    expect(preview.fireTimes).toEqual(['2026-01-05T09:00:00.000Z', '2026-01-12T09:00:00.000Z']);
    const health = await client.health({ minutes: 5 });
    expect(health.runs.windowMinutes).toBe(5);
    expect(Object.keys(health.queues.pools)).toContain('default');
  });

  it('filters jobs by name, name prefix and labels, and lists the runs of the whole tenant by status and time', async () => {
    const red = (await client.jobs.create(later('client-filter-red', { labels: { colour: 'red', size: 'big' } }))).job;
    const blue = (await client.jobs.create(later('client-filter-blue', { labels: { colour: 'blue', size: 'big' } }))).job;
    const ids = (page: { items: { jobId: string }[] }) => page.items.map((job) => job.jobId);
    expect(ids(await client.jobs.list({ name: 'client-filter-red' }))).toEqual([red.jobId]);
    expect(ids(await client.jobs.list({ namePrefix: 'client-filter-' }))).toEqual([blue.jobId, red.jobId]);
    expect(ids(await client.jobs.list({ label: 'size=big' })).sort()).toEqual([blue.jobId, red.jobId].sort());
    expect(ids(await client.jobs.list({ label: ['size=big', 'colour=blue'] }))).toEqual([blue.jobId]);
    expect(ids(await client.jobs.list({ label: 'size=big,colour=red' }))).toEqual([red.jobId]);

    const cancelled = await client.runs.cancel(red.nextRunId!);
    const tenantCancelled: string[] = [];
    for await (const run of client.runs.iterateAll({ status: 'CANCELLED', limit: 1 })) tenantCancelled.push(run.runId);
    expect(tenantCancelled).toContain(cancelled.runId);
    expect(tenantCancelled).not.toContain(blue.nextRunId);
    const pending = await client.runs.listAll({ status: 'SCHEDULED', from: blue.nextRunAt!, to: new Date(Date.parse(blue.nextRunAt!) + 1).toISOString() });
    expect(pending.items.map((run) => run.runId)).toContain(blue.nextRunId);
    expect((await client.runs.list(red.jobId, { status: 'SCHEDULED' })).items).toEqual([]);
    expect((await client.runs.list(red.jobId, { status: 'CANCELLED' })).items.map((run) => run.runId)).toEqual([cancelled.runId]);
  });

  it('issues, lists and revokes signing secrets, reads the audit trail, and fetches the OpenAPI document', async () => {
    const first = await client.signingSecrets.issue();
    expect(first.secret).toMatch(/^whsec_/);
    const second = await client.signingSecrets.issue({ graceSeconds: 600 });
    expect(second.previous.map((secret) => secret.secretId)).toContain(first.secretId);
    const live = await client.signingSecrets.list();
    expect(live.map((secret) => secret.secretId)).toEqual(expect.arrayContaining([first.secretId, second.secretId]));
    expect(JSON.stringify(live)).not.toContain('whsec_');
    await client.signingSecrets.revoke(first.secretId);
    expect((await client.signingSecrets.list()).map((secret) => secret.secretId)).not.toContain(first.secretId);
    const again = await client.signingSecrets.revoke(first.secretId).catch((error: unknown) => error);
    expect(again).toMatchObject({ status: 404 });

    const trail = await client.audit.list({ objectId: first.secretId });
    expect(trail.items.map((entry) => entry.action).sort()).toEqual(['signing-secret.issue', 'signing-secret.revoke']);
    const since = trail.items.at(-1)!.at;
    const every: string[] = [];
    for await (const entry of client.audit.iterate({ from: since, limit: 1 })) every.push(entry.objectId);
    expect(every).toEqual(expect.arrayContaining([first.secretId, second.secretId]));

    const document = await client.openApi();
    expect(document).toMatchObject({ openapi: '3.1.0', paths: { '/v1/audit': { get: { operationId: 'listAudit' } } } });
  });

  it('serves external workers on the same transport, with the same error class', async () => {
    const { job } = await client.jobs.create({
      ...later('client-external', { type: 'client-external' }),
      schedule: { kind: 'now' },
      target: { kind: 'external', leaseSeconds: 30 },
      payload: { n: 1 },
    });
    const claim = await eventually(
      () => client.workers.claim<{ n: number }>({ jobType: 'client-external', waitSeconds: 2 }),
      (answer) => answer !== null,
      30_000,
    );
    expect(claim).toMatchObject({ run: { jobId: job.jobId, leaseOwner: 'external:client-test' }, payload: { n: 1 } });
    const beat = await client.workers.heartbeat(claim!.run.runId, claim!.leaseToken, { progress: { half: true } });
    expect(beat.run.progress).toEqual({ half: true });
    expect((await client.workers.complete(claim!.run.runId, claim!.leaseToken, { ok: 1 })).status).toBe('SUCCEEDED');
    const lost = await client.workers
      .fail(claim!.run.runId, claim!.leaseToken, { code: 'LATE', message: 'late', retryable: false })
      .catch((error: unknown) => error);
    expect(lost).toBeInstanceOf(LeaseLostError);
    expect(lost).toBeInstanceOf(SchedulerApiError);
    expect(lost).toMatchObject({ status: 409, runStatus: 'SUCCEEDED', problem: { runStatus: 'SUCCEEDED' } });
  });

  it('drives workflows: create, list and iterate, get, a new version, start, runs, a run, cancel, retry, pause and resume', async () => {
    const step = (id: string, dependsOn: string[] = [], extra: Record<string, unknown> = {}) => ({
      id,
      target: { kind: 'http' as const, url: `${target.url}/${id}` },
      retryPolicy: { maxAttempts: 1 },
      dependsOn,
      ...extra,
    });
    const made: string[] = [];
    for (const name of ['client-wf-b', 'client-wf-a', 'client-wf-c']) made.push((await client.workflows.create({ name, steps: [step('one')] })).workflowId);
    const page = await client.workflows.list({ limit: 2 });
    expect(page.items.map((workflow) => workflow.workflowId)).toEqual([made[2], made[1]]);
    expect(page.items[0]).toMatchObject({ name: 'client-wf-c', version: 1, stepCount: 1 });
    const everyOne: string[] = [];
    for await (const workflow of client.workflows.iterate({ limit: 1 })) everyOne.push(workflow.name);
    expect(everyOne).toEqual(['client-wf-c', 'client-wf-a', 'client-wf-b']);
    expect((await client.workflows.list({ namePrefix: 'client-wf-' })).items.map((workflow) => workflow.name)).toEqual([
      'client-wf-a',
      'client-wf-b',
      'client-wf-c',
    ]);

    // A workflow whose run fails, is retried, and a scheduled one paused and resumed.
    const workflowId = made[0]!;
    const updated = await client.workflows.update(
      workflowId,
      { name: 'client-wf-b', steps: [step('one'), step('two', ['one'], { payload: failing })] },
      { ifMatch: 1 },
    );
    expect(updated.version).toBe(2);
    expect((await client.workflows.get(workflowId, 1)).definition.steps).toHaveLength(1);
    const detail = await client.workflows.get(workflowId);
    expect(detail).toMatchObject({ version: 2, recentOccurrences: [] });
    const started = await client.workflows.start(workflowId);
    const failed = await eventually(
      () => client.workflows.run(workflowId, started.workflowRunId),
      (run) => run.status !== 'RUNNING',
    );
    expect(failed).toMatchObject({ status: 'FAILED', failedSteps: ['two'] });
    expect((await client.workflows.runs(workflowId, { status: 'FAILED' })).items.map((run) => run.workflowRunId)).toEqual([started.workflowRunId]);
    const retried = await client.workflows.retry(workflowId, started.workflowRunId);
    expect(retried).toMatchObject({ status: 'RUNNING', retries: 1 });
    await eventually(
      () => client.workflows.run(workflowId, started.workflowRunId),
      (run) => run.status === 'FAILED',
    );
    // It asks for no notifications: none per end, and none to send again (a 404).
    expect(await client.workflows.notifications(workflowId, started.workflowRunId)).toEqual([]);
    const notResent = await client.workflows.resendNotification(workflowId, started.workflowRunId, 'failed').catch((error: unknown) => error);
    expect(notResent).toMatchObject({ status: 404 });
    const again = await client.workflows.start(workflowId);
    const cancelled = await client.workflows.cancel(workflowId, again.workflowRunId).catch((error: unknown) => error);
    // Cancelled while running, or (the steps were quick) a 409 that says it had ended.
    if (cancelled instanceof SchedulerApiError) expect(cancelled.status).toBe(409);
    else expect(cancelled).toMatchObject({ status: 'CANCELLED' });

    const scheduled = await client.workflows.create({ name: 'client-wf-scheduled', steps: [step('one')], schedule: { kind: 'delay', seconds: 3600 } });
    expect(scheduled.scheduleState).toMatchObject({ status: 'ACTIVE' });
    expect((await client.workflows.pause(scheduled.workflowId)).scheduleState).toMatchObject({ status: 'PAUSED', nextRunAt: null });
    expect((await client.workflows.resume(scheduled.workflowId)).scheduleState).toMatchObject({
      status: 'ACTIVE',
      nextRunAt: scheduled.scheduleState!.nextRunAt,
    });
    const refused = await client.workflows.pause(workflowId).catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 409, type: 'urn:job-scheduler:problem:conflict' });
    const deleted = await client.workflows.delete(scheduled.workflowId);
    expect(deleted).toMatchObject({ deletedAt: expect.any(String), scheduleState: { status: 'CANCELLED' } });
    expect(await client.workflows.delete(scheduled.workflowId)).toMatchObject({ deletedAt: deleted.deletedAt });
  });

  it('refuses with the API problem: 404, 400 with its fields, 401', async () => {
    const missing = await client.jobs.get('job_nope').catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(SchedulerApiError);
    expect(missing).toMatchObject({
      status: 404,
      type: 'urn:job-scheduler:problem:not-found',
      title: 'Not found',
      detail: 'No job job_nope',
      request: 'GET /v1/jobs/job_nope',
    });

    const invalid = (await client.jobs
      .create({ ...later('client-invalid'), schedule: { kind: 'cron', expression: 'not cron' } })
      .catch((error: unknown) => error)) as SchedulerApiError;
    expect(invalid.status).toBe(400);
    expect(invalid.errors.map((field) => field.path)).toContain('schedule.expression');

    const stranger = new SchedulerClient({ baseUrl: scheduler.runtime.url, apiKey: 'key_not-a-key-of-anyone' });
    await expect(stranger.jobs.list()).rejects.toMatchObject({ status: 401, type: 'urn:job-scheduler:problem:unauthorized' });
  });

  it("takes its base URL with or without the routes' /v1, as `npm run dev` prints it", async () => {
    const { job } = await client.jobs.create(later('client-base-url'));
    for (const baseUrl of [`${scheduler.runtime.url}/v1`, `${scheduler.runtime.url}/v1/`]) {
      const prefixed = new SchedulerClient({ baseUrl, apiKey: scheduler.apiKey });
      expect(prefixed.baseUrl).toBe(scheduler.runtime.url);
      // Before: GET /v1/v1/jobs/…, a 404.
      expect((await prefixed.jobs.get(job.jobId)).jobId).toBe(job.jobId);
    }
  });
});
