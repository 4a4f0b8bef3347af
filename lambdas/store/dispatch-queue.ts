// The dispatch queue and its wire format. Messages carry a run id, its tenant (for the in-flight
// limit, before the run is read) and how often it was deferred; nothing of the run itself: the run
// item is the truth, so a stale or duplicated message can never carry stale data.
import type { SQSClient } from '@aws-sdk/client-sqs';
import { ChangeMessageVisibilityCommand, GetQueueAttributesCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { z } from 'zod';
import { MAX_SQS_DELAY_SECONDS } from './schema';

const messageSchema = z.object({
  v: z.literal(1),
  runId: z.string().min(1).max(256),
  tenantId: z.string().min(1).max(256).optional(),
  /** Times the run waited for an in-flight slot of its tenant. */
  deferrals: z.number().int().min(0).max(1000).optional(),
});
export type DispatchMessage = z.infer<typeof messageSchema>;

export interface Dispatch {
  readonly runId: string;
  readonly tenantId: string;
  /** When the run becomes due; the message is delayed until then (at most 900 s ahead). */
  readonly availableAt: number;
  readonly deferrals?: number;
}

export function encodeDispatchMessage(runId: string, tenantId?: string, deferrals?: number): string {
  return JSON.stringify({ v: 1, runId, ...(tenantId ? { tenantId } : {}), ...(deferrals ? { deferrals } : {}) } satisfies DispatchMessage);
}

/** The run id of a dispatch message, or null for a body this scheduler did not write. */
export function decodeDispatchMessage(body: string): DispatchMessage | null {
  try {
    const parsed = messageSchema.safeParse(JSON.parse(body));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/**
 * Whole seconds to hold a message for a run due at `availableAt`. Rounded down: the message may
 * arrive up to a second early, and the worker waits out the rest before it leases (a lease is
 * never taken before `availableAt`). Rounding up would make every run up to a second late.
 */
export function delaySecondsUntil(availableAt: number, now: number): number {
  return Math.min(MAX_SQS_DELAY_SECONDS, Math.max(0, Math.floor((availableAt - now) / 1000)));
}

export interface QueueDepth {
  readonly visible: number;
  readonly inFlight: number;
  readonly delayed: number;
}

export class DispatchQueue {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {}

  /** Sends in batches of ten; throws if any message could not be sent, naming the runs. */
  async send(dispatches: readonly Dispatch[], now: number): Promise<void> {
    for (let start = 0; start < dispatches.length; start += 10) {
      const batch = dispatches.slice(start, start + 10);
      const result = await this.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: batch.map((dispatch, index) => ({
            Id: String(index),
            MessageBody: encodeDispatchMessage(dispatch.runId, dispatch.tenantId, dispatch.deferrals),
            DelaySeconds: delaySecondsUntil(dispatch.availableAt, now),
            // Fair queues: a tenant with a deep backlog yields to quiet tenants.
            MessageGroupId: dispatch.tenantId,
          })),
        }),
      );
      const failed = result.Failed ?? [];
      if (failed.length > 0) {
        const runs = failed.map((entry) => batch[Number(entry.Id)]?.runId).join(', ');
        throw new Error(`SQS refused dispatch of runs ${runs}: ${failed[0]?.Code ?? 'unknown'}`);
      }
    }
  }

  /** Sets when a received message becomes visible again: `seconds` from now. */
  async setVisibility(receiptHandle: string, seconds: number): Promise<void> {
    await this.sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: this.queueUrl, ReceiptHandle: receiptHandle, VisibilityTimeout: seconds }));
  }

  async depth(): Promise<QueueDepth> {
    const { Attributes: attributes = {} } = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: this.queueUrl,
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      }),
    );
    return {
      visible: Number(attributes.ApproximateNumberOfMessages ?? 0),
      inFlight: Number(attributes.ApproximateNumberOfMessagesNotVisible ?? 0),
      delayed: Number(attributes.ApproximateNumberOfMessagesDelayed ?? 0),
    };
  }
}
