// A tenant's grants (decision 0194): the secrets and AWS resources it may name, set by the operator
// with the admin command. In a deployment shared by tenants the deployment's lists are one for all
// of them: without grants, tenant A, knowing an ARN tenant B's jobs use, could have B's secret sent
// to a URL of A's, or invoke B's function. With grants, the API refuses what A's leave out with the
// very 400 of an ARN the deployment does not list, and the worker checks again at every call, so
// that a grant narrowed after a job was written stops its calls.
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { CreateSecretCommand, DeleteSecretCommand } from '@aws-sdk/client-secrets-manager';
import { CreateTopicCommand, DeleteTopicCommand, SNSClient } from '@aws-sdk/client-sns';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { emulatorEnvironment } from '../../scripts/local/emulator';
import type { AdminContext } from '../../scripts/ops/admin';
import { auditAsAdmin, runAdmin } from '../../scripts/ops/admin';
import type { Scheduler, TargetServer } from './harness';
import { awsClients, eventually, jobBody, startScheduler, startTarget } from './harness';

type RunBody = Record<string, any>;

const run = promisify(execFile);
const ACCOUNT = '123456789012';
const arn = {
  secret: (name: string) => `arn:aws:secretsmanager:us-east-1:${ACCOUNT}:secret:${name}-AbC123`,
  fn: (name: string) => `arn:aws:lambda:us-east-1:${ACCOUNT}:function:${name}`,
  queue: (name: string) => `arn:aws:sqs:us-east-1:${ACCOUNT}:${name}`,
  queueUrl: (name: string) => `https://sqs.us-east-1.amazonaws.com/${ACCOUNT}/${name}`,
  bus: (name: string) => `arn:aws:events:us-east-1:${ACCOUNT}:event-bus/${name}`,
  topic: (name: string) => `arn:aws:sns:us-east-1:${ACCOUNT}:${name}`,
};

function adminContext(scheduler: Scheduler): AdminContext {
  return {
    tenants: scheduler.deps.tenants,
    apiKeys: scheduler.deps.apiKeys,
    defaults: scheduler.config.tenantDefaults,
    now: Date.now,
    audit: auditAsAdmin(scheduler.deps),
  };
}

/** A tenant made by the admin command, with its grants when given, and a caller of the API with its key. */
async function adminTenant(scheduler: Scheduler, name: string, arns?: readonly string[]) {
  const tenantId = `${name}-${scheduler.prefix}`;
  const created = (await runAdmin(['tenant', 'create', tenantId, ...(arns ? ['--arns', arns.join(',')] : [])], adminContext(scheduler))) as {
    apiKey: string;
  };
  const api = (method: string, path: string, body?: unknown) => scheduler.api(method, path, body, { authorization: `Bearer ${created.apiKey}` });
  return { tenantId, apiKey: created.apiKey, api };
}

