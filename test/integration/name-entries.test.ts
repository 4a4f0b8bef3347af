// A job's name is guarded by its entry in the tenant's names partition, which `?name=` and
// `?namePrefix=` read (decision 0192), and an upgrade from the guards before it keeps every name
// unique on the way: its first deploy takes both guards, the backfill copies the old ones, and the
// entries alone then hold them. Against the emulator.
import { CreateTableCommand, DescribeTableCommand, UpdateTableCommand } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeps } from '../../lambdas/app/deps';
import { createAwsClients } from '../../lambdas/store/aws';
import { deletedJobNameKey, jobNameEntryKey, jobNameKey } from '../../lambdas/store/keys';
import { JOBS_BY_NAME_INDEX, jobsTable } from '../../lambdas/store/schema';
import { createLocalResources, createTableInput, deleteLocalResources } from '../../scripts/local/resources';
import type { LocalRuntime } from '../../scripts/local/runtime';
import { startLocalRuntime } from '../../scripts/local/runtime';
import { backfillNameEntries } from '../../scripts/ops/backfill-name-entries';
import type { Scheduler, TargetServer } from './harness';
import { eventually, jobBody, startScheduler, startTarget } from './harness';

const byTenantName = jobsTable.replacedIndexes!.find((index) => index.indexName === JOBS_BY_NAME_INDEX)!;
const cron = { kind: 'cron', expression: '0 9 * * *', timezone: 'UTC' };

