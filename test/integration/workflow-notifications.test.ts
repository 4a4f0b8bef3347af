// A workflow's `notify` (issue 21 item 4 for workflows, decision 0148): a workflow run's end raises
// `succeeded`, `failed` or `cancelled`, an occurrence of its schedule skipped by a policy `skipped`;
// exactly one notification per event per end (a retry's end is another), tried on its own budget
// after the end is written, and made by the ticker when its writer died before making it.
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SchedulerDeps } from '../../lambdas/app/deps';
import { workflowRunNotificationKey } from '../../lambdas/app/notifications';
import { tryNotification } from '../../lambdas/app/notification-tries';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { NotificationBody, RunNotificationBody, WorkflowRunNotificationBody } from '../../lambdas/domain/notify';
import { notificationIdOf } from '../../lambdas/domain/notify';
import { workflowRunKey } from '../../lambdas/store/keys';
import type { Scheduler, TargetCall, TargetServer } from './harness';
import { eventually, executeRun, startScheduler, startTarget, tick } from './harness';

const WAIT_MS = 60_000;
const bodyOf = (call: TargetCall): NotificationBody => JSON.parse(call.body) as NotificationBody;

describe('workflow notifications', () => {
  let scheduler: Scheduler;
  let hooks: TargetServer;
  /** Fails each notification's first try (503), then accepts. */
  let flaky: TargetServer;
  let steps: TargetServer;
  const failing = new Set<string>();
  const held = new Map<string, () => void>();

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 4 });
    hooks = await startTarget();
    const tries = new Map<string, number>();
    flaky = await startTarget((call) => {
      const id = bodyOf(call).notificationId;
      tries.set(id, (tries.get(id) ?? 0) + 1);
      return { status: tries.get(id) === 1 ? 503 : 200 };
    });
    steps = await startTarget(async (call) => {
      const step = call.path.split('/').pop() ?? '';
      if (step.startsWith('slow')) await new Promise<void>((resolve) => held.set(step, resolve));
      return { status: failing.has(step) ? 500 : 200, headers: { 'x-retryable': 'false' } };
    });
  });
  afterAll(async () => {
    for (const release of held.values()) release();
    await scheduler.stop();
    await Promise.all([hooks.stop(), flaky.stop(), steps.stop()]);
  });

  const step = (id: string, dependsOn: string[] = []) => ({
    id,
    target: { kind: 'http', url: `${steps.url}/${id}` },
    retryPolicy: { maxAttempts: 1 },
    dependsOn,
  });
  const callsOf = (server: TargetServer, workflowId: string) => server.calls.filter((call) => bodyOf(call).subject.id === workflowId);

  async function create(name: string, stepList: unknown[], notify: Record<string, unknown>): Promise<string> {
    const created = await scheduler.api('POST', '/v1/workflows', { name, steps: stepList, notify });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.definition.notify).toEqual({ ...notify, destination: expect.objectContaining(notify.destination as object) });
    return created.body.workflowId as string;
  }

  async function runTo(workflowId: string, path: string, status: string) {
    return (
      await eventually(
        () => scheduler.api('GET', `/v1/workflows/${workflowId}/runs/${path}`),
        (answer) => answer.body.status === status,
        WAIT_MS,
      )
    ).body;
  }

  it('a succeeded workflow run sends one notification, on its own budget, after the run had ended', async () => {
    const workflowId = await create('notify-succeeded', [step('one'), step('two', ['one'])], {
      events: ['succeeded', 'failed'],
      destination: { kind: 'http', url: flaky.url },
    });
    const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
    const run = await runTo(workflowId, started.body.workflowRunId, 'SUCCEEDED');
    const key = workflowRunNotificationKey(run);
    const record = await eventually(
      () => scheduler.deps.notifications.get(key, 'succeeded'),
      (found) => found?.status === 'SENT',
      WAIT_MS,
    );
    expect(record).toMatchObject({ status: 'SENT', tries: 2 });
    const calls = callsOf(flaky, workflowId);
    expect(calls).toHaveLength(2);
    // The first try came after the end was written, the second five seconds later: the run waited for neither.
    expect(calls[0]!.at).toBeGreaterThanOrEqual(Date.parse(run.finishedAt) - 5);
    expect(calls[1]!.at - calls[0]!.at).toBeGreaterThanOrEqual(4_000);
    expect(calls.map((call) => bodyOf(call).notificationId)).toEqual([notificationIdOf(key, 'succeeded'), notificationIdOf(key, 'succeeded')]);
    expect(bodyOf(calls[0]!)).toEqual({
      type: 'job-scheduler.notification/1',
      notificationId: notificationIdOf(key, 'succeeded'),
      event: 'succeeded',
      tenantId: scheduler.tenantId,
      subject: { kind: 'workflow', id: workflowId, name: 'notify-succeeded', type: 'workflow' },
      workflowId,
      workflowRunId: run.workflowRunId,
      version: 1,
      status: 'SUCCEEDED',
      trigger: 'manual',
      retries: 0,
      scheduledFor: run.scheduledFor,
      finishedAt: run.finishedAt,
      failedSteps: [],
      occurredAt: run.finishedAt,
    } satisfies WorkflowRunNotificationBody);
    expect(calls[0]!.headers['x-notification-event']).toBe('succeeded');
    // Its mark is cleared: the workflow run is out of the ticker's index, and a repair sends nothing more.
    const report = await tick(scheduler.workerDeps('ticker'));
    expect(report.repairedJobs).toBe(0);
    expect(callsOf(flaky, workflowId)).toHaveLength(2);
  });

  it('a failed workflow run sends one failed notification naming its failed steps, and its retry failing again one more', async () => {
    failing.add('bad');
    const workflowId = await create('notify-failed', [step('fine'), step('bad', ['fine']), step('after', ['bad'])], {
      events: ['failed', 'cancelled'],
      destination: { kind: 'http', url: hooks.url },
    });
    const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
    await runTo(workflowId, started.body.workflowRunId, 'FAILED');
    await eventually(
      () => Promise.resolve(callsOf(hooks, workflowId).length),
      (count) => count >= 1,
      WAIT_MS,
    );
    expect(await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${started.body.workflowRunId}/retry`)).toMatchObject({ status: 202 });
    await eventually(
      () => Promise.resolve(callsOf(hooks, workflowId).length),
      (count) => count >= 2,
      WAIT_MS,
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const bodies = callsOf(hooks, workflowId).map((call) => bodyOf(call) as WorkflowRunNotificationBody);
    expect(bodies.map((body) => [body.event, body.status, body.retries, body.failedSteps])).toEqual([
      ['failed', 'FAILED', 0, ['bad']],
      ['failed', 'FAILED', 1, ['bad']],
    ]);
    expect(new Set(bodies.map((body) => body.notificationId)).size).toBe(2);
    failing.delete('bad');
  });

  it("a workflow run's dead notifications show per end, the latest first, and the latest end's is sent again on request; only a dead one", async () => {
    failing.add('breaks');
    const gate = await startTarget(() => ({ status: 400 }));
    const fixed = await startTarget();
    try {
      const workflowId = await create('notify-dead', [step('breaks')], { events: ['failed'], destination: { kind: 'http', url: gate.url } });
      const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
      const workflowRunId = started.body.workflowRunId as string;
      const path = `/v1/workflows/${workflowId}/runs/${workflowRunId}`;
      const deadOf = async (retries: number) =>
        eventually(
          () => scheduler.deps.notifications.get(workflowRunNotificationKey({ workflowRunId, retries }), 'failed'),
          (record) => record?.status === 'DEAD',
          WAIT_MS,
        );
      await runTo(workflowId, workflowRunId, 'FAILED');
      await deadOf(0);
      expect((await scheduler.api('POST', `${path}/retry`)).status).toBe(202);
      await runTo(workflowId, workflowRunId, 'FAILED');
      await deadOf(1);

      const listed = await scheduler.api('GET', `${path}/notifications`);
      expect(listed.status).toBe(200);
      const dead = {
        event: 'failed',
        status: 'DEAD',
        tries: 1,
        lastError: expect.stringContaining('HTTP_400'),
        destination: { kind: 'http', url: gate.url },
        resentAt: null,
      };
      expect(listed.body.items).toEqual([
        expect.objectContaining({ ...dead, retry: 1, notificationId: notificationIdOf(workflowRunNotificationKey({ workflowRunId, retries: 1 }), 'failed') }),
        expect.objectContaining({ ...dead, retry: 0, notificationId: notificationIdOf(workflowRunNotificationKey({ workflowRunId, retries: 0 }), 'failed') }),
      ]);
      expect(listed.body.items[0]).not.toHaveProperty('body');

      // A malformed event (or a skipped occurrence's, which is its run's) is a 400, an event the run did
      // not raise a 404, another tenant's workflow run a 404: nothing changes.
      for (const event of ['exploded', 'skipped', 'dead']) expect((await scheduler.api('POST', `${path}/notifications/${event}/resend`)).status).toBe(400);
      expect((await scheduler.api('POST', `${path}/notifications/cancelled/resend`)).status).toBe(404);
      const otherKey = `key_other_${Date.now()}`;
      await scheduler.deps.apiKeys.issue(otherKey, `other-${scheduler.tenantId}`, Date.now());
      const foreign = (method: string, route: string) =>
        fetch(`${scheduler.runtime.url}${route}`, { method, headers: { authorization: `Bearer ${otherKey}` } });
      expect((await foreign('GET', `${path}/notifications`)).status).toBe(404);
      expect((await foreign('POST', `${path}/notifications/failed/resend`)).status).toBe(404);
      expect((await scheduler.api('GET', `${path}/notifications`)).body).toEqual(listed.body);

      // The destination is fixed by a new version (the gate stays refusing): the resend goes there.
      const newVersion = await scheduler.api(
        'POST',
        `/v1/workflows/${workflowId}/versions`,
        { name: 'notify-dead', steps: [step('breaks')], notify: { events: ['failed'], destination: { kind: 'http', url: fixed.url } } },
        { 'If-Match': '1' },
      );
      expect(newVersion.status, JSON.stringify(newVersion.body)).toBe(201);
      const resent = await scheduler.api('POST', `${path}/notifications/failed/resend`);
      expect(resent.status, JSON.stringify(resent.body)).toBe(202);
      expect(resent.body).toMatchObject({
        retry: 1,
        status: 'PENDING',
        tries: 0,
        deadAt: null,
        resentAt: expect.any(String),
        destination: { kind: 'http', url: fixed.url },
      });
      const sent = await eventually(
        () => scheduler.deps.notifications.get(workflowRunNotificationKey({ workflowRunId, retries: 1 }), 'failed'),
        (record) => record?.status === 'SENT',
        WAIT_MS,
      );
      expect(sent).toMatchObject({ tries: 1, resentAt: resent.body.resentAt });
      // The same notification again (its id and body), the latest end's, to the fixed destination; the first end's stays DEAD.
      const calls = callsOf(gate, workflowId);
      expect(calls).toHaveLength(2);
      const resentCalls = callsOf(fixed, workflowId);
      expect(resentCalls).toHaveLength(1);
      expect(resentCalls[0]!.body).toBe(calls[1]!.body);
      expect((bodyOf(resentCalls[0]!) as WorkflowRunNotificationBody).retries).toBe(1);
      expect(await scheduler.deps.notifications.get(workflowRunNotificationKey({ workflowRunId, retries: 0 }), 'failed')).toMatchObject({ status: 'DEAD' });
      expect((await scheduler.api('POST', `${path}/notifications/failed/resend`)).status).toBe(409);
      const audit = await scheduler.api('GET', `/v1/audit?objectId=${workflowRunId}`);
      expect(audit.body.items.map((entry: { action: string }) => entry.action)).toContain('notification.resend');
    } finally {
      failing.delete('breaks');
      await Promise.all([gate.stop(), fixed.stop()]);
    }
  });

  it('a cancelled workflow run sends one cancelled notification', async () => {
    const workflowId = await create('notify-cancelled', [step('slow-n'), step('never', ['slow-n'])], {
      events: ['cancelled'],
      destination: { kind: 'http', url: hooks.url },
    });
    const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
    await eventually(
      () => Promise.resolve(held.has('slow-n')),
      (value) => value,
    );
    expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${started.body.workflowRunId}/cancel`)).status).toBe(200);
    held.get('slow-n')?.();
    await eventually(
      () => Promise.resolve(callsOf(hooks, workflowId).length),
      (count) => count >= 1,
      WAIT_MS,
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(callsOf(hooks, workflowId).map((call) => [bodyOf(call).event, bodyOf(call).status])).toEqual([['cancelled', 'CANCELLED']]);
  });

  it('refuses a notify the jobs would take but a workflow cannot (dead), and one with a refused URL; writing nothing', async () => {
    const before = await scheduler.countJobAndRunItems();
    const refused = async (notify: unknown) => {
      const answer = await scheduler.api('POST', '/v1/workflows', { name: 'bad-notify', steps: [step('a')], notify });
      expect(answer.status).toBe(400);
      return (answer.body.errors as { path: string }[]).map((error) => error.path);
    };
    expect(await refused({ events: ['dead'], destination: { kind: 'http', url: hooks.url } })).toEqual(['notify.events.0']);
    expect(await refused({ events: ['failed'], destination: { kind: 'http', url: 'http://169.254.169.254/latest' } })).toEqual(['notify.destination.url']);
    expect(await scheduler.countJobAndRunItems()).toEqual(before);
  });
});

