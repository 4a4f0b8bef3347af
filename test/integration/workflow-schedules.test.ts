// Scheduled workflows (issue 20 items 1, 2 and 4): each occurrence of a workflow's schedule starts a
// workflow run, through the jobs' own occurrence chain (decision 0147), under the overlap and misfire
// policies, with pause and resume. Workers are driven one message at a time with their own clocks
// (as in recurring.test.ts), so a chain of minute-by-minute occurrences runs in moments.
import { DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scheduleJobIdOf, workflowRunIdOf } from '../../lambdas/domain/workflow-jobs';
import type { Scheduler, TargetServer } from './harness';
import { executeRun, startScheduler, startTarget } from './harness';

const MINUTE = 60_000;

describe('scheduled workflows', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  /** The API's clock runs `offset` ms ahead of real time. */
  let offset = 0;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0, clock: () => Date.now() + offset });
    target = await startTarget((call) => ({ status: 200, body: JSON.stringify({ step: call.path.split('/').pop() }) }));
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  const worker = (at: number, id = 'worker') => scheduler.workerDeps(id, () => at);
  const step = (id: string, dependsOn: string[] = []) => ({
    id,
    target: { kind: 'http', url: `${target.url}/${id}` },
    retryPolicy: { maxAttempts: 1 },
    dependsOn,
  });

  /** The workflow the running test created last: `runQueued` runs its runs only. */
  let current = '';
  async function create(name: string, extra: Record<string, unknown>, steps: unknown[] = [step('a'), step('b', ['a'])]) {
    const created = await scheduler.api('POST', '/v1/workflows', { name, steps, ...extra });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    current = created.body.workflowId as string;
    return created.body;
  }

  const every = (minutes = 1) => ({ schedule: { kind: 'cron', expression: minutes === 1 ? '* * * * *' : `*/${minutes} * * * *`, timezone: 'UTC' } });
  const workflow = async (workflowId: string) => (await scheduler.api('GET', `/v1/workflows/${workflowId}`)).body;
  const workflowRun = async (workflowId: string, at: number) =>
    (await scheduler.api('GET', `/v1/workflows/${workflowId}/runs/${workflowRunIdOf(workflowId, new Date(at).toISOString())}`)).body;

  /**
   * Runs every waiting dispatch message of the current test's workflow's steps with a worker at `at`,
   * until the queue is empty, and answers the runs it executed (not those it found done already).
   * Messages of the schedule's occurrences are deleted, not run: each test drives its occurrences
   * with a clock of its own, and a message that shows up here (a requeued early one, the original of
   * one a test ran ahead of time, the chain's next) would meet this frozen clock, which never reaches
   * an occurrence due after it, and be requeued at once, round and round. An earlier test's workflow
   * keeps its schedule, and on a slow machine its next occurrence's message comes due during a
   * later test: such messages are deleted too.
   */
  async function runQueued(at: number): Promise<string[]> {
    const ran: string[] = [];
    for (let empty = 0; empty < 2;) {
      const received = await scheduler.clients.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: scheduler.config.dispatchQueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
      );
      const messages = received.Messages ?? [];
      if (messages.length === 0) empty++;
      for (const message of messages) {
        const { runId } = JSON.parse(message.Body ?? '{}') as { runId: string };
        await scheduler.clients.sqs.send(new DeleteMessageCommand({ QueueUrl: scheduler.config.dispatchQueueUrl, ReceiptHandle: message.ReceiptHandle }));
        if (!runId.startsWith(`${current}.`) || runId.startsWith(`${scheduleJobIdOf(current)}.`)) continue;
        if ((await executeRun(worker(at), runId)) !== 'duplicate') ran.push(runId);
      }
    }
    return ran;
  }

  it('starts a workflow run on each occurrence of a cron schedule, with deterministic ids, and moves its chain on', async () => {
    const created = await create('every-minute', every());
    const workflowId = created.workflowId as string;
    expect(created.scheduleState).toMatchObject({ status: 'ACTIVE', pausedAt: null });
    expect(created.scheduleState.upcomingRuns).toHaveLength(5);
    const at = Date.parse(created.scheduleState.nextRunAt);
    expect(Date.parse(created.scheduleState.upcomingRuns[1]) - at).toBe(MINUTE);
    // The schedule is no job of the jobs API.
    expect((await scheduler.api('GET', `/v1/jobs/${workflowId}.schedule`)).status).toBe(404);
    expect((await scheduler.api('GET', '/v1/jobs?limit=100')).body.items.map((job: { jobId: string }) => job.jobId)).not.toContain(`${workflowId}.schedule`);

    const first = (await workflow(workflowId)).recentOccurrences[0];
    expect(first).toMatchObject({ status: 'QUEUED', jobId: `${workflowId}.schedule`, scheduledFor: new Date(at).toISOString() });
    // Not before its time.
    expect(await executeRun(worker(at - 5_000), first.runId)).toBe('requeued');
    await runQueued(at - 5_000);
    expect((await scheduler.api('GET', `/v1/workflows/${workflowId}/runs`)).body.items).toEqual([]);

    // Under overlap allow, no read of its own run after the workflow run's write: that read is
    // cancel-running's (decision 0147, amended), which alone may cancel an occurrence.
    const starting = worker(at + 100);
    const get = starting.runs.get.bind(starting.runs);
    const ownReads: string[] = [];
    starting.runs.get = async (runId, ...rest) => {
      if (runId === first.runId) ownReads.push(runId);
      return get(runId, ...rest);
    };
    expect(await executeRun(starting, first.runId)).toBe('succeeded');
    expect(ownReads).toEqual([]);
    // The two steps' runs.
    expect(await runQueued(at + 200)).toHaveLength(2);
    const run1 = await workflowRun(workflowId, at);
    expect(run1).toMatchObject({ status: 'SUCCEEDED', trigger: 'schedule', version: 1, scheduledFor: new Date(at).toISOString() });
    const occurrence = (await scheduler.api('GET', `/v1/runs/${first.runId}`)).body;
    expect(occurrence).toMatchObject({ status: 'SUCCEEDED', result: { workflowRunId: run1.workflowRunId } });
    // The occurrence's trace is the workflow run's.
    expect(run1.traceparent).toBe(occurrence.traceparent);

    const view = await workflow(workflowId);
    expect(view.scheduleState.nextRunAt).toBe(new Date(at + MINUTE).toISOString());
    const second = view.recentOccurrences[0];
    expect(second.scheduledFor).toBe(new Date(at + MINUTE).toISOString());
    // Two workers race for the next occurrence: one starts it, one workflow run.
    const raced = await Promise.all([executeRun(worker(at + MINUTE + 50, 'w1'), second.runId), executeRun(worker(at + MINUTE + 50, 'w2'), second.runId)]);
    expect([...raced].sort()).toEqual(['held', 'succeeded']);
    await runQueued(at + MINUTE + 100);
    expect((await workflowRun(workflowId, at + MINUTE)).status).toBe('SUCCEEDED');
    const runs = (await scheduler.api('GET', `/v1/workflows/${workflowId}/runs`)).body.items;
    expect(runs.map((run: { scheduledFor: string; trigger: string }) => [run.scheduledFor, run.trigger])).toEqual([
      [new Date(at + MINUTE).toISOString(), 'schedule'],
      [new Date(at).toISOString(), 'schedule'],
    ]);
    // A manual start still works beside the schedule.
    expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`)).status).toBe(202);
  });

  it('a delay schedule starts one workflow run, and the schedule is COMPLETED after it', async () => {
    const created = await create('delayed', { schedule: { kind: 'delay', seconds: 2 } });
    const workflowId = created.workflowId as string;
    expect(created.scheduleState.status).toBe('ACTIVE');
    const at = Date.parse(created.scheduleState.nextRunAt);
    const [occurrence] = (await workflow(workflowId)).recentOccurrences;
    expect(await executeRun(worker(at + 10), occurrence.runId)).toBe('succeeded');
    await runQueued(at + 20);
    expect((await workflowRun(workflowId, at)).status).toBe('SUCCEEDED');
    expect((await workflow(workflowId)).scheduleState).toMatchObject({ status: 'COMPLETED', nextRunAt: null, upcomingRuns: [] });
  });

  it('overlap skip: an occurrence while the previous workflow run is RUNNING is skipped, with the reason recorded', async () => {
    const created = await create('overlap-skip', { ...every(), overlapPolicy: 'skip' });
    const workflowId = created.workflowId as string;
    const at = Date.parse(created.scheduleState.nextRunAt);
    expect(await executeRun(worker(at + 100), (await workflow(workflowId)).recentOccurrences[0].runId)).toBe('succeeded');
    // Its first step's run is queued, not run: the workflow run is RUNNING.
    const running = await workflowRun(workflowId, at);
    expect(running.status).toBe('RUNNING');

    const next = (await workflow(workflowId)).recentOccurrences[0];
    expect(await executeRun(worker(at + MINUTE + 100), next.runId)).toBe('skipped');
    expect((await scheduler.api('GET', `/v1/runs/${next.runId}`)).body).toMatchObject({
      status: 'SKIPPED',
      reason: `overlap: workflow run ${running.workflowRunId} is still running (overlapPolicy skip)`,
    });
    expect((await scheduler.api('GET', `/v1/workflows/${workflowId}/runs/${workflowRunIdOf(workflowId, next.scheduledFor)}`)).status).toBe(404);
    // The chain moved on past the skipped occurrence; once the running one ends, the next starts.
    const view = await workflow(workflowId);
    expect(view.scheduleState.nextRunAt).toBe(new Date(at + 2 * MINUTE).toISOString());
    await runQueued(at + MINUTE + 200);
    expect((await workflowRun(workflowId, at)).status).toBe('SUCCEEDED');
    expect(await executeRun(worker(at + 2 * MINUTE + 100), view.recentOccurrences[0].runId)).toBe('succeeded');
    expect((await workflowRun(workflowId, at + 2 * MINUTE)).status).toBe('RUNNING');
    await runQueued(at + 2 * MINUTE + 200);
  });

  it('overlap cancel-running: the next occurrence cancels the running workflow run (its started step too) and starts its own', async () => {
    const created = await create('overlap-cancel', { ...every(), overlapPolicy: 'cancel-running' });
    const workflowId = created.workflowId as string;
    const at = Date.parse(created.scheduleState.nextRunAt);
    expect(await executeRun(worker(at + 100), (await workflow(workflowId)).recentOccurrences[0].runId)).toBe('succeeded');
    const previous = await workflowRun(workflowId, at);
    expect(previous.steps.a.status).toBe('STARTED');

    const next = (await workflow(workflowId)).recentOccurrences[0];
    expect(await executeRun(worker(at + MINUTE + 100), next.runId)).toBe('succeeded');
    const cancelled = await workflowRun(workflowId, at);
    expect(cancelled).toMatchObject({ status: 'CANCELLED' });
    expect(cancelled.steps.a.status).toBe('CANCELLED');
    expect(cancelled.steps.b).toMatchObject({ status: 'NOT_STARTED', reason: 'the workflow run was cancelled' });
    expect((await scheduler.api('GET', `/v1/runs/${previous.steps.a.runId}`)).body.status).toBe('CANCELLED');
    // The new occurrence's workflow run runs to the end; the cancelled one's step never runs.
    await runQueued(at + MINUTE + 200);
    expect(target.calls.filter((call) => call.headers['x-run-id'] === previous.steps.a.runId)).toEqual([]);
    expect((await workflowRun(workflowId, at + MINUTE)).status).toBe('SUCCEEDED');
  });

  /** The step runs a workflow run started, by step. */
  const stepRunIds = (run: { steps: Record<string, { runId: string | null }> }): string[] =>
    Object.values(run.steps)
      .map((state) => state.runId)
      .filter((runId): runId is string => runId !== null);
  /** A promise and what settles it. */
  function gate(): { readonly opened: Promise<void>; readonly open: () => void } {
    let open: () => void = () => undefined;
    const opened = new Promise<void>((resolve) => (open = resolve));
    return { opened, open };
  }

  /**
   * Executes an occurrence with a worker 30 s past its fire time that admits it (the chain moves on
   * and sends the next occurrence), then stops as it reads the workflow to write its workflow run,
   * until `release` opens. `calls`: the target's calls before it.
   */
  async function startBlockedBeforeItsWorkflowRun(at: number, runId: string) {
    const slow = worker(at + 30_000, 'slow');
    const reading = gate();
    const release = gate();
    const workflows = slow.workflows;
    const blocked = {
      ...slow,
      workflows: Object.assign(Object.create(workflows) as typeof workflows, {
        get: async (...args: Parameters<typeof workflows.get>) => {
          reading.open();
          await release.opened;
          return workflows.get(...args);
        },
      }),
    };
    const calls = target.calls.length;
    const starting = executeRun(blocked, runId);
    await reading.opened;
    return { release, calls, starting };
  }

  it('overlap cancel-running: the next occurrence leased before the previous one wrote its workflow run cancels it, and its steps never start', async () => {
    const created = await create('overlap-cancel-unwritten', { ...every(), overlapPolicy: 'cancel-running' });
    const workflowId = created.workflowId as string;
    const at = Date.parse(created.scheduleState.nextRunAt);
    const occurrence = (await workflow(workflowId)).recentOccurrences[0];
    // Its worker admits it (the chain moves on and sends the next occurrence), then stops before it
    // reads the workflow to write its workflow run. Late enough that the next one is due while its
    // lease is still live, as with successors due at once (a backfill, a schedule in seconds).
    const { release, calls, starting } = await startBlockedBeforeItsWorkflowRun(at, occurrence.runId);

    // The next occurrence finds the previous one's run leased and no workflow run of it yet: it cancels the run.
    const next = (await workflow(workflowId)).recentOccurrences[0];
    expect(next.scheduledFor).toBe(new Date(at + MINUTE).toISOString());
    expect(await executeRun(worker(at + MINUTE + 100), next.runId)).toBe('succeeded');
    expect((await scheduler.api('GET', `/v1/runs/${occurrence.runId}`)).body).toMatchObject({
      status: 'CANCELLED',
      reason: expect.stringMatching(/cancel-running/),
    });

    // The stopped worker goes on and writes its workflow run: cancelled before any step starts.
    release.open();
    const started = await starting;
    await runQueued(at + MINUTE + 200);
    const cancelled = await workflowRun(workflowId, at);
    // Before, it went on RUNNING and both workflow runs ran to the end.
    expect(cancelled).toMatchObject({ status: 'CANCELLED' });
    expect(started).toBe('cancelled');
    const running = await workflowRun(workflowId, at + MINUTE);
    expect(running.status).toBe('SUCCEEDED');
    expect(
      target.calls
        .slice(calls)
        .map((call) => call.headers['x-run-id'])
        .sort(),
    ).toEqual(stepRunIds(running).sort());
  });

  it('overlap cancel-running: a previous occurrence that writes its workflow run between the next one reading none and cancelling its run: the workflow run is cancelled', async () => {
    const created = await create('overlap-cancel-late', { ...every(), overlapPolicy: 'cancel-running' });
    const workflowId = created.workflowId as string;
    const at = Date.parse(created.scheduleState.nextRunAt);
    const occurrence = (await workflow(workflowId)).recentOccurrences[0];
    const { release, calls, starting } = await startBlockedBeforeItsWorkflowRun(at, occurrence.runId);

    // The next occurrence reads the previous one's run (leased) and its workflow run (none yet);
    // before its cancel of that run lands, the previous one writes its workflow run and starts it.
    const next = (await workflow(workflowId)).recentOccurrences[0];
    const cancelling = worker(at + MINUTE + 100, 'cancelling');
    const leases = cancelling.leases;
    let previousDone: Promise<unknown> | null = null;
    const racing = {
      ...cancelling,
      leases: Object.assign(Object.create(leases) as typeof leases, {
        complete: async (...args: Parameters<typeof leases.complete>) => {
          if (args[0] === occurrence.runId && previousDone === null) {
            release.open();
            previousDone = starting;
            await previousDone;
          }
          return leases.complete(...args);
        },
      }),
    };
    expect(await executeRun(racing, next.runId)).toBe('succeeded');
    expect(previousDone).not.toBeNull();
    expect(await starting).toBe('succeeded');

    await runQueued(at + MINUTE + 200);
    // Before, the previous workflow run was left RUNNING, and both ran to the end.
    const previous = await workflowRun(workflowId, at);
    expect(previous).toMatchObject({ status: 'CANCELLED' });
    const running = await workflowRun(workflowId, at + MINUTE);
    expect(running.status).toBe('SUCCEEDED');
    expect(
      target.calls
        .slice(calls)
        .map((call) => call.headers['x-run-id'])
        .sort(),
    ).toEqual(stepRunIds(running).sort());
  });

  it('overlap buffer-one: the next occurrence waits for the running workflow run, and starts as soon as it ends', async () => {
    const created = await create('overlap-buffer', { ...every(), overlapPolicy: 'buffer-one' });
    const workflowId = created.workflowId as string;
    const at = Date.parse(created.scheduleState.nextRunAt);
    expect(await executeRun(worker(at + 100), (await workflow(workflowId)).recentOccurrences[0].runId)).toBe('succeeded');
    const next = (await workflow(workflowId)).recentOccurrences[0];
    expect(await executeRun(worker(at + MINUTE + 100), next.runId)).toBe('waiting');
    expect((await scheduler.api('GET', `/v1/runs/${next.runId}`)).body).toMatchObject({ status: 'QUEUED', reason: expect.stringMatching(/buffer-one/) });
    // The running workflow run's steps finish: its end wakes the waiting occurrence (a message now, not in 30 s).
    const ran = await runQueued(at + MINUTE + 200);
    expect(ran).toHaveLength(2);
    expect((await workflowRun(workflowId, at)).status).toBe('SUCCEEDED');
    expect(await executeRun(worker(at + MINUTE + 300), next.runId)).toBe('succeeded');
    expect((await workflowRun(workflowId, at + MINUTE)).status).toBe('RUNNING');
    await runQueued(at + MINUTE + 400);
  });

  it('overlap buffer-one: an occurrence that waited longer than the misfire threshold still starts, and the chain goes on from now', async () => {
    const created = await create('overlap-buffer-long', { ...every(), overlapPolicy: 'buffer-one', misfirePolicy: 'skip' });
    const workflowId = created.workflowId as string;
    const at = Date.parse(created.scheduleState.nextRunAt);
    expect(await executeRun(worker(at + 100), (await workflow(workflowId)).recentOccurrences[0].runId)).toBe('succeeded');
    const next = (await workflow(workflowId)).recentOccurrences[0];
    expect(await executeRun(worker(at + MINUTE + 100), next.runId)).toBe('waiting');
    // The running workflow run's steps finish two minutes after the next occurrence's fire time.
    expect(await runQueued(at + 3 * MINUTE)).toHaveLength(2);
    expect((await workflowRun(workflowId, at)).status).toBe('SUCCEEDED');
    // Before, it was then skipped as misfired ("due 120 s ago"): buffer-one behaved as skip.
    expect(await executeRun(worker(at + 3 * MINUTE + 100), next.runId)).toBe('succeeded');
    expect((await workflowRun(workflowId, at + MINUTE)).status).toBe('RUNNING');
    expect((await scheduler.api('GET', `/v1/runs/${next.runId}`)).body.reason).toMatch(/waited 1\d\d s .*buffer-one/);
    // The fire times it waited through are dropped: the chain goes on from now.
    expect((await workflow(workflowId)).scheduleState.nextRunAt).toBe(new Date(at + 4 * MINUTE).toISOString());
    await runQueued(at + 3 * MINUTE + 200);
  });

  it('pause retires the pending occurrence; resume after a gap fires once under misfire fire-once, then goes on from now', async () => {
    const created = await create('paused', { ...every(), misfirePolicy: 'fire-once' });
    const workflowId = created.workflowId as string;
    const pending = (await workflow(workflowId)).recentOccurrences[0];
    const paused = await scheduler.api('POST', `/v1/workflows/${workflowId}/pause`);
    expect(paused.status, JSON.stringify(paused.body)).toBe(200);
    expect(paused.body.scheduleState).toMatchObject({ status: 'PAUSED', nextRunAt: null, upcomingRuns: [] });
    expect((await scheduler.api('GET', `/v1/runs/${pending.runId}`)).body).toMatchObject({ status: 'SKIPPED', reason: 'workflow paused' });
    // Its message arrives anyway: no workflow run.
    expect(await executeRun(worker(Date.parse(pending.scheduledFor) + 100), pending.runId)).toBe('duplicate');
    // Pausing it again is no conflict: it stays paused (as a job's pause does).
    expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/pause`)).body.scheduleState).toMatchObject({ status: 'PAUSED', nextRunAt: null });

    offset = 10 * MINUTE; // ten occurrences pass while paused
    try {
      const resumed = await scheduler.api('POST', `/v1/workflows/${workflowId}/resume`);
      expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
      const nextAt = Date.parse(resumed.body.scheduleState.nextRunAt);
      // One occurrence stands for the missed ones: the latest missed, due at once.
      expect(nextAt).toBeLessThanOrEqual(Date.now() + offset);
      expect(nextAt).toBeGreaterThan(Date.parse(pending.scheduledFor) + 8 * MINUTE);
      const occurrence = (await workflow(workflowId)).recentOccurrences[0];
      const now = Date.now() + offset;
      expect(await executeRun(worker(now), occurrence.runId)).toBe('succeeded');
      expect((await scheduler.api('GET', `/v1/runs/${occurrence.runId}`)).body.reason).toMatch(/misfirePolicy fire-once/);
      await runQueued(now + 100);
      const runs = (await scheduler.api('GET', `/v1/workflows/${workflowId}/runs`)).body.items;
      expect(runs).toHaveLength(1);
      expect(runs[0]).toMatchObject({ status: 'SUCCEEDED', trigger: 'schedule', scheduledFor: new Date(nextAt).toISOString() });
      expect(Date.parse((await workflow(workflowId)).scheduleState.nextRunAt)).toBeGreaterThan(now - 1);
    } finally {
      offset = 0;
    }
  });

  it('misfire skip: an occurrence that starts late is skipped, with no workflow run, and the chain goes on from now', async () => {
    const created = await create('misfire-skip', { ...every(), misfirePolicy: 'skip' });
    const workflowId = created.workflowId as string;
    const at = Date.parse(created.scheduleState.nextRunAt);
    const occurrence = (await workflow(workflowId)).recentOccurrences[0];
    expect(await executeRun(worker(at + 5 * MINUTE), occurrence.runId)).toBe('skipped');
    expect((await scheduler.api('GET', `/v1/runs/${occurrence.runId}`)).body).toMatchObject({
      status: 'SKIPPED',
      reason: expect.stringMatching(/misfirePolicy skip/),
    });
    expect((await scheduler.api('GET', `/v1/workflows/${workflowId}/runs`)).body.items).toEqual([]);
    expect((await workflow(workflowId)).scheduleState.nextRunAt).toBe(new Date(at + 6 * MINUTE).toISOString());
  });

  it('a new version changes the schedule of later occurrences; their workflow runs use the newest version; a version without a schedule cancels it', async () => {
    const created = await create('versioned', every());
    const workflowId = created.workflowId as string;
    const oldPending = (await workflow(workflowId)).recentOccurrences[0];
    const updated = await scheduler.api('POST', `/v1/workflows/${workflowId}/versions`, {
      name: 'versioned',
      ...every(5),
      steps: [step('a'), step('c', ['a'])],
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(201);
    const at = Date.parse(updated.body.scheduleState.nextRunAt);
    expect(new Date(at).getUTCMinutes() % 5).toBe(0);
    expect(Date.parse(updated.body.scheduleState.upcomingRuns[1]) - at).toBe(5 * MINUTE);
    expect((await scheduler.api('GET', `/v1/runs/${oldPending.runId}`)).body).toMatchObject({ status: 'SKIPPED', reason: 'the workflow schedule changed' });
    const occurrence = (await workflow(workflowId)).recentOccurrences[0];
    expect(occurrence.scheduledFor).toBe(new Date(at).toISOString());
    expect(await executeRun(worker(at + 100), occurrence.runId)).toBe('succeeded');
    await runQueued(at + 200);
    const run = await workflowRun(workflowId, at);
    expect(run).toMatchObject({ status: 'SUCCEEDED', version: 2 });
    expect(Object.keys(run.steps).sort()).toEqual(['a', 'c']);

    const pendingBefore = (await workflow(workflowId)).recentOccurrences[0];
    const unscheduled = await scheduler.api('POST', `/v1/workflows/${workflowId}/versions`, { name: 'versioned', steps: [step('a')] });
    expect(unscheduled.status, JSON.stringify(unscheduled.body)).toBe(201);
    expect(unscheduled.body.scheduleState).toMatchObject({ status: 'CANCELLED', nextRunAt: null });
    expect((await scheduler.api('GET', `/v1/runs/${pendingBefore.runId}`)).body).toMatchObject({ status: 'CANCELLED' });
    expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/pause`)).status).toBe(409);
    // Manual starts go on as for any workflow.
    expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`)).status).toBe(202);
  });

  it('a new version that changes the schedule keeps a due occurrence not yet started when the schedule still fires at it', async () => {
    const hourly = { kind: 'cron', expression: '0 * * * *', timezone: 'UTC' };
    const created = await create('due-kept', { schedule: hourly }, [step('a')]);
    const workflowId = created.workflowId as string;
    const at = Date.parse(created.scheduleState.nextRunAt);
    const firstRunId = (await workflow(workflowId)).recentOccurrences[0].runId as string;
    try {
      // Ten minutes past the occurrence, which no worker has leased (none runs here).
      offset = at + 10 * MINUTE - Date.now();
      const version = (schedule: Record<string, unknown>) =>
        scheduler.api('POST', `/v1/workflows/${workflowId}/versions`, { name: 'due-kept', steps: [step('a')], schedule });
      // Only a jitter added: the same fire times, so 09:00's workflow run is not dropped for 10:00's.
      const jittered = await version({ ...hourly, jitterSeconds: 1800 });
      expect(jittered.status, JSON.stringify(jittered.body)).toBe(201);
      expect(jittered.body.scheduleState.nextRunAt).toBe(new Date(at).toISOString());
      const occurrences = (await workflow(workflowId)).recentOccurrences as { runId: string; scheduledFor: string; attempt: number; status: string }[];
      expect(occurrences.filter((occurrence) => occurrence.scheduledFor === new Date(at).toISOString())).toEqual([
        // Due, waiting for its jitter's start: not started.
        expect.objectContaining({ attempt: 2, status: expect.stringMatching(/^(SCHEDULED|QUEUED)$/) }),
        expect.objectContaining({ runId: firstRunId, attempt: 1, status: 'SKIPPED' }),
      ]);
      // A schedule that no longer fires at it moves on to its own next fire time.
      const moved = await version({ kind: 'cron', expression: '30 * * * *', timezone: 'UTC' });
      expect(moved.body.scheduleState.nextRunAt).toBe(new Date(at + 30 * MINUTE).toISOString());
    } finally {
      offset = 0;
    }
  });

  it('a version that puts back a schedule an earlier version changed or removed plans its occurrence anew', async () => {
    const yearly = { schedule: { kind: 'cron', expression: '0 0 1 1 *', timezone: 'UTC' } };
    const created = await create('put-back', yearly, [step('a')]);
    const workflowId = created.workflowId as string;
    const first = created.scheduleState.nextRunAt as string;
    const version = (extra: Record<string, unknown>) =>
      scheduler.api('POST', `/v1/workflows/${workflowId}/versions`, { name: 'put-back', steps: [step('a')], ...extra });
    expect((await version({ schedule: { kind: 'cron', expression: '0 0 1 2 *', timezone: 'UTC' } })).status).toBe(201);
    // Back: the occurrence's first attempt is the run the change retired. Before, the plan met its id
    // and the version answered 409 until that fire time passed (a year here).
    const back = await version(yearly);
    expect(back.status, JSON.stringify(back.body)).toBe(201);
    expect(back.body.scheduleState).toMatchObject({ status: 'ACTIVE', nextRunAt: first });
    const occurrences = (await workflow(workflowId)).recentOccurrences as { scheduledFor: string; attempt: number; status: string }[];
    expect(occurrences.filter((occurrence) => occurrence.scheduledFor === first)).toEqual([
      expect.objectContaining({ attempt: 2, status: 'SCHEDULED' }),
      expect.objectContaining({ attempt: 1, status: 'SKIPPED' }),
    ]);

    // Paused, then removed, then brought back: the same, and the pause is over.
    expect((await scheduler.api('POST', `/v1/workflows/${workflowId}/pause`)).status).toBe(200);
    expect((await version({})).body.scheduleState).toMatchObject({ status: 'CANCELLED' });
    const again = await version(yearly);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(again.body.scheduleState).toMatchObject({ status: 'ACTIVE', nextRunAt: first, pausedAt: null });
  });

  it('refuses schedule policies without a schedule, a schedule that never fires, and a pause of an unscheduled workflow; and writes nothing', async () => {
    const before = await scheduler.countJobAndRunItems();
    const refused = async (body: Record<string, unknown>) => {
      const answer = await scheduler.api('POST', '/v1/workflows', { name: 'refused', steps: [step('a')], ...body });
      expect(answer.status, JSON.stringify(answer.body)).toBe(400);
      return answer.body.errors as { path: string; message: string }[];
    };
    expect(await refused({ overlapPolicy: 'skip' })).toEqual([{ path: 'overlapPolicy', message: expect.stringMatching(/give a schedule/) }]);
    expect(await refused({ schedule: { kind: 'at', at: '2020-01-01T00:00:00Z' } })).toEqual([{ path: 'schedule.at', message: expect.any(String) }]);
    expect(await refused({ schedule: { kind: 'cron', expression: '* * * * *', endAt: '2020-01-01T00:00:00Z' } })).toEqual([
      { path: 'schedule.endAt', message: 'has passed, so the schedule would never fire' },
    ]);
    expect(await refused({ schedule: { kind: 'cron', expression: '* * * * *', timezone: 'Mars/Olympus' } })).toEqual([
      { path: 'schedule.timezone', message: expect.stringMatching(/time zone/) },
    ]);
    expect(await scheduler.countJobAndRunItems()).toEqual(before);
    const unscheduled = await create('unscheduled', {});
    expect(unscheduled.scheduleState).toBeUndefined();
    expect((await scheduler.api('POST', `/v1/workflows/${unscheduled.workflowId}/pause`)).status).toBe(409);
    expect((await scheduler.api('POST', `/v1/workflows/${unscheduled.workflowId}/resume`)).status).toBe(409);
  });
  it('delete: its schedule, pending occurrence and running workflow runs are cancelled, its name is free, changes are 409 and change nothing; reads go on', async () => {
    const created = await create('to-delete', every());
    const workflowId = created.workflowId as string;
    const pending = (await workflow(workflowId)).recentOccurrences[0];
    const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
    expect(started.status).toBe(202);
    const otherKey = `key_other_${Date.now()}`;
    await scheduler.deps.apiKeys.issue(otherKey, `other-${scheduler.tenantId}`, Date.now());
    const foreign = await fetch(`${scheduler.runtime.url}/v1/workflows/${workflowId}`, { method: 'DELETE', headers: { authorization: `Bearer ${otherKey}` } });
    expect(foreign.status).toBe(404);

    const deleted = await scheduler.api('DELETE', `/v1/workflows/${workflowId}`);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    expect(deleted.body).toMatchObject({ workflowId, deletedAt: expect.any(String), scheduleState: { status: 'CANCELLED', nextRunAt: null } });
    expect((await scheduler.api('GET', `/v1/runs/${pending.runId}`)).body).toMatchObject({ status: 'CANCELLED', reason: 'the workflow was deleted' });
    expect((await scheduler.api('GET', `/v1/workflows/${workflowId}/runs/${started.body.workflowRunId}`)).body).toMatchObject({ status: 'CANCELLED' });
    // Its reads go on; it leaves the list.
    expect((await workflow(workflowId)).deletedAt).toBe(deleted.body.deletedAt);
    expect((await scheduler.api('GET', `/v1/workflows/${workflowId}/runs`)).body.items).toHaveLength(1);
    expect((await scheduler.api('GET', '/v1/workflows?namePrefix=to-delete&limit=10')).body.items).toEqual([]);

    const before = await scheduler.countJobAndRunItems();
    const changes: [string, string, unknown?][] = [
      ['POST', `/v1/workflows/${workflowId}/runs`],
      ['POST', `/v1/workflows/${workflowId}/pause`],
      ['POST', `/v1/workflows/${workflowId}/resume`],
      ['POST', `/v1/workflows/${workflowId}/versions`, { name: 'to-delete', steps: [step('a')] }],
      ['POST', `/v1/workflows/${workflowId}/runs/${started.body.workflowRunId}/retry`],
    ];
    for (const [method, path, body] of changes) {
      const answer = await scheduler.api(method, path, body);
      expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBe(409);
      expect(answer.body.detail).toMatch(/was deleted/);
    }
    expect(await scheduler.countJobAndRunItems()).toEqual(before);

    // A second delete answers it as it is, and the audit has the one delete.
    const again = await scheduler.api('DELETE', `/v1/workflows/${workflowId}`);
    expect(again.status).toBe(200);
    expect(again.body.deletedAt).toBe(deleted.body.deletedAt);
    const audit = await scheduler.api('GET', `/v1/audit?objectId=${workflowId}`);
    expect(audit.body.items.filter((entry: { action: string }) => entry.action === 'workflow.delete')).toHaveLength(1);
    // The name is free for a new workflow.
    expect((await create('to-delete', {})).workflowId).not.toBe(workflowId);
  });

  it('an occurrence whose worker read the workflow just before a delete starts nothing: its workflow run ends CANCELLED', async () => {
    const created = await create('delete-mid-start', every(), [step('a')]);
    const workflowId = created.workflowId as string;
    const at = Date.parse(created.scheduleState.nextRunAt);
    const occurrence = (await workflow(workflowId)).recentOccurrences[0];
    // The delete commits, and lists the running workflow runs, between the worker's read of the
    // workflow and its write of the workflow run.
    const deps = worker(at + 100);
    const runs = deps.workflowRuns;
    const racing = {
      ...deps,
      workflowRuns: Object.assign(Object.create(runs) as typeof runs, {
        createRun: async (...args: Parameters<typeof runs.createRun>) => {
          expect((await scheduler.api('DELETE', `/v1/workflows/${workflowId}`)).status).toBe(200);
          return runs.createRun(...args);
        },
      }),
    };
    const calls = target.calls.length;
    await executeRun(racing, occurrence.runId);
    // Before, the run went on RUNNING and its step called its target after the delete.
    const started = await workflowRun(workflowId, at);
    expect(started).toMatchObject({ status: 'CANCELLED' });
    expect(await runQueued(at + 200)).toHaveLength(0);
    expect(target.calls.length).toBe(calls);
  });

  it('two deletes and a new version at once: the workflow ends deleted once, its schedule CANCELLED, whichever lands first', async () => {
    const created = await create('delete-race', every());
    const workflowId = created.workflowId as string;
    const [first, second, versioned] = await Promise.all([
      scheduler.api('DELETE', `/v1/workflows/${workflowId}`),
      scheduler.api('DELETE', `/v1/workflows/${workflowId}`),
      scheduler.api('POST', `/v1/workflows/${workflowId}/versions`, { name: 'delete-race', steps: [step('a')], ...every(2) }),
    ]);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(first.body.deletedAt).toBe(second.body.deletedAt);
    // The version is written before the delete (201; the delete then cancels its schedule) or refused after it.
    expect([201, 409], JSON.stringify(versioned.body)).toContain(versioned.status);
    const after = await workflow(workflowId);
    expect(after.deletedAt).toBe(first.body.deletedAt);
    expect(after.scheduleState).toMatchObject({ status: 'CANCELLED', nextRunAt: null });
    for (const occurrence of after.recentOccurrences) expect(['CANCELLED', 'SKIPPED']).toContain(occurrence.status);
    const audit = await scheduler.api('GET', `/v1/audit?objectId=${workflowId}`);
    expect(audit.body.items.filter((entry: { action: string }) => entry.action === 'workflow.delete')).toHaveLength(1);
  });
});