describe('tenant grants at the API (AWS mode: the deployment lists both tenants’ resources)', () => {
  let scheduler: Scheduler;
  let tenantA: Awaited<ReturnType<typeof adminTenant>>;
  // Tenant A's resources and tenant B's, all listed by the deployment; `unlisted`, by none.
  const a = { secret: arn.secret('a/token'), fn: arn.fn('a-invoices'), queue: 'a-exports', bus: 'a-billing', topic: arn.topic('a-ops') };
  const b = { secret: arn.secret('b/token'), fn: arn.fn('b-payroll'), queue: 'b-exports', bus: 'b-billing', topic: arn.topic('b-ops') };
  const unlisted = { secret: arn.secret('nobody/token'), fn: arn.fn('nobody'), queue: 'nobody', bus: 'nobody', topic: arn.topic('nobody') };

  beforeAll(async () => {
    scheduler = await startScheduler({
      workerConcurrency: 0,
      config: {
        localMode: false,
        headerSecretArns: [a.secret, b.secret],
        allowedTargets: {
          lambdaFunctionArns: [a.fn, b.fn],
          sqsQueueArns: [arn.queue(a.queue), arn.queue(b.queue)],
          eventBusArns: [arn.bus(a.bus), arn.bus(b.bus)],
          snsTopicArns: [a.topic, b.topic],
        },
      },
    });
    tenantA = await adminTenant(scheduler, 'tenant-a', [a.secret, a.fn, arn.queue(a.queue), arn.bus(a.bus), a.topic]);
    await adminTenant(scheduler, 'tenant-b', [b.secret, b.fn, arn.queue(b.queue), arn.bus(b.bus), b.topic]);
  });
  afterAll(() => scheduler.stop());

  type Resources = typeof a;
  const secretJob = (r: Resources) =>
    jobBody('https://hooks.example.com/a', {
      schedule: { kind: 'delay', seconds: 3600 },
      target: { kind: 'http', url: 'https://hooks.example.com/a', headers: { Authorization: { secretArn: r.secret } } },
    });
  const awsJob = (target: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    name: `job-${randomUUID().slice(0, 8)}`,
    type: 'grants',
    schedule: { kind: 'delay', seconds: 3600 },
    target,
    ...extra,
  });
  /** One job body per resource kind a grant covers. */
  const bodies = (r: Resources): [string, Record<string, unknown>][] => [
    ['secret', secretJob(r)],
    ['function', awsJob({ kind: 'lambda', functionArn: r.fn })],
    ['function (an alias)', awsJob({ kind: 'lambda', functionArn: `${r.fn}:live` })],
    ['queue', awsJob({ kind: 'sqs', queueUrl: arn.queueUrl(r.queue) })],
    ['bus by name', awsJob({ kind: 'eventbridge', eventBusName: r.bus, source: 's', detailType: 'd' })],
    ['bus by ARN', awsJob({ kind: 'eventbridge', eventBusName: arn.bus(r.bus), source: 's', detailType: 'd' })],
    [
      'notification topic',
      jobBody('https://hooks.example.com/a', {
        schedule: { kind: 'delay', seconds: 3600 },
        notify: { events: ['dead'], destination: { kind: 'sns', topicArn: r.topic } },
      }),
    ],
    [
      'notification bus',
      jobBody('https://hooks.example.com/a', {
        schedule: { kind: 'delay', seconds: 3600 },
        notify: { events: ['dead'], destination: { kind: 'eventbridge', eventBusName: r.bus, source: 's' } },
      }),
    ],
  ];

  it("refuses tenant B's secret, function, queue, bus and topic to tenant A with the very 400 of an ARN the deployment does not list, and writes nothing", async () => {
    const before = await scheduler.countJobAndRunItems();
    const others = bodies(b);
    const nobodys = bodies(unlisted);
    for (const [index, [what, body]] of others.entries()) {
      const refused = await tenantA.api('POST', '/v1/jobs', body);
      const unknown = await tenantA.api('POST', '/v1/jobs', nobodys[index]![1]);
      expect(refused.status, what).toBe(400);
      expect(refused.body.errors, what).toHaveLength(1);
      // Path and message alike: A cannot tell B's ARN from one nobody uses.
      expect(refused.body, what).toEqual(unknown.body);
    }
    expect(await scheduler.countJobAndRunItems()).toEqual(before);
  });

  it("creates tenant A's jobs naming what its grants and the deployment list", async () => {
    for (const [what, body] of bodies(a)) {
      const created = await tenantA.api('POST', '/v1/jobs', body);
      expect(created.status, `${what}: ${JSON.stringify(created.body)}`).toBe(201);
    }
  });

  it("lets a tenant without grants name every ARN the deployment lists, as before grants (B's among them)", async () => {
    // The harness's tenant has no profile, so no grants.
    for (const [what, body] of bodies(b)) {
      const created = await scheduler.api('POST', '/v1/jobs', body);
      expect(created.status, `${what}: ${JSON.stringify(created.body)}`).toBe(201);
    }
    // What the deployment does not list stays refused.
    expect((await scheduler.api('POST', '/v1/jobs', secretJob(unlisted))).status).toBe(400);
  });

  it("refuses a PATCH of A's job, and a workflow step of A's, to B's function as to an unlisted one", async () => {
    const created = await tenantA.api('POST', '/v1/jobs', awsJob({ kind: 'lambda', functionArn: a.fn }));
    const jobId = created.body.job.jobId as string;
    const patched = await tenantA.api('PATCH', `/v1/jobs/${jobId}`, { target: { kind: 'lambda', functionArn: b.fn } });
    const patchedUnknown = await tenantA.api('PATCH', `/v1/jobs/${jobId}`, { target: { kind: 'lambda', functionArn: unlisted.fn } });
    expect(patched.status).toBe(400);
    expect(patched.body).toEqual(patchedUnknown.body);
    expect((await tenantA.api('GET', `/v1/jobs/${jobId}`)).body.target).toEqual({ kind: 'lambda', functionArn: a.fn });

    const workflow = (functionArn: string) => ({
      name: `wf-${randomUUID().slice(0, 8)}`,
      type: 'grants',
      steps: [
        { id: 'first', target: { kind: 'lambda', functionArn: a.fn } },
        { id: 'second', dependsOn: ['first'], target: { kind: 'lambda', functionArn } },
      ],
    });
    const refused = await tenantA.api('POST', '/v1/workflows', workflow(b.fn));
    const refusedUnknown = await tenantA.api('POST', '/v1/workflows', workflow(unlisted.fn));
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([{ path: 'steps.1.target.functionArn', message: expect.stringContaining('is not a function') }]);
    expect(refused.body).toEqual(refusedUnknown.body);
    expect((await tenantA.api('POST', '/v1/workflows', workflow(a.fn))).status).toBe(201);
  });
});

