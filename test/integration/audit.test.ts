// The audit trail through the API: who paused job X, from the entries the API appended, and what a
// PATCH changed, with no payload or header value in any entry; the entries of a trigger, a cancel, a
// replay and a bulk replay (each replayed run's trail finds its own), of signing secrets, and of the
// operator's tenant create and limit changes; paging by cursor; and the retention setting driving
// each entry's TTL.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { keyIdOf } from '../../lambdas/store/api-keys-repository';
import { auditObjectPartition, auditTenantPartition } from '../../lambdas/store/keys';
import { emulatorEnvironment } from '../../scripts/local/emulator';
import type { Scheduler, TargetServer } from './harness';
import { awsClients, eventually, jobBody, startScheduler, startTarget } from './harness';

type Entry = { action: string; objectId: string; actor: string; tenantId: string; at: string; changes: Record<string, { before?: unknown; after?: unknown }> };
const run = promisify(execFile);

describe('audit trail', () => {
  let scheduler: Scheduler;
  let target: TargetServer;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
    target = await startTarget();
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  it('answers who paused job X, and what each change did', async () => {
    const body = jobBody(target.url, {
      name: 'audited',
      schedule: { kind: 'cron', expression: '0 9 * * *', timezone: 'UTC' },
      target: { kind: 'http', url: target.url, headers: { authorization: 'Bearer audit-s3cret' } },
      payload: { card: 'payload-marker-4111' },
    });
    const created = await scheduler.api('POST', '/v1/jobs', body);
    const jobId = created.body.job.jobId as string;
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/pause`)).status).toBe(200);
    expect((await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { timeoutSeconds: 120, payload: { card: 'payload-marker-5500' } })).status).toBe(200);
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/resume`)).status).toBe(200);

    const trail = await scheduler.api('GET', `/v1/audit?objectId=${jobId}`);
    expect(trail.status).toBe(200);
    expect(trail.body.items.map((entry: { action: string }) => entry.action)).toEqual(['job.resume', 'job.update', 'job.pause', 'job.create']);
    const paused = trail.body.items.find((entry: { action: string }) => entry.action === 'job.pause');
    // Who: the caller's key id (never the key), when, and what changed.
    expect(paused).toMatchObject({
      actor: keyIdOf(scheduler.apiKey),
      tenantId: scheduler.tenantId,
      objectId: jobId,
      changes: { status: { before: 'ACTIVE', after: 'PAUSED' } },
    });
    expect(Date.parse(paused.at)).toBeGreaterThan(Date.now() - 60_000);
    const updated = trail.body.items.find((entry: { action: string }) => entry.action === 'job.update');
    expect(updated.changes.timeoutSeconds).toMatchObject({ after: 120 });
    expect(updated.changes.payload).toEqual({ before: '(set)', after: '(set)' });
    expect(updated.requested).toEqual(['payload', 'timeoutSeconds']);
    expect(JSON.stringify(trail.body)).not.toMatch(/audit-s3cret|payload-marker|sk_|key_[A-Za-z0-9]{20,}/);
  });

  it('records a header value swapped by name only, and no change for a payload kept apart or a repeated delete', async () => {
    const body = jobBody(target.url, {
      schedule: { kind: 'cron', expression: '0 9 * * *', timezone: 'UTC' },
      target: { kind: 'http', url: target.url, headers: { authorization: 'Bearer old-s3cret', 'x-team': 'team-blue-7731' } },
      // Over 4 KiB: kept in the payload bucket (decision 0162), the job item names it.
      payload: { blob: 'p'.repeat(6_000) },
    });
    const created = await scheduler.api('POST', '/v1/jobs', body);
    expect(created.status).toBe(201);
    const jobId = created.body.job.jobId as string;
    const headers = { authorization: 'Bearer new-s3cret', 'x-team': '<redacted>' };
    expect((await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { target: { kind: 'http', url: target.url, headers } })).status).toBe(200);
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/pause`)).status).toBe(200);
    expect((await scheduler.api('DELETE', `/v1/jobs/${jobId}`)).status).toBe(200);
    expect((await scheduler.api('DELETE', `/v1/jobs/${jobId}`)).status).toBe(200);

    const trail = (await scheduler.api('GET', `/v1/audit?objectId=${jobId}`)).body.items as Entry[];
    expect(trail.map((entry) => entry.action)).toEqual(['job.delete', 'job.pause', 'job.update', 'job.create']);
    const change = (action: string) => trail.find((entry) => entry.action === action)?.changes;
    expect(change('job.update')).toEqual({
      target: {
        before: { kind: 'http', method: 'POST', url: target.url, headerNames: ['authorization', 'x-team'] },
        after: { kind: 'http', method: 'POST', url: target.url, headerNames: ['authorization', 'x-team'], headersChanged: ['authorization'] },
      },
    });
    expect(Object.keys(change('job.pause') ?? {})).toEqual(['status']);
    // A delete releases the payload kept apart (its object goes to the lifecycle rule): shown as gone, never its value.
    expect(change('job.delete')).toMatchObject({
      payload: { before: '(set)' },
      payloadStored: { before: { bytes: expect.any(Number) } },
      status: { after: 'CANCELLED' },
    });
    expect(Object.keys(change('job.delete') ?? {})).toEqual(['payload', 'payloadStored', 'status']);
    expect(JSON.stringify(trail)).not.toMatch(/s3cret|pppp/);
  });

  it('lists newest first within a range, and shows a tenant only its own', async () => {
    const before = new Date().toISOString();
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { name: 'ranged', schedule: { kind: 'cron', expression: '0 9 * * *', timezone: 'UTC' } }),
    );
    const jobId = created.body.job.jobId as string;
    await scheduler.api('DELETE', `/v1/jobs/${jobId}`);
    // A second delete changes nothing, and is not an entry (before, it was a second job.delete).
    expect((await scheduler.api('DELETE', `/v1/jobs/${jobId}`)).status).toBe(200);
    const ranged = await scheduler.api('GET', `/v1/audit?from=${encodeURIComponent(before)}`);
    expect(ranged.body.items.map((entry: { action: string; objectId: string }) => [entry.action, entry.objectId])).toEqual([
      ['job.delete', jobId],
      ['job.create', jobId],
    ]);
    expect((await scheduler.api('GET', '/v1/audit?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z')).status).toBe(400);

    const other = await startScheduler({ workerConcurrency: 0 });
    try {
      expect((await other.api('GET', `/v1/audit?objectId=${jobId}`)).body.items).toEqual([]);
      expect((await other.api('GET', '/v1/audit')).body.items).toEqual([]);
    } finally {
      await other.stop();
    }
  });
});

describe('audit entries of runs, secrets and tenants', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  let actor: string;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 2, config: { auditRetentionDays: 3 } });
    actor = keyIdOf(scheduler.apiKey);
    // Every call is refused for good: a run ends DEAD at its first attempt.
    target = await startTarget(() => ({ status: 400 }));
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  const trailOf = async (objectId: string): Promise<Entry[]> => {
    const answer = await scheduler.api('GET', `/v1/audit?objectId=${encodeURIComponent(objectId)}&limit=100`);
    expect(answer.status).toBe(200);
    return answer.body.items as Entry[];
  };
  const statusOf = async (runId: string) => (await scheduler.api('GET', `/v1/runs/${runId}`)).body.status as string;
  const dead = (runId: string) =>
    eventually(
      () => statusOf(runId),
      (status) => status === 'DEAD',
      30_000,
    );

  it('records a trigger, a cancel, a replay and a bulk replay, each under the run it changed, with who and before/after', async () => {
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { schedule: { kind: 'cron', expression: '0 0 1 1 *' }, retryPolicy: { maxAttempts: 1 } }),
    );
    expect(created.status).toBe(201);
    const jobId = created.body.job.jobId as string;

    // A trigger, under the job, naming its run.
    const triggered = await scheduler.api('POST', `/v1/jobs/${jobId}/trigger`, {});
    expect(triggered.status).toBe(202);
    const manual = triggered.body.run.runId as string;
    expect((await trailOf(jobId))[0]).toMatchObject({ action: 'job.trigger', objectId: jobId, actor, changes: { run: { after: manual } } });

    // A cancel of a run waiting for its time: its status before and after.
    const later = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: { kind: 'delay', seconds: 3600 } }));
    const pending = later.body.job.nextRunId as string;
    expect((await scheduler.api('POST', `/v1/runs/${pending}/cancel`)).status).toBe(200);
    // A second cancel answers the cancelled run and changed nothing: no second entry.
    expect((await scheduler.api('POST', `/v1/runs/${pending}/cancel`)).status).toBe(200);
    expect(await trailOf(pending)).toEqual([
      expect.objectContaining({ action: 'run.cancel', objectId: pending, actor, changes: { status: { before: 'SCHEDULED', after: 'CANCELLED' } } }),
    ]);

    // A replay of the dead manual run, under it, naming the replay.
    await dead(manual);
    const replayed = await scheduler.api('POST', `/v1/runs/${manual}/replay`);
    expect(replayed.status).toBe(202);
    const replay = replayed.body.run.runId as string;
    expect(await trailOf(manual)).toEqual([
      expect.objectContaining({ action: 'run.replay', objectId: manual, actor, changes: { replayedAs: { after: replay } } }),
    ]);

    // Two more dead runs beside the dead replay, then all three replayed at once.
    await dead(replay);
    for (let i = 0; i < 2; i++) {
      const more = await scheduler.api('POST', `/v1/jobs/${jobId}/trigger`, {});
      expect(more.status).toBe(202);
      await dead(more.body.run.runId as string);
    }
    const deadRuns = (await scheduler.api('GET', `/v1/dead-runs?jobId=${jobId}&limit=10`)).body.items as { runId: string }[];
    expect(deadRuns).toHaveLength(3);
    const bulk = await scheduler.api('POST', '/v1/dead-runs/replay', { jobId });
    expect(bulk.status).toBe(202);
    const replays = (bulk.body.replayed as { runId: string }[]).map((r) => r.runId);
    expect(replays).toHaveLength(3);
    // Each replayed run's own trail finds the bulk replay, naming that run's replay.
    const found = new Set<string>();
    for (const { runId } of deadRuns) {
      const trail = await trailOf(runId);
      expect(trail, runId).toEqual([expect.objectContaining({ action: 'dead-runs.replay', objectId: runId, actor, tenantId: scheduler.tenantId })]);
      const replayedAs = trail[0]!.changes.replayedAs?.after as string;
      expect((await scheduler.api('GET', `/v1/runs/${runId}`)).body.replayedAs).toBe(replayedAs);
      found.add(replayedAs);
    }
    expect([...found].sort()).toEqual([...replays].sort());
  });

  it('a bulk replay the store stops part way answers with the runs it replayed, each in the trail, and the next call goes on', async () => {
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(target.url, { schedule: { kind: 'cron', expression: '0 0 1 1 *' }, retryPolicy: { maxAttempts: 1 } }),
    );
    const jobId = created.body.job.jobId as string;
    for (let i = 0; i < 3; i++) {
      const triggered = await scheduler.api('POST', `/v1/jobs/${jobId}/trigger`, {});
      await dead(triggered.body.run.runId as string);
    }
    // The store fails at the third replay's first read.
    const runs = scheduler.deps.runs;
    const givenTo = runs.givenTo.bind(runs);
    let reads = 0;
    runs.givenTo = (runId) => (++reads === 3 ? Promise.reject(new Error('the store timed out')) : givenTo(runId));
    let stopped: Awaited<ReturnType<Scheduler['api']>>;
    try {
      stopped = await scheduler.api('POST', '/v1/dead-runs/replay', { jobId });
    } finally {
      runs.givenTo = givenTo;
    }
    // Before, the call answered 500: the two replays were written, and no audit entry named them.
    expect(stopped.status, JSON.stringify(stopped.body)).toBe(202);
    expect(stopped.body).toMatchObject({ remaining: true });
    const first = (stopped.body.replayed as { runId: string }[]).map((run) => run.runId);
    expect(first).toHaveLength(2);
    const entries = (await scheduler.api('GET', '/v1/audit?limit=100')).body.items as Entry[];
    const replayedAs = entries.filter((entry) => entry.action === 'dead-runs.replay').map((entry) => entry.changes.replayedAs?.after);
    for (const runId of first) expect(replayedAs).toContain(runId);

    const rest = await scheduler.api('POST', '/v1/dead-runs/replay', { jobId, to: stopped.body.until });
    expect(rest.status).toBe(202);
    expect(rest.body).toMatchObject({ remaining: false });
    expect(rest.body.replayed).toHaveLength(1);
  });

  it("records each workflow action under the workflow, and a workflow run's cancel and retry under the run, with who and what changed", async () => {
    const step = { id: 'only', target: { kind: 'http', url: target.url } };
    const created = await scheduler.api('POST', '/v1/workflows', { name: 'audited-workflow', steps: [step], schedule: { kind: 'delay', seconds: 3600 } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const workflowId = created.body.workflowId as string;
    expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/pause`)).status).toBe(200);
    // A pause of the paused workflow changes nothing: one entry.
    expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/pause`)).status).toBe(200);
    expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/resume`)).status).toBe(200);
    const version = { name: 'audited-workflow', steps: [step], schedule: { kind: 'delay', seconds: 7200 } };
    expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/versions`, version, { 'if-match': '1' })).status).toBe(201);
    const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
    expect(started.status).toBe(202);
    const workflowRunId = started.body.workflowRunId as string;
    expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/cancel`)).status).toBe(200);
    expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/retry`)).status).toBe(202);
    expect((await scheduler.api('DELETE', `/v1/workflows/${workflowId}`)).status).toBe(200);

    const trail = (await scheduler.api('GET', `/v1/audit?objectId=${workflowId}`)).body.items as Entry[];
    expect(trail.map((entry) => entry.action)).toEqual([
      'workflow.delete',
      'workflow.run',
      'workflow.update',
      'workflow.resume',
      'workflow.pause',
      'workflow.create',
    ]);
    for (const entry of trail) expect(entry).toMatchObject({ actor: keyIdOf(scheduler.apiKey), tenantId: scheduler.tenantId, objectId: workflowId });
    const change = (action: string) => trail.find((entry) => entry.action === action)?.changes;
    expect(change('workflow.create')).toEqual({ version: { after: 1 } });
    expect(change('workflow.pause')).toEqual({ status: { before: 'ACTIVE', after: 'PAUSED' } });
    expect(change('workflow.resume')).toEqual({ status: { before: 'PAUSED', after: 'ACTIVE' } });
    expect(change('workflow.update')).toEqual({ version: { before: 1, after: 2 } });
    expect(change('workflow.run')).toEqual({ run: { after: workflowRunId } });
    expect(change('workflow.delete')).toEqual({ deletedAt: { after: expect.any(String) } });

    const runTrail = (await scheduler.api('GET', `/v1/audit?objectId=${workflowRunId}`)).body.items as Entry[];
    expect(runTrail.map((entry) => [entry.action, entry.changes])).toEqual([
      ['workflow-run.retry', { retries: { after: 1 } }],
      ['workflow-run.cancel', { status: { after: 'CANCELLED' } }],
    ]);
  });

  it('records signing secrets issued and revoked, by their ids, never their values', async () => {
    const first = await scheduler.api('POST', '/v1/signing-secrets', {});
    const second = await scheduler.api('POST', '/v1/signing-secrets', { graceSeconds: 600 });
    expect([first.status, second.status]).toEqual([201, 201]);
    const [firstId, secondId] = [first.body.secretId as string, second.body.secretId as string];
    expect((await scheduler.api('DELETE', `/v1/signing-secrets/${firstId}`)).status).toBe(204);

    expect(await trailOf(firstId)).toEqual([
      expect.objectContaining({ action: 'signing-secret.revoke', objectId: firstId, actor, changes: { status: { before: 'issued', after: 'revoked' } } }),
      expect.objectContaining({ action: 'signing-secret.issue', objectId: firstId, actor, changes: { replaces: { after: [] } } }),
    ]);
    expect(await trailOf(secondId)).toEqual([
      expect.objectContaining({ action: 'signing-secret.issue', objectId: secondId, actor, changes: { replaces: { after: [firstId] } } }),
    ]);
    const everything = JSON.stringify((await scheduler.api('GET', '/v1/audit?limit=100')).body);
    for (const secret of [first.body.secret as string, second.body.secret as string]) expect(everything).not.toContain(secret.slice('whsec_'.length));

    // An issue with no grace stops every other secret: each one's trail says which issue did.
    const third = await scheduler.api('POST', '/v1/signing-secrets', { graceSeconds: 0 });
    expect(third.status).toBe(201);
    const thirdId = third.body.secretId as string;
    expect(third.body).not.toHaveProperty('ended');
    expect((await scheduler.api('GET', '/v1/signing-secrets')).body.items.map((item: { secretId: string }) => item.secretId)).toEqual([thirdId]);
    // Before, the second secret's trail showed its issue and nothing after it.
    expect((await trailOf(secondId))[0]).toMatchObject({
      action: 'signing-secret.revoke',
      objectId: secondId,
      actor,
      changes: { status: { before: 'issued', after: 'revoked' }, revokedBy: { after: thirdId } },
    });
    expect(await trailOf(thirdId)).toEqual([
      expect.objectContaining({ action: 'signing-secret.issue', changes: { replaces: { after: [] }, ends: { after: [secondId] } } }),
    ]);
  });

  it('pages through the trail with the cursor, newest first, each entry once; refuses a cursor of another listing', async () => {
    // Entries of its own, whatever the tests before it wrote.
    for (let i = 0; i < 10; i++) {
      expect((await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: { kind: 'delay', seconds: 3600 } }))).status).toBe(201);
    }
    const all = (await scheduler.api('GET', '/v1/audit?limit=100')).body as { items: Entry[]; nextCursor: string | null };
    expect(all.nextCursor).toBeNull();
    expect(all.items.length).toBeGreaterThanOrEqual(10);
    const paged: Entry[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
      const page = await scheduler.api('GET', `/v1/audit?limit=3${query}`);
      expect(page.status).toBe(200);
      expect(page.body.items.length).toBeLessThanOrEqual(3);
      paged.push(...(page.body.items as Entry[]));
      cursor = page.body.nextCursor as string | null;
      pages++;
    } while (cursor !== null && pages < 50);
    expect(paged).toEqual(all.items);
    expect(pages).toBeGreaterThanOrEqual(Math.ceil(all.items.length / 3));
    const times = paged.map((entry) => entry.at);
    expect([...times].sort().reverse()).toEqual(times);

    // A cursor is its listing's: the tenant trail's is refused for one object's.
    const firstPage = await scheduler.api('GET', '/v1/audit?limit=1');
    const foreign = await scheduler.api('GET', `/v1/audit?objectId=${all.items[0]!.objectId}&cursor=${encodeURIComponent(firstPage.body.nextCursor)}`);
    expect(foreign.status).toBe(400);
    // Named as every listing names it: the query parameter as spelled in the URL.
    expect(foreign.body.errors).toEqual([{ path: 'cursor', message: 'is not a cursor this listing returned' }]);
  });

  it('gives every entry an expiry of its instant plus AUDIT_RETENTION_DAYS, under its tenant and under its object', async () => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule: { kind: 'delay', seconds: 3600 } }));
    const jobId = created.body.job.jobId as string;
    const items = async (pk: string) =>
      (
        await awsClients().dynamo.send(
          new QueryCommand({ TableName: scheduler.config.jobsTable, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk } }),
        )
      ).Items ?? [];
    const [byObject] = await items(auditObjectPartition(scheduler.tenantId, jobId));
    const byTenant = (await items(auditTenantPartition(scheduler.tenantId))).find((item) => item.auditId === byObject?.auditId);
    // This scheduler keeps entries 3 days (its AUDIT_RETENTION_DAYS), not the default 365.
    const expected = Math.ceil(Date.parse(String(byObject?.at)) / 1000) + 3 * 86_400;
    expect(byObject?.expiresAtEpoch).toBe(expected);
    expect(byTenant?.expiresAtEpoch).toBe(expected);
  });

  it('records the operator creating a tenant with limits and changing them (npm run admin), kept AUDIT_RETENTION_DAYS as it is set', async () => {
    const tenantId = `audited-${scheduler.prefix}`;
    const admin = (args: string[], env: Record<string, string> = {}) =>
      run(process.execPath, ['node_modules/tsx/dist/cli.mjs', 'scripts/admin.ts', ...args], {
        env: { ...process.env, ...emulatorEnvironment(inject('awsEndpoint')), LOCAL_PREFIX: scheduler.prefix, ...env },
      });
    await admin(['tenant', 'create', tenantId, '--name', 'Audited', '--max-in-flight-runs', '5', '--creates-per-second', '7'], {
      AUDIT_RETENTION_DAYS: '7',
    });
    await admin(['tenant', 'limits', tenantId, '--max-in-flight-runs', '9']);
    // The same values again changed nothing: no entry.
    await admin(['tenant', 'limits', tenantId, '--max-in-flight-runs', '9']);

    const trail = (await scheduler.deps.audit.list(tenantId, { objectId: tenantId, limit: 10 })).items;
    expect(trail).toEqual([
      expect.objectContaining({ actor: 'admin', action: 'tenant.limits', objectId: tenantId, changes: { maxInFlightRuns: { before: 5, after: 9 } } }),
      expect.objectContaining({
        actor: 'admin',
        action: 'tenant.create',
        objectId: tenantId,
        changes: { createsPerSecond: { after: 7 }, maxInFlightRuns: { after: 5 }, name: { after: 'Audited' } },
      }),
    ]);
    const created = trail[1]!;
    const { Items: stored = [] } = await awsClients().dynamo.send(
      new QueryCommand({
        TableName: scheduler.config.jobsTable,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': auditObjectPartition(tenantId, tenantId) },
      }),
    );
    expect(stored.find((item) => item.auditId === created.auditId)?.expiresAtEpoch).toBe(Math.ceil(Date.parse(created.at) / 1000) + 7 * 86_400);
  });
});
