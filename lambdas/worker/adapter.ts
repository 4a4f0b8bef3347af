// The worker function: consumes dispatch messages in batches, executes each run concurrently, and
// reports the messages that should come back (partial batch response). A message is reported
// only when processing it failed in a way a later delivery can fix (a throttled write, a network
// fault); messages that can never succeed stay reported until SQS moves them to the DLQ.
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { logger } from '../core/logger';
import type { SchedulerDeps } from '../app/deps';
import { executeRun } from '../app/execute-run';
import { flushTelemetry } from '../app/flush-telemetry';
import { decodeDispatchMessage } from '../store/dispatch-queue';
import type { SQSRecord } from 'aws-lambda';
import { NotificationTryFault, tryNotification, waitForNotificationTurn } from '../app/notification-tries';
import type { NotifyEvent } from '../domain/notify';
import { NOTIFICATION_CLAIM_MS } from '../domain/notify';
import { traceIdOf } from '../domain/trace-context';

async function failLater(
  deps: SchedulerDeps,
  record: SQSRecord,
  seconds = deps.config.failedMessageRetrySeconds,
): Promise<{ itemIdentifier: string; ok: false }> {
  try {
    // Back after a short while rather than the queue's visibility timeout (sized for the longest
    // run): transient faults retry promptly, and poison messages reach the DLQ after
    // maxReceiveCount short rounds.
    await deps.dispatch.setVisibility(record.receiptHandle, seconds, deps.dispatch.queueUrlOfArn(record.eventSourceARN));
  } catch (error) {
    logger.warn('could not shorten the visibility of a failed message', {
      messageId: record.messageId,
      error: error instanceof Error ? error.message : String(error),
    });
  }
  return { itemIdentifier: record.messageId, ok: false };
}

/**
 * `eagerUntil`: when the invocation ends (from the Lambda context); given, a workflow step's
 * dependants are run by the worker that ran it (decision 0179).
 */
export async function processDispatchBatch(deps: SchedulerDeps, event: SQSEvent, options: { readonly eagerUntil?: number } = {}): Promise<SQSBatchResponse> {
  const outcomes = await Promise.all(
    event.Records.map(async (record) => {
      const message = decodeDispatchMessage(record.body);
      if (!message) {
        // Not ours or corrupted: let it fail until the redrive policy parks it in the DLQ.
        logger.error('unreadable dispatch message', { messageId: record.messageId });
        return failLater(deps, record);
      }
      if (message.notify) return processNotificationMessage(deps, record, message.runId, message.notify, message.traceparent, message.notifyTry);
      try {
        const result = await executeRun(deps, message.runId, {
          receiptHandle: record.receiptHandle,
          tenantId: message.tenantId,
          deferrals: message.deferrals,
          // The pool and lane it came from: its receipt handle is that queue's.
          queueUrl: deps.dispatch.queueUrlOfArn(record.eventSourceARN),
          traceparent: message.traceparent,
          notBefore: message.notBefore,
          ...(options.eagerUntil !== undefined ? { eagerUntil: options.eagerUntil } : {}),
        });
        // Kept for a recheck: executeRun has set when the message comes back.
        return { itemIdentifier: record.messageId, ok: result !== 'recheck' };
      } catch (error) {
        logger.error('dispatch message failed; it will be delivered again', {
          messageId: record.messageId,
          runId: message.runId,
          traceId: traceIdOf(message.traceparent),
          receiveCount: record.attributes.ApproximateReceiveCount,
          error: error instanceof Error ? { name: error.name, message: error.message } : String(error),
        });
        return failLater(deps, record);
      }
    }),
  );
  return {
    batchItemFailures: outcomes.filter((outcome) => !outcome.ok).map(({ itemIdentifier }) => ({ itemIdentifier })),
  };
}

/**
 * A notification's message (docs/notifications.md): one try of it. Only faults spend the message's
 * receives (the queue's maxReceiveCount): one answered busy (a try of another copy under way, or
 * its next try not yet due) is replaced by a fresh message due when the wait is over, and one whose
 * try stopped on a fault after its claim comes back when that claim has ended, so that its next
 * receive tries again rather than finds its own claim (decision 0183).
 */
async function processNotificationMessage(
  deps: SchedulerDeps,
  record: SQSRecord,
  runId: string,
  event: NotifyEvent,
  traceparent: string | undefined,
  messageTry: number | undefined,
): Promise<{ itemIdentifier: string; ok: boolean }> {
  try {
    const { result, retryInSeconds, tenantId } = await tryNotification(deps, runId, event, traceparent, messageTry);
    if (result === 'busy' && tenantId !== undefined) {
      await waitForNotificationTurn(deps, { runId, tenantId, event, traceparent, messageTry }, retryInSeconds ?? Math.ceil(NOTIFICATION_CLAIM_MS / 1000));
    }
    return { itemIdentifier: record.messageId, ok: true };
  } catch (error) {
    logger.error('notification message failed; it will be delivered again', {
      messageId: record.messageId,
      runId,
      traceId: traceIdOf(traceparent),
      event,
      receiveCount: record.attributes.ApproximateReceiveCount,
      error: error instanceof Error ? { name: error.name, message: error.message } : String(error),
    });
    const afterClaim = error instanceof NotificationTryFault ? Math.ceil((error.claimedUntil - deps.clock()) / 1000) + 1 : 0;
    return failLater(deps, record, Math.max(deps.config.failedMessageRetrySeconds, afterClaim));
  }
}

export function createWorkerHandler(deps: SchedulerDeps) {
  return middy<SQSEvent, SQSBatchResponse, Error, Context>()
    .use(flushTelemetry(deps))
    .handler((event, context) => processDispatchBatch(deps, event, eagerUntilOf(deps, context)));
}

/** When this invocation ends, from the Lambda context; none (nothing handed on) where a runtime does not say. */
export function eagerUntilOf(deps: Pick<SchedulerDeps, 'clock'>, context: Pick<Context, 'getRemainingTimeInMillis'> | undefined): { eagerUntil?: number } {
  const remaining = typeof context?.getRemainingTimeInMillis === 'function' ? context.getRemainingTimeInMillis() : Number.NaN;
  return Number.isFinite(remaining) && remaining > 0 ? { eagerUntil: deps.clock() + remaining } : {};
}
