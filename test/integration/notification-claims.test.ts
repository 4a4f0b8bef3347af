// A notification's messages against the queue's receive budget and its tries against their claim
// (decisions 0183, 0184): the worker's handler over the emulator's store, its dispatch queue a
// simulated lane with the deployed redrive policy (maxReceiveCount), and a clock the test moves.
import type { SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SchedulerDeps } from '../../lambdas/app/deps';
import { tryNotification } from '../../lambdas/app/notification-tries';
import type { NotifyEvent } from '../../lambdas/domain/notify';
import { NOTIFICATION_CLAIM_MS, notificationBodyOf, notificationIdOf } from '../../lambdas/domain/notify';
import type { Dispatch } from '../../lambdas/store/dispatch-queue';
import { decodeDispatchMessage, delaySecondsUntil, encodeDispatchMessage } from '../../lambdas/store/dispatch-queue';
import { dispatchQueue } from '../../lambdas/store/schema';
import type { NotificationTry } from '../../lambdas/targets/notification-destinations';
import type { TargetResult } from '../../lambdas/targets/target';
import { processDispatchBatch } from '../../lambdas/worker/adapter';
import type { Scheduler } from './harness';
import { startScheduler } from './harness';

const MAX_RECEIVES = dispatchQueue.maxReceiveCount ?? 0;
const DESTINATION = { kind: 'http' as const, url: 'https://hooks.example/notify' };
const REFUSED: TargetResult = { ok: false, timedOut: false, error: { code: 'HTTP_503', message: 'destination answered 503', retryable: true } };

interface QueuedMessage {
  readonly id: string;
  readonly body: string;
  receives: number;
  visibleAt: number;
}

/**
 * One lane as SQS keeps it: a message is received when visible, hidden for the queue's visibility
 * timeout unless the worker changes it, deleted when the worker's answer does not report it, and
 * moved to the dead-letter queue by the receive that would pass maxReceiveCount.
 */
class SimulatedLane {
  readonly messages: QueuedMessage[] = [];
  readonly deadLetters: QueuedMessage[] = [];
  /** The receives of each message, by id, as they were when it left the lane. */
  readonly receivesOf = new Map<string, number>();
  private sent = 0;
  /** The sends of a failed try's next message still to refuse (SQS throttled, say). */
  refuseNextTrySends = 0;

  constructor(readonly clock: { now: number }) {}

  serve(deps: SchedulerDeps): SchedulerDeps {
    Object.assign(deps.dispatch, {
      send: (dispatches: readonly Dispatch[]) => {
        for (const dispatch of dispatches) {
          if ((dispatch.notifyTry ?? 1) > 1 && dispatch.availableAt > this.clock.now + 2_000 && this.refuseNextTrySends > 0) {
            this.refuseNextTrySends -= 1;
            return Promise.reject(new Error('SQS refused the send: ThrottlingException'));
          }
        }
        for (const dispatch of dispatches)
          this.enqueue(encodeDispatchMessage(dispatch.runId, dispatch), delaySecondsUntil(dispatch.availableAt, this.clock.now));
        return Promise.resolve();
      },
      setVisibility: (receiptHandle: string, seconds: number) => {
        const message = this.messages.find((candidate) => candidate.id === receiptHandle);
        if (message) message.visibleAt = this.clock.now + seconds * 1000;
        return Promise.resolve();
      },
      queueUrlOfArn: () => 'simulated-lane',
    });
    return deps;
  }

  enqueue(body: string, delaySeconds = 0): void {
    this.sent += 1;
    this.messages.push({ id: `m${this.sent}`, body, receives: 0, visibleAt: this.clock.now + delaySeconds * 1000 });
  }

  /** Receives the next visible message (moving the clock to it) and hands it to the worker, until the lane is empty or `settled`. */
  async drain(deps: SchedulerDeps, settled: () => Promise<boolean>, maxReceives = 200): Promise<void> {
    for (let round = 0; round < maxReceives && !(await settled()); round += 1) {
      const next = [...this.messages].sort((a, b) => a.visibleAt - b.visibleAt)[0];
      if (!next) return;
      this.clock.now = Math.max(this.clock.now, next.visibleAt);
      if (next.receives >= MAX_RECEIVES) {
        this.leave(next);
        this.deadLetters.push(next);
        continue;
      }
      next.receives += 1;
      next.visibleAt = this.clock.now + dispatchQueue.visibilityTimeoutSeconds * 1000;
      const answer = await processDispatchBatch(deps, { Records: [this.recordOf(next)] });
      if (!answer.batchItemFailures.some((failure) => failure.itemIdentifier === next.id)) this.leave(next);
    }
  }

