// Tenants against the emulator: the admin command's tenants and keys, revoked keys, create limits
// (429 with Retry-After, nothing written), active-jobs accounting as jobs end, and the in-flight
// limit: runs of a tenant at its limit wait and all run, never more at once than the limit.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { slotLiveness } from '../../lambdas/app/in-flight-slot';
import { DEFAULT_TENANT_LIMITS } from '../../lambdas/domain/tenant';
import { JobsRepository } from '../../lambdas/store/jobs-repository';
import { createRateKey, inFlightSlotKey, runKey } from '../../lambdas/store/keys';
import { RequestCounter } from '../../lambdas/store/request-counter';
import { emulatorEnvironment } from '../../scripts/local/emulator';
import { auditAsAdmin, runAdmin } from '../../scripts/ops/admin';
import type { Scheduler, TargetServer } from './harness';
import { eventually, executeRun, jobBody, leaseRequest, startScheduler, startTarget } from './harness';

const run = promisify(execFile);

/** The places counted in a tenant's create window of the second of `at` (decision 0074). */
async function createsCounted(scheduler: Scheduler, at: number, tenantId = scheduler.tenantId): Promise<number | undefined> {
  const { Item } = await scheduler.clients.dynamo.send(
    new GetCommand({ TableName: scheduler.config.jobsTable, Key: createRateKey(tenantId, Math.floor(at / 1000)), ConsistentRead: true }),
  );
  return Item?.creates as number | undefined;
}

async function apiWith(url: string, key: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
}

// Hours ahead whatever the time of day: these jobs only need to exist, not to run.
const cron = (name: string) => ({
  ...jobBody('http://127.0.0.1:9/unused', { name }),
  schedule: { kind: 'cron', expression: `0 ${(new Date().getUTCHours() + 6) % 24} * * *`, timezone: 'UTC' },
});

describe('tenants and keys', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
  });
  afterAll(() => scheduler.stop());

  it('creates a tenant with the admin command, whose key works; a revoked key is refused', async () => {
    // The CLI itself, as an operator runs it, against this test's tables.
    const tenantId = `acme-${scheduler.prefix}`;
    const { stdout } = await run(
      process.execPath,
      ['node_modules/tsx/dist/cli.mjs', 'scripts/admin.ts', 'tenant', 'create', tenantId, '--name', 'Acme', '--max-in-flight-runs', '5'],
      {
        env: { ...process.env, ...emulatorEnvironment(inject('awsEndpoint')), LOCAL_PREFIX: scheduler.prefix },
      },
    );
    const created = JSON.parse(stdout) as { apiKey: string; keyId: string; tenant: { limits: Record<string, unknown> } };
    expect(created.tenant.limits).toEqual({ maxInFlightRuns: 5 });
    expect(created.apiKey).toMatch(/^sk_/);
    expect((await apiWith(scheduler.runtime.url, created.apiKey, 'GET', '/v1/jobs')).status).toBe(200);

    // Keys are stored hashed: the table holds no key in clear.
    const ctx = {
      tenants: scheduler.deps.tenants,
      apiKeys: scheduler.deps.apiKeys,
      defaults: scheduler.config.tenantDefaults,
      now: Date.now,
      audit: auditAsAdmin(scheduler.deps),
    };
    const shown = await runAdmin(['tenant', 'show', tenantId], ctx);
    expect(JSON.stringify(shown)).not.toContain(created.apiKey);
    expect(shown).toMatchObject({
      tenant: { limits: { maxInFlightRuns: 5 } },
      effectiveLimits: { ...scheduler.config.tenantDefaults, maxInFlightRuns: 5 },
      usage: { activeJobs: 0 },
      keys: [{ keyId: created.keyId, revokedAt: null }],
    });

    const second = (await runAdmin(['key', 'issue', tenantId], ctx)) as { apiKey: string; keyId: string };
    expect(await runAdmin(['key', 'revoke', tenantId, created.keyId], ctx)).toMatchObject({ outcome: 'revoked' });
    expect(await runAdmin(['key', 'revoke', tenantId, created.keyId], ctx)).toMatchObject({ outcome: 'already-revoked' });
    // Who revoked it, and when: the audit trail of the key.
    const trail = await scheduler.deps.audit.list(tenantId, { objectId: created.keyId, limit: 10 });
    expect(trail.items.map((entry) => [entry.actor, entry.action, entry.changes.outcome?.after])).toEqual([
      ['admin', 'api-key.revoke', 'already-revoked'],
      ['admin', 'api-key.revoke', 'revoked'],
      ['admin', 'api-key.issue', undefined],
    ]);
    // A process that never saw the key (no cached answer) refuses it at once; the other key works.
    const fresh = await scheduler.startWorkers(0);
    expect((await apiWith(fresh.url, created.apiKey, 'GET', '/v1/jobs')).status).toBe(401);
    expect((await apiWith(fresh.url, second.apiKey, 'GET', '/v1/jobs')).status).toBe(200);
  });

  it('the CLI with --jobs-table writes to that table; an option without its value is refused and nothing is created', async () => {
    // As docs/operations.md tells an operator to run it against a deployment. LOCAL_PREFIX names
    // tables that must never appear: local mode would create them and write the tenant there.
    const localPrefix = `never-${scheduler.prefix}`;
    const cli = (args: string[]) =>
      run(process.execPath, ['node_modules/tsx/dist/cli.mjs', 'scripts/admin.ts', ...args], {
        env: { ...process.env, ...emulatorEnvironment(inject('awsEndpoint')), LOCAL_PREFIX: localPrefix },
      });
    const tenantId = `deployed-${scheduler.prefix}`;
    const { stdout } = await cli(['tenant', 'create', tenantId, '--jobs-table', scheduler.config.jobsTable]);
    const created = JSON.parse(stdout) as { apiKey: string };
    expect(await scheduler.deps.tenants.get(tenantId)).toMatchObject({ tenantId });
    expect((await apiWith(scheduler.runtime.url, created.apiKey, 'GET', '/v1/jobs')).status).toBe(200);

    for (const args of [
      ['tenant', 'create', `nothing-${scheduler.prefix}`, '--jobs-table'],
      ['tenant', 'create', `nothing-${scheduler.prefix}`, '--jobs-table', '--name', 'x'],
      ['tenant', 'create', `nothing-${scheduler.prefix}`, '--jobs-table='],
      ['tenant', 'create', `nothing-${scheduler.prefix}`, '--job-table', scheduler.config.jobsTable],
    ]) {
      const refused = await cli(args).then(
        () => ({ code: 0, stderr: '' }),
        (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
      );
      expect(refused.code, args.join(' ')).toBe(2);
      expect(refused.stderr, args.join(' ')).toMatch(/--job-?s?-table/);
    }
    expect(await scheduler.deps.tenants.get(`nothing-${scheduler.prefix}`)).toBeNull();
    const tables = await scheduler.clients.dynamo.send(new ListTablesCommand({}));
    expect((tables.TableNames ?? []).filter((name) => name.startsWith(localPrefix))).toEqual([]);
  });

  it('refuses bad admin input and changes nothing', async () => {
    const ctx = {
      tenants: scheduler.deps.tenants,
      apiKeys: scheduler.deps.apiKeys,
      defaults: scheduler.config.tenantDefaults,
      now: Date.now,
      audit: auditAsAdmin(scheduler.deps),
    };
    await expect(runAdmin(['tenant', 'create', 'Bad_Id'], ctx)).rejects.toThrow(/tenant id/);
    await expect(runAdmin(['tenant', 'create', `ok-${scheduler.prefix}`, '--creates-per-second=-3'], ctx)).rejects.toThrow(/createsPerSecond/);
    expect(await scheduler.deps.tenants.get(`ok-${scheduler.prefix}`)).toBeNull();
    await expect(runAdmin(['tenant', 'limits', `missing-${scheduler.prefix}`, '--max-active-jobs', '3'], ctx)).rejects.toThrow(/no tenant/);
    await runAdmin(['tenant', 'create', `keys-${scheduler.prefix}`], ctx);
    await expect(runAdmin(['key', 'revoke', `keys-${scheduler.prefix}`, 'not-a-key-id'], ctx)).rejects.toThrow(/key id/);
    await expect(runAdmin(['key', 'revoke', `keys-${scheduler.prefix}`, 'key_0000000000000000'], ctx)).rejects.toThrow(/has no key/);
    await expect(runAdmin(['tenant', 'create', `keys-${scheduler.prefix}`], ctx)).rejects.toThrow(/exists already/);
    expect(await scheduler.deps.apiKeys.list(`keys-${scheduler.prefix}`)).toHaveLength(1);
    await expect(runAdmin(['frobnicate'], ctx)).rejects.toThrow(/Usage/);
  });
});

