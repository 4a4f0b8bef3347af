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
import { tryNotification } from '../app/notifications';
import type { NotifyEvent } from '../domain/notify';
import { NOTIFICATION_CLAIM_MS } from '../domain/notify';
import { traceIdOf } from '../domain/trace-context';

async function failLater(deps: SchedulerDeps, record: SQSRecord): Promise<{ itemIdentifier: string; ok: false }> {
  try {
    // Back after a short while rather than the queue's visibility timeout (sized for the longest
    // run): transient faults retry promptly, and poison messages reach the DLQ after
    // maxReceiveCount short rounds.
    await deps.dispatch.setVisibility(record.receiptHandle, deps.config.failedMessageRetrySeconds, deps.dispatch.queueUrlOfArn(record.eventSourceARN));
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

/** The longest a notification's message is held back: past the longest backoff (80 s). */
const MAX_NOTIFICATION_HOLD_SECONDS = 900;

/**
 * A notification's message (docs/notifications.md): one try of it. A notification claimed by a try
 * still under way keeps its message, back once that claim has ended, so a worker lost mid-try
 * delays it by a claim's length at most; one waiting for its next try's time (a copy that came
 * early) is back when that try is due.
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
    const { result, retryInSeconds } = await tryNotification(deps, runId, event, traceparent, messageTry);
    if (result !== 'busy') return { itemIdentifier: record.messageId, ok: true };
    // Back when the try under way has ended, or when the next try is due (a copy that came early).
    const holdSeconds = Math.min(MAX_NOTIFICATION_HOLD_SECONDS, Math.max(1, retryInSeconds ?? Math.ceil(NOTIFICATION_CLAIM_MS / 1000)) + 1);
    await deps.dispatch.setVisibility(record.receiptHandle, holdSeconds, deps.dispatch.queueUrlOfArn(record.eventSourceARN));
    return { itemIdentifier: record.messageId, ok: false };
  } catch (error) {
    logger.error('notification message failed; it will be delivered again', {
      messageId: record.messageId,
      runId,
      traceId: traceIdOf(traceparent),
      event,
      error: error instanceof Error ? { name: error.name, message: error.message } : String(error),
    });
    return failLater(deps, record);
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