describe("an upgrade from the names' guards before decision 0192", () => {
  // The upgrade's first deploy: the stack keeps byTenantName, and its functions take both guards.
  let upgrading: Scheduler;
  // The second: the entries alone, over the same tables and tenant.
  let upgraded: LocalRuntime;
  let target: TargetServer;

  beforeAll(async () => {
    upgrading = await startScheduler({ config: { legacyNameGuards: true } });
    target = await startTarget();
    const { dynamo } = upgrading.clients;
    await dynamo.send(
      new UpdateTableCommand({
        TableName: upgrading.config.jobsTable,
        AttributeDefinitions: createTableInput(upgrading.config.jobsTable, { ...jobsTable, indexes: [byTenantName] }).AttributeDefinitions,
        GlobalSecondaryIndexUpdates: [{ Create: createTableInput('-', { ...jobsTable, indexes: [byTenantName] }).GlobalSecondaryIndexes![0]! }],
      }),
    );
    await eventually(
      async () => (await dynamo.send(new DescribeTableCommand({ TableName: upgrading.config.jobsTable }))).Table,
      (table) => table?.GlobalSecondaryIndexes?.find((index) => index.IndexName === JOBS_BY_NAME_INDEX)?.IndexStatus === 'ACTIVE',
    );
    upgraded = await startLocalRuntime({
      deps: createDeps({ ...upgrading.config, legacyNameGuards: false }, createAwsClients(), {
        workerId: `${upgrading.prefix}-upgraded`,
        metricSink: () => undefined,
      }),
      clients: upgrading.clients,
      port: 0,
      workerConcurrency: 0,
      tickIntervalMs: 0,
    });
  });
  afterAll(async () => {
    await upgraded.stop();
    await upgrading.stop();
    await target.stop();
  });

  const upgradedApi = async (
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: { job?: { jobId: string }; items?: { jobId: string; name: string }[] } }> => {
    const response = await fetch(`${upgraded.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${upgrading.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? (JSON.parse(text) as never) : {} };
  };
  const itemAt = async (key: { pk: string; sk: string }) =>
    (await upgrading.clients.dynamo.send(new GetCommand({ TableName: upgrading.config.jobsTable, Key: key, ConsistentRead: true }))).Item;
  const entryOf = (name: string) => itemAt(jobNameEntryKey(upgrading.tenantId, name));
  const oldGuardOf = (name: string) => itemAt(jobNameKey(upgrading.tenantId, name));
  const create = async (name: string): Promise<{ status: number; jobId?: string }> => {
    const answer = await upgrading.api('POST', '/v1/jobs', jobBody(target.url, { name, schedule: cron }));
    return { status: answer.status, jobId: (answer.body as { job?: { jobId: string } }).job?.jobId };
  };
  /** A job as the release before decision 0192 left it: its name held by the old guard alone, written in its create's transaction (no time). */
  const createdBeforeTheUpgrade = async (name: string): Promise<string> => {
    const { jobId } = await create(name);
    const { dynamo } = upgrading.clients;
    await dynamo.send(new DeleteCommand({ TableName: upgrading.config.jobsTable, Key: jobNameEntryKey(upgrading.tenantId, name) }));
    await dynamo.send(new PutCommand({ TableName: upgrading.config.jobsTable, Item: { ...jobNameKey(upgrading.tenantId, name), jobId } }));
    return jobId!;
  };

  it('during its first deploy, a create takes the old guard and the entry, and meets a name held by the old guard alone', async () => {
    const { status, jobId } = await create('both-guards');
    expect(status).toBe(201);
    expect((await oldGuardOf('both-guards'))?.jobId).toBe(jobId);
    expect((await entryOf('both-guards'))?.jobId).toBe(jobId);

    const oldJobId = await createdBeforeTheUpgrade('held-the-old-way');
    expect((await create('held-the-old-way')).status).toBe(409);
    expect(await entryOf('held-the-old-way')).toBeUndefined();
    // So does one under an Idempotency-Key, whose guards are in its transaction; a new name takes both there.
    const keyed = (name: string, key: string) => upgrading.api('POST', '/v1/jobs', jobBody(target.url, { name, schedule: cron }), { 'idempotency-key': key });
    expect((await keyed('held-the-old-way', 'upgrade-keyed-held')).status).toBe(409);
    const keyedNew = await keyed('keyed-both-guards', 'upgrade-keyed-new');
    expect(keyedNew.status).toBe(201);
    const keyedId = (keyedNew.body as { job: { jobId: string } }).job.jobId;
    expect([(await oldGuardOf('keyed-both-guards'))?.jobId, (await entryOf('keyed-both-guards'))?.jobId]).toEqual([keyedId, keyedId]);
    // A name whose entry is held (a job created since the upgrade began, its old guard gone): the
    // create takes the old guard, meets the entry and gives the old guard back.
    const { jobId: entryHolder } = await create('held-by-the-entry');
    await upgrading.clients.dynamo.send(new DeleteCommand({ TableName: upgrading.config.jobsTable, Key: jobNameKey(upgrading.tenantId, 'held-by-the-entry') }));
    expect((await create('held-by-the-entry')).status).toBe(409);
    expect(await oldGuardOf('held-by-the-entry')).toBeUndefined();
    expect((await entryOf('held-by-the-entry'))?.jobId).toBe(entryHolder);
    // Listed through byTenantName, which still has every job.
    const listed = await upgrading.api('GET', '/v1/jobs?name=held-the-old-way');
    expect((listed.body as { items: { jobId: string }[] }).items.map((job) => job.jobId)).toEqual([oldJobId]);

    // Deleted, it frees its name (it had no entry to delete); taken again, by both guards.
    expect((await upgrading.api('DELETE', `/v1/jobs/${oldJobId}`)).status).toBe(200);
    expect(await oldGuardOf('held-the-old-way')).toBeUndefined();
    const again = await create('held-the-old-way');
    expect(again.status).toBe(201);
    expect((await entryOf('held-the-old-way'))?.jobId).toBe(again.jobId);
  });

  it('the backfill copies the old guards of live jobs, and the entries alone then keep and find every name', async () => {
    const keptId = await createdBeforeTheUpgrade('kept-name');
    const bothId = (await create('kept-both')).jobId;
    // An old guard whose create failed before its job: nothing to copy.
    await upgrading.clients.dynamo.send(
      new PutCommand({
        TableName: upgrading.config.jobsTable,
        Item: { ...jobNameKey(upgrading.tenantId, 'kept-orphan'), jobId: 'job_00000000000000000000000009', takenAt: new Date(0).toISOString() },
      }),
    );

    // A job deleted before the upgrade: the index listed it by name, and so must the entries.
    const { jobId: goneId } = await create('gone-before');
    expect((await upgrading.api('DELETE', `/v1/jobs/${goneId}`)).status).toBe(200);
    await upgrading.clients.dynamo.send(
      new DeleteCommand({ TableName: upgrading.config.jobsTable, Key: deletedJobNameKey(upgrading.tenantId, 'gone-before', goneId!) }),
    );

    const counts = await backfillNameEntries(upgrading.clients.dynamo, upgrading.config.jobsTable);
    expect(counts.conflicting).toEqual([]);
    expect(counts.orphaned).toBeGreaterThanOrEqual(1);
    expect(counts.deleted).toBeGreaterThanOrEqual(1);
    expect((await upgradedApi('GET', '/v1/jobs?name=gone-before')).body.items?.map((job) => job.jobId)).toEqual([goneId]);
    expect(await entryOf('kept-orphan')).toBeUndefined();
    const copied = await entryOf('kept-name');
    expect(copied?.jobId).toBe(keptId);
    // Given a time: if its job is deleted before the next deploy, the entry is taken over like an orphaned guard.
    expect(typeof copied?.takenAt).toBe('string');
    expect((await entryOf('kept-both'))?.jobId).toBe(bothId);
    // A second run finds every entry there.
    expect((await backfillNameEntries(upgrading.clients.dynamo, upgrading.config.jobsTable)).copied).toBe(0);

    // The second deploy: the entries alone.
    expect((await upgradedApi('POST', '/v1/jobs', jobBody(target.url, { name: 'kept-name', schedule: cron }))).status).toBe(409);
    expect((await upgradedApi('POST', '/v1/jobs', jobBody(target.url, { name: 'kept-both', schedule: cron }))).status).toBe(409);
    expect((await upgradedApi('GET', '/v1/jobs?name=kept-name')).body.items?.map((job) => job.jobId)).toEqual([keptId]);
    expect((await upgradedApi('GET', '/v1/jobs?namePrefix=kept-')).body.items?.map((job) => job.name)).toEqual(['kept-both', 'kept-name']);
    // The orphan's name is free; a deleted job's name too.
    expect((await upgradedApi('POST', '/v1/jobs', jobBody(target.url, { name: 'kept-orphan', schedule: cron }))).status).toBe(201);
    expect((await upgradedApi('DELETE', `/v1/jobs/${keptId}`)).status).toBe(200);
    expect(await entryOf('kept-name')).toBeUndefined();
    const renamed = await upgradedApi('POST', '/v1/jobs', jobBody(target.url, { name: 'kept-name', schedule: cron }));
    expect(renamed.status).toBe(201);
    // `?name=` finds the name's holder, then the deleted jobs that had it; a prefix, those too, in name order.
    expect((await upgradedApi('GET', '/v1/jobs?name=kept-name')).body.items?.map((job) => job.jobId)).toEqual([renamed.body.job?.jobId, keptId]);
    expect((await upgradedApi('GET', '/v1/jobs?namePrefix=kept-')).body.items?.map((job) => job.name)).toEqual([
      'kept-both',
      'kept-name',
      'kept-name',
      'kept-orphan',
    ]);
    // The deleted job's old guard is still there (nothing reads it now); a backfill run after all
    // copies no such guard back.
    expect((await oldGuardOf('kept-name'))?.jobId).toBe(keptId);
    const rerun = await backfillNameEntries(upgrading.clients.dynamo, upgrading.config.jobsTable);
    expect(rerun.copied).toBe(0);
    expect(rerun.conflicting).toEqual([]);
    expect((await entryOf('kept-name'))?.jobId).not.toBe(keptId);
  });

  it('the backfill reports a name whose two guards name different live jobs, and replaces an entry a deleted job left', async () => {
    // Two live jobs, each holding one of the name's guards (as a botched upgrade could leave them).
    const first = await createdBeforeTheUpgrade('split-name');
    // The second taken by a function on the entries alone before the backfill ran: a step skipped.
    const split = await upgradedApi('POST', '/v1/jobs', jobBody(target.url, { name: 'split-name', schedule: cron }));
    expect(split.status).toBe(201);
    const second = split.body.job!.jobId;
    // An entry naming a deleted job (left by a delete racing an earlier run), while the name's old guard names a live one.
    const { jobId: deleted } = await create('stale-entry-other');
    expect((await upgrading.api('DELETE', `/v1/jobs/${deleted}`)).status).toBe(200);
    const live = await createdBeforeTheUpgrade('stale-entry');
    await upgrading.clients.dynamo.send(
      new PutCommand({
        TableName: upgrading.config.jobsTable,
        Item: { ...jobNameEntryKey(upgrading.tenantId, 'stale-entry'), jobId: deleted, takenAt: new Date().toISOString() },
      }),
    );

    const counts = await backfillNameEntries(upgrading.clients.dynamo, upgrading.config.jobsTable);
    expect(counts.conflicting).toEqual([{ tenantId: upgrading.tenantId, name: 'split-name', guardJobId: first, entryJobId: second }]);
    expect((await entryOf('split-name'))?.jobId).toBe(second);
    expect((await entryOf('stale-entry'))?.jobId).toBe(live);

    // Repaired by deleting either job: a delete gives back only the guards that name it.
    expect((await upgrading.api('DELETE', `/v1/jobs/${second}`)).status).toBe(200);
    expect((await oldGuardOf('split-name'))?.jobId).toBe(first);
    expect(await entryOf('split-name')).toBeUndefined();
    const again = await backfillNameEntries(upgrading.clients.dynamo, upgrading.config.jobsTable);
    expect(again.conflicting).toEqual([]);
    expect((await entryOf('split-name'))?.jobId).toBe(first);
  });

  it("an entry naming a deleted job (a race's leftover) is taken over by the next create of its name at once", async () => {
    const { jobId: deleted } = await create('left-by-a-race-other');
    expect((await upgrading.api('DELETE', `/v1/jobs/${deleted}`)).status).toBe(200);
    await upgrading.clients.dynamo.send(
      new PutCommand({
        TableName: upgrading.config.jobsTable,
        Item: { ...jobNameEntryKey(upgrading.tenantId, 'left-by-a-race'), jobId: deleted, takenAt: new Date().toISOString() },
      }),
    );
    // Deleted with its name, then its guard put back (the race): the job is listed once, by its deleted entry.
    const { jobId: twice } = await create('listed-once');
    expect((await upgrading.api('DELETE', `/v1/jobs/${twice}`)).status).toBe(200);
    await upgrading.clients.dynamo.send(
      new PutCommand({
        TableName: upgrading.config.jobsTable,
        Item: { ...jobNameEntryKey(upgrading.tenantId, 'listed-once'), jobId: twice, takenAt: new Date().toISOString() },
      }),
    );
    expect((await upgradedApi('GET', '/v1/jobs?name=listed-once')).body.items?.map((job) => job.jobId)).toEqual([twice]);

    const taken = await upgradedApi('POST', '/v1/jobs', jobBody(target.url, { name: 'left-by-a-race', schedule: cron }));
    expect(taken.status).toBe(201);
    expect((await entryOf('left-by-a-race'))?.jobId).toBe(taken.body.job?.jobId);
  });
});

describe("the local runtime's start on a jobs table made before decision 0192", () => {
  it("copies the names' old guards to their entries before it serves, then drops byTenantName", async () => {
    const clients = createAwsClients();
    const prefix = `it-${randomUUID().slice(0, 8)}`;
    const table = `${prefix}-jobs`;
    await clients.dynamo.send(new CreateTableCommand(createTableInput(table, { ...jobsTable, indexes: [...jobsTable.indexes, byTenantName] })));
    const jobId = 'job_00000000000000000000000042';
    await clients.dynamo.send(new PutCommand({ TableName: table, Item: { pk: `JOB#${jobId}`, sk: 'JOB', jobId, tenantId: 'tenant-a', name: 'nightly' } }));
    await clients.dynamo.send(new PutCommand({ TableName: table, Item: { ...jobNameKey('tenant-a', 'nightly'), jobId } }));

    const config = await createLocalResources(clients, prefix);
    try {
      const { Item: entry } = await clients.dynamo.send(
        new GetCommand({ TableName: table, Key: jobNameEntryKey('tenant-a', 'nightly'), ConsistentRead: true }),
      );
      expect(entry?.jobId).toBe(jobId);
      const { Table: described } = await clients.dynamo.send(new DescribeTableCommand({ TableName: table }));
      expect((described?.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName)).not.toContain(JOBS_BY_NAME_INDEX);
      // Started again, nothing is left to do.
      await createLocalResources(clients, prefix);
    } finally {
      await deleteLocalResources(clients, config);
    }
  });
});
