// A notification's tries (docs/notifications.md): a worker that receives a notification's message
// claims it, tries its destination once and ends it (SENT, DEAD) or plans its next try with a
// growing delay; a message that finds it claimed waits as a fresh message. Making a notification
// (once per run and event) is notifications.ts's.
import { logger } from '../core/logger';
import { Metric } from '../core/metrics';
import type { NotifyEvent } from '../domain/notify';
import {
  NOTIFICATION_CLAIM_MARGIN_MS,
  NOTIFICATION_CLAIM_MS,
  NOTIFICATION_MIN_CALL_MS,
  NOTIFICATION_TIMEOUT_MS,
  notificationRetryDelay,
} from '../domain/notify';
import { traceIdOf } from '../domain/trace-context';
import type { NotificationRecord } from '../store/notifications';
import type { SchedulerDeps } from './deps';
import { destinationRefusal } from './tenant-grants';

/** A try's next message may claim this long before its time: SQS's delay and the clocks of two workers are not exact. */
const NEXT_TRY_EARLY_MS = 1_000;

export type NotificationTryResult = 'sent' | 'retrying' | 'dead' | 'done' | 'busy' | 'missing';

/**
 * A try that stopped on a fault after it claimed its notification (the store or the queue failed
 * it): its message should come back once the claim has ended (`claimedUntil`, epoch ms), not into
 * its own claim, where it would only be answered busy and spend a second receive of its budget.
 */
