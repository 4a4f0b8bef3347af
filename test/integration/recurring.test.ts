// Recurring jobs, control operations and policies, against the emulator. Workers are driven
// directly with their own clocks, so a chain of minute-by-minute occurrences runs in moments.
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteJob, patchJob } from '../../lambdas/app/job-lifecycle';
import { repairChain } from '../../lambdas/app/occurrence-chain';
import { claimRun, completeRun } from '../../lambdas/app/external-workers';
import type { JobPatchRequest } from '../../lambdas/api/schemas';
import { jobKey } from '../../lambdas/store/keys';
import type { Scheduler, TargetServer } from './harness';
import { eventually, executeRun, jobBody, leaseRequest, startScheduler, startTarget, tick } from './harness';

const MINUTE = 60_000;

describe('recurring jobs and control', () => {
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

  async function createCron(overrides: Record<string, unknown> = {}): Promise<{ jobId: string; runId: string; at: number }> {
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { schedule: { kind: 'cron', expression: '* * * * *', timezone: 'UTC' }, ...overrides }),
    );
    expect(created.status).toBe(201);
    return { jobId: created.body.job.jobId, runId: created.body.job.nextRunId, at: Date.parse(created.body.job.nextRunAt) };
  }

  async function job(jobId: string) {
    return (await scheduler.api('GET', `/v1/jobs/${jobId}`)).body;
  }

  it('materializes each next occurrence once as the previous one starts, with a deterministic id', async () => {
    const first = await createCron();
    const view = await job(first.jobId);
    expect(view.upcomingRuns).toHaveLength(5);
    expect(Date.parse(view.upcomingRuns[1]) - Date.parse(view.upcomingRuns[0])).toBe(MINUTE);

    // Two workers race for the first occurrence: one runs it, and the chain moves on exactly once.
    const results = await Promise.all([executeRun(worker(first.at + 100, 'a'), first.runId), executeRun(worker(first.at + 100, 'b'), first.runId)]);
    expect([...results].sort()).toEqual(['held', 'succeeded']);
    const after = await job(first.jobId);
    expect(after.nextRunAt).toBe(new Date(first.at + MINUTE).toISOString());
    expect(after.nextRunId).toBe(`${first.jobId}.${(first.at + MINUTE).toString(36)}.1`);

    // The next occurrence runs in its turn and hands on again.
    expect(await executeRun(worker(first.at + MINUTE + 50), after.nextRunId)).toBe('succeeded');
    const runs = (await scheduler.api('GET', `/v1/jobs/${first.jobId}/runs`)).body.items;
    expect(runs.map((r: { status: string }) => r.status)).toEqual(['QUEUED', 'SUCCEEDED', 'SUCCEEDED']);
  });

  it('chains a job written before decision 0168 (its pending run as nextRunId), fenced by it, and rewrites it as pendingRunId', async () => {
    const first = await createCron();
    const { dynamo } = scheduler.clients;
    const itemOf = async () =>
      (await dynamo.send(new GetCommand({ TableName: scheduler.config.jobsTable, Key: jobKey(first.jobId), ConsistentRead: true }))).Item!;
    expect((await itemOf()).pendingRunId).toBe(first.runId);
    // As the item was written before: the pending run under its old name.
    await dynamo.send(
      new UpdateCommand({
        TableName: scheduler.config.jobsTable,
        Key: jobKey(first.jobId),
        UpdateExpression: 'SET nextRunId = :run REMOVE pendingRunId',
        ExpressionAttributeValues: { ':run': first.runId },
      }),
    );
    const legacy = await scheduler.deps.jobs.get(scheduler.tenantId, first.jobId);
    expect(legacy?.nextRunId).toBe(first.runId);
    // A write that read another pending run is refused, as before.
    expect(await scheduler.deps.jobs.replace({ ...legacy!, nextRunId: 'other' }, { ...legacy!, nextRunId: 'stale' })).toBe('conflict');
    // The chain moves on from it, and the job is written in the new form.
    expect(await executeRun(worker(first.at + 100), first.runId)).toBe('succeeded');
    const item = await itemOf();
    expect(item.nextRunId).toBeUndefined();
    expect(item.pendingRunId).toBe(`${first.jobId}.${(first.at + MINUTE).toString(36)}.1`);
    expect((await job(first.jobId)).nextRunId).toBe(item.pendingRunId);
    // And is fenced by the new attribute.
    const current = await scheduler.deps.jobs.get(scheduler.tenantId, first.jobId);
    expect(await scheduler.deps.jobs.replace({ ...current!, nextRunId: 'other' }, { ...current!, nextRunId: first.runId })).toBe('conflict');
    expect((await job(first.jobId)).nextRunId).toBe(item.pendingRunId);
  });

  it('never leases a run before its time', async () => {
    const { runId, at } = await createCron();
    // A worker whose clock is two seconds early sends it back rather than run it.
    expect(await executeRun(worker(at - 5_000), runId)).toBe('requeued');
    expect((await scheduler.deps.runs.get(runId))?.status).toBe('QUEUED');
  });

  it('does not fire a paused job, and resumes from the pending occurrence when it is still ahead', async () => {
    const { jobId, runId, at } = await createCron();
    const paused = await scheduler.api('POST', `/v1/jobs/${jobId}/pause`);
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ status: 'PAUSED', nextRunAt: null, upcomingRuns: [] });
    expect((await scheduler.deps.runs.get(runId))?.status).toBe('SKIPPED');
    // Its message arrives anyway: nothing runs.
    const calls = target.calls.length;
    expect(await executeRun(worker(at + 100), runId)).toBe('duplicate');
    expect(target.calls.length).toBe(calls);
    // Pausing it again changes nothing but the pause's note and end (none here).
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/pause`)).body).toMatchObject({ status: 'PAUSED', nextRunAt: null, pauseNote: null });

    const resumed = await scheduler.api('POST', `/v1/jobs/${jobId}/resume`);
    expect(resumed.body).toMatchObject({ status: 'ACTIVE', nextRunAt: new Date(at).toISOString() });
    expect(resumed.body.nextRunId).toBe(`${jobId}.${at.toString(36)}.2`);
    expect(await executeRun(worker(at + 100), resumed.body.nextRunId)).toBe('succeeded');
  });

  it.each([
    ['skip', 0],
    ['fire-once', 1],
  ] as const)('resumes after a gap by misfire policy %s', async (policy, expectedCalls) => {
    const { jobId, at } = await createCron({ misfirePolicy: policy });
    await scheduler.api('POST', `/v1/jobs/${jobId}/pause`);
    offset = 10 * MINUTE; // ten occurrences pass while paused
    try {
      // Taken before the call: the next occurrence is after the moment the resume was handled, which
      // a clock read after the answer may already have passed on a minute boundary.
      const before = Date.now();
      const resumed = (await scheduler.api('POST', `/v1/jobs/${jobId}/resume`)).body;
      const nextAt = Date.parse(resumed.nextRunAt);
      const calls = target.calls.length;
      if (policy === 'skip') {
        expect(nextAt).toBeGreaterThan(before + offset - 1);
      } else {
        // One run stands for the missed ones: the latest missed occurrence, due at once.
        expect(nextAt).toBeLessThanOrEqual(Date.now() + offset);
        expect(nextAt).toBeGreaterThan(at + 8 * MINUTE);
        const beforeRun = Date.now();
        expect(await executeRun(worker(Date.now() + offset), resumed.nextRunId)).toBe('succeeded');
        const run = await scheduler.deps.runs.get(resumed.nextRunId);
        expect(run?.reason).toMatch(/misfirePolicy fire-once/);
        const afterRun = await job(jobId);
        expect(Date.parse(afterRun.nextRunAt)).toBeGreaterThan(beforeRun + offset - 1);
      }
      expect(target.calls.length - calls).toBe(expectedCalls);
    } finally {
      offset = 0;
    }
  });

  it('backfills missed occurrences up to the cap, oldest first, then skips to the present', async () => {
    const { jobId, runId, at } = await createCron({ misfirePolicy: 'backfill', backfillLimit: 3 });
    const now = at + 10 * MINUTE + 5_000; // the scheduler was down for ten minutes
    const ran: string[] = [];
    let next = runId;
    for (let i = 0; i < 3; i++) {
      expect(await executeRun(worker(now), next)).toBe('succeeded');
      ran.push((await scheduler.deps.runs.get(next))?.scheduledFor ?? '');
      next = (await job(jobId)).nextRunId;
    }
    expect(ran).toEqual([0, 1, 2].map((i) => new Date(at + i * MINUTE).toISOString()));
    // The cap is reached: the chain jumps to the first occurrence after now.
    expect((await job(jobId)).nextRunAt).toBe(new Date(at + 11 * MINUTE).toISOString());
  });

  it.each(['cancelled', 'skipped on request'] as const)(
    'keeps the backfill budget of a catch-up occurrence %s: at most backfillLimit missed occurrences run',
    async (how) => {
      const { jobId, runId, at } = await createCron({ misfirePolicy: 'backfill', backfillLimit: 3 });
      const now = at + 10 * MINUTE + 5_000; // the scheduler was down for ten minutes
      const calls = target.calls.length;
      expect(await executeRun(worker(now), runId)).toBe('succeeded');
      // The second catch-up occurrence may run, and one more after it.
      const second = (await job(jobId)).nextRunId as string;
      expect(await scheduler.deps.runs.withOccurrenceState(second)).toMatchObject({
        run: { scheduledFor: new Date(at + MINUTE).toISOString() },
        backfillRemaining: 1,
      });
      offset = now - Date.now(); // the API's clock is the workers' (still within the outage)
      try {
        if (how === 'cancelled') expect((await scheduler.api('POST', `/v1/runs/${second}/cancel`)).status).toBe(200);
        else expect((await scheduler.api('POST', `/v1/jobs/${jobId}/skip`, { next: 1 })).status).toBe(200);
      } finally {
        offset = 0;
      }
      expect((await scheduler.deps.runs.get(second))?.status).toBe(how === 'cancelled' ? 'CANCELLED' : 'SKIPPED');
      const third = await job(jobId);
      expect(third.nextRunAt).toBe(new Date(at + 2 * MINUTE).toISOString());
      const passedOn = (await scheduler.deps.runs.withOccurrenceState(third.nextRunId))?.backfillRemaining;
      const ran = [runId];
      for (let next = third.nextRunId as string; Date.parse((await job(jobId)).nextRunAt) <= now && ran.length < 10; next = (await job(jobId)).nextRunId) {
        expect(await executeRun(worker(now), next)).toBe('succeeded');
        ran.push(next);
      }
      // Before, its successor had no budget, and its admission started a fresh one (backfillLimit − 1):
      // four missed occurrences ran (09:00, 09:02, 09:03, 09:04 of an outage from 09:00).
      const executed = await Promise.all(ran.map(async (id) => (await scheduler.deps.runs.get(id))?.scheduledFor));
      expect(executed).toEqual([0, 2, 3].map((i) => new Date(at + i * MINUTE).toISOString()));
      expect(target.calls.length - calls).toBe(3);
      // Its successor had the budget it had, unspent: it did not run.
      expect(passedOn).toBe(1);
      // The cap is spent: the chain jumps to the first occurrence after now.
      expect((await job(jobId)).nextRunAt).toBe(new Date(at + 11 * MINUTE).toISOString());
    },
  );

  it('skips an occurrence that starts too late under misfire policy skip', async () => {
    const { jobId, runId, at } = await createCron({ misfirePolicy: 'skip' });
    expect(await executeRun(worker(at + 5 * MINUTE), runId)).toBe('skipped');
    expect(await scheduler.deps.runs.get(runId)).toMatchObject({ status: 'SKIPPED', reason: expect.stringMatching(/misfirePolicy skip/) });
    expect((await job(jobId)).nextRunAt).toBe(new Date(at + 6 * MINUTE).toISOString());
  });

  it('cancels a deleted job: its pending run never starts and its name is free again', async () => {
    const { jobId, runId, at } = await createCron({ name: 'deleted-one' });
    const deleted = await scheduler.api('DELETE', `/v1/jobs/${jobId}`);
    expect(deleted.body).toMatchObject({ status: 'CANCELLED', nextRunAt: null });
    expect(await scheduler.deps.runs.get(runId)).toMatchObject({ status: 'CANCELLED', reason: 'job deleted' });
    expect(await executeRun(worker(at + 100), runId)).toBe('duplicate');
    expect((await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'deleted-one' }))).status).toBe(201);
    expect((await scheduler.api('DELETE', `/v1/jobs/${jobId}`)).status).toBe(200);
  });

  it('answers a delete that lost a race with another delete as done, the job CANCELLED once', async () => {
    const { jobId } = await createCron({ name: 'deleted-twice' });
    const before = (await scheduler.deps.jobs.getAnyTenant(jobId))!;
    expect((await scheduler.api('DELETE', `/v1/jobs/${jobId}`)).status).toBe(200);
    // This delete read the job before the other's commit: its write loses, and it reads again.
    let staleReads = 2;
    const jobs = scheduler.deps.jobs;
    const racing = {
      ...scheduler.deps,
      jobs: Object.assign(Object.create(jobs) as typeof jobs, {
        get: (tenantId: string, id: string) => (staleReads-- > 0 ? Promise.resolve(before) : jobs.get(tenantId, id)),
      }),
    };
    // Before, its second try wrote the CANCELLED job again, releasing the released name: a 500.
    const view = await deleteJob(racing, scheduler.tenantId, jobId);
    expect(view).toMatchObject({ status: 'CANCELLED' });
    expect((await scheduler.deps.jobs.getAnyTenant(jobId))?.version).toBe(before.version + 1);
  });

  it('triggers a manual run now with its own payload, outside the chain', async () => {
    const { jobId, runId } = await createCron();
    const triggered = await scheduler.api('POST', `/v1/jobs/${jobId}/trigger`, { payload: { manual: true } });
    expect(triggered.status).toBe(202);
    expect(triggered.body.run).toMatchObject({ trigger: 'manual', attempt: 1, status: 'QUEUED' });
    const calls = target.calls.length;
    expect(await executeRun(worker(Date.now() + 1_000), triggered.body.run.runId)).toBe('succeeded');
    expect(JSON.parse(target.calls[calls]!.body)).toEqual({ manual: true });
    expect((await job(jobId)).nextRunId).toBe(runId);
  });

  it("the retry after a lost worker delivers the trigger's own payload, not the job's", async () => {
    const { jobId } = await createCron({ payload: { which: 'job-default' }, retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 } });
    const triggered = await scheduler.api('POST', `/v1/jobs/${jobId}/trigger`, { payload: { which: 'trigger-own' } });
    expect(triggered.status).toBe(202);
    const runId = triggered.body.run.runId as string;
    // A worker leases it and is lost; a message finds its lease expired, long after.
    expect((await scheduler.workerDeps('ghost').leases.lease(runId, leaseRequest(scheduler.config, 'ghost'))).kind).toBe('leased');
    const later = Date.now() + 30 * MINUTE;
    expect(await executeRun(worker(later, 'later'), runId)).toBe('worker-lost');
    const retry = await scheduler.deps.runs.get(`${runId.slice(0, runId.lastIndexOf('.'))}.2`);
    expect(retry).toMatchObject({ trigger: 'retry', attempt: 2 });
    expect(await executeRun(worker(later + MINUTE, 'later'), retry!.runId)).toBe('succeeded');
    // Before, the retry was planned without it: the target got { which: 'job-default' }.
    expect(JSON.parse(target.calls.find((call) => call.headers['x-run-id'] === retry!.runId)!.body)).toEqual({ which: 'trigger-own' });
  });

  it('an occurrence planned again (a resume, its next attempt number) has its whole retry budget', async () => {
    const failing = await startTarget(() => ({ status: 503 }));
    try {
      const created = await scheduler.api(
        'POST',
        '/v1/jobs',
        jobBody(failing.url, {
          schedule: { kind: 'cron', expression: '0 0 1 1 *', timezone: 'UTC' },
          retryPolicy: { maxAttempts: 2, initialDelaySeconds: 0, maxDelaySeconds: 1 },
        }),
      );
      expect(created.status).toBe(201);
      const jobId = created.body.job.jobId as string;
      expect((await scheduler.api('POST', `/v1/jobs/${jobId}/pause`)).status).toBe(200);
      const resumed = await scheduler.api('POST', `/v1/jobs/${jobId}/resume`);
      expect(await scheduler.deps.runs.get(resumed.body.nextRunId)).toMatchObject({ attempt: 2, trigger: 'schedule' });
      // Its first call fails: a retry follows. Before, the skipped attempt 1 counted, and it ended DEAD.
      expect(await executeRun(worker(Date.parse(resumed.body.nextRunAt) + 100), resumed.body.nextRunId)).toBe('failed');
    } finally {
      await failing.stop();
    }
  });

  it("a manual run its job's delete did not retire (the delete stopped after its commit) ends CANCELLED when leased, its target never called", async () => {
    const { jobId } = await createCron();
    const triggered = await scheduler.api('POST', `/v1/jobs/${jobId}/trigger`, { payload: { manual: true } });
    expect(triggered.status).toBe(202);
    const runId = triggered.body.run.runId as string;
    const stopping = scheduler.workerDeps('stopping-api', () => Date.now() + offset);
    stopping.runs.pendingOfJob = () => Promise.reject(new Error('the API stopped after the delete'));
    await expect(deleteJob(stopping, scheduler.tenantId, jobId)).rejects.toThrow(/stopped after/);
    expect((await scheduler.api('DELETE', `/v1/jobs/${jobId}`)).status).toBe(200);
    expect((await scheduler.deps.runs.get(runId))?.status).toBe('QUEUED');
    // Before, a manual run executed as it was: the target was called after the job was deleted.
    expect(await executeRun(worker(Date.now() + 1_000), runId)).toBe('cancelled');
    expect(await scheduler.deps.runs.get(runId)).toMatchObject({ status: 'CANCELLED', reason: 'job deleted' });
    expect(callsFor(runId)).toBe(0);
  });

  it("a PATCH or a pause that changes nothing writes nothing: the version stays and another client's If-Match still holds", async () => {
    const { jobId, runId } = await createCron({ labels: { team: 'ops' } });
    const before = await job(jobId);
    for (const body of [{}, { labels: { team: 'ops' } }, { schedule: before.schedule, timeoutSeconds: before.timeoutSeconds }]) {
      const same = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, body);
      expect(same.status, JSON.stringify(same.body)).toBe(200);
      expect(same.body.version).toBe(before.version);
      expect(same.body.nextRunId).toBe(runId);
    }
    // A real change still moves it on, and is checked against the version a client read.
    const changed = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { labels: { team: 'ops', tier: '1' } }, { 'if-match': String(before.version) });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body.version).toBe(before.version + 1);
    const paused = await scheduler.api('POST', `/v1/jobs/${jobId}/pause`, { note: 'maintenance' });
    expect(paused.status, JSON.stringify(paused.body)).toBe(200);
    const again = await scheduler.api('POST', `/v1/jobs/${jobId}/pause`, { note: 'maintenance' });
    expect(again.body.version).toBe(paused.body.version);
    const renoted = await scheduler.api('POST', `/v1/jobs/${jobId}/pause`, { note: 'longer' }, { 'if-match': String(paused.body.version) });
    expect(renoted.body).toMatchObject({ version: paused.body.version + 1, pauseNote: 'longer' });
    expect((await scheduler.api('DELETE', `/v1/jobs/${jobId}`)).status).toBe(200);
  });

  it('re-plans the pending occurrence when PATCH changes the schedule, and refuses a stale If-Match', async () => {
    const { jobId, runId } = await createCron();
    const stale = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { payload: { v: 2 } }, { 'if-match': '99' });
    expect(stale.status).toBe(412);
    // Some hours ahead in Paris, so that the new occurrence waits in the time index (SCHEDULED)
    // whatever the time of day the test runs at.
    const parisHour = Number(new Intl.DateTimeFormat('en-GB', { hour: 'numeric', hourCycle: 'h23', timeZone: 'Europe/Paris' }).format(new Date()));
    const expression = `0 ${(parisHour + 6) % 24} * * *`;
    const patched = await scheduler.api(
      'PATCH',
      `/v1/jobs/${jobId}`,
      { schedule: { kind: 'cron', expression, timezone: 'Europe/Paris' } },
      { 'if-match': '1' },
    );
    expect(patched.status).toBe(200);
    expect(patched.body.version).toBe(2);
    expect(new Date(patched.body.nextRunAt).getUTCMinutes()).toBe(0);
    expect(patched.body.nextRunId).not.toBe(runId);
    expect(await scheduler.deps.runs.get(runId)).toMatchObject({ status: 'SKIPPED', reason: 'job definition changed' });
    expect((await scheduler.deps.runs.get(patched.body.nextRunId))?.status).toBe('SCHEDULED');
    const invalid = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { schedule: { kind: 'cron', expression: 'nope', timezone: 'UTC' } });
    expect(invalid.status).toBe(400);
    expect((await job(jobId)).version).toBe(2);
  });

  it('a PATCH of the timeout or target plans the same pending occurrence again, one due and not started included', async () => {
    const { jobId, runId, at } = await createCron();
    // The occurrence is due and waits for a worker (none runs here); the PATCH lands 30 s after it.
    offset = at + 30_000 - Date.now();
    try {
      const patched = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { timeoutSeconds: 120 });
      expect(patched.status, JSON.stringify(patched.body)).toBe(200);
      // Before, it was dropped for the next fire time after now.
      expect(patched.body.nextRunAt).toBe(new Date(at).toISOString());
      expect(await scheduler.deps.runs.get(runId)).toMatchObject({ status: 'SKIPPED', reason: 'job definition changed' });
      expect(await scheduler.deps.runs.get(patched.body.nextRunId)).toMatchObject({
        attempt: 2,
        status: 'QUEUED',
        leaseSeconds: 120 + scheduler.config.leaseMarginSeconds,
      });
    } finally {
      offset = 0;
    }
  });

  // The chain writes the next occurrence and then the job that points at it, each on its own
  // (decision 0175). What a worker that stopped between the two, or an edit that landed between
  // them, leaves behind, and what the occurrence's worker makes of it.
  const successorOf = (jobId: string, at: number): string => `${jobId}.${at.toString(36)}.1`;
  const callsFor = (runId: string): number => target.calls.filter((call) => call.headers['x-run-id'] === runId).length;
  /** A worker whose job writes fail: it stops after the chain's first write. */
  function stoppingWorker(at: number) {
    const deps = worker(at, 'stopping');
    deps.jobs.replace = () => Promise.reject(new Error('the worker stopped between the two writes'));
    return deps;
  }
  const laterInParis = () => {
    const parisHour = Number(new Intl.DateTimeFormat('en-GB', { hour: 'numeric', hourCycle: 'h23', timeZone: 'Europe/Paris' }).format(new Date()));
    return { kind: 'cron', expression: `0 ${(parisHour + 6) % 24} * * *`, timezone: 'Europe/Paris' };
  };

  it('a successor whose job write never landed: its worker points the job at it and moves the chain on from it', async () => {
    const first = await createCron();
    await expect(executeRun(stoppingWorker(first.at + 100), first.runId)).rejects.toThrow(/stopped between/);
    const successor = successorOf(first.jobId, first.at + MINUTE);
    expect((await scheduler.deps.runs.get(successor))?.status).toBe('QUEUED');
    expect((await job(first.jobId)).nextRunId).toBe(first.runId);

    expect(await executeRun(worker(first.at + MINUTE + 50), successor)).toBe('succeeded');
    expect(callsFor(successor)).toBe(1);
    const after = await job(first.jobId);
    expect(after.nextRunId).toBe(successorOf(first.jobId, first.at + 2 * MINUTE));
    expect(after.version).toBe(1);
    expect((await scheduler.deps.runs.get(after.nextRunId))?.status).toBe('QUEUED');
  });

  it('a successor whose job write never landed, skipped by name meanwhile: ends SKIPPED when leased, and the chain goes on past it', async () => {
    const first = await createCron();
    await expect(executeRun(stoppingWorker(first.at + 100), first.runId)).rejects.toThrow(/stopped between/);
    const successor = successorOf(first.jobId, first.at + MINUTE);
    // The job still points at the occurrence before: the skip can neither retire nor record it.
    const skip = await scheduler.api('POST', `/v1/jobs/${first.jobId}/skip`, { occurrences: [new Date(first.at + MINUTE).toISOString()] });
    expect(skip.status).toBe(200);
    expect((await scheduler.deps.runs.get(successor))?.status).toBe('QUEUED');

    // Before, it was adopted and ran.
    expect(await executeRun(worker(first.at + MINUTE + 50), successor)).toBe('skipped');
    expect(await scheduler.deps.runs.get(successor)).toMatchObject({ status: 'SKIPPED', reason: 'skipped on request' });
    expect(callsFor(successor)).toBe(0);
    const after = await job(first.jobId);
    expect(after.nextRunId).toBe(successorOf(first.jobId, first.at + 2 * MINUTE));
    expect((await scheduler.deps.runs.get(after.nextRunId))?.status).toBe('QUEUED');
  });

  it('a successor its job no longer points at (an edit landed after the stopped worker): ends SKIPPED when leased, its target never called', async () => {
    const first = await createCron();
    await expect(executeRun(stoppingWorker(first.at + 100), first.runId)).rejects.toThrow(/stopped between/);
    const successor = successorOf(first.jobId, first.at + MINUTE);
    const patched = await scheduler.api('PATCH', `/v1/jobs/${first.jobId}`, { schedule: laterInParis() });
    expect(patched.status).toBe(200);
    expect(patched.body.nextRunId).not.toBe(successor);

    expect(await executeRun(worker(first.at + MINUTE + 50), successor)).toBe('skipped');
    expect(await scheduler.deps.runs.get(successor)).toMatchObject({ status: 'SKIPPED', reason: 'job definition changed' });
    expect(callsFor(successor)).toBe(0);
    // The edit's occurrence is the job's, untouched.
    expect((await job(first.jobId)).nextRunId).toBe(patched.body.nextRunId);
    expect((await scheduler.deps.runs.get(patched.body.nextRunId))?.status).toBe('SCHEDULED');
  });

  it("an edit landing between the chain's two writes: the job's write loses, and the successor it wrote is deleted", async () => {
    const first = await createCron();
    const racing = worker(first.at + 100, 'racing');
    const replace = racing.jobs.replace.bind(racing.jobs);
    let patched: string | null = null;
    racing.jobs.replace = async (...args) => {
      if (patched === null) {
        const response = await scheduler.api('PATCH', `/v1/jobs/${first.jobId}`, { schedule: laterInParis() });
        expect(response.status).toBe(200);
        patched = response.body.nextRunId as string;
      }
      return replace(...args);
    };
    // The occurrence was leased before the edit: it runs, as it did before.
    expect(await executeRun(racing, first.runId)).toBe('succeeded');
    expect(await scheduler.deps.runs.get(successorOf(first.jobId, first.at + MINUTE))).toBeNull();
    expect((await job(first.jobId)).nextRunId).toBe(patched);
  });

  it('a PATCH of the timeout that read the pending occurrence before its lease, landing before the chain moves on: the occurrence runs once, not twice', async () => {
    const first = await createCron({ overlapPolicy: 'skip' });
    // The PATCH reads the pending run while it is still QUEUED, and waits there.
    let pendingRead: () => void = () => undefined;
    const readByPatch = new Promise<void>((resolve) => (pendingRead = resolve));
    let leased: () => void = () => undefined;
    const afterLease = new Promise<void>((resolve) => (leased = resolve));
    const api = scheduler.workerDeps('patching-api', () => first.at + 50);
    const withOccurrenceState = api.runs.withOccurrenceState.bind(api.runs);
    api.runs.withOccurrenceState = async (...args) => {
      const read = await withOccurrenceState(...args);
      pendingRead();
      await afterLease;
      return read;
    };
    const patching = patchJob(api, scheduler.tenantId, first.jobId, { timeoutSeconds: 120 });
    await readByPatch;
    // The worker leases it and admits it (the job still points at it); the PATCH commits just before
    // the chain's write of the job: it plans the same occurrence again (attempt 2), and its retire of
    // the leased run fails.
    const racing = worker(first.at + 100, 'racing');
    const replace = racing.jobs.replace.bind(racing.jobs);
    let replanned: string | null = null;
    racing.jobs.replace = async (...args) => {
      if (replanned === null) {
        leased();
        replanned = (await patching).nextRunId;
      }
      return replace(...args);
    };
    const leasedOutcome = await executeRun(racing, first.runId);
    expect(replanned).not.toBeNull();
    expect(replanned).not.toBe(first.runId);
    const replannedOutcome = await executeRun(worker(first.at + 200), replanned!);
    // Before, both ran: the leased run once its chain's write had lost, and the PATCH's (nothing had
    // recorded the leased one as started, so even overlap skip let it through).
    expect(callsFor(first.runId) + callsFor(replanned!)).toBe(1);
    expect(leasedOutcome).toBe('skipped');
    expect(await scheduler.deps.runs.get(first.runId)).toMatchObject({ status: 'SKIPPED', reason: 'job definition changed' });
    expect(replannedOutcome).toBe('succeeded');
    expect(await scheduler.deps.runs.get(replanned!)).toMatchObject({
      scheduledFor: new Date(first.at).toISOString(),
      attempt: 2,
      status: 'SUCCEEDED',
      leaseSeconds: 120 + scheduler.config.leaseMarginSeconds,
    });
    // The chain goes on from the PATCH's run, its next occurrence written once.
    const after = await job(first.jobId);
    expect(after.nextRunId).toBe(successorOf(first.jobId, first.at + MINUTE));
    expect((await scheduler.deps.runs.get(after.nextRunId))?.status).toMatch(/^(SCHEDULED|QUEUED)$/);
  });

  /** Records the run ids the deps send a message for. */
  function sendsOf(deps: ReturnType<typeof worker>): string[] {
    const sent: string[] = [];
    const send = deps.dispatch.send.bind(deps.dispatch);
    deps.dispatch.send = (dispatches, ...rest) => {
      sent.push(...dispatches.map((dispatch) => dispatch.runId));
      return send(dispatches, ...rest);
    };
    return sent;
  }

  it('a job write that landed though its answer was lost (the retry met it): the successor is kept and sent, not deleted', async () => {
    const first = await createCron();
    const retried = worker(first.at + 100, 'retried');
    const replace = retried.jobs.replace.bind(retried.jobs);
    // The store client's retry of a put that landed fails its own condition: read as a conflict.
    retried.jobs.replace = async (...args) => {
      await replace(...args);
      return 'conflict';
    };
    const sent = sendsOf(retried);
    expect(await executeRun(retried, first.runId)).toBe('succeeded');
    const successor = successorOf(first.jobId, first.at + MINUTE);
    expect((await job(first.jobId)).nextRunId).toBe(successor);
    expect((await scheduler.deps.runs.get(successor))?.status).toBe('QUEUED');
    expect(sent).toEqual([successor]);
  });

  it("the ticker's repair of the chain a stopped writer left: points the job at the successor it wrote, not yet due", async () => {
    const first = await createCron({ schedule: { kind: 'cron', expression: '0 * * * *', timezone: 'UTC' } });
    await expect(executeRun(stoppingWorker(first.at + 100), first.runId)).rejects.toThrow(/stopped between/);
    const successor = successorOf(first.jobId, first.at + 60 * MINUTE);
    expect((await scheduler.deps.runs.get(successor))?.status).toBe('SCHEDULED');
    // The occurrence the stopped worker held ends, and the job's pending occurrence is overdue.
    const held = (await scheduler.deps.runs.get(first.runId))!;
    expect(await scheduler.deps.leases.complete(first.runId, held.version, { status: 'FAILED', now: first.at + 1_000, error: null, reason: 'test' })).toBe(
      'recorded',
    );
    const later = first.at + 10 * MINUTE;
    expect(await repairChain(worker(later), first.jobId, later - 5 * MINUTE)).toBe(true);
    expect((await job(first.jobId)).nextRunId).toBe(successor);
    expect((await scheduler.deps.runs.get(successor))?.status).toBe('SCHEDULED');
  });

  it("the ticker's repair adopting a queued successor a stopped writer left sends it, rather than leave it to its check-back", async () => {
    const first = await createCron({ schedule: { kind: 'cron', expression: '*/5 * * * *', timezone: 'UTC' } });
    await expect(executeRun(stoppingWorker(first.at + 100), first.runId)).rejects.toThrow(/stopped between/);
    const successor = successorOf(first.jobId, first.at + 5 * MINUTE);
    // Near enough to be queued, and never sent: its writer stopped before the job's write.
    expect((await scheduler.deps.runs.get(successor))?.status).toBe('QUEUED');
    const held = (await scheduler.deps.runs.get(first.runId))!;
    expect(await scheduler.deps.leases.complete(first.runId, held.version, { status: 'FAILED', now: first.at + 1_000, error: null, reason: 'test' })).toBe(
      'recorded',
    );
    const repairing = worker(first.at + 2 * MINUTE, 'repairing');
    const sent = sendsOf(repairing);
    expect(await repairChain(repairing, first.jobId, first.at + 1)).toBe(true);
    expect((await job(first.jobId)).nextRunId).toBe(successor);
    expect(sent).toEqual([successor]);
  });

  it("a pending occurrence an edit re-planned but never retired (the API stopped after the job's write): ends SKIPPED when leased", async () => {
    const first = await createCron();
    const api = scheduler.workerDeps('stopping-api', () => Date.now() + offset);
    api.runs.retirePending = () => Promise.reject(new Error('the API stopped after the job'));
    await expect(patchJob(api, scheduler.tenantId, first.jobId, { schedule: laterInParis() } as JobPatchRequest)).rejects.toThrow(/stopped after/);
    expect((await scheduler.deps.runs.get(first.runId))?.status).toBe('QUEUED');
    // Before decision 0175 it ran as it was, on the schedule the edit had replaced.
    expect(await executeRun(worker(first.at + 100), first.runId)).toBe('skipped');
    expect(await scheduler.deps.runs.get(first.runId)).toMatchObject({ status: 'SKIPPED', reason: 'job definition changed' });
    expect(callsFor(first.runId)).toBe(0);
  });

  it('completes a cron job after the last occurrence before endAt', async () => {
    const start = Math.ceil((Date.now() + MINUTE) / MINUTE) * MINUTE;
    const { jobId, runId } = await createCron({
      schedule: {
        kind: 'cron',
        expression: '* * * * *',
        timezone: 'UTC',
        startAt: new Date(start).toISOString(),
        endAt: new Date(start + 30_000).toISOString(),
      },
    });
    expect((await job(jobId)).upcomingRuns).toEqual([new Date(start).toISOString()]);
    expect(await executeRun(worker(start + 100), runId)).toBe('succeeded');
    expect(await job(jobId)).toMatchObject({ status: 'COMPLETED', nextRunAt: null });
  });
});

describe('overlap policies', () => {
  let scheduler: Scheduler;
  let release: () => void = () => undefined;
  let target: TargetServer;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
    // The first call blocks until released; later calls answer at once.
    target = await startTarget((_call, index) => (index === 0 ? new Promise((resolve) => (release = () => resolve({ status: 200 }))) : { status: 200 }));
  });
  afterAll(async () => {
    release();
    await scheduler.stop();
    await target.stop();
  });

  it.each(['skip', 'buffer-one', 'cancel-running', 'allow'] as const)('applies %s when an occurrence starts while the previous one runs', async (policy) => {
    target.calls.length = 0;
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { overlapPolicy: policy, schedule: { kind: 'cron', expression: '* * * * *', timezone: 'UTC' } }),
    );
    const first: string = created.body.job.nextRunId;
    const at = Date.parse(created.body.job.nextRunAt);
    const firstRun = executeRun(
      scheduler.workerDeps('w1', () => at + 100),
      first,
    );
    // Wait until the first run is inside its (blocked) target call.
    while (target.calls.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    const second: string = (await scheduler.api('GET', `/v1/jobs/${created.body.job.jobId}`)).body.nextRunId;
    const secondResult = await executeRun(
      scheduler.workerDeps('w2', () => at + MINUTE + 100),
      second,
    );
    const secondRun = await scheduler.deps.runs.get(second);

    if (policy === 'skip') {
      expect(secondResult).toBe('skipped');
      expect(secondRun).toMatchObject({ status: 'SKIPPED', reason: expect.stringMatching(/overlapPolicy skip/) });
    } else if (policy === 'buffer-one') {
      expect(secondResult).toBe('waiting');
      expect(secondRun).toMatchObject({ status: 'QUEUED', reason: expect.stringMatching(/buffer-one/) });
    } else if (policy === 'cancel-running') {
      expect(secondResult).toBe('succeeded');
      expect((await scheduler.deps.runs.get(first))?.status).toBe('CANCELLED');
    } else {
      expect(secondResult).toBe('succeeded');
    }
    release();
    const firstResult = await firstRun;
    expect(firstResult).toBe(policy === 'cancel-running' ? 'fenced' : 'succeeded');
    if (policy === 'buffer-one') {
      // The finished run woke the buffered one; it runs now.
      expect(
        await executeRun(
          scheduler.workerDeps('w3', () => at + MINUTE + 5_000),
          second,
        ),
      ).toBe('succeeded');
    }
  });
});

describe('overlap policies of an external job (decision 0062)', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
  });
  afterAll(() => scheduler.stop());

  it.each(['skip', 'buffer-one', 'cancel-running'] as const)(
    'applies %s while the previous occurrence waits offered, unclaimed, and a buffered one is woken by the complete',
    async (policy) => {
      const type = `overlap-${policy}`;
      const created = await scheduler.api('POST', '/v1/jobs', {
        name: type,
        type,
        overlapPolicy: policy,
        schedule: { kind: 'cron', expression: '* * * * *', timezone: 'UTC' },
        target: { kind: 'external', leaseSeconds: 30 },
        payload: { policy },
      });
      expect(created.status).toBe(201);
      const first: string = created.body.job.nextRunId;
      const at = Date.parse(created.body.job.nextRunAt);
      expect(
        await executeRun(
          scheduler.workerDeps('w1', () => at + 100),
          first,
        ),
      ).toBe('offered');
      // No external worker has claimed it when the next occurrence comes: before, the next one was
      // offered beside it, and both ran at once once workers came.
      const second: string = (await scheduler.api('GET', `/v1/jobs/${created.body.job.jobId}`)).body.nextRunId;
      const secondResult = await executeRun(
        scheduler.workerDeps('w2', () => at + MINUTE + 100),
        second,
      );
      if (policy === 'skip') {
        expect(secondResult).toBe('skipped');
        expect(await scheduler.deps.runs.get(second)).toMatchObject({ status: 'SKIPPED', reason: expect.stringMatching(/overlapPolicy skip/) });
      } else if (policy === 'cancel-running') {
        expect(secondResult).toBe('offered');
        expect(await scheduler.deps.runs.get(first)).toMatchObject({ status: 'CANCELLED', reason: expect.stringMatching(/cancel-running/) });
        // Cancelled while offered, it is no worker's to claim.
        const claim = await claimRun(scheduler.deps, scheduler.tenantId, { jobType: type, waitSeconds: 0 });
        expect(claim?.run.runId).toBe(second);
      } else {
        expect(secondResult).toBe('waiting');
        const claim = (await claimRun(scheduler.deps, scheduler.tenantId, { jobType: type, waitSeconds: 0 }))!;
        expect(claim.run.runId).toBe(first);
        const completing = scheduler.workerDeps('api', () => at + MINUTE + 5_000);
        const sent: string[] = [];
        const send = completing.dispatch.send.bind(completing.dispatch);
        completing.dispatch.send = (dispatches, ...rest) => {
          sent.push(...dispatches.map((dispatch) => dispatch.runId));
          return send(dispatches, ...rest);
        };
        await completeRun(completing, scheduler.tenantId, first, { leaseToken: claim.leaseToken });
        // Before, the buffered occurrence waited for its next look (30 s).
        expect(sent).toEqual([second]);
      }
    },
  );
});

describe('overlap policies follow the previous occurrence to its newest attempt (its retries; decision 0195)', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  /** Run ids whose calls fail retryably (503), and run ids whose calls block until released. */
  const failing = new Set<string>();
  const blocking = new Set<string>();
  const releases: (() => void)[] = [];

  beforeAll(async () => {
    // Backoff pinned to its whole bound: a retry waits exactly its policy's initialDelaySeconds.
    scheduler = await startScheduler({ workerConcurrency: 0, random: () => 1 });
    target = await startTarget((call) => {
      const runId = String(call.headers['x-run-id']);
      if (failing.has(runId)) return { status: 503 };
      if (blocking.has(runId)) return new Promise((resolve) => releases.push(() => resolve({ status: 200 })));
      return { status: 200 };
    });
  });
  afterAll(async () => {
    releases.forEach((release) => release());
    await scheduler.stop();
    await target.stop();
  });

  const worker = (at: number, id: string) => scheduler.workerDeps(id, () => at);

  /**
   * A cron job every minute whose first occurrence (at `at`) failed retryably: its retry (attempt 2)
   * is due `retryDelaySeconds` after the failure. `second` is the next occurrence, not yet leased.
   */
  async function failedOccurrence(policy: string, retryDelaySeconds: number) {
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, {
        overlapPolicy: policy,
        schedule: { kind: 'cron', expression: '* * * * *', timezone: 'UTC' },
        retryPolicy: { maxAttempts: 3, initialDelaySeconds: retryDelaySeconds, maxDelaySeconds: retryDelaySeconds },
      }),
    );
    expect(created.status).toBe(201);
    const jobId = created.body.job.jobId as string;
    const first = created.body.job.nextRunId as string;
    const at = Date.parse(created.body.job.nextRunAt);
    failing.add(first);
    expect(await executeRun(worker(at + 100, 'w1'), first)).toBe('failed');
    const retry = `${first.slice(0, first.lastIndexOf('.'))}.2`;
    expect(await scheduler.deps.runs.get(retry)).toMatchObject({ trigger: 'retry', attempt: 2 });
    const second = (await scheduler.api('GET', `/v1/jobs/${jobId}`)).body.nextRunId as string;
    expect(second).not.toBe(retry);
    return { jobId, first, retry, second, at };
  }

  /** The retry leased by a worker and inside its (blocked) target call; `result` settles once it is released. */
  async function retryRunning(retry: string, at: number): Promise<{ readonly result: Promise<string> }> {
    blocking.add(retry);
    const result = executeRun(worker(at + 5_000, 'w-retry'), retry);
    await eventually(
      () => Promise.resolve(target.calls.some((call) => call.headers['x-run-id'] === retry)),
      (called) => called,
    );
    return { result };
  }

  it.each(['skip', 'buffer-one'] as const)("%s: the next occurrence does not start beside the previous one's retry, running", async (policy) => {
    const { retry, second, at } = await failedOccurrence(policy, 1);
    const retrying = (await retryRunning(retry, at)).result;
    // Before, admission judged attempt 1 (FAILED, not running) and the next occurrence ran beside its retry.
    const secondResult = await executeRun(worker(at + MINUTE + 100, 'w2'), second);
    if (policy === 'skip') {
      expect(secondResult).toBe('skipped');
      expect(await scheduler.deps.runs.get(second)).toMatchObject({
        status: 'SKIPPED',
        reason: expect.stringContaining(`run ${retry} is still running (overlapPolicy skip)`),
      });
    } else {
      expect(secondResult).toBe('waiting');
      expect(await scheduler.deps.runs.get(second)).toMatchObject({ status: 'QUEUED', reason: expect.stringContaining(`waiting for run ${retry} to finish`) });
    }
    releases.splice(0).forEach((release) => release());
    expect(await retrying).toBe('succeeded');
  });

  it("cancel-running: cancels the previous occurrence's running retry, and the next occurrence runs", async () => {
    const { retry, second, at } = await failedOccurrence('cancel-running', 1);
    const retrying = (await retryRunning(retry, at)).result;
    expect(await executeRun(worker(at + MINUTE + 100, 'w2'), second)).toBe('succeeded');
    expect(await scheduler.deps.runs.get(retry)).toMatchObject({ status: 'CANCELLED', reason: expect.stringMatching(/cancel-running/) });
    releases.splice(0).forEach((release) => release());
    // Its worker's outcome is fenced by the cancel.
    expect(await retrying).toBe('fenced');
  });

  it.each(['skip', 'buffer-one', 'cancel-running'] as const)(
    '%s: a retry waiting out its backoff past the next fire time is the previous occurrence still in flight',
    async (policy) => {
      // The retry is due five minutes after the failure: four fire times after it come first.
      const { retry, second, at } = await failedOccurrence(policy, 300);
      expect((await scheduler.deps.runs.get(retry))?.status).toMatch(/^(SCHEDULED|QUEUED)$/);
      const secondResult = await executeRun(worker(at + MINUTE + 100, 'w2'), second);
      if (policy === 'skip') {
        // Before, it ran, and the retry ran four minutes later beside another occurrence.
        expect(secondResult).toBe('skipped');
        expect(await scheduler.deps.runs.get(second)).toMatchObject({ status: 'SKIPPED', reason: expect.stringContaining(`run ${retry} is still running`) });
        expect((await scheduler.deps.runs.get(retry))?.status).toMatch(/^(SCHEDULED|QUEUED)$/);
      } else if (policy === 'buffer-one') {
        expect(secondResult).toBe('waiting');
        expect(await scheduler.deps.runs.get(second)).toMatchObject({ status: 'QUEUED', reason: expect.stringMatching(/buffer-one/) });
      } else {
        // The retry is retired, never to run: the next occurrence takes its place.
        expect(secondResult).toBe('succeeded');
        expect(await scheduler.deps.runs.get(retry)).toMatchObject({ status: 'CANCELLED', reason: expect.stringMatching(/cancel-running/) });
        expect(await executeRun(worker(at + 6 * MINUTE, 'w3'), retry)).toBe('duplicate');
      }
    },
  );

  it('follows the occurrence through every retry made: attempt 2 failed too, attempt 3 runs', async () => {
    const { retry, second, at } = await failedOccurrence('skip', 1);
    failing.add(retry);
    expect(await executeRun(worker(at + 5_000, 'w-retry'), retry)).toBe('failed');
    const third = `${retry.slice(0, retry.lastIndexOf('.'))}.3`;
    blocking.add(third);
    const retrying = executeRun(worker(at + 10_000, 'w-third'), third);
    await eventually(
      () => Promise.resolve(target.calls.some((call) => call.headers['x-run-id'] === third)),
      (called) => called,
    );
    expect(await executeRun(worker(at + MINUTE + 100, 'w2'), second)).toBe('skipped');
    expect((await scheduler.deps.runs.get(second))?.reason).toContain(`run ${third} is still running`);
    releases.splice(0).forEach((release) => release());
    expect(await retrying).toBe('succeeded');
  });

  it('a previous occurrence whose retry succeeded does not hold the next one', async () => {
    const { retry, second, at } = await failedOccurrence('skip', 1);
    expect(await executeRun(worker(at + 5_000, 'w-retry'), retry)).toBe('succeeded');
    expect(await executeRun(worker(at + MINUTE + 100, 'w2'), second)).toBe('succeeded');
  });
});

describe('repairs by the ticker', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0, tuning: { redeliveryGraceSeconds: 60 } });
    target = await startTarget();
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  it('resumes the chain of a recurring job whose pending run ended without starting the next', async () => {
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { schedule: { kind: 'cron', expression: '* * * * *', timezone: 'UTC' }, misfirePolicy: 'skip' }),
    );
    const { jobId, nextRunId } = created.body.job;
    // The pending run is lost: it ended before it ever started the next occurrence.
    await scheduler.deps.runs.retirePending(nextRunId, 'CANCELLED', 'lost in a test', Date.now());
    const later = Date.now() + 5 * MINUTE;
    const reports = await Promise.all([tick(scheduler.workerDeps('t1', () => later)), tick(scheduler.workerDeps('t2', () => later))]);
    expect(reports.reduce((sum, r) => sum + r.repairedJobs, 0)).toBe(1);
    const repaired = (await scheduler.api('GET', `/v1/jobs/${jobId}`)).body;
    expect(Date.parse(repaired.nextRunAt)).toBeGreaterThan(later);
    expect(repaired.nextRunId).not.toBe(nextRunId);
    expect((await scheduler.deps.runs.get(repaired.nextRunId))?.status).toBe('QUEUED');
  });

  it('a tick out of time for repairs records itself and leaves them to the next tick', async () => {
    const jobs = [];
    for (let i = 0; i < 3; i++) {
      const created = await scheduler.api(
        'POST',
        '/v1/jobs',
        jobBody(target.url, { schedule: { kind: 'cron', expression: '* * * * *', timezone: 'UTC' }, misfirePolicy: 'skip' }),
      );
      await scheduler.deps.runs.retirePending(created.body.job.nextRunId, 'CANCELLED', 'lost in a test', Date.now());
      jobs.push(created.body.job as { jobId: string; nextRunId: string });
    }
    const later = Date.now() + 5 * MINUTE;
    const ticker = scheduler.workerDeps('ticker', () => later);
    // No time for repairs: none is made, and the tick is still recorded (its cursor moves on).
    const hurried = await tick(ticker, undefined, { repairBudgetMs: 0 });
    expect(hurried.repairedJobs).toBe(0);
    expect((await scheduler.deps.state.ticker()).lastCompletedAt).toBe(new Date(later).toISOString());
    for (const job of jobs) expect((await scheduler.api('GET', `/v1/jobs/${job.jobId}`)).body.nextRunId).toBe(job.nextRunId);
    // The next tick repairs them.
    expect((await tick(ticker)).repairedJobs).toBeGreaterThanOrEqual(3);
    for (const job of jobs) expect((await scheduler.api('GET', `/v1/jobs/${job.jobId}`)).body.nextRunId).not.toBe(job.nextRunId);
  });

  it.each([
    ['fire-once', 'the latest missed fire time, once', 4, /^repaired: missed occurrences fire once/],
    ['backfill', 'the missed fire times from the first', 1, /^repaired: backfilling missed occurrences/],
  ] as const)(
    'picks up a chain that stopped after its pending run ended by its misfire policy (%s: %s), as a resume does',
    async (misfirePolicy, _what, minutesOn, reason) => {
      const created = await scheduler.api(
        'POST',
        '/v1/jobs',
        jobBody(target.url, { schedule: { kind: 'cron', expression: '* * * * *', timezone: 'UTC' }, misfirePolicy }),
      );
      const { jobId, nextRunId, nextRunAt } = created.body.job;
      const pendingAt = Date.parse(nextRunAt);
      await scheduler.deps.runs.retirePending(nextRunId, 'CANCELLED', 'lost in a test', Date.now());
      // Found 4.5 minutes on: the four fire times after the lost one have passed.
      const later = pendingAt + 4 * MINUTE + 30_000;
      expect((await tick(scheduler.workerDeps('t1', () => later))).repairedJobs).toBe(1);
      const repaired = (await scheduler.api('GET', `/v1/jobs/${jobId}`)).body;
      // Before, the repair went on from the first fire time after now whatever the policy: the
      // missed ones never ran.
      expect(repaired.nextRunAt).toBe(new Date(pendingAt + minutesOn * MINUTE).toISOString());
      expect(await scheduler.deps.runs.get(repaired.nextRunId)).toMatchObject({ status: 'QUEUED', attempt: 1, reason: expect.stringMatching(reason) });
    },
  );

  // An active job's byNextRun key sits up to half the grace (30 s here) before its pending occurrence (decision 0161).
  it("a job's byNextRun key sits at or before its pending occurrence, so a chain that stopped is repaired the first tick past the grace, as before", async () => {
    // Every minute at :17, so that the occurrence is not on the key's 30 s grid.
    const anchor = new Date(Math.floor(Date.now() / MINUTE) * MINUTE + 17_000).toISOString();
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: { kind: 'every', interval: 'PT1M', anchor } }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { jobId, nextRunId, nextRunAt } = created.body.job;
    const due = Date.parse(nextRunAt);
    const item = (await scheduler.clients.dynamo.send(new GetCommand({ TableName: scheduler.config.jobsTable, Key: jobKey(jobId), ConsistentRead: true })))
      .Item;
    // Rounded down to the 30 s grid: the minute's :00, 17 s before the occurrence.
    expect(Date.parse(String(item?.nextRunAt))).toBe(due - 17_000);
    expect(item?.pendingAt).toBe(nextRunAt);

    await scheduler.deps.runs.retirePending(nextRunId, 'CANCELLED', 'lost in a test', Date.now());
    // Just inside the grace: nothing is repaired (the key is 17 s older, but the occurrence is not).
    expect((await tick(scheduler.workerDeps('t1', () => due + 59_000))).repairedJobs).toBe(0);
    expect((await scheduler.api('GET', `/v1/jobs/${jobId}`)).body.nextRunId).toBe(nextRunId);
    // Just past it: repaired.
    expect((await tick(scheduler.workerDeps('t2', () => due + 61_000))).repairedJobs).toBe(1);
    expect((await scheduler.api('GET', `/v1/jobs/${jobId}`)).body.nextRunId).not.toBe(nextRunId);
  });

  it('goes on past a job it cannot repair: the others are repaired and resumed, and the tick is recorded', async () => {
    const everyMinute = { kind: 'cron', expression: '* * * * *', timezone: 'UTC' };
    const lostChain = async (): Promise<{ jobId: string; nextRunId: string }> => {
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: everyMinute }));
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      await scheduler.deps.runs.retirePending(created.body.job.nextRunId, 'CANCELLED', 'lost in a test', Date.now());
      return created.body.job;
    };
    const broken = await lostChain();
    const other = await lostChain();
    const paused = (await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: everyMinute }))).body.job.jobId as string;
    const pause = await scheduler.api('POST', `/v1/jobs/${paused}/pause`, { until: new Date(Date.now() + 2 * MINUTE).toISOString() });
    expect(pause.status, JSON.stringify(pause.body)).toBe(200);

    const later = Date.now() + 5 * MINUTE;
    const deps = scheduler.workerDeps('t-broken', () => later);
    const read = deps.jobs.getAnyTenant.bind(deps.jobs);
    // The store fails on the one job's item (as on an item it cannot return), at every read.
    deps.jobs.getAnyTenant = async (jobId, ...rest) => {
      if (jobId === broken.jobId) throw new Error('the store could not return the item');
      return read(jobId, ...rest);
    };
    const report = await tick(deps);
    expect(report.failedRepairs).toBe(1);
    expect((await scheduler.api('GET', `/v1/jobs/${other.jobId}`)).body.nextRunId).not.toBe(other.nextRunId);
    expect(report.resumed).toBe(1);
    expect((await scheduler.api('GET', `/v1/jobs/${paused}`)).body.status).toBe('ACTIVE');
    expect((await scheduler.deps.state.ticker()).lastReport).toMatchObject({ failedRepairs: 1 });
    // The next tick, with the store answering again, repairs it.
    expect((await tick(scheduler.workerDeps('t-after', () => later + 1_000))).failedRepairs).toBe(0);
    expect((await scheduler.api('GET', `/v1/jobs/${broken.jobId}`)).body.nextRunId).not.toBe(broken.nextRunId);
  });
});

describe('schedule preview', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
  });
  afterAll(async () => scheduler.stop());

  it('returns the next fire times in UTC from a given instant and creates nothing', async () => {
    const preview = await scheduler.api('POST', '/v1/schedules/preview', {
      schedule: { kind: 'cron', expression: '30 2 * * *', timezone: 'America/New_York' },
      from: '2026-03-07T00:00:00Z',
      count: 3,
    });
    expect(preview.status).toBe(200);
    expect(preview.body.fireTimes).toEqual(['2026-03-07T07:30:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-09T06:30:00.000Z']);
    const five = await scheduler.api('POST', '/v1/schedules/preview', { schedule: { kind: 'cron', expression: '0 * * * *', timezone: 'UTC' } });
    expect(five.body.fireTimes).toHaveLength(5);
    expect(await scheduler.countItems('runs')).toBe(0);
  });

  it('names the failing field of an invalid, unknown-zone or never-firing schedule', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ schedule: { kind: 'cron', expression: '0 0 30 2 *', timezone: 'UTC' } }, 'schedule.expression'],
      [{ schedule: { kind: 'cron', expression: 'every day', timezone: 'UTC' } }, 'schedule.expression'],
      [{ schedule: { kind: 'cron', expression: '0 9 * * *', timezone: 'Moon/Crater' } }, 'schedule.timezone'],
      [{ schedule: { kind: 'cron', expression: '0 9 * * *' }, count: 101 }, 'count'],
    ];
    for (const [body, path] of cases) {
      const response = await scheduler.api('POST', '/v1/schedules/preview', body);
      expect(response.status).toBe(400);
      expect(response.body.errors.map((e: { path: string }) => e.path)).toEqual([path]);
    }
  });
});