describe('workflow notifications, driven one message at a time', () => {
  let scheduler: Scheduler;
  let hooks: TargetServer;
  let steps: TargetServer;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
    hooks = await startTarget();
    steps = await startTarget((call) => ({ status: call.path.endsWith('/fails') ? 500 : 200, headers: { 'x-retryable': 'false' } }));
  });
  afterAll(async () => {
    await scheduler.stop();
    await Promise.all([hooks.stop(), steps.stop()]);
  });

  const worker = (at: number, id = 'worker') => scheduler.workerDeps(id, () => at);

  /** A worker that dies right after a workflow run's end is written: it makes no notification. */
  function dyingBeforeNotifying(deps: SchedulerDeps): SchedulerDeps {
    const notifications = Object.assign(Object.create(deps.notifications) as typeof deps.notifications, {
      create: () => Promise.reject(new Error('worker killed')),
    });
    return { ...deps, notifications };
  }

  it("a worker that dies between a workflow run's end and its notification: the ticker makes it, once", async () => {
    const created = await scheduler.api('POST', '/v1/workflows', {
      name: 'notify-repaired',
      steps: [{ id: 'only', target: { kind: 'http', url: `${steps.url}/only` } }],
      notify: { events: ['succeeded'], destination: { kind: 'http', url: hooks.url } },
    });
    const workflowId = created.body.workflowId as string;
    const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
    const runId = started.body.steps.only.runId as string;
    expect(await executeRun(dyingBeforeNotifying(scheduler.workerDeps('dies')), runId)).toBe('succeeded');
    const run = (await scheduler.api('GET', `/v1/workflows/${workflowId}/runs/${started.body.workflowRunId}`)).body;
    expect(run.status).toBe('SUCCEEDED');
    const key = workflowRunNotificationKey(run);
    expect(await scheduler.deps.notifications.get(key, 'succeeded')).toBeNull();

    // Not before the grace period; after it, the ticker makes the notification and sends its message.
    expect((await tick(scheduler.workerDeps('ticker'))).repairedJobs).toBe(0);
    await scheduler.clients.dynamo.send(
      new UpdateCommand({
        TableName: scheduler.config.jobsTable,
        Key: workflowRunKey(workflowId, run.workflowRunId),
        UpdateExpression: 'SET nextRunAt = :at',
        ExpressionAttributeValues: { ':at': new Date(Date.now() - (scheduler.config.redeliveryGraceSeconds + 5) * 1000).toISOString() },
      }),
    );
    expect((await tick(scheduler.workerDeps('ticker'))).repairedJobs).toBe(1);
    expect(await scheduler.deps.notifications.get(key, 'succeeded')).toMatchObject({ status: 'PENDING', event: 'succeeded' });
    // Its message is on the queue; a worker's try sends it. A second tick finds nothing to do.
    const messages = await eventually(
      async () =>
        (
          await scheduler.clients.sqs.send(
            new ReceiveMessageCommand({ QueueUrl: scheduler.config.dispatchQueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
          )
        ).Messages ?? [],
      (received) => received.some((message) => message.Body?.includes(key)),
    );
    expect(messages.map((message) => JSON.parse(message.Body ?? '{}') as { runId: string; notify?: string })).toContainEqual(
      expect.objectContaining({ runId: key, notify: 'succeeded' }),
    );
    expect((await tryNotification(scheduler.workerDeps('notifier'), key, 'succeeded')).result).toBe('sent');
    expect(hooks.calls.filter((call) => bodyOf(call).notificationId === notificationIdOf(key, 'succeeded'))).toHaveLength(1);
    expect((await tick(scheduler.workerDeps('ticker'))).repairedJobs).toBe(0);
  });

  it("a retry of a workflow run whose end's notification was not made yet makes it first, rather than lose it", async () => {
    const created = await scheduler.api('POST', '/v1/workflows', {
      name: 'notify-before-retry',
      steps: [{ id: 'only', target: { kind: 'http', url: `${steps.url}/fails` } }],
      notify: { events: ['failed'], destination: { kind: 'http', url: hooks.url } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const workflowId = created.body.workflowId as string;
    const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
    expect(await executeRun(dyingBeforeNotifying(scheduler.workerDeps('dies')), started.body.steps.only.runId as string)).toBe('dead');
    const ended = (await scheduler.api('GET', `/v1/workflows/${workflowId}/runs/${started.body.workflowRunId}`)).body;
    expect(ended.status).toBe('FAILED');
    const firstEnd = workflowRunNotificationKey(ended);
    expect(await scheduler.deps.notifications.get(firstEnd, 'failed')).toBeNull();
    // Retried within the ticker's grace: before, the retried run was RUNNING, the repair passed it by,
    // and the first end's notification was never made.
    const retried = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs/${started.body.workflowRunId}/retry`);
    expect(retried.status, JSON.stringify(retried.body)).toBe(202);
    expect(await scheduler.deps.notifications.get(firstEnd, 'failed')).toMatchObject({ event: 'failed' });
  });

  it('an occurrence its overlap policy skips sends one skipped notification, from the workflow', async () => {
    const created = await scheduler.api('POST', '/v1/workflows', {
      name: 'notify-skipped',
      steps: [{ id: 'a', target: { kind: 'http', url: `${steps.url}/a` } }],
      schedule: { kind: 'cron', expression: '* * * * *' },
      overlapPolicy: 'skip',
      notify: { events: ['skipped', 'succeeded'], destination: { kind: 'http', url: hooks.url } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const workflowId = created.body.workflowId as string;
    const at = Date.parse(created.body.scheduleState.nextRunAt);
    const first = (await scheduler.api('GET', `/v1/workflows/${workflowId}`)).body.recentOccurrences[0];
    expect(await executeRun(worker(at + 100), first.runId)).toBe('succeeded');
    const second = (await scheduler.api('GET', `/v1/workflows/${workflowId}`)).body.recentOccurrences[0];
    expect(await executeRun(worker(at + 60_100), second.runId)).toBe('skipped');
    const record = await scheduler.deps.notifications.get(second.runId, 'skipped');
    expect(record).toMatchObject({ event: 'skipped', status: 'PENDING' });
    const body = record!.body as RunNotificationBody;
    expect(body).toMatchObject({
      subject: { kind: 'workflow', id: workflowId, name: 'notify-skipped' },
      runId: second.runId,
      status: 'SKIPPED',
      reason: expect.stringMatching(/overlapPolicy skip/),
    });
    // The occurrence that started its workflow run raised nothing of its own (only the run's end notifies `succeeded`).
    expect(await scheduler.deps.notifications.get(first.runId, 'succeeded')).toBeNull();
  });
});