export class NotificationTryFault extends Error {
  constructor(
    readonly claimedUntil: number,
    cause: unknown,
  ) {
    super(`the notification try stopped after its claim: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/**
 * One message of a notification: claim it, try its destination once, and end it or plan the next
 * try. `traceparent`: the run's, from the message, for the lines and the next try's message.
 * `busy` says when to come back (`retryInSeconds`) and whose it is (`tenantId`).
 */
export async function tryNotification(
  deps: SchedulerDeps,
  runId: string,
  event: NotifyEvent,
  traceparent?: string,
  messageTry?: number,
): Promise<{ result: NotificationTryResult; retryInSeconds?: number; tenantId?: string }> {
  const now = deps.clock();
  const traceId = traceIdOf(traceparent);
  const claim = await deps.notifications.claim(runId, event, now, NOTIFICATION_CLAIM_MS, messageTry);
  if (claim.kind === 'missing') {
    logger.warn('notification message for a notification that does not exist; dropped', { runId, traceId, event });
    return { result: 'missing' };
  }
  if (claim.kind === 'done') return { result: 'done' };
  if (claim.kind === 'busy') {
    return { result: 'busy', retryInSeconds: Math.max(1, Math.ceil((claim.until - now) / 1000)), tenantId: claim.record.tenantId };
  }
  const claimedUntil = now + NOTIFICATION_CLAIM_MS;
  try {
    return await tryClaimed(deps, claim.record, claimedUntil, traceparent);
  } catch (error) {
    throw new NotificationTryFault(claimedUntil, error);
  }
}

/** The try of a notification this worker has claimed until `claimedUntil`. */
async function tryClaimed(
  deps: SchedulerDeps,
  record: NotificationRecord,
  claimedUntil: number,
  traceparent: string | undefined,
): Promise<{ result: NotificationTryResult; retryInSeconds?: number }> {
  const { runId, event } = record;
  const fields = {
    runId,
    traceId: traceIdOf(traceparent),
    event,
    tenantId: record.tenantId,
    notificationId: record.notificationId,
    destination: record.destination.kind,
    try: record.tries,
  };

  let signingSecrets: readonly string[] | undefined;
  let signingUnavailable = false;
  if (record.destination.kind === 'http') {
    try {
      signingSecrets = await deps.signingCache.of(record.tenantId);
    } catch (error) {
      // An unsigned notification is never the fallback of a tenant that signs: the try failed. The
      // store's error (it may name roles, keys and accounts) is logged, not shown to the tenant.
      signingUnavailable = true;
      logger.error('the signing secrets could not be read', { ...fields, error: error instanceof Error ? error.message : String(error) });
    }
  }
  // A topic or bus the tenant's grants no longer cover (decision 0194) is not sent to: the
  // notification ends DEAD, the destination named by its kind.
  const notGranted = await destinationRefusal(deps, record.tenantId, record.destination);
  // The call ends inside the claim, with a margin: once the claim has passed another copy of the
  // message may claim and call, and two calls at once are what the claim is for. What came before
  // the call (the secrets' read) spends the claim, so the call gets what is left, at most its timeout.
  const callWithinMs = Math.min(NOTIFICATION_TIMEOUT_MS, claimedUntil - NOTIFICATION_CLAIM_MARGIN_MS - deps.clock());
  const outcome = notGranted
    ? { ok: false as const, timedOut: false, error: notGranted }
    : signingUnavailable
      ? { ok: false as const, timedOut: false, error: { code: 'SIGNING_UNAVAILABLE', message: 'the signing secrets could not be read', retryable: true } }
      : callWithinMs < NOTIFICATION_MIN_CALL_MS
        ? {
            ok: false as const,
            timedOut: false,
            error: { code: 'CLAIM_RAN_OUT', message: 'the try ran out of its claim before it could call', retryable: true },
          }
        : await deps.notifier.deliver({
            destination: record.destination,
            body: record.body,
            egress: deps.egress,
            timeoutMs: callWithinMs,
            nowSeconds: Math.floor(deps.clock() / 1000),
            ...(signingSecrets?.length ? { signingSecrets } : {}),
          });
  const at = deps.clock();
  if (outcome.ok) {
    if (await deps.notifications.finish(runId, event, record.tries, { status: 'SENT', now: at, error: null })) {
      deps.telemetry.metrics.count(Metric.NotificationsSent);
      logger.info('notification sent', { ...fields, detail: outcome.detail });
    }
    return { result: 'sent' };
  }
  deps.telemetry.metrics.count(Metric.NotificationsFailed);
  const error = `${outcome.error.code}: ${outcome.error.message}`.slice(0, 600);
  const delay = notificationRetryDelay(record.tries, outcome.error.retryable);
  if (delay === null) {
    if (await deps.notifications.finish(runId, event, record.tries, { status: 'DEAD', now: at, error })) {
      deps.telemetry.metrics.count(Metric.NotificationsDead);
      logger.error('notification dead: its budget is spent or its destination refused it', { ...fields, error });
    }
    return { result: 'dead' };
  }
  const nextTryAt = at + delay * 1000;
  // The next try's message first: should its send fail, this message comes back when the claim has
  // ended and tries again. Then the claim is held until that try is due (a second early: SQS's delay
  // and two workers' clocks are not exact), and copies of this message are done.
  await deps.dispatch.send([{ runId, tenantId: record.tenantId, availableAt: nextTryAt, notify: event, notifyTry: record.tries + 1, traceparent }], at);
  if (!(await deps.notifications.release(runId, event, record.tries, error, at, nextTryAt - NEXT_TRY_EARLY_MS))) return { result: 'done' };
  logger.warn('notification try failed; tried again later', { ...fields, error, retryInSeconds: delay });
  return { result: 'retrying', retryInSeconds: delay };
}

/**
 * A message answered busy (its notification claimed by a try under way, or waiting for its next
 * try's time) waits as a fresh message of the same try, due when the wait is over; the one received
 * is then done. Holding the received one instead would spend a receive of the queue's
 * maxReceiveCount, a budget for faults, on each wait, and a message that waited often enough would
 * reach the dead-letter queue with its notification never tried (decision 0183).
 */
export async function waitForNotificationTurn(
  deps: SchedulerDeps,
  message: { readonly runId: string; readonly tenantId: string; readonly event: NotifyEvent; readonly traceparent?: string; readonly messageTry?: number },
  retryInSeconds: number,
): Promise<void> {
  const now = deps.clock();
  // SQS delays are whole seconds rounded down: one more second than the wait (itself rounded up)
  // comes back when the wait is over, never before.
  await deps.dispatch.send(
    [
      {
        runId: message.runId,
        tenantId: message.tenantId,
        availableAt: now + (retryInSeconds + 1) * 1000,
        notify: message.event,
        ...(message.messageTry !== undefined ? { notifyTry: message.messageTry } : {}),
        traceparent: message.traceparent,
      },
    ],
    now,
  );
}