  private leave(message: QueuedMessage): void {
    this.messages.splice(this.messages.indexOf(message), 1);
    this.receivesOf.set(message.id, message.receives);
  }

  private recordOf(message: QueuedMessage): SQSRecord {
    return {
      messageId: message.id,
      receiptHandle: message.id,
      body: message.body,
      attributes: {
        ApproximateReceiveCount: String(message.receives),
        SentTimestamp: String(this.clock.now),
        SenderId: 'test',
        ApproximateFirstReceiveTimestamp: String(this.clock.now),
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:simulated-lane',
      awsRegion: 'us-east-1',
    };
  }
}

describe('notification messages and their receives', () => {
  let scheduler: Scheduler;

  beforeAll(async () => {
    // No pollers: the simulated lane is the only way messages reach the worker's handler.
    scheduler = await startScheduler({ workerConcurrency: 0 });
  });
  afterAll(() => scheduler.stop());

  let made = 0;
  /** A `dead` notification's record, as an outcome makes it; no message sent. */
  async function notification(now: number): Promise<{ runId: string; event: NotifyEvent }> {
    made += 1;
    const runId = `job_claims${made}${Date.now().toString(36)}.1`;
    const run = {
      runId,
      jobId: runId.split('.')[0]!,
      tenantId: scheduler.tenantId,
      attempt: 1,
      trigger: 'schedule' as const,
      scheduledFor: new Date(now).toISOString(),
      startedAt: new Date(now).toISOString(),
    };
    const body = notificationBodyOf(
      { kind: 'job', id: run.jobId, name: 'claims', type: 'claims' },
      run,
      { status: 'DEAD', error: { code: 'HTTP_400', message: 'target answered 400', retryable: false }, reason: 'permanent', at: now },
      'dead',
    );
    expect(
      await scheduler.deps.notifications.create(
        { notificationId: notificationIdOf(runId, 'dead'), tenantId: scheduler.tenantId, runId, event: 'dead', destination: DESTINATION, body },
        now,
      ),
    ).toBe('created');
    return { runId, event: 'dead' };
  }

  /** A worker on the test's clock whose destination answers `answers` in turn (the last one from then on). */
  function worker(lane: SimulatedLane, answers: readonly TargetResult[], calls: NotificationTry[] = []): SchedulerDeps {
    const deps = lane.serve(scheduler.workerDeps(`claims-${made}`, () => lane.clock.now));
    Object.assign(deps.signingCache, { of: () => Promise.resolve([]) });
    return Object.assign(deps, {
      notifier: {
        deliver: (attempt: NotificationTry) => {
          calls.push(attempt);
          return Promise.resolve(answers[Math.min(calls.length, answers.length) - 1]!);
        },
      },
    });
  }

  it('a try that fails after its claim spends one receive, not two: its message comes back when the claim has ended, and is tried until it is sent', async () => {
    const lane = new SimulatedLane({ now: Date.now() });
    const { runId, event } = await notification(lane.clock.now);
    // Three tries whose next try's message the queue refuses, then a destination that accepts.
    lane.refuseNextTrySends = 3;
    const calls: NotificationTry[] = [];
    const deps = worker(lane, [REFUSED, REFUSED, REFUSED, { ok: true, detail: 'HTTP 200' }], calls);
    lane.enqueue(encodeDispatchMessage(runId, { tenantId: scheduler.tenantId, notify: event }));

    await lane.drain(deps, async () => (await scheduler.deps.notifications.get(runId, event))?.status !== 'PENDING');

    expect(lane.deadLetters).toEqual([]);
    expect(await scheduler.deps.notifications.get(runId, event)).toMatchObject({ status: 'SENT', tries: 4 });
    expect(calls).toHaveLength(4);
    // Three faults and the try that was sent: four receives of the first message, under the budget.
    expect(lane.receivesOf.get('m1')).toBe(4);
  });

  it("a copy that waits behind another copy's failing tries does not spend its receives waiting: it tries once that copy has gone to the DLQ", async () => {
    const lane = new SimulatedLane({ now: Date.now() });
    const { runId, event } = await notification(lane.clock.now);
    // The first copy's every try fails after its claim until it reaches the DLQ, as a poison message does.
    lane.refuseNextTrySends = MAX_RECEIVES;
    const refusals = Array.from({ length: MAX_RECEIVES }, () => REFUSED);
    const deps = worker(lane, [...refusals, { ok: true, detail: 'HTTP 200' }]);
    // Two copies of the first try's message: an outcome redelivered makes sure its notification is on its way.
    lane.enqueue(encodeDispatchMessage(runId, { tenantId: scheduler.tenantId, notify: event }));
    lane.enqueue(encodeDispatchMessage(runId, { tenantId: scheduler.tenantId, notify: event }));

    await lane.drain(deps, async () => (await scheduler.deps.notifications.get(runId, event))?.status !== 'PENDING');

    // The copy that kept failing is in the DLQ, after its five faults; the other was still there to try.
    expect(lane.deadLetters.map((message) => [message.id, message.receives])).toEqual([['m1', MAX_RECEIVES]]);
    expect(await scheduler.deps.notifications.get(runId, event)).toMatchObject({ status: 'SENT', tries: MAX_RECEIVES + 1 });
  });

  it('a message that comes before its try is due waits as a fresh message of the same try, and the one received is done', async () => {
    const lane = new SimulatedLane({ now: Date.now() });
    const { runId, event } = await notification(lane.clock.now);
    const deps = worker(lane, [REFUSED, { ok: true, detail: 'HTTP 200' }]);
    lane.enqueue(encodeDispatchMessage(runId, { tenantId: scheduler.tenantId, notify: event }));
    await lane.drain(deps, async () => (await scheduler.deps.notifications.get(runId, event))?.tries === 1);
    // The second try's message, and a copy of it that came early (a duplicate delivery).
    expect(lane.messages.map((message) => decodeDispatchMessage(message.body)?.notifyTry)).toEqual([2]);
    lane.enqueue(lane.messages[0]!.body);
    const [, early] = lane.messages;
    await lane.drain(deps, () => Promise.resolve(!lane.messages.includes(early!)), 1);

    const fresh = lane.messages.at(-1)!;
    expect(decodeDispatchMessage(fresh.body)).toMatchObject({ runId, notify: event, notifyTry: 2, tenantId: scheduler.tenantId });
    expect(fresh.visibleAt).toBeGreaterThanOrEqual(lane.clock.now + 4_000);
    expect(lane.receivesOf.get(early!.id)).toBe(1);
    await lane.drain(deps, async () => (await scheduler.deps.notifications.get(runId, event))?.status !== 'PENDING');
    expect(await scheduler.deps.notifications.get(runId, event)).toMatchObject({ status: 'SENT', tries: 2 });
    expect(lane.deadLetters).toEqual([]);
  });

  it('a try whose secrets were slow to read calls only within what is left of its claim: a copy claiming as the claim ends never calls beside it', async () => {
    const clock = { now: Date.now() };
    const lane = new SimulatedLane(clock);
    const { runId, event } = await notification(clock.now);
    const claimedAt = clock.now;
    const copyTries: Awaited<ReturnType<typeof tryNotification>>[] = [];
    const copyCalls: NotificationTry[] = [];
    const copy = worker(lane, [{ ok: true, detail: 'HTTP 200' }], copyCalls);
    const slow = lane.serve(scheduler.workerDeps('claims-slow', () => clock.now));
    // The read of the tenant's signing secrets takes 22 s of the 30 s claim (a store slow to answer).
    Object.assign(slow.signingCache, {
      of: () => {
        clock.now += 22_000;
        return Promise.resolve([]);
      },
    });
    const slowCalls: NotificationTry[] = [];
    Object.assign(slow, {
      notifier: {
        // A destination that never answers: the call lasts its whole timeout. As it ends, another
        // copy of the message comes; were the call still under way, it must not claim and call too.
        deliver: async (attempt: NotificationTry) => {
          slowCalls.push(attempt);
          clock.now += attempt.timeoutMs;
          copyTries.push(await tryNotification(copy, runId, event));
          return { ok: false, timedOut: true, error: { code: 'TIMEOUT', message: `no answer within ${attempt.timeoutMs} ms`, retryable: true } };
        },
      },
    });

    expect(await tryNotification(slow, runId, event)).toMatchObject({ result: 'retrying' });

    expect(slowCalls).toHaveLength(1);
    expect(claimedAt + 22_000 + slowCalls[0]!.timeoutMs).toBeLessThan(claimedAt + NOTIFICATION_CLAIM_MS);
    expect(copyTries).toEqual([{ result: 'busy', retryInSeconds: expect.any(Number), tenantId: scheduler.tenantId }]);
    expect(copyCalls).toEqual([]);
    expect(await scheduler.deps.notifications.get(runId, event)).toMatchObject({ status: 'PENDING', tries: 1, lastError: expect.stringContaining('TIMEOUT') });
  });
});