describe('tenant grants at the call (local mode)', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  let kept: string;
  let narrowed: string;
  let topicArn: string;
  let queue: { url: string; arn: string };
  const functionArn = arn.fn(`grants-${randomUUID().slice(0, 8)}`);
  const keptValue = `Bearer kept-${randomBytes(12).toString('hex')}`;
  const narrowedValue = `Bearer narrowed-${randomBytes(12).toString('hex')}`;
  const cleanups: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    const { secrets, sqs } = awsClients();
    kept = (await secrets.send(new CreateSecretCommand({ Name: `it-${randomUUID().slice(0, 8)}/kept`, SecretString: keptValue }))).ARN!;
    narrowed = (await secrets.send(new CreateSecretCommand({ Name: `it-${randomUUID().slice(0, 8)}/narrowed`, SecretString: narrowedValue }))).ARN!;
    cleanups.push(() => secrets.send(new DeleteSecretCommand({ SecretId: kept, ForceDeleteWithoutRecovery: true })));
    cleanups.push(() => secrets.send(new DeleteSecretCommand({ SecretId: narrowed, ForceDeleteWithoutRecovery: true })));
    const sns = new SNSClient({});
    topicArn = (await sns.send(new CreateTopicCommand({ Name: `it-${randomUUID().slice(0, 8)}-ops` }))).TopicArn!;
    cleanups.push(() => sns.send(new DeleteTopicCommand({ TopicArn: topicArn })));
    const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `it-${randomUUID().slice(0, 8)}-grants` }))).QueueUrl!;
    const attributes = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
    queue = { url: queueUrl, arn: attributes.Attributes!.QueueArn! };
    cleanups.push(() => sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl })));
    // No workers yet: the jobs are written while granted, and run after the grants were narrowed.
    scheduler = await startScheduler({ workerConcurrency: 0, config: { headerSecretArns: [kept, narrowed] } });
    target = await startTarget();
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  });

  it('checks grants locally too: AWS resources are any the emulator has, but a tenant with grants names only those', async () => {
    const tenant = await adminTenant(scheduler, 'local', [queue.arn, functionArn]);
    const create = (targetBody: Record<string, unknown>) =>
      tenant.api('POST', '/v1/jobs', {
        name: `job-${randomUUID().slice(0, 8)}`,
        type: 'grants',
        schedule: { kind: 'delay', seconds: 3600 },
        target: targetBody,
      });
    // The emulator's queue URL (http://…/<account>/<name>) is the granted queue of that account and name.
    expect((await create({ kind: 'sqs', queueUrl: queue.url })).status).toBe(201);
    expect((await create({ kind: 'lambda', functionArn })).status).toBe(201);
    const refusedQueue = await create({ kind: 'sqs', queueUrl: queue.url.replace(/[^/]+$/, 'someone-elses') });
    expect(refusedQueue.body.errors).toEqual([{ path: 'target.queueUrl', message: expect.stringContaining("the tenant's grants") }]);
    const refusedFunction = await create({ kind: 'lambda', functionArn: arn.fn('someone-elses') });
    expect(refusedFunction.body.errors).toEqual([{ path: 'target.functionArn', message: expect.stringContaining("the tenant's grants") }]);
    // The secrets the deployment lists (LOCAL_HEADER_SECRET_ARNS) are checked as before, and the grants beside them.
    const secret = await create({ kind: 'http', url: target.url, headers: { Authorization: { secretArn: kept } } });
    expect(secret.body.errors).toEqual([{ path: 'target.headers.Authorization.secretArn', message: expect.stringContaining('is not a secret') }]);
  });

  it('fails a run whose secret, function or topic a narrowed grant no longer covers, before any call and for good, naming the kind and not the ARN', async () => {
    const tenant = await adminTenant(scheduler, 'narrowed', [kept, narrowed, functionArn, topicArn]);
    const create = async (body: Record<string, unknown>): Promise<{ jobId: string; runId: string }> => {
      const created = await tenant.api('POST', '/v1/jobs', { ...jobBody(target.url), ...body });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      return { jobId: created.body.job.jobId, runId: created.body.job.nextRunId };
    };
    const httpWith = (secretArn: string, path: string) => ({
      target: { kind: 'http', url: `${target.url}/${path}`, headers: { Authorization: { secretArn } } },
      retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 },
    });
    const keptJob = await create(httpWith(kept, 'kept'));
    const narrowedJob = await create(httpWith(narrowed, 'narrowed'));
    const lambdaJob = await create({ target: { kind: 'lambda', functionArn }, retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 } });
    const notifiedJob = await create({
      target: { kind: 'http', url: `${target.url}/notified` },
      notify: { events: ['succeeded'], destination: { kind: 'sns', topicArn } },
    });

    const narrowedTo = await runAdmin(['tenant', 'grants', tenant.tenantId, '--arns', kept], adminContext(scheduler));
    expect(narrowedTo).toMatchObject({ grants: [kept] });
    // Workers that start now read the narrowed grants (a running one within its cache's minute).
    await scheduler.startWorkers(2);

    const finished = (runId: string) =>
      eventually(
        async () => (await tenant.api('GET', `/v1/runs/${runId}`)).body as RunBody,
        (body) => ['SUCCEEDED', 'DEAD'].includes(body.status),
        30_000,
      );
    const [keptRun, narrowedRun, lambdaRun, notifiedRun] = (await Promise.all(
      [keptJob, narrowedJob, lambdaJob, notifiedJob].map((job) => finished(job.runId)),
    )) as [RunBody, RunBody, RunBody, RunBody];

    expect(keptRun.status).toBe('SUCCEEDED');
    expect(target.calls.find((call) => call.path === '/hook/kept')?.headers.authorization).toBe(keptValue);

    for (const [ended, kind, named] of [
      [narrowedRun, 'the secret of header Authorization', narrowed],
      [lambdaRun, 'its Lambda function', functionArn],
    ] as const) {
      expect(ended).toMatchObject({ status: 'DEAD', attempt: 1, error: { code: 'NOT_GRANTED', retryable: false } });
      expect(ended.error.message).toContain(`the tenant is not granted ${kind}`);
      expect(ended.error.message).not.toContain(named);
    }
    // Not called: the narrowed secret's value was never sent (nor read).
    expect(target.calls.filter((call) => call.path === '/hook/narrowed')).toEqual([]);
    expect(JSON.stringify(target.calls.map((call) => call.headers))).not.toContain(narrowedValue);

    expect(notifiedRun.status).toBe('SUCCEEDED');
    const notification = await eventually(
      () => scheduler.deps.notifications.get(notifiedJob.runId, 'succeeded'),
      (record) => record !== null && record.status !== 'PENDING',
      30_000,
    );
    expect(notification).toMatchObject({ status: 'DEAD', tries: 1, lastError: expect.stringMatching(/^NOT_GRANTED: the tenant is not granted its SNS topic/) });
    expect(notification!.lastError).not.toContain(topicArn);
  });
});

