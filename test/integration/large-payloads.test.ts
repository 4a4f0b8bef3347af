// Payloads over 4 KiB live in the payload bucket (decision 0162): the item names the object, the
// worker reads it once to deliver the run, the API shows it. Up to 1 MiB is accepted; a deployment
// without a bucket keeps 64 KiB inline. Against the emulator's S3 (moto), with a real HTTP target.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { DeleteObjectCommand, GetObjectTaggingCommand, HeadObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { jobKey, runKey } from '../../lambdas/store/keys';
import { INLINE_PAYLOAD_MAX_BYTES, MAX_JOB_PAYLOAD_BYTES, MAX_INLINE_ONLY_PAYLOAD_BYTES } from '../../lambdas/domain/payload';
import { sweepJobPayloads } from '../../lambdas/app/payload-sweep';
import { payloadOrEnd } from '../../lambdas/app/leased-run';
import type { Scheduler, TargetServer } from './harness';
import { eventually, jobBody, leaseRequest, startScheduler, startTarget } from './harness';

/** A payload of exactly `bytes` bytes of JSON: `{"blob":"x…x"}` is 11 bytes around the text. */
const payloadOf = (bytes: number, fill = 'x') => ({ blob: fill.repeat(bytes - 11) });

describe('large payloads', () => {
  let scheduler: Scheduler;
  let bucketless: Scheduler;
  let target: TargetServer;

  beforeAll(async () => {
    target = await startTarget();
    scheduler = await startScheduler({ workerConcurrency: 2 });
    bucketless = await startScheduler({ workerConcurrency: 1, config: { payloadBucket: undefined } });
  });
  afterAll(async () => {
    await scheduler?.stop();
    await bucketless?.stop();
    await target?.stop();
  });

  const bucket = () => scheduler.config.payloadBucket!;
  const jobItem = async (on: Scheduler, jobId: string) =>
    (await on.clients.dynamo.send(new GetCommand({ TableName: on.config.jobsTable, Key: jobKey(jobId), ConsistentRead: true }))).Item!;
  const runItem = async (runId: string) =>
    (await scheduler.clients.dynamo.send(new GetCommand({ TableName: scheduler.config.runsTable, Key: runKey(runId), ConsistentRead: true }))).Item!;
  const keysUnder = async (prefix: string) =>
    ((await scheduler.clients.s3.send(new ListObjectsV2Command({ Bucket: bucket(), Prefix: prefix }))).Contents ?? []).map((object) => object.Key!);
  const tagsOf = async (key: string) =>
    (await scheduler.clients.s3.send(new GetObjectTaggingCommand({ Bucket: bucket(), Key: key }))).TagSet?.map((tag) => `${tag.Key}=${tag.Value}`) ?? [];
  /** A job an hour ahead with a stored payload: its id and its object's key. */
  const createLater = async (payload: unknown) => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: { kind: 'delay', seconds: 3600 }, payload }));
    expect(created.status).toBe(201);
    const jobId = created.body.job.jobId as string;
    return { jobId, key: (await jobItem(scheduler, jobId)).payloadRef.key as string };
  };
  const finished = (runId: string, on = scheduler) =>
    eventually(
      async () => (await on.api('GET', `/v1/runs/${runId}`)).body,
      (run) => Boolean(run.finishedAt),
      60_000,
    );
  const delivered = (marker: string) =>
    eventually(
      () => Promise.resolve(target.calls.find((call) => call.body.includes(marker))),
      (call) => call !== undefined,
      60_000,
    );

  it('stores a payload over 4 KiB in the bucket, names it from a small job item, and delivers it whole', async () => {
    const payload = { marker: 'large-1', ...payloadOf(300_000) };
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { payload }));
    expect(created.status).toBe(201);
    expect(created.body.job.payload).toEqual(payload);
    expect(created.body.job.payloadStored).toEqual({ bytes: JSON.stringify(payload).length });

    const item = await jobItem(scheduler, created.body.job.jobId);
    expect(item.payloadJson).toBeUndefined();
    expect(item.payloadRef.key).toMatch(new RegExp(`^jobs/${scheduler.tenantId}/${created.body.job.jobId}/[0-9a-f-]{36}\\.json$`));
    // The item is what a write pays for: a few hundred bytes, not the payload's 300 KB.
    expect(JSON.stringify(item).length).toBeLessThan(2_000);
    const head = await scheduler.clients.s3.send(new HeadObjectCommand({ Bucket: bucket(), Key: item.payloadRef.key }));
    expect(head.ContentLength).toBe(item.payloadRef.bytes);

    const call = await delivered('large-1');
    expect(JSON.parse(call!.body)).toEqual(payload);
    expect((await finished(created.body.job.nextRunId)).status).toBe('SUCCEEDED');
  });

  it('keeps a payload of 4 KiB inline, and accepts 1 MiB but not a byte more', async () => {
    const small = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { payload: payloadOf(INLINE_PAYLOAD_MAX_BYTES) }));
    expect(small.status).toBe(201);
    expect(small.body.job.payloadStored).toBeUndefined();
    const item = await jobItem(scheduler, small.body.job.jobId);
    expect(item.payloadRef).toBeUndefined();
    expect(JSON.parse(String(item.payloadJson))).toEqual(payloadOf(INLINE_PAYLOAD_MAX_BYTES));

    const delayed = { schedule: { kind: 'delay', seconds: 3600 } };
    const largest = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { ...delayed, payload: payloadOf(MAX_JOB_PAYLOAD_BYTES) }));
    expect(largest.status).toBe(201);
    expect(largest.body.job.payloadStored).toEqual({ bytes: MAX_JOB_PAYLOAD_BYTES });

    const before = await keysUnder(`jobs/${scheduler.tenantId}/`);
    const over = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { ...delayed, payload: payloadOf(MAX_JOB_PAYLOAD_BYTES + 1) }));
    expect(over.status).toBe(400);
    expect(over.body.errors).toEqual([expect.objectContaining({ path: 'payload', message: expect.stringMatching(/at most 1048576 bytes/) })]);
    // Refused before anything was stored.
    expect(await keysUnder(`jobs/${scheduler.tenantId}/`)).toEqual(before);
  });

  it('refuses a payload larger than what the target can carry, before storing anything', async () => {
    const refused = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { target: { kind: 'eventbridge', eventBusName: 'default', detailType: 'd', source: 's' }, payload: payloadOf(300_000) }),
    );
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toContainEqual(
      expect.objectContaining({ path: 'payload', message: expect.stringMatching(/eventbridge target's message limit/) }),
    );
  });

  it('deletes the object of a create that was not written (a taken name)', async () => {
    const name = `taken-${Date.now()}`;
    const delayed = { name, schedule: { kind: 'delay', seconds: 3600 } };
    expect((await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { ...delayed, payload: payloadOf(10_000) }))).status).toBe(201);
    const before = await keysUnder(`jobs/${scheduler.tenantId}/`);
    const again = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { ...delayed, payload: payloadOf(20_000) }));
    expect(again.status).toBe(409);
    expect(await keysUnder(`jobs/${scheduler.tenantId}/`)).toEqual(before);
  });

  it('shows stored payloads in GET, and in a list up to 64 KiB each; larger ones as payloadStored with payload null', async () => {
    const label = { batch: `list-${Date.now()}` };
    const delayed = { schedule: { kind: 'delay', seconds: 3600 }, labels: label };
    const medium = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { ...delayed, payload: payloadOf(10_000) }));
    const large = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { ...delayed, payload: payloadOf(MAX_INLINE_ONLY_PAYLOAD_BYTES + 1) }));
    const listed = await scheduler.api('GET', `/v1/jobs?label=batch=${label.batch}`);
    expect(listed.status).toBe(200);
    const byId = new Map(listed.body.items.map((job: { jobId: string }) => [job.jobId, job]));
    expect(byId.get(medium.body.job.jobId)).toMatchObject({ payload: payloadOf(10_000), payloadStored: { bytes: 10_000 } });
    expect(byId.get(large.body.job.jobId)).toMatchObject({ payload: null, payloadStored: { bytes: MAX_INLINE_ONLY_PAYLOAD_BYTES + 1 } });

    const shown = await scheduler.api('GET', `/v1/jobs/${large.body.job.jobId}`);
    expect(shown.body.payload).toEqual(payloadOf(MAX_INLINE_ONLY_PAYLOAD_BYTES + 1));
    expect(shown.body.payloadStored).toEqual({ bytes: MAX_INLINE_ONLY_PAYLOAD_BYTES + 1 });
  });

  it('a PATCH stores the new payload and tags the one it replaced for the lifecycle rule; a small one goes back inline', async () => {
    const { jobId, key: first } = await createLater(payloadOf(10_000, 'a'));
    expect(await tagsOf(first)).toEqual([]);

    const patched = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { payload: payloadOf(20_000, 'b') });
    expect(patched.status).toBe(200);
    expect(patched.body.payload).toEqual(payloadOf(20_000, 'b'));
    const second = (await jobItem(scheduler, jobId)).payloadRef.key as string;
    expect(second).not.toBe(first);
    expect(await tagsOf(first)).toEqual(['superseded=true']);
    expect(await tagsOf(second)).toEqual([]);

    // A PATCH of something else keeps the stored payload as it is.
    const renamedType = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { priority: 'high' });
    expect(renamedType.body.payload).toEqual(payloadOf(20_000, 'b'));
    expect((await jobItem(scheduler, jobId)).payloadRef.key).toBe(second);

    const inline = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { payload: { small: true } });
    expect(inline.body.payload).toEqual({ small: true });
    expect(inline.body.payloadStored).toBeUndefined();
    const item = await jobItem(scheduler, jobId);
    expect(item.payloadRef).toBeUndefined();
    expect(item.payloadJson).toBe('{"small":true}');
    expect(await tagsOf(second)).toEqual(['superseded=true']);

    // A target that cannot carry the payload the job has is refused, naming it.
    await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { payload: payloadOf(300_000) });
    const toBus = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { target: { kind: 'eventbridge', eventBusName: 'default', detailType: 'd', source: 's' } });
    expect(toBus.status).toBe(400);
    expect(toBus.body.errors).toContainEqual(
      expect.objectContaining({ path: 'payload', message: expect.stringMatching(/^the stored payload must be at most/) }),
    );
  });

  it("a trigger's large payload is its run's own: stored under runs/, delivered instead of the job's", async () => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: { kind: 'delay', seconds: 3600 }, payload: { own: 'job' } }));
    const payload = { marker: 'trigger-1', ...payloadOf(200_000) };
    const triggered = await scheduler.api('POST', `/v1/jobs/${created.body.job.jobId}/trigger`, { payload });
    expect(triggered.status).toBe(202);
    const item = await runItem(triggered.body.run.runId);
    expect(item.payloadOverrideJson).toBeUndefined();
    expect(item.payloadOverrideRef.key).toMatch(new RegExp(`^runs/${scheduler.tenantId}/${created.body.job.jobId}/`));
    const call = await delivered('trigger-1');
    expect(JSON.parse(call!.body)).toEqual(payload);
    expect((await finished(triggered.body.run.runId)).status).toBe('SUCCEEDED');
  });

  it("a trigger's payload, inline or stored, is its retries' and its replay's too, not the job's", async () => {
    // Every call fails: the trigger's run is retried once, ends DEAD, and is replayed.
    const failing = await startTarget(() => ({ status: 500 }));
    try {
      for (const [marker, size] of [
        ['own-inline', 100],
        ['own-stored', 50_000],
      ] as const) {
        const created = await scheduler.api(
          'POST',
          '/v1/jobs',
          jobBody(failing.url, {
            schedule: { kind: 'delay', seconds: 3600 },
            payload: { own: 'job' },
            retryPolicy: { maxAttempts: 2, initialDelaySeconds: 0, maxDelaySeconds: 1 },
          }),
        );
        expect(created.status).toBe(201);
        const payload = { marker, ...payloadOf(size) };
        const triggered = await scheduler.api('POST', `/v1/jobs/${created.body.job.jobId}/trigger`, { payload });
        expect(triggered.status).toBe(202);
        const dead = await eventually(
          async () => (await scheduler.api('GET', `/v1/jobs/${created.body.job.jobId}/runs`)).body.items as { runId: string; status: string }[],
          (runs) => runs.some((run) => run.status === 'DEAD'),
          60_000,
        );
        const replay = await scheduler.api('POST', `/v1/runs/${dead.find((run) => run.status === 'DEAD')!.runId}/replay`);
        expect(replay.status).toBe(202);
        // The trigger, its retry, the replay and the replay's retry (a fresh budget of two attempts).
        const bodies = await eventually(
          () => Promise.resolve(failing.calls.filter((call) => call.body.includes(marker)).map((call) => JSON.parse(call.body) as unknown)),
          (found) => found.length >= 4,
          60_000,
        );
        // Before, the retries and the replay were delivered the job's payload ({ own: 'job' }).
        expect(bodies).toEqual([payload, payload, payload, payload]);
        expect(failing.calls.filter((call) => call.body.includes('"own"'))).toEqual([]);
      }
    } finally {
      await failing.stop();
    }
  });

  it('an Idempotency-Key replay answers the first create with its payload and stores nothing more', async () => {
    const before = (await keysUnder(`jobs/${scheduler.tenantId}/`)).length;
    const body = jobBody(target.url, { schedule: { kind: 'delay', seconds: 3600 }, payload: payloadOf(25_000, 'i') });
    const key = { 'Idempotency-Key': `large-${Date.now()}` };
    const first = await scheduler.api('POST', '/v1/jobs', body, key);
    const again = await scheduler.api('POST', '/v1/jobs', body, key);
    expect([first.status, again.status]).toEqual([201, 201]); // a replay answers as the first did
    expect(again.body.job.jobId).toBe(first.body.job.jobId);
    expect(again.body.job.payload).toEqual(payloadOf(25_000, 'i'));
    expect((await keysUnder(`jobs/${scheduler.tenantId}/`)).length).toBe(before + 1);
  });

  it('a debounced trigger that joins the open window gives the run its large payload, the last one winning', async () => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: { kind: 'delay', seconds: 3600 }, payload: {} }));
    const jobId = created.body.job.jobId as string;
    const first = await scheduler.api('POST', `/v1/jobs/${jobId}/trigger`, { payload: { marker: 'debounce-first', ...payloadOf(20_000) }, debounceSeconds: 3 });
    const last = await scheduler.api('POST', `/v1/jobs/${jobId}/trigger`, { payload: { marker: 'debounce-last', ...payloadOf(30_000) }, debounceSeconds: 3 });
    expect(last.body.run.runId).toBe(first.body.run.runId);
    const item = await runItem(first.body.run.runId);
    expect(item.payloadOverrideJson).toBeUndefined();
    expect(item.payloadOverrideRef.bytes).toBe(JSON.stringify({ marker: 'debounce-last', ...payloadOf(30_000) }).length);
    const call = await delivered('debounce-last');
    expect(JSON.parse(call!.body).marker).toBe('debounce-last');
    expect(target.calls.some((other) => other.body.includes('debounce-first'))).toBe(false);
    // A small payload joining after would go back inline (the carry replaces one form with the other): unit-tested.
  });

  it("a worker that read the job before a PATCH replaced its payload, whose old object is gone, delivers the job's new payload", async () => {
    const { jobId, key } = await createLater({ marker: 'before-patch', ...payloadOf(9_000) });
    const read = (await scheduler.deps.jobs.getAnyTenant(jobId))!;
    const run = (await scheduler.deps.runs.get(read.nextRunId!))!;
    const patched = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { payload: { marker: 'after-patch', ...payloadOf(9_000) } });
    expect(patched.status).toBe(200);
    // The lifecycle rule counts its day from when the object was stored: an old one goes at once.
    await scheduler.clients.s3.send(new DeleteObjectCommand({ Bucket: bucket(), Key: key }));
    // Before, the run ended DEAD with PAYLOAD_MISSING.
    expect(await payloadOrEnd(scheduler.deps, read, run, undefined, Date.now())).toEqual({ ok: true, payload: { marker: 'after-patch', ...payloadOf(9_000) } });
    expect((await scheduler.deps.runs.get(run.runId))?.status).not.toBe('DEAD');
  });

  it('a worker that read the job before a delete released its payload ends the run CANCELLED, not called with no payload', async () => {
    const { jobId, key } = await createLater({ marker: 'before-delete', ...payloadOf(9_000) });
    const read = (await scheduler.deps.jobs.getAnyTenant(jobId))!;
    const lease = await scheduler.deps.leases.lease(read.nextRunId!, leaseRequest(scheduler.config, 'w', Date.now() + 3_600_000));
    expect(lease.kind).toBe('leased');
    const run = lease.kind === 'leased' ? lease.run : (undefined as never);
    expect((await scheduler.api('DELETE', `/v1/jobs/${jobId}`)).status).toBe(200);
    await scheduler.clients.s3.send(new DeleteObjectCommand({ Bucket: bucket(), Key: key }));
    // Before, the job as re-read (deleted, no payload) gave `null`, and the target was called with it.
    expect(await payloadOrEnd(scheduler.deps, read, run, undefined, Date.now())).toEqual({ ok: false, ended: 'cancelled' });
    expect(await scheduler.deps.runs.get(run.runId)).toMatchObject({ status: 'CANCELLED', reason: 'job deleted' });
  });

  it("gives a replay its own copy of the run's stored payload, so that a chain of replays does not outlive one object", async () => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: { kind: 'delay', seconds: 3600 }, payload: {} }));
    const triggered = await scheduler.api('POST', `/v1/jobs/${created.body.job.jobId}/trigger`, {
      payload: { marker: 'replayed-payload', ...payloadOf(20_000) },
    });
    const original = triggered.body.run.runId as string;
    expect((await finished(original)).status).toBe('SUCCEEDED');
    const replayed = await scheduler.api('POST', `/v1/runs/${original}/replay`);
    expect(replayed.status).toBe(202);
    const [first, second] = [(await runItem(original)).payloadOverrideRef, (await runItem(replayed.body.run.runId)).payloadOverrideRef] as {
      key: string;
      sha256: string;
    }[];
    // Before, the replay named the same object, which leaves with the lifecycle counted from its storing.
    expect(second!.key).not.toBe(first!.key);
    expect(second!.sha256).toBe(first!.sha256);
    expect((await finished(replayed.body.run.runId)).status).toBe('SUCCEEDED');
    expect(target.calls.filter((call) => call.body.includes('replayed-payload'))).toHaveLength(2);
  });

  it("ends a run DEAD, saying why, when its payload's object is gone", async () => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: { kind: 'delay', seconds: 3600 }, payload: {} }));
    // Debounced, the run waits two seconds: long enough to take its object away.
    const triggered = await scheduler.api('POST', `/v1/jobs/${created.body.job.jobId}/trigger`, { payload: payloadOf(50_000), debounceSeconds: 2 });
    expect(triggered.status).toBe(202);
    const { key } = (await runItem(triggered.body.run.runId)).payloadOverrideRef as { key: string };
    await scheduler.clients.s3.send(new DeleteObjectCommand({ Bucket: bucket(), Key: key }));
    const run = await finished(triggered.body.run.runId);
    expect(run.status).toBe('DEAD');
    expect(run.error).toMatchObject({ code: 'PAYLOAD_MISSING', retryable: false });
    expect(run.reason).toBe('its payload is no longer stored');
  });

  it("hands an external worker's claim the stored payload; a run whose object is gone is not offered but ends DEAD", async () => {
    const jobType = `ext-${Date.now()}`;
    const external = { type: jobType, target: { kind: 'external' } };
    const kept = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { ...external, payload: payloadOf(30_000, 'k') }));
    // Due 8 s on, so that its object is gone before a worker leases it. Leased first (on a loaded CI
    // machine the worker once beat the delete), it would be offered, claimed below, never end DEAD.
    const gone = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { ...external, schedule: { kind: 'delay', seconds: 8 }, payload: payloadOf(30_000, 'g') }),
    );
    await scheduler.clients.s3.send(new DeleteObjectCommand({ Bucket: bucket(), Key: (await jobItem(scheduler, gone.body.job.jobId)).payloadRef.key }));
    // Both are offered once the worker has leased them; the claims take them in either order.
    const claims: { runId: string; payload: unknown }[] = [];
    await eventually(
      async () => {
        const claim = await scheduler.api('POST', '/v1/workers/claim', { jobType, waitSeconds: 1 });
        if (claim.status === 200) claims.push({ runId: claim.body.run.runId, payload: claim.body.payload });
        return (await scheduler.api('GET', `/v1/runs/${gone.body.job.nextRunId}`)).body.status === 'DEAD' && claims.length > 0;
      },
      (done) => done,
      60_000,
    );
    expect(claims.map((claim) => claim.runId)).toEqual([kept.body.job.nextRunId]);
    expect(claims[0]!.payload).toEqual(payloadOf(30_000, 'k'));
    const dead = (await scheduler.api('GET', `/v1/runs/${gone.body.job.nextRunId}`)).body;
    expect(dead.error).toMatchObject({ code: 'PAYLOAD_MISSING', retryable: false });
    // The job itself still answers, its payload shown as null beside its size.
    const shown = await scheduler.api('GET', `/v1/jobs/${gone.body.job.jobId}`);
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ payload: null, payloadStored: { bytes: 30_000 } });
  });

  it("a DELETE releases the job's stored payload to the lifecycle rule; the sweep takes one a job deleted earlier kept", async () => {
    const { jobId, key } = await createLater(payloadOf(12_000, 'd'));
    const deleted = await scheduler.api('DELETE', `/v1/jobs/${jobId}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.status).toBe('CANCELLED');
    expect((await jobItem(scheduler, jobId)).payloadRef).toBeUndefined();
    expect(await tagsOf(key)).toEqual(['superseded=true']);
    // A second DELETE writes nothing and answers the deleted job.
    expect((await scheduler.api('DELETE', `/v1/jobs/${jobId}`)).status).toBe(200);

    // A job deleted while deletes still kept the payload's name: the sweep does not count it named.
    const { jobId: older, key: kept } = await createLater(payloadOf(12_000, 'o'));
    await scheduler.clients.dynamo.send(
      new UpdateCommand({
        TableName: scheduler.config.jobsTable,
        Key: jobKey(older),
        UpdateExpression: 'SET #status = :cancelled',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':cancelled': 'CANCELLED' },
      }),
    );
    const swept = await sweepJobPayloads(
      { payloads: scheduler.deps.payloads!, jobsById: (ids) => scheduler.deps.jobs.getManyAnyTenant(ids) },
      { storedBefore: Date.now() + 60_000, dryRun: true },
    );
    expect(swept.unnamed).toContain(kept);
  });

  it('the sweep tags the objects no job names (a write that crashed before its job) and leaves named and young ones', async () => {
    const { jobId, key: named } = await createLater(payloadOf(9_000, 'n'));
    // What a create that crashed after its PUT leaves: an object for a job that was never written.
    const crashed = await scheduler.deps.payloads!.putForJob(scheduler.tenantId, 'job_never_written', payloadOf(9_000, 'c'));
    const sweep = (storedBefore: number, dryRun: boolean) =>
      sweepJobPayloads({ payloads: scheduler.deps.payloads!, jobsById: (ids) => scheduler.deps.jobs.getManyAnyTenant(ids) }, { storedBefore, dryRun });

    const dry = await sweep(Date.now() + 60_000, true);
    expect(dry.unnamed).toContain(crashed.key);
    expect(dry.unnamed).not.toContain(named);
    expect(await tagsOf(crashed.key)).toEqual([]); // a dry run tags nothing

    // Objects stored after the cutoff are their writers' still: left alone.
    const young = await sweep(Date.now() - 3600_000, false);
    expect(young.unnamed).toEqual([]);
    expect(young.young).toBe(young.objects);
    expect(await tagsOf(crashed.key)).toEqual([]);

    const swept = await sweep(Date.now() + 60_000, false);
    expect(swept.unnamed).toContain(crashed.key);
    expect(swept.unnamed).not.toContain(named);
    expect(swept.named).toBeGreaterThan(0);
    expect(await tagsOf(crashed.key)).toEqual(['superseded=true']);
    expect(await tagsOf(named)).toEqual([]);
    // The job still delivers its payload.
    expect((await scheduler.api('GET', `/v1/jobs/${jobId}`)).body.payload).toEqual(payloadOf(9_000, 'n'));
  });

  it('without a payload bucket keeps every payload inline, up to 64 KiB', async () => {
    const kept = await bucketless.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { payload: { marker: 'bucketless', ...payloadOf(MAX_INLINE_ONLY_PAYLOAD_BYTES - 100) } }),
    );
    expect(kept.status).toBe(201);
    expect(kept.body.job.payloadStored).toBeUndefined();
    expect((await jobItem(bucketless, kept.body.job.jobId)).payloadJson).toBeDefined();
    expect((await finished(kept.body.job.nextRunId, bucketless)).status).toBe('SUCCEEDED');

    const refused = await bucketless.api('POST', '/v1/jobs', jobBody(target.url, { payload: payloadOf(MAX_INLINE_ONLY_PAYLOAD_BYTES + 1) }));
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([expect.objectContaining({ path: 'payload', message: expect.stringMatching(/no payload bucket/) })]);
    const trigger = await bucketless.api('POST', `/v1/jobs/${kept.body.job.jobId}/trigger`, { payload: payloadOf(MAX_INLINE_ONLY_PAYLOAD_BYTES + 1) });
    expect(trigger.status).toBe(400);
  });
});
