// Outcome notifications through the local runtime (docs/notifications.md): a dead run sends one
// signed HTTP notification; a succeeded run, an SNS topic and an EventBridge bus as destinations; a
// destination that fails first is tried again on the notification's own budget while the run had
// long finished; a redelivered outcome and racing tries still notify once.
import { randomUUID } from 'node:crypto';
import {
  CreateEventBusCommand,
  DeleteEventBusCommand,
  DeleteRuleCommand,
  EventBridgeClient,
  PutRuleCommand,
  PutTargetsCommand,
  RemoveTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import { CreateTopicCommand, DeleteTopicCommand, SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';
import type { Message } from '@aws-sdk/client-sqs';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueAttributesCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { notificationKey } from '../../lambdas/store/keys';
import { claimRun, completeRun } from '../../lambdas/app/external-workers';
import type { SchedulerDeps } from '../../lambdas/app/deps';
import { resendNotification, STALLED_RESEND_MS } from '../../lambdas/app/run-notifications';
import { verifyDelivery } from '../../clients/index';
import { jobSubject, notifyOutcome } from '../../lambdas/app/notifications';
import { tryNotification } from '../../lambdas/app/notification-tries';
import type { RunNotificationBody } from '../../lambdas/domain/notify';
import { notificationBodyOf, notificationIdOf } from '../../lambdas/domain/notify';
import type { Scheduler, TargetServer } from './harness';
import { awsClients, eventually, executeRun, jobBody, leaseRequest, startScheduler, startTarget } from './harness';

type RunBody = Record<string, any>;
/** Notifications are tried by the workers of a loaded machine: generous, never a claim on speed. */
const WAIT_MS = 60_000;

async function createQueue(name: string): Promise<{ url: string; arn: string }> {
  const { sqs } = awsClients();
  const url = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl as string;
  const attributes = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
  return { url, arn: attributes.Attributes?.QueueArn as string };
}

async function receiveAll(url: string, atLeast: number): Promise<Message[]> {
  const { sqs } = awsClients();
  const seen: Message[] = [];
  await eventually(
    async () => {
      const { Messages: messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
      seen.push(...messages);
      return seen.length;
    },
    (count) => count >= atLeast,
    WAIT_MS,
  );
  return seen;
}

describe('outcome notifications', () => {
  let scheduler: Scheduler;
  let hooks: TargetServer;
  /** Answers the jobs' own calls: 500 for paths ending in /fail, else 200. */
  let jobTarget: TargetServer;
  /** Fails each notification's first try (503), then accepts. */
  let flaky: TargetServer;
  let secret: string;
  const cleanups: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    scheduler = await startScheduler();
    hooks = await startTarget();
    jobTarget = await startTarget((call) => ({ status: call.path.endsWith('/fail') ? 500 : 200 }));
    const triesById = new Map<string, number>();
    flaky = await startTarget((call) => {
      const id = String(call.headers['webhook-id']);
      const tries = (triesById.get(id) ?? 0) + 1;
      triesById.set(id, tries);
      return { status: tries === 1 ? 503 : 200 };
    });
    // Issued before any delivery, so no worker has cached the tenant as having no secret.
    const issued = await scheduler.api('POST', '/v1/signing-secrets', {});
    expect(issued.status).toBe(201);
    secret = issued.body.secret as string;
  });
  afterAll(async () => {
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
    await scheduler.stop();
    await Promise.all([hooks.stop(), jobTarget.stop(), flaky.stop()]);
  });

  async function create(overrides: Record<string, unknown>): Promise<{ jobId: string; runId: string }> {
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(`${jobTarget.url}/ok`, { payload: { secretPayload: 'never-in-a-notification' }, ...overrides }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return { jobId: created.body.job.jobId, runId: created.body.job.nextRunId };
  }

  function callsFor(server: TargetServer, jobId: string) {
    return server.calls.filter((call) => (JSON.parse(call.body) as RunNotificationBody).jobId === jobId);
  }

  async function settled(runId: string, event: RunNotificationBody['event']) {
    return eventually(
      () => scheduler.deps.notifications.get(runId, event),
      (record) => record !== null && record.status !== 'PENDING',
      WAIT_MS,
    );
  }

  async function runsOf(jobId: string): Promise<RunBody[]> {
    return (await scheduler.api('GET', `/v1/jobs/${jobId}/runs`)).body.items as RunBody[];
  }

  it("an external worker's complete that stopped after its outcome: the notification is made, or sent, by a resend", async () => {
    const notify = { events: ['succeeded'], destination: { kind: 'http', url: hooks.url } };
    const offered = async (name: string) => {
      const { jobId, runId } = await create({ name, type: name, target: { kind: 'external', leaseSeconds: 30 }, notify });
      await eventually(
        async () => (await scheduler.api('GET', `/v1/runs/${runId}`)).body as RunBody,
        (run) => run.status === 'QUEUED' && run.startedAt !== null,
        WAIT_MS,
      );
      const claim = (await claimRun(scheduler.deps, scheduler.tenantId, { jobType: name, waitSeconds: 0 }))!;
      return { jobId, runId, claim };
    };

    /** The scheduler's deps with one store call failing: the API stopped there. */
    const stoppingAt = <K extends 'notifications' | 'dispatch'>(key: K, method: string): SchedulerDeps => ({
      ...scheduler.deps,
      [key]: Object.assign(Object.create(scheduler.deps[key]) as object, { [method]: () => Promise.reject(new Error('the API stopped')) }),
    });

    // The API stopped between the outcome and the notification's record: none was made.
    const unmade = await offered('ext-notify-unmade');
    await expect(completeRun(stoppingAt('notifications', 'create'), scheduler.tenantId, unmade.runId, { leaseToken: unmade.claim.leaseToken })).rejects.toThrow(
      /the API stopped/,
    );
    expect((await scheduler.api('POST', `/v1/runs/${unmade.runId}/complete`, { leaseToken: unmade.claim.leaseToken })).status).toBe(409);
    // Before, the resend answered 404 (no record) and the notification was lost for good.
    const made = await scheduler.api('POST', `/v1/runs/${unmade.runId}/notifications/succeeded/resend`);
    expect(made.status, JSON.stringify(made.body)).toBe(202);
    // Its audit entry says it was made now: nothing before (not DEAD).
    const madeAudit = await scheduler.api('GET', `/v1/audit?objectId=${unmade.runId}`);
    expect(madeAudit.body.items[0]).toMatchObject({ action: 'notification.resend', changes: { 'notification.succeeded': { after: 'PENDING' } } });
    expect(madeAudit.body.items[0].changes['notification.succeeded']).not.toHaveProperty('before');
    expect((await settled(unmade.runId, 'succeeded'))?.status).toBe('SENT');
    expect(callsFor(hooks, unmade.jobId)).toHaveLength(1);
    // Fifteen days on, the SENT record has expired (its TTL), the run and its mark are still kept:
    // before, the resend took it for never made, made it again and sent it a second time.
    await scheduler.clients.dynamo.send(new DeleteCommand({ TableName: scheduler.config.jobsTable, Key: notificationKey(unmade.runId, 'succeeded') }));
    const fifteenDaysOn = { ...scheduler.deps, clock: () => Date.now() + 15 * 86_400_000 };
    await expect(resendNotification(fifteenDaysOn, scheduler.tenantId, unmade.runId, 'succeeded')).rejects.toThrow(/no longer kept/);
    expect(await scheduler.deps.notifications.get(unmade.runId, 'succeeded')).toBeNull();
    expect(callsFor(hooks, unmade.jobId)).toHaveLength(1);

    // Its record made, its first message never sent: a resend sends it once it has waited 15 minutes.
    const unsent = await offered('ext-notify-unsent');
    await expect(completeRun(stoppingAt('dispatch', 'send'), scheduler.tenantId, unsent.runId, { leaseToken: unsent.claim.leaseToken })).rejects.toThrow(
      /the API stopped/,
    );
    expect(await scheduler.deps.notifications.get(unsent.runId, 'succeeded')).toMatchObject({ status: 'PENDING', tries: 0 });
    expect((await scheduler.api('POST', `/v1/runs/${unsent.runId}/notifications/succeeded/resend`)).status).toBe(409);
    const later = { ...scheduler.deps, clock: () => Date.now() + STALLED_RESEND_MS + 60_000 };
    // Before, it stayed PENDING with no try until it expired, and a resend answered 409.
    expect(await resendNotification(later, scheduler.tenantId, unsent.runId, 'succeeded')).toMatchObject({
      notification: { status: 'PENDING' },
      before: 'PENDING',
    });
    expect((await settled(unsent.runId, 'succeeded'))?.status).toBe('SENT');
    expect(callsFor(hooks, unsent.jobId)).toHaveLength(1);
  });

  it('a dead run sends exactly one notification, signed, with the outcome and none of the payload', async () => {
    const { jobId } = await create({
      target: { kind: 'http', url: `${jobTarget.url}/fail` },
      retryPolicy: { maxAttempts: 2, initialDelaySeconds: 0, maxDelaySeconds: 1 },
      notify: { events: ['dead'], destination: { kind: 'http', url: hooks.url } },
    });
    await eventually(
      () => Promise.resolve(callsFor(hooks, jobId).length),
      (count) => count >= 1,
      WAIT_MS,
    );
    const dead = (await runsOf(jobId)).find((run) => run.status === 'DEAD')!;
    expect(dead).toMatchObject({ attempt: 2 });
    expect(await settled(dead.runId, 'dead')).toMatchObject({ status: 'SENT', tries: 1 });

    const [call] = callsFor(hooks, jobId);
    expect(verifyDelivery(secret, call!.headers, call!.body)).toBeNull();
    expect(call!.headers['webhook-id']).toBe(notificationIdOf(dead.runId, 'dead'));
    expect(call!.headers['x-notification-event']).toBe('dead');
    const body = JSON.parse(call!.body) as RunNotificationBody;
    expect(body).toMatchObject({
      event: 'dead',
      tenantId: scheduler.tenantId,
      jobId,
      runId: dead.runId,
      attempt: 2,
      status: 'DEAD',
      subject: { kind: 'job', id: jobId },
      error: { code: 'HTTP_500', retryable: true },
      scheduledFor: dead.scheduledFor,
      finishedAt: dead.finishedAt,
    });
    expect(call!.body).not.toContain('never-in-a-notification');
    // The first attempt failed too, but only `dead` was asked for.
    expect(callsFor(hooks, jobId)).toHaveLength(1);
  });

  it('a succeeded run sends `succeeded`; `failed` is sent for each attempt that failed with a retry to follow', async () => {
    const ok = await create({ notify: { events: ['succeeded', 'dead'], destination: { kind: 'http', url: hooks.url } } });
    await eventually(
      () => Promise.resolve(callsFor(hooks, ok.jobId).length),
      (count) => count >= 1,
      WAIT_MS,
    );
    expect(await settled(ok.runId, 'succeeded')).toMatchObject({ status: 'SENT' });
    expect(JSON.parse(callsFor(hooks, ok.jobId)[0]!.body)).toMatchObject({ event: 'succeeded', status: 'SUCCEEDED', runId: ok.runId, error: null });

    const failing = await create({
      target: { kind: 'http', url: `${jobTarget.url}/fail` },
      retryPolicy: { maxAttempts: 3, initialDelaySeconds: 0, maxDelaySeconds: 1 },
      notify: { events: ['failed'], destination: { kind: 'http', url: hooks.url } },
    });
    await eventually(
      () => Promise.resolve(callsFor(hooks, failing.jobId).length),
      (count) => count >= 2,
      WAIT_MS,
    );
    const runs = await eventually(
      () => runsOf(failing.jobId),
      (items) => items.some((run) => run.status === 'DEAD'),
      WAIT_MS,
    );
    const failed = runs.filter((run) => run.status === 'FAILED').map((run) => run.runId);
    expect(failed).toHaveLength(2);
    for (const runId of failed) await settled(runId, 'failed');
    const bodies = callsFor(hooks, failing.jobId).map((call) => JSON.parse(call.body) as RunNotificationBody);
    expect(bodies.map((body) => [body.event, body.attempt]).sort()).toEqual([
      ['failed', 1],
      ['failed', 2],
    ]);
  });

  it('an SNS topic receives the notification (read back through a queue subscribed raw)', async () => {
    const sns = new SNSClient({});
    const topicArn = (await sns.send(new CreateTopicCommand({ Name: `${scheduler.prefix}-ops` }))).TopicArn as string;
    cleanups.push(() => sns.send(new DeleteTopicCommand({ TopicArn: topicArn })));
    const queue = await createQueue(`${scheduler.prefix}-sns`);
    cleanups.push(() => awsClients().sqs.send(new DeleteQueueCommand({ QueueUrl: queue.url })));
    await sns.send(new SubscribeCommand({ TopicArn: topicArn, Protocol: 'sqs', Endpoint: queue.arn, Attributes: { RawMessageDelivery: 'true' } }));

    const { jobId, runId } = await create({ notify: { events: ['succeeded'], destination: { kind: 'sns', topicArn } } });
    const [message] = await receiveAll(queue.url, 1);
    expect(JSON.parse(message!.Body ?? '')).toMatchObject({ event: 'succeeded', jobId, runId, status: 'SUCCEEDED', tenantId: scheduler.tenantId });
    expect(await settled(runId, 'succeeded')).toMatchObject({ status: 'SENT', tries: 1 });
  });

  it('an EventBridge bus receives the notification as an event whose detail is the body', async () => {
    const events = new EventBridgeClient({});
    const bus = `${scheduler.prefix}-notify`;
    const source = `notify.${scheduler.prefix}`;
    await events.send(new CreateEventBusCommand({ Name: bus }));
    cleanups.push(() => events.send(new DeleteEventBusCommand({ Name: bus })));
    const queue = await createQueue(`${scheduler.prefix}-events`);
    cleanups.push(() => awsClients().sqs.send(new DeleteQueueCommand({ QueueUrl: queue.url })));
    await events.send(new PutRuleCommand({ Name: 'notify-to-queue', EventBusName: bus, EventPattern: JSON.stringify({ source: [source] }) }));
    await events.send(new PutTargetsCommand({ Rule: 'notify-to-queue', EventBusName: bus, Targets: [{ Id: 'queue', Arn: queue.arn }] }));
    cleanups.unshift(async () => {
      await events.send(new RemoveTargetsCommand({ Rule: 'notify-to-queue', EventBusName: bus, Ids: ['queue'] }));
      await events.send(new DeleteRuleCommand({ Name: 'notify-to-queue', EventBusName: bus }));
    });

    const { jobId, runId } = await create({
      target: { kind: 'http', url: `${jobTarget.url}/fail` },
      retryPolicy: { maxAttempts: 1, initialDelaySeconds: 0, maxDelaySeconds: 1 },
      notify: { events: ['dead'], destination: { kind: 'eventbridge', eventBusName: bus, source } },
    });
    const [message] = await receiveAll(queue.url, 1);
    const event = JSON.parse(message!.Body ?? '') as { source: string; 'detail-type': string; detail: RunNotificationBody };
    expect(event).toMatchObject({ source, 'detail-type': 'Job run dead' });
    expect(event.detail).toMatchObject({ event: 'dead', jobId, runId, status: 'DEAD', notificationId: notificationIdOf(runId, 'dead') });
  });

  it('a destination that fails first is tried again on its own budget, after the run had finished', async () => {
    const { jobId, runId } = await create({ notify: { events: ['succeeded'], destination: { kind: 'http', url: flaky.url } } });
    await eventually(
      () => Promise.resolve(callsFor(flaky, jobId).length),
      (count) => count >= 2,
      WAIT_MS,
    );
    const record = await settled(runId, 'succeeded');
    expect(record).toMatchObject({ status: 'SENT', tries: 2, lastError: expect.stringContaining('HTTP_503') });
    const calls = callsFor(flaky, jobId);
    expect(calls).toHaveLength(2);
    // One notification, tried twice: the same id, so a receiver deduplicates the tries.
    expect(calls[1]!.headers['webhook-id']).toBe(calls[0]!.headers['webhook-id']);
    expect(verifyDelivery(secret, calls[1]!.headers, calls[1]!.body)).toBeNull();
    // The run's outcome was recorded before the first try, and the failed try held nothing of it up.
    const run = (await scheduler.api('GET', `/v1/runs/${runId}`)).body as RunBody;
    expect(run.status).toBe('SUCCEEDED');
    expect(Date.parse(run.finishedAt)).toBeLessThanOrEqual(calls[0]!.at);
    // The second try waited for the notification's backoff (5 s), not for anything of the run's.
    expect(calls[1]!.at - calls[0]!.at).toBeGreaterThanOrEqual(4_000);
  });

  it('a dead notification shows on its run and is sent again on request, on a fresh budget with the same id; only a dead one', async () => {
    let refuse = true;
    const gate = await startTarget(() => ({ status: refuse ? 400 : 200 }));
    cleanups.push(() => gate.stop());
    const { jobId, runId } = await create({ notify: { events: ['succeeded'], destination: { kind: 'http', url: gate.url } } });
    expect(await settled(runId, 'succeeded')).toMatchObject({ status: 'DEAD' });
    const listed = await scheduler.api('GET', `/v1/runs/${runId}/notifications`);
    expect(listed.status).toBe(200);
    expect(listed.body.items).toEqual([
      expect.objectContaining({
        notificationId: notificationIdOf(runId, 'succeeded'),
        event: 'succeeded',
        status: 'DEAD',
        tries: 1,
        lastError: expect.stringContaining('HTTP_400'),
        destination: { kind: 'http', url: gate.url },
        deadAt: expect.any(String),
        resentAt: null,
      }),
    ]);
    expect(listed.body.items[0]).not.toHaveProperty('body');

    // A malformed event is a 400, an event the run did not raise a 404, and another tenant's run a 404: nothing changes.
    expect((await scheduler.api('POST', `/v1/runs/${runId}/notifications/exploded/resend`)).status).toBe(400);
    expect((await scheduler.api('POST', `/v1/runs/${runId}/notifications/dead/resend`)).status).toBe(404);
    const otherKey = `key_other_${Date.now()}`;
    await scheduler.deps.apiKeys.issue(otherKey, `other-${scheduler.tenantId}`, Date.now());
    const foreign = (method: string, path: string) => fetch(`${scheduler.runtime.url}${path}`, { method, headers: { authorization: `Bearer ${otherKey}` } });
    expect((await foreign('GET', `/v1/runs/${runId}/notifications`)).status).toBe(404);
    expect((await foreign('POST', `/v1/runs/${runId}/notifications/succeeded/resend`)).status).toBe(404);
    expect(await scheduler.deps.notifications.get(runId, 'succeeded')).toMatchObject({ status: 'DEAD', tries: 1 });

    refuse = false;
    const resent = await scheduler.api('POST', `/v1/runs/${runId}/notifications/succeeded/resend`);
    expect(resent.status, JSON.stringify(resent.body)).toBe(202);
    expect(resent.body).toMatchObject({
      status: 'PENDING',
      tries: 0,
      deadAt: null,
      resentAt: expect.any(String),
      lastError: expect.stringContaining('HTTP_400'),
    });
    const sent = await eventually(
      () => scheduler.deps.notifications.get(runId, 'succeeded'),
      (record) => record?.status === 'SENT',
      WAIT_MS,
    );
    expect(sent).toMatchObject({ tries: 1, resentAt: resent.body.resentAt });
    const calls = callsFor(gate, jobId);
    expect(calls).toHaveLength(2);
    expect(calls[1]!.headers['webhook-id']).toBe(calls[0]!.headers['webhook-id']);
    expect(calls[1]!.body).toBe(calls[0]!.body);
    // Only a dead notification is sent again; the resend is in the audit under the run.
    expect((await scheduler.api('POST', `/v1/runs/${runId}/notifications/succeeded/resend`)).status).toBe(409);
    const audit = await scheduler.api('GET', `/v1/audit?objectId=${runId}`);
    expect(audit.body.items).toContainEqual(
      expect.objectContaining({ action: 'notification.resend', changes: { 'notification.succeeded': { before: 'DEAD', after: 'PENDING' } } }),
    );
  });

  it("a resend goes where the job's notify sends now: a destination fixed since gets it", async () => {
    const wrong = await startTarget(() => ({ status: 404 }));
    cleanups.push(() => wrong.stop());
    const { jobId, runId } = await create({ notify: { events: ['succeeded'], destination: { kind: 'http', url: `${wrong.url}/typo` } } });
    expect(await settled(runId, 'succeeded')).toMatchObject({ status: 'DEAD', destination: { kind: 'http', url: `${wrong.url}/typo` } });
    const patched = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { notify: { events: ['succeeded'], destination: { kind: 'http', url: hooks.url } } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const resent = await scheduler.api('POST', `/v1/runs/${runId}/notifications/succeeded/resend`);
    expect(resent.status, JSON.stringify(resent.body)).toBe(202);
    expect(resent.body.destination).toEqual({ kind: 'http', url: hooks.url });
    expect(
      await eventually(
        () => scheduler.deps.notifications.get(runId, 'succeeded'),
        (record) => record?.status === 'SENT',
        WAIT_MS,
      ),
    ).toMatchObject({ destination: { kind: 'http', url: hooks.url } });
    expect(callsFor(hooks, jobId)).toHaveLength(1);
    expect(callsFor(wrong, jobId)).toHaveLength(1);
  });

  it('a redelivered outcome and racing tries still send one notification', async () => {
    const { jobId, runId } = await create({ notify: { events: ['succeeded'], destination: { kind: 'http', url: hooks.url } } });
    await settled(runId, 'succeeded');
    // The run's dispatch message delivered again (the worker that recorded it died before deleting
    // it), several times at once: each finds the run finished, re-makes the notification (it exists)
    // and enqueues it again; the workers find it sent.
    const results = await Promise.all([1, 2, 3].map(() => executeRun(scheduler.deps, runId)));
    expect(results).toEqual(['duplicate', 'duplicate', 'duplicate']);
    await scheduler.sendDispatch(runId);
    const job = (await scheduler.deps.jobs.getAnyTenant(jobId))!;
    const run = (await scheduler.deps.runs.get(runId))!;
    expect(await notifyOutcome(scheduler.deps, jobSubject(job), run, { resend: true })).toBe('exists');
    await eventually(
      () => scheduler.queueDepth(),
      (depth) => depth === 0,
      WAIT_MS,
    );
    expect(callsFor(hooks, jobId)).toHaveLength(1);

    // A notification whose message reached several workers at once: one claims it and sends it.
    const body = notificationBodyOf(
      { kind: 'job', id: jobId, name: job.name, type: job.type },
      { ...run, runId: `race-${randomUUID()}` },
      { status: 'DEAD', error: null, reason: null, at: Date.now() },
      'dead',
    );
    await scheduler.deps.notifications.create(
      { notificationId: body.notificationId, tenantId: run.tenantId, runId: body.runId, event: 'dead', destination: { kind: 'http', url: hooks.url }, body },
      Date.now(),
    );
    const tries = await Promise.all([1, 2, 3, 4].map(() => tryNotification(scheduler.deps, body.runId, 'dead')));
    expect(tries.filter(({ result }) => result === 'sent')).toHaveLength(1);
    expect(tries.filter(({ result }) => result !== 'sent').every(({ result }) => result === 'busy' || result === 'done')).toBe(true);
    expect(hooks.calls.filter((call) => (JSON.parse(call.body) as RunNotificationBody).runId === body.runId)).toHaveLength(1);
  });
});

describe('notify over the API', () => {
  let scheduler: Scheduler;
  const TOPIC = 'arn:aws:sns:us-east-1:123456789012:ops';

  beforeAll(async () => {
    scheduler = await startScheduler({
      workerConcurrency: 0,
      config: {
        localMode: false,
        allowedTargets: {
          lambdaFunctionArns: [],
          sqsQueueArns: [],
          eventBusArns: ['arn:aws:events:us-east-1:123456789012:event-bus/alerts'],
          snsTopicArns: [TOPIC],
        },
      },
    });
  });
  afterAll(async () => {
    await scheduler.stop();
  });

  const body = (notify: unknown) => jobBody('https://example.com/hook', { schedule: { kind: 'delay', seconds: 3600 }, notify });

  it('refuses a bad notify, or a destination the deployment does not allow, with a 400 naming the field and writing nothing', async () => {
    const before = await scheduler.countJobAndRunItems();
    const cases: [unknown, string][] = [
      [{ events: ['exploded'], destination: { kind: 'http', url: 'https://example.com/n' } }, 'notify.events.0'],
      [{ events: [], destination: { kind: 'http', url: 'https://example.com/n' } }, 'notify.events'],
      [{ events: ['dead'], destination: { kind: 'sns', topicArn: 'arn:aws:sns:us-east-1:123456789012:other' } }, 'notify.destination.topicArn'],
      [{ events: ['dead'], destination: { kind: 'eventbridge', eventBusName: 'default' } }, 'notify.destination.eventBusName'],
      [{ events: ['dead'], destination: { kind: 'http', url: 'https://169.254.169.254/latest' } }, 'notify.destination.url'],
    ];
    for (const [notify, path] of cases) {
      const answer = await scheduler.api('POST', '/v1/jobs', body(notify));
      expect(answer.status, JSON.stringify(notify)).toBe(400);
      expect(answer.body.errors.map((error: { path: string }) => error.path)).toContain(path);
    }
    expect(await scheduler.countJobAndRunItems()).toEqual(before);
  });

  it('shows notify in GET, changes it with PATCH (checked the same way) and removes it with null', async () => {
    const notify = { events: ['dead', 'failed'], destination: { kind: 'sns', topicArn: TOPIC } };
    const created = await scheduler.api('POST', '/v1/jobs', body(notify));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const jobId = created.body.job.jobId as string;
    expect((await scheduler.api('GET', `/v1/jobs/${jobId}`)).body.notify).toEqual(notify);

    const refused = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { notify: { events: ['dead'], destination: { kind: 'sns', topicArn: `${TOPIC}-x` } } });
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0].path).toBe('notify.destination.topicArn');

    const changed = await scheduler.api('PATCH', `/v1/jobs/${jobId}`, {
      notify: { events: ['skipped'], destination: { kind: 'eventbridge', eventBusName: 'alerts' } },
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect((await scheduler.api('GET', `/v1/jobs/${jobId}`)).body.notify).toEqual({
      events: ['skipped'],
      destination: { kind: 'eventbridge', eventBusName: 'alerts', source: 'job-scheduler.notifications' },
    });

    expect((await scheduler.api('PATCH', `/v1/jobs/${jobId}`, { notify: null })).status).toBe(200);
    const cleared = await scheduler.api('GET', `/v1/jobs/${jobId}`);
    expect(cleared.body).not.toHaveProperty('notify');
  });
});

describe('skipped runs', () => {
  let scheduler: Scheduler;
  let hooks: TargetServer;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
    hooks = await startTarget();
  });
  afterAll(async () => {
    await scheduler.stop();
    await hooks.stop();
  });

  /**
   * A job that notifies `dead`, whose first run a worker leased and recorded DEAD (marking the
   * event, as the outcome path does) and then left: its dispatch message was never deleted.
   */
  async function runRecordedDead(workerId: string): Promise<string> {
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(hooks.url, { notify: { events: ['dead'], destination: { kind: 'http', url: hooks.url } } }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const runId = created.body.job.nextRunId as string;
    const lease = await scheduler.deps.leases.lease(runId, leaseRequest(scheduler.config, workerId));
    if (lease.kind !== 'leased') throw new Error(`the run was not leased: ${lease.kind}`);
    const error = { code: 'HTTP_400', message: 'target answered 400', retryable: false };
    const recorded = await scheduler.deps.leases.finishAttempt(
      lease.run,
      { status: 'DEAD', now: Date.now(), error, reason: 'permanent', notify: 'dead' },
      null,
    );
    expect(recorded).toBe('recorded');
    return runId;
  }

  it('a run the misfire policy skips sends `skipped`; one a pause retires sends nothing', async () => {
    const notify = { events: ['skipped'], destination: { kind: 'http', url: hooks.url } };
    const created = await scheduler.api(
      'POST',
      '/v1/jobs',
      jobBody(hooks.url, { schedule: { kind: 'cron', expression: '* * * * *' }, misfirePolicy: 'skip', notify }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { jobId, nextRunId: runId } = created.body.job as { jobId: string; nextRunId: string };
    // A worker that gets to the run five minutes after its time (the scheduler was down).
    const late = scheduler.workerDeps('late-worker', () => Date.now() + 300_000);
    expect(await executeRun(late, runId)).toBe('skipped');
    const record = await scheduler.deps.notifications.get(runId, 'skipped');
    expect(record).toMatchObject({ status: 'PENDING', tries: 0 });
    expect(await tryNotification(scheduler.deps, runId, 'skipped')).toEqual({ result: 'sent' });
    const body = JSON.parse(hooks.calls.at(-1)!.body) as RunNotificationBody;
    expect(body).toMatchObject({ event: 'skipped', jobId, runId, status: 'SKIPPED', reason: expect.stringContaining('misfirePolicy skip') });

    const next = (await scheduler.api('GET', `/v1/jobs/${jobId}`)).body.nextRunId as string;
    expect((await scheduler.api('POST', `/v1/jobs/${jobId}/pause`)).status).toBe(200);
    expect((await scheduler.api('GET', `/v1/runs/${next}`)).body.status).toBe('SKIPPED');
    expect(await scheduler.deps.notifications.get(next, 'skipped')).toBeNull();
  });

  it("a try whose signing secrets cannot be read fails retryable, and shows the tenant no store's error", async () => {
    const runId = await runRecordedDead('kms-worker');
    await executeRun(scheduler.deps, runId);
    const calls = hooks.calls.length;
    const denied = scheduler.workerDeps('kms-denied');
    Object.assign(denied.signingCache, {
      of: () => Promise.reject(new Error('User: arn:aws:sts::123456789012:assumed-role/worker is not authorized to perform: kms:Decrypt')),
    });
    expect(await tryNotification(denied, runId, 'dead')).toMatchObject({ result: 'retrying' });
    const record = await scheduler.deps.notifications.get(runId, 'dead');
    expect(record).toMatchObject({ status: 'PENDING', tries: 1, lastError: 'SIGNING_UNAVAILABLE: the signing secrets could not be read' });
    expect(hooks.calls.length).toBe(calls);
  });

  it("a copy of a failed try's message neither tries early nor shortens the backoff; the next try's message waits for its time", async () => {
    const runId = await runRecordedDead('copies-worker');
    await executeRun(scheduler.deps, runId);

    const start = Date.now();
    const at = (offsetMs: number) => {
      const deps = scheduler.workerDeps(`copies-${offsetMs}`, () => start + offsetMs);
      return Object.assign(deps, {
        notifier: { deliver: () => Promise.resolve({ ok: false as const, timedOut: false, error: { code: 'HTTP_503', message: 'busy', retryable: true } }) },
      });
    };
    expect(await tryNotification(at(0), runId, 'dead')).toEqual({ result: 'retrying', retryInSeconds: 5 });
    // A second copy of the first message (a duplicate, a redelivery): a try was scheduled since.
    expect(await tryNotification(at(1_000), runId, 'dead')).toEqual({ result: 'done' });
    // The second try's message, come early: held until its time.
    expect(await tryNotification(at(1_000), runId, 'dead', undefined, 2)).toEqual({ result: 'busy', retryInSeconds: 3, tenantId: scheduler.tenantId });
    expect(await scheduler.deps.notifications.get(runId, 'dead')).toMatchObject({ status: 'PENDING', tries: 1 });
    // At its time it tries, and schedules the third (10 s).
    expect(await tryNotification(at(5_000), runId, 'dead', undefined, 2)).toEqual({ result: 'retrying', retryInSeconds: 10 });
    expect(await tryNotification(at(6_000), runId, 'dead', undefined, 2)).toEqual({ result: 'done' });
    expect(await scheduler.deps.notifications.get(runId, 'dead')).toMatchObject({ status: 'PENDING', tries: 2 });
  });

  it('a redelivered message for a finished run makes the notification its worker died before making', async () => {
    const runId = await runRecordedDead('dying-worker');
    expect(await scheduler.deps.notifications.get(runId, 'dead')).toBeNull();

    expect(await executeRun(scheduler.deps, runId)).toBe('duplicate');
    expect(await scheduler.deps.notifications.get(runId, 'dead')).toMatchObject({ status: 'PENDING', tries: 0 });
    expect(await tryNotification(scheduler.deps, runId, 'dead')).toEqual({ result: 'sent' });
    expect(JSON.parse(hooks.calls.at(-1)!.body)).toMatchObject({ event: 'dead', runId, status: 'DEAD', error: { code: 'HTTP_400' } });
  });
});