describe('create limits', () => {
  it('answers 429 with Retry-After past the creates-per-second limit, and writes nothing for the refused', async () => {
    // One fixed instant: every create falls in the same one-second window.
    const at = Date.parse('2030-01-01T00:00:00.250Z');
    const scheduler = await startScheduler({ workerConcurrency: 0, clock: () => at, tenantLimits: { createsPerSecond: 3 } });
    try {
      const responses = await Promise.all(Array.from({ length: 7 }, (_, i) => scheduler.api('POST', '/v1/jobs', cron(`rate-${i}`))));
      const statuses = responses.map((response) => response.status).sort();
      expect(statuses).toEqual([201, 201, 201, 429, 429, 429, 429]);
      const refused = responses.find((response) => response.status === 429)!;
      expect(refused.body).toMatchObject({ status: 429, title: 'Too many requests' });
      expect((await scheduler.api('GET', '/v1/jobs?limit=100')).body.items).toHaveLength(3);
      expect(await scheduler.deps.tenants.usage(scheduler.tenantId)).toEqual({ activeJobs: 3 });
      const raw = await fetch(`${scheduler.runtime.url}/v1/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${scheduler.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(cron('rate-late')),
      });
      expect(raw.status).toBe(429);
      expect(raw.headers.get('retry-after')).toBe('1');
    } finally {
      await scheduler.stop();
    }
  });

  it('counts a workflow create as a create: past the limit it answers 429 and writes nothing', async () => {
    const at = Date.parse('2030-01-01T00:00:00.250Z');
    const scheduler = await startScheduler({ workerConcurrency: 0, clock: () => at, tenantLimits: { createsPerSecond: 2 } });
    try {
      const step = { id: 'a', target: { kind: 'http', url: 'https://example.com/hook' } };
      expect((await scheduler.api('POST', '/v1/jobs', cron('rate-job'))).status).toBe(201);
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        statuses.push((await scheduler.api('POST', '/v1/workflows', { name: `rate-wf-${i}`, steps: [step], schedule: { kind: 'now' } })).status);
      }
      expect(statuses).toEqual([201, 429, 429]);
      expect((await scheduler.api('GET', '/v1/workflows')).body.items.map((w: { name: string }) => w.name)).toEqual(['rate-wf-0']);
    } finally {
      await scheduler.stop();
    }
  });

  it('does not count a workflow create refused for its schedule (a 400) against the limit', async () => {
    const at = Date.parse('2030-01-01T00:00:00.250Z');
    const scheduler = await startScheduler({ workerConcurrency: 0, clock: () => at, tenantLimits: { createsPerSecond: 2 } });
    try {
      const step = { id: 'a', target: { kind: 'http', url: 'https://example.com/hook' } };
      // A schedule that never fires: its end is before its first fire time.
      const never = { kind: 'cron', expression: '0 * * * *', endAt: '2020-01-01T00:00:00Z' };
      for (let i = 0; i < 3; i++) {
        const refused = await scheduler.api('POST', '/v1/workflows', { name: `never-${i}`, steps: [step], schedule: never });
        expect(refused.status, JSON.stringify(refused.body)).toBe(400);
      }
      expect((await scheduler.api('POST', '/v1/jobs', cron('after-refusals-1'))).status).toBe(201);
      expect((await scheduler.api('POST', '/v1/jobs', cron('after-refusals-2'))).status).toBe(201);
      expect((await scheduler.api('POST', '/v1/jobs', cron('after-refusals-3'))).status).toBe(429);
    } finally {
      await scheduler.stop();
    }
  });

  it('counts a busy tenant’s creates in blocks of places, and stops at the limit exactly (decision 0169)', async () => {
    const at = Date.parse('2030-01-01T00:00:00.250Z');
    const counter = new RequestCounter();
    const scheduler = await startScheduler({ workerConcurrency: 0, clock: () => at, tenantLimits: { createsPerSecond: 100 }, requestCounter: counter });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) statuses.push((await scheduler.api('POST', '/v1/jobs', cron(`busy-${i}`))).status);
      expect(statuses).toEqual(Array.from({ length: 30 }, () => 201));
      // Blocks of 1, 2, 4, then 5 (a twentieth of the limit): 8 writes of the counter, not 30.
      expect(counter.tally().calls['dynamodb.UpdateItem']).toBe(8);
      expect(await createsCounted(scheduler, at)).toBe(32);

      for (let i = 30; i < 105; i++) statuses.push((await scheduler.api('POST', '/v1/jobs', cron(`busy-${i}`))).status);
      // One process loses no place: the last block is what the window had left.
      expect(statuses.filter((status) => status === 201)).toHaveLength(100);
      expect(statuses.slice(100)).toEqual([429, 429, 429, 429, 429]);
      expect(await createsCounted(scheduler, at)).toBe(100);
      expect(await scheduler.deps.tenants.usage(scheduler.tenantId)).toEqual({ activeJobs: 100 });
    } finally {
      await scheduler.stop();
    }
  });

  it('lets concurrent creates of one process share a reservation of places', async () => {
    const at = Date.parse('2030-01-01T00:00:00.250Z');
    const counter = new RequestCounter();
    const scheduler = await startScheduler({ workerConcurrency: 0, clock: () => at, tenantLimits: { createsPerSecond: 100 }, requestCounter: counter });
    try {
      const responses = await Promise.all(Array.from({ length: 10 }, (_, i) => scheduler.api('POST', '/v1/jobs', cron(`together-${i}`))));
      expect(responses.map((response) => response.status)).toEqual(Array.from({ length: 10 }, () => 201));
      // Those that arrive while a reservation is in flight wait for it, and the next asks for as many
      // as wait: however they interleave, no more writes than blocks of 1, 2, 4 and 5 would take.
      expect(counter.tally().calls['dynamodb.UpdateItem']).toBeLessThanOrEqual(4);
      expect(await createsCounted(scheduler, at)).toBeLessThanOrEqual(14);
    } finally {
      await scheduler.stop();
    }
  });

  it('two processes reserving places in the same second never admit more than the limit between them', async () => {
    const scheduler = await startScheduler({ workerConcurrency: 0 });
    try {
      const now = Date.parse('2030-01-01T00:00:07.500Z');
      const tenantId = `pair-${scheduler.prefix}`;
      const processes = [0, 1].map(() => new JobsRepository(scheduler.clients.dynamo, scheduler.config.jobsTable, scheduler.config.runsTable));
      const admitted = [0, 0];
      const refusedFrom: (number | null)[] = [null, null];
      // Each asks in turn, concurrently, until both are refused.
      for (let round = 0; refusedFrom.some((at) => at === null); round++) {
        await Promise.all(
          processes.map(async (jobs, i) => {
            if (refusedFrom[i] !== null) return;
            const counted = await jobs.countRunRequest(tenantId, 100, now);
            if (counted.allowed) admitted[i]!++;
            else refusedFrom[i] = round;
          }),
        );
      }
      const total = admitted[0]! + admitted[1]!;
      expect(total).toBeLessThanOrEqual(100);
      // What one reserved and did not spend is lost to the other: at most its last block, less the place it spent.
      expect(total).toBeGreaterThanOrEqual(100 - 2 * 4);
      expect(Math.min(...admitted)).toBeGreaterThan(30);
      expect(await createsCounted(scheduler, now, tenantId)).toBe(100);
      // The next second is a new window.
      expect(await processes[0]!.countRunRequest(tenantId, 100, now + 1000)).toEqual({ allowed: true });
    } finally {
      await scheduler.stop();
    }
  });

  it('holds active and paused jobs to the limit; a deleted or completed job frees its place', async () => {
    const target = await startTarget();
    const scheduler = await startScheduler({ tenantLimits: { maxActiveJobs: 2 } });
    try {
      const a = await scheduler.api('POST', '/v1/jobs', cron('active-a'));
      const b = await scheduler.api('POST', '/v1/jobs', cron('active-b'));
      expect([a.status, b.status]).toEqual([201, 201]);
      expect((await scheduler.api('POST', `/v1/jobs/${b.body.job.jobId}/pause`)).status).toBe(200);
      const over = await scheduler.api('POST', '/v1/jobs', cron('active-c'));
      expect(over.status).toBe(429);
      expect(over.body.detail).toMatch(/2 active or paused jobs/);

      expect((await scheduler.api('DELETE', `/v1/jobs/${a.body.job.jobId}`)).status).toBeLessThan(300);
      expect(await scheduler.deps.tenants.usage(scheduler.tenantId)).toEqual({ activeJobs: 1 });
      // A run-now job is COMPLETED from the start (its one run is queued): it never takes a place.
      const now = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'active-now' }));
      expect(now.status).toBe(201);
      expect(now.body.job.status).toBe('COMPLETED');
      expect(await scheduler.deps.tenants.usage(scheduler.tenantId)).toEqual({ activeJobs: 1 });
      // A delayed one-shot job is active until its one run starts, then COMPLETED: its place comes back.
      const once = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'active-once', schedule: { kind: 'delay', seconds: 1 } }));
      expect(once.status).toBe(201);
      expect((await scheduler.api('POST', '/v1/jobs', cron('active-d'))).status).toBe(429);
      await eventually(
        () => scheduler.deps.tenants.usage(scheduler.tenantId),
        (usage) => usage.activeJobs === 1,
      );
      expect((await scheduler.api('POST', '/v1/jobs', cron('active-e'))).status).toBe(201);
      expect(await scheduler.deps.tenants.usage(scheduler.tenantId)).toEqual({ activeJobs: 2 });
    } finally {
      await scheduler.stop();
      await target.stop();
    }
  });

  it('counts one job for concurrent creates with the same Idempotency-Key', async () => {
    const scheduler = await startScheduler({ workerConcurrency: 0, tenantLimits: { maxActiveJobs: 5 } });
    try {
      const body = cron('idem');
      const responses = await Promise.all(Array.from({ length: 8 }, () => scheduler.api('POST', '/v1/jobs', body, { 'idempotency-key': 'same-key-1' })));
      expect(new Set(responses.map((response) => response.body.job?.jobId)).size).toBe(1);
      expect(await scheduler.deps.tenants.usage(scheduler.tenantId)).toEqual({ activeJobs: 1 });
    } finally {
      await scheduler.stop();
    }
  });
});

describe('tenant limits over the deployment defaults', () => {
  // One fixed instant, every create in the same one-second window; the deployment allows 2 a second.
  const at = Date.parse('2030-01-01T00:00:00.250Z');
  const deploymentDefaults = { ...DEFAULT_TENANT_LIMITS, createsPerSecond: 2 };
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0, clock: () => at, config: { tenantDefaults: deploymentDefaults } });
  });
  afterAll(() => scheduler.stop());

  const createStatuses = async (apiKey: string, prefix: string, count: number): Promise<number[]> => {
    const statuses: number[] = [];
    for (let i = 0; i < count; i++) statuses.push((await apiWith(scheduler.runtime.url, apiKey, 'POST', '/v1/jobs', cron(`${prefix}-${i}`))).status);
    return statuses;
  };

  it('stores only the limits the admin command sets; the deployment’s defaults apply to the others', async () => {
    // The admin command knows the code's defaults (100 creates a second), not the deployment's.
    const ctx = {
      tenants: scheduler.deps.tenants,
      apiKeys: scheduler.deps.apiKeys,
      defaults: DEFAULT_TENANT_LIMITS,
      now: Date.now,
      audit: auditAsAdmin(scheduler.deps),
    };
    const tenantId = `own-${scheduler.prefix}`;
    const created = (await runAdmin(['tenant', 'create', tenantId, '--max-in-flight-runs', '5'], ctx)) as { apiKey: string };
    expect((await scheduler.deps.tenants.get(tenantId))?.limits).toEqual({ maxInFlightRuns: 5 });
    expect(await createStatuses(created.apiKey, 'own', 3)).toEqual([201, 201, 429]);

    const shown = await runAdmin(['tenant', 'show', tenantId], { ...ctx, defaults: deploymentDefaults });
    expect(shown).toMatchObject({ tenant: { limits: { maxInFlightRuns: 5 } }, effectiveLimits: { ...deploymentDefaults, maxInFlightRuns: 5 } });
    // Against a deployment whose defaults it was not told, it shows its own limits only.
    expect(await runAdmin(['tenant', 'show', tenantId], { ...ctx, defaults: null })).toMatchObject({
      tenant: { limits: { maxInFlightRuns: 5 } },
      effectiveLimits: null,
    });
    const changed = await runAdmin(['tenant', 'limits', tenantId, '--creates-per-second', '4', '--max-active-backfills', 'none'], {
      ...ctx,
      defaults: deploymentDefaults,
    });
    expect(changed).toMatchObject({
      tenant: { limits: { maxInFlightRuns: 5, createsPerSecond: 4, maxActiveBackfills: null } },
      effectiveLimits: { ...deploymentDefaults, maxInFlightRuns: 5, createsPerSecond: 4, maxActiveBackfills: null },
    });
    // This scheduler's clock is pinned: the tenant's create and its limits change share an instant.
    const limitsChange = (await scheduler.deps.audit.list(tenantId, { objectId: tenantId, limit: 10 })).items.find((entry) => entry.action === 'tenant.limits');
    expect(limitsChange).toMatchObject({ actor: 'admin', action: 'tenant.limits', changes: { createsPerSecond: { after: 4 } } });
    expect(limitsChange?.changes.maxInFlightRuns).toBeUndefined();
  });

  it('keeps applying a full set of limits stored before, as it is', async () => {
    const tenantId = `full-${scheduler.prefix}`;
    const stamp = new Date(at).toISOString();
    await scheduler.deps.tenants.create({
      tenantId,
      name: tenantId,
      limits: { ...DEFAULT_TENANT_LIMITS, createsPerSecond: 3 },
      createdAt: stamp,
      updatedAt: stamp,
    });
    const apiKey = `key_${randomBytes(18).toString('base64url')}`;
    await scheduler.deps.apiKeys.issue(apiKey, tenantId, Date.now());
    expect(await createStatuses(apiKey, 'full', 4)).toEqual([201, 201, 201, 429]);
  });
});

describe('the in-flight limit', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  let running = 0;
  let peak = 0;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 6, tenantLimits: { maxInFlightRuns: 2 } });
    target = await startTarget(async () => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((resolve) => setTimeout(resolve, 300));
      running--;
      return { status: 200 };
    });
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  it('never runs more of a tenant at once than its limit; the others wait and all run', async () => {
    const created = await Promise.all(Array.from({ length: 8 }, (_, i) => scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: `limited-${i}` }))));
    expect(created.every((response) => response.status === 201)).toBe(true);
    const runIds = created.map((response) => response.body.job.nextRunId as string);
    await eventually(
      async () => Promise.all(runIds.map(async (runId) => (await scheduler.api('GET', `/v1/runs/${runId}`)).body.status as string)),
      (statuses) => statuses.every((status) => status === 'SUCCEEDED'),
      60_000,
    );
    expect(target.calls).toHaveLength(8);
    expect(peak).toBe(2);
    // Some waited: deferrals are counted, and every slot is free again.
    const deferred = scheduler.metricLines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .flatMap((doc) => [doc.RunsDeferred ?? []].flat() as number[]);
    expect(deferred.length).toBeGreaterThan(0);
    expect(await scheduler.deps.inFlight.holders(scheduler.tenantId)).toEqual([]);
  });
});

describe("a run deferred for its tenant's in-flight slot", () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  let release: () => void = () => undefined;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0, tenantLimits: { maxInFlightRuns: 1 } });
    target = await startTarget(() => new Promise((resolve) => (release = () => resolve({ status: 200 }))));
  });
  afterAll(async () => {
    release();
    await scheduler.stop();
    await target.stop();
  });

  it('has its check-back moved a grace on, so that the ticker does not take its message for lost and send a second', async () => {
    const [holding, waiting] = (await Promise.all(
      ['holds-the-slot', 'waits-for-it'].map(
        async (name) => (await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name }))).body.job.nextRunId as string,
      ),
    )) as [string, string];
    const gateAtOf = async (runId: string) =>
      Date.parse(
        String(
          (await scheduler.clients.dynamo.send(new GetCommand({ TableName: scheduler.config.runsTable, Key: runKey(runId), ConsistentRead: true }))).Item
            ?.gateAt,
        ),
      );
    const message = { tenantId: scheduler.tenantId, queueUrl: scheduler.config.dispatchQueueUrl };
    const running = executeRun(scheduler.workerDeps('first'), holding, message);
    await eventually(
      () => Promise.resolve(target.calls.length),
      (calls) => calls === 1,
      30_000,
    );
    const before = await gateAtOf(waiting);
    const deferredAt = Date.now();
    expect(await executeRun(scheduler.workerDeps('second'), waiting, message)).toBe('deferred');
    // Before, it stayed where its queueing put it (about half a minute on): past it, and then every
    // grace, the ticker sent another message for a run that was only waiting.
    const after = await gateAtOf(waiting);
    expect(after).toBeGreaterThan(before);
    expect(after).toBeGreaterThanOrEqual(deferredAt + scheduler.config.redeliveryGraceSeconds * 1000);
    release();
    expect(await running).toBe('succeeded');
  });
});

describe('fair dispatch across tenants', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  const BACKLOG = 120;

  beforeAll(async () => {
    // No workers yet: the noisy tenant's whole backlog is queued before the quiet tenant's run.
    scheduler = await startScheduler({ workerConcurrency: 0 });
    target = await startTarget(async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      return { status: 200 };
    });
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  it("starts a quiet tenant's run before most of a noisy tenant's backlog queued ahead of it", async () => {
    const noisyKey = `key_${randomBytes(18).toString('base64url')}`;
    const noisy = `noisy-${scheduler.prefix}`;
    await scheduler.deps.apiKeys.issue(noisyKey, noisy, Date.now());
    // No in-flight limit to speak of: only the queue's delivery order keeps the quiet run from
    // waiting behind all of it (with in-order delivery it would start after every noisy run).
    const at = new Date().toISOString();
    await scheduler.deps.tenants.create({
      tenantId: noisy,
      name: noisy,
      limits: { ...scheduler.config.tenantDefaults, maxActiveJobs: null, createsPerSecond: null, maxInFlightRuns: 1000 },
      createdAt: at,
      updatedAt: at,
    });
    for (let i = 0; i < BACKLOG; i += 20) {
      const batch = await Promise.all(
        Array.from({ length: 20 }, (_, k) =>
          scheduler.api('POST', '/v1/jobs', jobBody(`${target.url}/noisy/${i + k}`, { name: `noisy-${i + k}` }), { authorization: `Bearer ${noisyKey}` }),
        ),
      );
      expect(batch.every((response) => response.status === 201)).toBe(true);
    }
    const quiet = await scheduler.api('POST', '/v1/jobs', jobBody(`${target.url}/quiet`, { name: 'quiet' }));
    expect(quiet.status).toBe(201);

    await scheduler.startWorkers(2);
    await eventually(
      () => Promise.resolve(target.calls.filter((call) => call.path === '/hook/quiet').length),
      (n) => n === 1,
      30_000,
    );
    const noisyBefore = target.calls.findIndex((call) => call.path === '/hook/quiet');
    // What was in flight when its message came (two pollers' batches of 10, and the runtime's
    // small fetch-ahead), not the backlog: it is taken on the next receive.
    expect(noisyBefore).toBeLessThan(BACKLOG / 2);
    await eventually(
      () => Promise.resolve(target.calls.length),
      (n) => n === BACKLOG + 1,
      60_000,
    );
  });
});

describe('a slot its run never gave back', () => {
  let scheduler: Scheduler;
  let target: TargetServer;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 2, tenantLimits: { maxInFlightRuns: 1 } });
    target = await startTarget(() => ({ status: 200 }));
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  it('is taken over by the next run once the worker sees, in the run items, that its run has ended', async () => {
    const first = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'ends' }));
    const firstRun = first.body.job.nextRunId as string;
    await eventually(
      async () => (await scheduler.api('GET', `/v1/runs/${firstRun}`)).body.status as string,
      (status) => status === 'SUCCEEDED',
    );
    // Its worker died between recording the outcome and giving the slot back: the slot is still held,
    // since long enough for the holder to be checked.
    const anyLiveness = () => Promise.resolve(new Map<string, { running: boolean; leaseExpiresAt: number | null }>());
    expect(await scheduler.deps.inFlight.acquire(scheduler.tenantId, firstRun, 1, Date.now() - 120_000, anyLiveness)).toBe(0);

    const second = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { name: 'next' }));
    const secondRun = second.body.job.nextRunId as string;
    await eventually(
      async () => (await scheduler.api('GET', `/v1/runs/${secondRun}`)).body.status as string,
      (status) => status === 'SUCCEEDED',
    );
    expect(await scheduler.deps.inFlight.holders(scheduler.tenantId)).toEqual([]);
  });
});

describe('a duplicate message for a run another worker runs', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0, tenantLimits: { maxInFlightRuns: 1 } });
  });
  afterAll(() => scheduler.stop());

  const runOf = async (name: string) => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody('http://127.0.0.1:9/hook', { name, schedule: { kind: 'delay', seconds: 1 } }));
    expect(created.status).toBe(201);
    const runId = created.body.job.nextRunId as string;
    await eventually(
      () => scheduler.deps.runs.get(runId),
      (run) => run !== null && Date.parse(run.availableAt) <= Date.now(),
    );
    return runId;
  };

  it('gives back the slot it took, and keeps the one the run held already', async () => {
    // Leased elsewhere without a slot of its own (as an external worker's claimed run is, decision 0062).
    const claimed = await runOf('claimed-elsewhere');
    expect((await scheduler.deps.leases.lease(claimed, leaseRequest(scheduler.config, 'elsewhere'))).kind).toBe('leased');
    expect(await executeRun(scheduler.deps, claimed, { tenantId: scheduler.tenantId })).toBe('held');
    // Before, the slot it took stayed, held for the run as long as it ran: the tenant's only one.
    expect(await scheduler.deps.inFlight.holders(scheduler.tenantId)).toEqual([]);

    // A run that holds its slot (its first message's) keeps it when a second copy comes.
    const running = await runOf('running-with-its-slot');
    expect(await scheduler.deps.inFlight.acquire(scheduler.tenantId, running, 1, Date.now(), () => Promise.resolve(new Map()))).toBe(0);
    expect((await scheduler.deps.leases.lease(running, leaseRequest(scheduler.config, 'its-worker'))).kind).toBe('leased');
    expect(await executeRun(scheduler.deps, running, { tenantId: scheduler.tenantId })).toBe('held');
    expect((await scheduler.deps.inFlight.holders(scheduler.tenantId)).map((holder) => holder.runId)).toEqual([running]);
  });
});

describe("a run's message that took its slot first, when another message of the run leases it", () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  let answer: () => void = () => undefined;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0, tenantLimits: { maxInFlightRuns: 1 } });
    target = await startTarget(() => new Promise((resolve) => (answer = () => resolve({ status: 200 }))));
  });
  afterAll(async () => {
    answer();
    await scheduler.stop();
    await target.stop();
  });

  const dueRun = async (name: string, url = 'http://127.0.0.1:9/hook') => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(url, { name, schedule: { kind: 'delay', seconds: 1 } }));
    expect(created.status).toBe(201);
    const runId = created.body.job.nextRunId as string;
    await eventually(
      () => scheduler.deps.runs.get(runId),
      (run) => run !== null && Date.parse(run.availableAt) <= Date.now(),
    );
    return runId;
  };

  /**
   * A worker whose message for the run came early (its `notBefore` ahead): it takes the slot, then
   * waits for its time. Its lease waits besides for `leasedElsewhere`, so the other message's worker
   * leases the run first however slow the machine; `took` resolves once it holds its slot.
   */
  const earlyWorker = (leasedElsewhere: Promise<unknown>) => {
    const deps = scheduler.workerDeps('w1');
    let tookSlot: () => void = () => undefined;
    const took = new Promise<void>((resolve) => (tookSlot = resolve));
    const acquireSlot = deps.inFlight.acquireSlot.bind(deps.inFlight);
    deps.inFlight.acquireSlot = async (...args) => {
      const taken = await acquireSlot(...args);
      tookSlot();
      return taken;
    };
    const lease = deps.leases.lease.bind(deps.leases);
    deps.leases.lease = async (...args) => {
      await leasedElsewhere;
      return lease(...args);
    };
    return { deps, took };
  };

  it("keeps it for the run that the other message's worker leased: no other run gets a slot", async () => {
    const runId = await dueRun('two-messages');
    const tenantId = scheduler.tenantId;
    let leased: () => void = () => undefined;
    const w1 = earlyWorker(new Promise<void>((resolve) => (leased = resolve)));
    const first = executeRun(w1.deps, runId, { tenantId, notBefore: Date.now() + 1500 });
    await w1.took;

    // The run's other message (no delay), on another worker: the slot is the run's already, and
    // that worker leases the run.
    const w2 = scheduler.workerDeps('w2');
    const taken = await w2.inFlight.acquireSlot(tenantId, runId, 1, Date.now(), (runIds) => slotLiveness(w2, runIds));
    expect(taken).toMatchObject({ slot: 0, own: true });
    expect((await w2.leases.lease(runId, leaseRequest(scheduler.config, 'w2'))).kind).toBe('leased');
    leased();

    expect(await first).toBe('held');
    // Before, the early message, having taken the slot itself, gave it back: the run ran without
    // one, and another run took it, two in flight under a limit of 1.
    expect((await scheduler.deps.inFlight.holders(tenantId)).map((holder) => holder.runId)).toEqual([runId]);
    expect(await scheduler.deps.inFlight.acquire(tenantId, 'another-run', 1, Date.now(), (runIds) => slotLiveness(scheduler.deps, runIds))).toBeNull();
    // The lease holder's give-back after its outcome frees it.
    expect(await w2.inFlight.release(tenantId, taken!.slot, runId, taken!.token)).toBe(true);
    expect(await scheduler.deps.inFlight.holders(tenantId)).toEqual([]);
  });

  it('is freed by the outcome of the run that the other message ran', async () => {
    const runId = await dueRun('two-messages-run', target.url);
    const tenantId = scheduler.tenantId;
    const called = eventually(
      () => Promise.resolve(target.calls.length),
      (calls) => calls === 1,
      30_000,
    );
    const w1 = earlyWorker(called);
    const first = executeRun(w1.deps, runId, { tenantId, notBefore: Date.now() + 1500 });
    await w1.took;
    const second = executeRun(scheduler.workerDeps('w2'), runId, { tenantId });

    expect(await first).toBe('held');
    expect((await scheduler.deps.inFlight.holders(tenantId)).map((holder) => holder.runId)).toEqual([runId]);
    answer();
    expect(await second).toBe('succeeded');
    expect(await scheduler.deps.inFlight.holders(tenantId)).toEqual([]);
  });

  it("is freed by the recovery of a worker that died holding it: the retry gets it at once, not after a takeover's grace", async () => {
    const runId = await dueRun('dead-holder');
    const tenantId = scheduler.tenantId;
    // A worker took the slot and leased the run, then died: its hold is never given back.
    const dead = scheduler.workerDeps('dead');
    expect(await dead.inFlight.acquireSlot(tenantId, runId, 1, Date.now(), (runIds) => slotLiveness(dead, runIds))).toMatchObject({ own: false });
    expect((await dead.leases.lease(runId, leaseRequest(scheduler.config, 'dead'))).kind).toBe('leased');
    // The run's message again, past the lease: its worker joins the slot, records the lost worker
    // and plans the retry. Before, it gave back its own hold only, and the dead one kept the slot.
    const later = Date.now() + 10 * 60_000;
    expect(
      await executeRun(
        scheduler.workerDeps('recovery', () => later),
        runId,
        { tenantId },
      ),
    ).toBe('worker-lost');
    expect(await scheduler.deps.inFlight.holders(tenantId)).toEqual([]);
  });
});

describe('in-flight slots under contention', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
  });
  afterAll(() => scheduler.stop());

  const allRunning = () => Promise.resolve(new Map<string, { running: boolean; leaseExpiresAt: number | null }>());

  it('gives exactly `limit` of many racing runs a slot, and a freed slot to the next', async () => {
    const tenant = `race-${scheduler.prefix}`;
    const now = Date.now();
    // Liveness that says every holder is running with a live lease: no takeover.
    const live = (runIds: readonly string[]) => Promise.resolve(new Map(runIds.map((id) => [id, { running: true, leaseExpiresAt: now + 60_000 }])));
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => scheduler.deps.inFlight.acquire(tenant, `run-${i}`, 3, now, live)));
    const winners = results.filter((slot) => slot !== null);
    expect(winners).toHaveLength(3);
    expect(new Set(winners).size).toBe(3);
    expect(await allRunning()).toEqual(new Map());

    const holder = (await scheduler.deps.inFlight.holders(tenant))[0]!;
    await scheduler.deps.inFlight.release(tenant, holder.slot, holder.runId);
    expect(await scheduler.deps.inFlight.acquire(tenant, 'run-next', 3, now, live)).toBe(holder.slot);
    // A run that holds a slot gets the same slot again (a redelivered message).
    expect(await scheduler.deps.inFlight.acquire(tenant, 'run-next', 3, now, live)).toBe(holder.slot);
  });

  it('takes over the slot of a run whose worker died (lease expired), not one still running', async () => {
    const tenant = `dead-${scheduler.prefix}`;
    const then = Date.now() - 60_000;
    const alive = (runIds: readonly string[]) => Promise.resolve(new Map(runIds.map((id) => [id, { running: true, leaseExpiresAt: Date.now() + 60_000 }])));
    expect(await scheduler.deps.inFlight.acquire(tenant, 'crashed-run', 1, then, alive)).toBe(0);
    // Still running under a live lease: no slot for another run.
    expect(await scheduler.deps.inFlight.acquire(tenant, 'waiting-run', 1, Date.now(), alive)).toBeNull();
    // Its worker died: the lease has expired, the slot is taken over once, by one of two racers.
    const expired = (runIds: readonly string[]) => Promise.resolve(new Map(runIds.map((id) => [id, { running: true, leaseExpiresAt: Date.now() - 30_000 }])));
    const [a, b] = await Promise.all([
      scheduler.deps.inFlight.acquire(tenant, 'waiting-run', 1, Date.now(), expired),
      scheduler.deps.inFlight.acquire(tenant, 'other-run', 1, Date.now(), expired),
    ]);
    expect([a, b].filter((slot) => slot === 0)).toHaveLength(1);
    expect((await scheduler.deps.inFlight.holders(tenant)).map((h) => h.runId)).not.toContain('crashed-run');
  });

  it("counts the holds of one run's messages: the slot goes free with the last given back, whichever took it first", async () => {
    const tenant = `holds-${scheduler.prefix}`;
    const now = Date.now();
    const first = (await scheduler.deps.inFlight.acquireSlot(tenant, 'run-a', 1, now, allRunning))!;
    const second = (await scheduler.deps.inFlight.acquireSlot(tenant, 'run-a', 1, now, allRunning))!;
    expect(first).toMatchObject({ slot: 0, own: false });
    expect(second).toMatchObject({ slot: 0, own: true });
    expect(first.token).not.toBe(second.token);
    // The first message's hold given back (it did not lease the run): the slot stays the run's.
    expect(await scheduler.deps.inFlight.release(tenant, 0, 'run-a', first.token)).toBe(false);
    expect((await scheduler.deps.inFlight.holders(tenant)).map((holder) => holder.runId)).toEqual(['run-a']);
    expect(await scheduler.deps.inFlight.acquire(tenant, 'run-b', 1, now, allRunning)).toBeNull();
    // Given back again (the store client's retry of a write that landed): nothing more goes.
    expect(await scheduler.deps.inFlight.release(tenant, 0, 'run-a', first.token)).toBe(false);
    expect((await scheduler.deps.inFlight.holders(tenant)).map((holder) => holder.runId)).toEqual(['run-a']);
    // The last hold: the slot is free.
    expect(await scheduler.deps.inFlight.release(tenant, 0, 'run-a', second.token)).toBe(true);
    expect(await scheduler.deps.inFlight.holders(tenant)).toEqual([]);
    expect(await scheduler.deps.inFlight.acquire(tenant, 'run-b', 1, now, allRunning)).toBe(0);
  });

  it('drops every hold of a slot taken over; a late give-back of one of them frees nothing', async () => {
    const tenant = `taken-over-${scheduler.prefix}`;
    const then = Date.now() - 60_000;
    const slow = (await scheduler.deps.inFlight.acquireSlot(tenant, 'slow-run', 1, then, allRunning))!;
    const expired = (runIds: readonly string[]) => Promise.resolve(new Map(runIds.map((id) => [id, { running: true, leaseExpiresAt: Date.now() - 30_000 }])));
    const next = (await scheduler.deps.inFlight.acquireSlot(tenant, 'next-run', 1, Date.now(), expired))!;
    expect(next).toMatchObject({ slot: 0, own: false });
    // The worker taken for dead was only slow: its give-back leaves the slot with the run that took it over.
    expect(await scheduler.deps.inFlight.release(tenant, 0, 'slow-run', slow.token)).toBe(false);
    expect((await scheduler.deps.inFlight.holders(tenant)).map((holder) => holder.runId)).toEqual(['next-run']);
    expect(await scheduler.deps.inFlight.release(tenant, 0, 'next-run', next.token)).toBe(true);
  });

  it('keeps working with slot items written before holds were counted', async () => {
    const tenant = `uncounted-${scheduler.prefix}`;
    const putUncounted = (runId: string, acquiredAt: number) =>
      scheduler.clients.dynamo.send(
        new PutCommand({
          TableName: scheduler.config.jobsTable,
          Item: { ...inFlightSlotKey(tenant, 0), runId, acquiredAt, expiresAtEpoch: Math.floor(acquiredAt / 1000) + 3600 },
        }),
      );
    // Held by a worker that gives it back by run id: a message of the run that joins and gives its
    // own hold back leaves it with that worker's run.
    await putUncounted('old-run', Date.now());
    const joined = (await scheduler.deps.inFlight.acquireSlot(tenant, 'old-run', 1, Date.now(), allRunning))!;
    expect(joined).toMatchObject({ slot: 0, own: true });
    expect(await scheduler.deps.inFlight.release(tenant, 0, 'old-run', joined.token)).toBe(false);
    expect((await scheduler.deps.inFlight.holders(tenant)).map((holder) => holder.runId)).toEqual(['old-run']);
    expect(await scheduler.deps.inFlight.release(tenant, 0, 'old-run')).toBe(true);
    expect(await scheduler.deps.inFlight.holders(tenant)).toEqual([]);

    // Left by a worker that died: taken over, as before.
    await putUncounted('crashed-run', Date.now() - 60_000);
    const expired = (runIds: readonly string[]) => Promise.resolve(new Map(runIds.map((id) => [id, { running: true, leaseExpiresAt: Date.now() - 30_000 }])));
    const next = (await scheduler.deps.inFlight.acquireSlot(tenant, 'next-run', 1, Date.now(), expired))!;
    expect(next).toMatchObject({ slot: 0, own: false });
    expect(await scheduler.deps.inFlight.release(tenant, 0, 'next-run', next.token)).toBe(true);
    expect(await scheduler.deps.inFlight.holders(tenant)).toEqual([]);
  });
});
