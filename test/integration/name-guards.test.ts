// A named create takes its name's guard on its own, before the job's write (decision 0173): what
// concurrent creates, refused creates and creates that fail between the two writes leave, against
// the emulator.
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobKey, jobNameEntryKey } from '../../lambdas/store/keys';
import { ORPHANED_GUARD_AFTER_MS } from '../../lambdas/store/name-guards';
import type { Scheduler, TargetServer } from './harness';
import { jobBody, startScheduler, startTarget } from './harness';
import { startApiFailingJobWrites, startApiHoldingGuardReads, startApiRepeatingPuts } from './support/failing-api';

describe("a job name's guard, taken before the job", () => {
  let scheduler: Scheduler;
  let target: TargetServer;

  beforeAll(async () => {
    // One live job at most, for the refused create below.
    scheduler = await startScheduler({ tenantLimits: { maxActiveJobs: 1 } });
    target = await startTarget();
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  const guardOf = async (name: string) =>
    (
      await scheduler.clients.dynamo.send(
        new GetCommand({ TableName: scheduler.config.jobsTable, Key: jobNameEntryKey(scheduler.tenantId, name), ConsistentRead: true }),
      )
    ).Item;
  const backdate = (name: string, byMs: number) =>
    scheduler.clients.dynamo.send(
      new UpdateCommand({
        TableName: scheduler.config.jobsTable,
        Key: jobNameEntryKey(scheduler.tenantId, name),
        UpdateExpression: 'SET takenAt = :at',
        ExpressionAttributeValues: { ':at': new Date(Date.now() - byMs).toISOString() },
      }),
    );

  // A guard as a create that stopped after it leaves it: naming a job that was never written.
  const orphanGuard = (name: string, jobId: string, ageMs: number) =>
    scheduler.clients.dynamo.send(
      new UpdateCommand({
        TableName: scheduler.config.jobsTable,
        Key: jobNameEntryKey(scheduler.tenantId, name),
        UpdateExpression: 'SET jobId = :jobId, takenAt = :at',
        ExpressionAttributeValues: { ':jobId': jobId, ':at': new Date(Date.now() - ageMs).toISOString() },
      }),
    );

  it('lets one of six concurrent creates of a name through; the others leave no job, run or guard', async () => {
    const before = await scheduler.countJobAndRunItems();
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, index) => scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'one-of-six', payload: { index } }))),
    );
    const statuses = answers.map((answer) => answer.status).sort();
    expect(statuses).toEqual([201, 409, 409, 409, 409, 409]);
    const winner = answers.find((answer) => answer.status === 201)!.body.job;
    // The job and its guard; one run.
    expect(await scheduler.countJobAndRunItems()).toEqual({ jobs: before.jobs + 2, runs: before.runs + 1 });
    expect(await guardOf('one-of-six')).toMatchObject({ jobId: winner.jobId, takenAt: winner.createdAt });
    // A guard whose job exists is never taken over, however old.
    await backdate('one-of-six', ORPHANED_GUARD_AFTER_MS * 2);
    expect((await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'one-of-six' }))).status).toBe(409);
    expect((await guardOf('one-of-six'))?.jobId).toBe(winner.jobId);
  });

  it('gives the name back when the create is refused after taking it', async () => {
    const cron = (name: string) => jobBody(target.url, { name, schedule: { kind: 'cron', expression: '0 0 1 1 *', timezone: 'UTC' } });
    const first = await scheduler.api('POST', '/v1/jobs', cron('live-first'));
    expect(first.status).toBe(201);
    // The tenant's one live job is taken: the second is refused in the job's transaction.
    expect((await scheduler.api('POST', '/v1/jobs', cron('live-second'))).status).toBe(429);
    expect(await guardOf('live-second')).toBeUndefined();
    expect((await scheduler.api('DELETE', `/v1/jobs/${first.body.job.jobId}`)).status).toBe(200);
    const second = await scheduler.api('POST', '/v1/jobs', cron('live-second'));
    expect(second.status).toBe(201);
    expect((await guardOf('live-second'))?.jobId).toBe(second.body.job.jobId);
  });

  it('is taken over by a later create once its own create, failed before the job, is old enough', async () => {
    // An API function whose job write fails before it reaches the store, after the guard's write.
    const api = await startApiFailingJobWrites(scheduler);
    try {
      const response = await api.create(jobBody(`${target.url}/never`, { name: 'half-created' }));
      expect(response.status, await response.text()).toBeGreaterThanOrEqual(500);
      expect(api.failedJobWrites()).toBeGreaterThan(0);
    } finally {
      await api.stop();
    }
    // The guard names a job that was never written.
    const orphan = await guardOf('half-created');
    expect(orphan?.jobId).toEqual(expect.any(String));
    const job = await scheduler.clients.dynamo.send(new GetCommand({ TableName: scheduler.config.jobsTable, Key: jobKey(String(orphan?.jobId)) }));
    expect(job.Item).toBeUndefined();

    // Young, it may be a create still under way: the name is taken.
    expect((await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'half-created' }))).status).toBe(409);
    expect((await guardOf('half-created'))?.jobId).toBe(orphan?.jobId);
    // Old enough, the next create takes it over; two at once, only one of them.
    await backdate('half-created', ORPHANED_GUARD_AFTER_MS + 1000);
    const answers = await Promise.all([0, 1].map(() => scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'half-created' }))));
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 409]);
    const created = answers.find((answer) => answer.status === 201)!.body.job;
    expect((await guardOf('half-created'))?.jobId).toBe(created.jobId);
  });

  it.each([
    ['the job', ['JOB#'], 'retried-job'],
    ['the guard', ['JOBNAMES#'], 'retried-guard'],
    ['the guard, the run and the job', ['JOBNAMES#', 'RUN#', 'JOB#'], 'retried-all'],
  ])('a create whose put of %s was tried again after it landed (its answer lost) is created, with its guard and its run', async (_, prefixes, name) => {
    // The store client's retry meets the item its first try wrote.
    const api = await startApiRepeatingPuts(scheduler, prefixes);
    let created: { jobId: string; nextRunId: string };
    try {
      const response = await api.create(jobBody(target.url, { name }));
      const body = (await response.json()) as { job: { jobId: string; nextRunId: string } };
      expect(response.status, JSON.stringify(body)).toBe(201);
      expect(api.failedJobWrites()).toBe(prefixes.length);
      created = body.job;
    } finally {
      await api.stop();
    }
    expect((await guardOf(name))?.jobId).toBe(created.jobId);
    expect((await scheduler.api('GET', `/v1/jobs/${created.jobId}`)).status).toBe(200);
    expect((await scheduler.api('GET', `/v1/runs/${created.nextRunId}`)).status).toBe(200);
    // The name is held by that job alone.
    expect((await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name }))).status).toBe(409);
  });

  it('is never taken over when written in a transaction with its job (no time), even without its job', async () => {
    // A guard of the form every create wrote before decision 0173, naming no job.
    await scheduler.clients.dynamo.send(
      new UpdateCommand({
        TableName: scheduler.config.jobsTable,
        Key: jobNameEntryKey(scheduler.tenantId, 'old-form'),
        UpdateExpression: 'SET jobId = :jobId',
        ExpressionAttributeValues: { ':jobId': 'job_00000000000000000000000000' },
      }),
    );
    expect((await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'old-form' }))).status).toBe(409);
    expect((await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'old-form' }), { 'idempotency-key': 'old-form' })).status).toBe(409);
  });

  it('is taken over, once orphaned, by a create under an Idempotency-Key, whose retries replay that create', async () => {
    const orphanId = 'job_00000000000000000000000001';
    await orphanGuard('keyed-takeover', orphanId, 0);
    const body = jobBody(target.url, { name: 'keyed-takeover' });
    // Young, it may be a create still under way: the name is taken, and the key left unused.
    expect((await scheduler.api('POST', '/v1/jobs', body, { 'idempotency-key': 'takeover-young' })).status).toBe(409);
    expect((await guardOf('keyed-takeover'))?.jobId).toBe(orphanId);

    // Old enough, the create takes it over; three tries of it at once make one job.
    await backdate('keyed-takeover', ORPHANED_GUARD_AFTER_MS + 1000);
    const before = await scheduler.countJobAndRunItems();
    const answers = await Promise.all([0, 1, 2].map(() => scheduler.api('POST', '/v1/jobs', body, { 'idempotency-key': 'takeover-old' })));
    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201]);
    const jobIds = new Set(answers.map((answer) => answer.body.job.jobId));
    expect(jobIds.size).toBe(1);
    const created = answers[0]!.body.job;
    expect(created.name).toBe('keyed-takeover');
    // Its guard (in the transaction: no time) names the new job; the job, its key's record and one run were written.
    const guard = await guardOf('keyed-takeover');
    expect(guard?.jobId).toBe(created.jobId);
    expect(guard?.takenAt).toBeUndefined();
    expect(await scheduler.countJobAndRunItems()).toEqual({ jobs: before.jobs + 2, runs: before.runs + 1 });
    expect((await scheduler.api('GET', `/v1/jobs/${created.jobId}`)).status).toBe(200);
    expect((await scheduler.api('GET', `/v1/runs/${created.nextRunId}`)).status).toBe(200);

    // The same key and body later: the first answer. Another key, or none: the name is the new job's.
    const replay = await scheduler.api('POST', '/v1/jobs', body, { 'idempotency-key': 'takeover-old' });
    expect(replay.status).toBe(201);
    expect(replay.body.job.jobId).toBe(created.jobId);
    expect((await scheduler.api('POST', '/v1/jobs', body, { 'idempotency-key': 'takeover-other' })).status).toBe(409);
    expect((await scheduler.api('POST', '/v1/jobs', body)).status).toBe(409);
    expect((await guardOf('keyed-takeover'))?.jobId).toBe(created.jobId);
  });

  it("answers a create under an Idempotency-Key that finds its key's own takeover of an orphaned guard with that create", async () => {
    await orphanGuard('keyed-race', 'job_00000000000000000000000002', ORPHANED_GUARD_AFTER_MS + 1000);
    const body = jobBody(target.url, { name: 'keyed-race' });
    // One try's transaction is refused on the orphan; its read of the guard waits while another
    // try of the same create takes the name over and writes the job and the key's record.
    const slow = await startApiHoldingGuardReads(scheduler);
    let jobId: string;
    try {
      const later = slow.create(body, { 'idempotency-key': 'keyed-race' });
      expect(await Promise.race([slow.guardReadHeld.then(() => 'guard read'), later.then((response) => `answered ${response.status}`)])).toBe('guard read');
      const first = await scheduler.api('POST', '/v1/jobs', body, { 'idempotency-key': 'keyed-race' });
      expect(first.status).toBe(201);
      jobId = first.body.job.jobId;
      slow.release();
      // It finds the guard live, and the key's record: the first answer.
      const response = await later;
      const answer = (await response.json()) as { job: { jobId: string } };
      expect(response.status, JSON.stringify(answer)).toBe(201);
      expect(answer.job.jobId).toBe(jobId);
    } finally {
      slow.release();
      await slow.stop();
    }
    expect((await guardOf('keyed-race'))?.jobId).toBe(jobId);
  });

  it('answers a create under an Idempotency-Key 409 on a live guard, however old', async () => {
    const unkeyed = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'keyed-live' }));
    expect(unkeyed.status).toBe(201);
    await backdate('keyed-live', ORPHANED_GUARD_AFTER_MS * 2);
    const keyed = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'keyed-live' }), { 'idempotency-key': 'keyed-live-1' });
    expect(keyed.status).toBe(409);
    expect((await guardOf('keyed-live'))?.jobId).toBe(unkeyed.body.job.jobId);
    // A guard written under a key (no time) whose job exists, given an old time: still its job's.
    const first = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'keyed-live-2' }), { 'idempotency-key': 'keyed-live-2a' });
    expect(first.status).toBe(201);
    await backdate('keyed-live-2', ORPHANED_GUARD_AFTER_MS * 2);
    expect((await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'keyed-live-2' }), { 'idempotency-key': 'keyed-live-2b' })).status).toBe(409);
    expect((await guardOf('keyed-live-2'))?.jobId).toBe(first.body.job.jobId);
  });

  it('is written in the transaction under an Idempotency-Key, whose retries replay the first create', async () => {
    const body = jobBody(target.url, { name: 'idempotent-named' });
    const answers = await Promise.all([0, 1, 2].map(() => scheduler.api('POST', '/v1/jobs', body, { 'idempotency-key': 'named-once' })));
    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201]);
    expect(new Set(answers.map((answer) => answer.body.job.jobId)).size).toBe(1);
    const guard = await guardOf('idempotent-named');
    expect(guard?.jobId).toBe(answers[0]!.body.job.jobId);
    expect(guard?.takenAt).toBeUndefined();
  });
});