describe('the admin command’s grants', () => {
  let scheduler: Scheduler;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
  });
  afterAll(() => scheduler.stop());

  it('sets, shows, empties and clears a tenant’s grants, each change in its audit trail', async () => {
    const ctx = adminContext(scheduler);
    const tenantId = `granted-${scheduler.prefix}`;
    const fn = arn.fn('granted');
    const secret = arn.secret('granted/token');
    const created = await runAdmin(['tenant', 'create', tenantId, '--arns', fn], ctx);
    expect(created).toMatchObject({ tenant: { grants: [fn] } });

    expect(await runAdmin(['tenant', 'show', tenantId], ctx)).toMatchObject({ grants: [fn], grantsNote: expect.stringContaining('only these') });
    expect(await runAdmin(['tenant', 'grants', tenantId, '--arns', `${fn}, ${secret}`], ctx)).toMatchObject({ grants: [fn, secret] });
    expect((await scheduler.deps.tenants.get(tenantId))?.grants).toEqual([fn, secret]);
    // Set to what it was: no entry.
    await runAdmin(['tenant', 'grants', tenantId, '--arns', `${fn},${secret}`], ctx);
    expect(await runAdmin(['tenant', 'grants', tenantId, '--arns', 'none'], ctx)).toMatchObject({ grants: [] });
    const cleared = await runAdmin(['tenant', 'grants', tenantId, '--arns', 'all'], ctx);
    expect(cleared).toMatchObject({ grants: null, grantsNote: expect.stringContaining('Give each tenant of a shared deployment its grants') });
    expect((await scheduler.deps.tenants.get(tenantId))?.grants).toBeUndefined();
    // The limits are untouched by grants.
    expect((await scheduler.deps.tenants.get(tenantId))?.limits).toEqual({});

    const trail = await scheduler.deps.audit.list(tenantId, { objectId: tenantId, limit: 10 });
    expect(trail.items.map((entry) => [entry.actor, entry.action, entry.changes])).toEqual([
      ['admin', 'tenant.grants', { grants: { before: [] } }],
      ['admin', 'tenant.grants', { grants: { before: [fn, secret], after: [] } }],
      ['admin', 'tenant.grants', { grants: { before: [fn], after: [fn, secret] } }],
      ['admin', 'tenant.create', { name: { after: tenantId }, grants: { after: [fn] } }],
    ]);
    // And the tenant reads it in its own trail.
    expect((await scheduler.deps.audit.list(tenantId, { limit: 10 })).items.some((entry) => entry.action === 'tenant.grants')).toBe(true);

    await expect(runAdmin(['tenant', 'grants', tenantId, '--arns', 'arn:aws:lambda:us-east-1:123456789012:function:x*'], ctx)).rejects.toThrow(/no wildcards/);
    await expect(runAdmin(['tenant', 'grants', `missing-${scheduler.prefix}`, '--arns', fn], ctx)).rejects.toThrow(/no tenant/);
    expect((await scheduler.deps.tenants.get(tenantId))?.grants).toBeUndefined();
  });

  it('the CLI sets grants, and refuses a bad ARN before it changes anything', async () => {
    const tenantId = `cli-${scheduler.prefix}`;
    await runAdmin(['tenant', 'create', tenantId], adminContext(scheduler));
    const cli = (args: string[]) =>
      run(process.execPath, ['node_modules/tsx/dist/cli.mjs', 'scripts/admin.ts', ...args], {
        env: { ...process.env, ...emulatorEnvironment(inject('awsEndpoint')), LOCAL_PREFIX: `never-${scheduler.prefix}` },
      });
    const fn = arn.fn('cli');
    const { stdout } = await cli(['tenant', 'grants', tenantId, '--arns', fn, '--jobs-table', scheduler.config.jobsTable]);
    expect(JSON.parse(stdout)).toMatchObject({ grants: [fn] });
    expect((await scheduler.deps.tenants.get(tenantId))?.grants).toEqual([fn]);
    const refused = await cli(['tenant', 'grants', tenantId, '--arns', 'arn:aws:s3:::bucket', '--jobs-table', scheduler.config.jobsTable]).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('arn:aws:s3:::bucket');
    expect((await scheduler.deps.tenants.get(tenantId))?.grants).toEqual([fn]);
  });
});
