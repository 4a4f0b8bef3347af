// The local stand-in for the SQS event source mapping of one lane (one queue): fetchers receive
// messages into a fair buffer by message group (the tenant), hidden for a short while that is kept
// up while they wait, and workers take batches from it round robin across groups, invoke the worker
// function and delete what it did not report failed. moto serves a standard queue in order and knows
// nothing of fair queues; this is what SQS does in AWS (decisions 0026, 0028). When the queue does
// not answer, the loops log, back off and go on (issue 24).
import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import { ChangeMessageVisibilityBatchCommand, DeleteMessageBatchCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { STORE_TIMEOUTS } from '../../lambdas/store/aws';
import { decodeDispatchMessage } from '../../lambdas/store/dispatch-queue';
import { workerConsumer } from '../../lambdas/store/schema';

export interface LaneConsumerOptions {
  readonly sqs: SQSClient;
  readonly poolName: string;
  readonly queueUrl: string;
  /** Concurrent batches (worker invocations); 0 runs no loop at all. */
  readonly concurrency: number;
  readonly batchSize: number;
  /** Concurrent ReceiveMessage loops filling the fair buffer. */
  readonly fetchers: number;
  /** How long each ReceiveMessage long-polls (default 2 s). */
  readonly pollWaitSeconds?: number;
  /** Messages fetched ahead for fair delivery across tenants (default 100). */
  readonly fairBufferSize?: number;
  /** The worker function: a batch in, its partial batch response out (as the mapping reads it). */
  readonly invoke: (event: SQSEvent) => Promise<SQSBatchResponse | void>;
}

export interface LaneConsumer {
  /** Stops taking new work at once (the loops end at their next turn). */
  halt(): void;
  /** Stops, waits for the batches in hand, and hands back what was fetched but not yet given out. */
  stop(): Promise<void>;
}

const DEFAULT_FAIR_BUFFER = 100;
/**
 * Messages are received hidden for this long, not the queue's visibility timeout (sized for the
 * longest run): a runtime killed with messages fetched ahead has them back within this, not after
 * the ticker's check-back (decision 0038).
 */
export const PREFETCH_VISIBILITY_SECONDS = 20;
/** A fetched message that would be visible again within this is hidden for another PREFETCH_VISIBILITY_SECONDS. */
const VISIBILITY_REFRESH_MARGIN_MS = 10_000;
const VISIBILITY_REFRESH_EVERY_MS = 2_000;
/** Backoff of a consumer loop whose SQS calls fail (the emulator is gone): doubling from 1 s to 15 s. */
const RETRY_BACKOFF_MS = { first: 1_000, max: 15_000 } as const;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A short description of an error for a log line (the SDK's errors carry their whole request). */
/** SQS's answer for a queue that does not exist (the emulator lost it). */
function queueGone(error: unknown): boolean {
  const name = error instanceof Error ? error.name : '';
  return name === 'QueueDoesNotExist' || name === 'AWS.SimpleQueueService.NonExistentQueue' || /NonExistentQueue|QueueDoesNotExist/.test(errorText(error));
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** The message group (tenant) of a dispatch message: its MessageGroupId, or the tenant in its body. */
function groupOf(message: Message): string {
  const group = message.Attributes?.MessageGroupId;
  if (group) return group;
  return decodeDispatchMessage(message.Body ?? '')?.tenantId ?? '';
}

/**
 * Received messages by group, handed out round robin across groups: one message of each group in
 * turn, so that a batch mixes tenants and a group with one message waits behind no other group's
 * backlog.
 */
export class FairBuffer {
  private readonly groups = new Map<string, Message[]>();
  private size = 0;
  private closed = false;
  private waitingTakers: (() => void)[] = [];
  private waitingFetchers: (() => void)[] = [];

  constructor(private readonly capacity: number) {}

  get full(): boolean {
    return this.size >= this.capacity;
  }

  add(group: string, message: Message): void {
    const queue = this.groups.get(group);
    if (queue) queue.push(message);
    else this.groups.set(group, [message]);
    this.size++;
    this.waitingTakers.shift()?.();
  }

  /** Up to `max` messages, round robin across groups; waits for one if there is none. */
  async take(max: number): Promise<Message[]> {
    while (this.size === 0 && !this.closed) await new Promise<void>((resolve) => this.waitingTakers.push(resolve));
    const batch: Message[] = [];
    while (batch.length < max && this.size > 0) {
      for (const [group, queue] of this.groups) {
        const message = queue.shift();
        // Map order is insertion order: a group that had its turn goes to the back.
        this.groups.delete(group);
        if (queue.length > 0) this.groups.set(group, queue);
        if (!message) continue;
        batch.push(message);
        this.size--;
        break;
      }
    }
    if (batch.length > 0) this.waitingFetchers.splice(0).forEach((resolve) => resolve());
    return batch;
  }

  async waitForRoom(): Promise<void> {
    if (!this.full || this.closed) return;
    await new Promise<void>((resolve) => this.waitingFetchers.push(resolve));
  }

  close(): void {
    this.closed = true;
    this.waitingTakers.splice(0).forEach((resolve) => resolve());
    this.waitingFetchers.splice(0).forEach((resolve) => resolve());
  }

  drain(): Message[] {
    const all = [...this.groups.values()].flat();
    this.groups.clear();
    this.size = 0;
    return all;
  }
}

function toSqsRecord(message: Message, queueArn: string): SQSRecord {
  const attributes = message.Attributes ?? {};
  return {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? '1',
      SentTimestamp: attributes.SentTimestamp ?? String(Date.now()),
      SenderId: attributes.SenderId ?? 'local',
      ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
      ...(attributes.MessageGroupId ? { MessageGroupId: attributes.MessageGroupId } : {}),
    },
    messageAttributes: {},
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: process.env.AWS_REGION ?? 'us-east-1',
  };
}

export function startLaneConsumer(options: LaneConsumerOptions): LaneConsumer {
  const { sqs, poolName, queueUrl, concurrency, batchSize, fetchers } = options;
  let stopping = false;
  const queueArn = `arn:aws:sqs:local:000000000000:${queueUrl.split('/').pop() ?? 'dispatch'}`;
  const delivery = new FairBuffer(options.fairBufferSize ?? DEFAULT_FAIR_BUFFER);
  /** When each message fetched but not yet handed to a worker becomes visible again (epoch ms). */
  const visibleAt = new Map<Message, number>();
  const changeVisibility = async (messages: readonly Message[], seconds: number): Promise<void> => {
    for (let start = 0; start < messages.length; start += 10) {
      await sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: queueUrl,
          Entries: messages
            .slice(start, start + 10)
            .map((message, index) => ({ Id: String(index), ReceiptHandle: message.ReceiptHandle ?? '', VisibilityTimeout: seconds })),
        }),
      );
    }
  };
  const returnToQueue = async (messages: Message[]): Promise<void> => {
    await changeVisibility(messages, 0).catch(() => undefined);
  };
  /** Hides again, for PREFETCH_VISIBILITY_SECONDS, the messages among these that would soon be visible. */
  const keepHidden = async (messages: readonly Message[], visibleBy: (message: Message) => number): Promise<void> => {
    const now = Date.now();
    const due = messages.filter((message) => visibleBy(message) - now < VISIBILITY_REFRESH_MARGIN_MS);
    if (due.length === 0) return;
    await changeVisibility(due, PREFETCH_VISIBILITY_SECONDS);
    for (const message of due) if (visibleAt.has(message)) visibleAt.set(message, now + PREFETCH_VISIBILITY_SECONDS * 1000);
  };
  let refreshing: Promise<void> | null = null;
  const fetch = async (): Promise<void> => {
    let backoff = 0;
    let goneReported = false;
    while (!stopping) {
      if (delivery.full) {
        await delivery.waitForRoom();
        continue;
      }
      let messages: Message[];
      try {
        const waitSeconds = options.pollWaitSeconds ?? 2;
        const receivedAt = Date.now();
        const received = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: workerConsumer.batchSize,
            WaitTimeSeconds: waitSeconds,
            VisibilityTimeout: PREFETCH_VISIBILITY_SECONDS,
            MessageSystemAttributeNames: ['All'],
          }),
          // A long poll answers after its wait: the store clients' request timeout comes on top.
          { requestTimeout: waitSeconds * 1000 + STORE_TIMEOUTS.requestTimeoutMs },
        );
        messages = received.Messages ?? [];
        for (const message of messages) visibleAt.set(message, receivedAt + PREFETCH_VISIBILITY_SECONDS * 1000);
        backoff = 0;
      } catch (error) {
        if (stopping) return;
        backoff = Math.min(backoff === 0 ? RETRY_BACKOFF_MS.first : backoff * 2, RETRY_BACKOFF_MS.max);
        console.error(`local poller: ReceiveMessage failed; retrying in ${backoff / 1000} s:`, errorText(error));
        if (queueGone(error) && !goneReported) {
          goneReported = true;
          console.error(
            'local poller: the queue is gone: the emulator was stopped or restarted, and its tables and queues with it. Restart `npm run dev` (it makes them at start).',
          );
        }
        await sleep(backoff);
        continue;
      }
      if (stopping) {
        // Received while stopping: hand them straight back rather than hide them for the queue's
        // visibility timeout.
        for (const message of messages) visibleAt.delete(message);
        await returnToQueue(messages);
        return;
      }
      for (const message of messages) delivery.add(groupOf(message), message);
    }
  };
  // Messages waiting in the buffer stay hidden while they wait, and no longer than that.
  const refresher =
    concurrency > 0
      ? setInterval(() => {
          if (refreshing) return;
          refreshing = keepHidden([...visibleAt.keys()], (message) => visibleAt.get(message) ?? Infinity)
            .catch((error: unknown) => console.error('local poller: could not keep fetched messages hidden; they may be delivered again:', errorText(error)))
            .finally(() => {
              refreshing = null;
            });
        }, VISIBILITY_REFRESH_EVERY_MS)
      : null;
  const work = async (): Promise<void> => {
    while (!stopping) {
      const messages = await delivery.take(batchSize);
      if (messages.length === 0) continue;
      // The hand-off: a message about to be visible again is hidden for the worker first (the
      // worker ties each message to its lease within moments; decision 0064). The refresher lets go
      // of the batch first, and a refresh already sent lands before the worker's own changes.
      const handedOff = new Map(messages.map((message) => [message, visibleAt.get(message) ?? Infinity]));
      for (const message of messages) visibleAt.delete(message);
      if (refreshing) await refreshing;
      try {
        await keepHidden(messages, (message) => handedOff.get(message) ?? Infinity);
      } catch (error) {
        console.error('local poller: could not extend the visibility of a batch before its hand-off:', errorText(error));
      }
      const event: SQSEvent = { Records: messages.map((message) => toSqsRecord(message, queueArn)) };
      let failed: Set<string>;
      try {
        const response = await options.invoke(event);
        failed = new Set((response?.batchItemFailures ?? []).map((failure) => failure.itemIdentifier));
      } catch (error) {
        console.error('local poller: worker invocation failed; the whole batch will be retried', error);
        failed = new Set(event.Records.map((record) => record.messageId));
      }
      const done = messages.filter((message) => !failed.has(message.MessageId ?? ''));
      await deleteDone(done);
    }
  };
  /**
   * Deletes what the worker finished, as the event source mapping does. When the queue does not
   * answer (the emulator is gone), the messages stay and come back at their visibility timeout,
   * when the worker finds their runs finished and drops them: nothing is lost by not deleting.
   */
  const deleteDone = async (done: readonly Message[]): Promise<void> => {
    for (let start = 0; start < done.length; start += 10) {
      const entries = done.slice(start, start + 10).map((message, index) => ({ Id: String(index), ReceiptHandle: message.ReceiptHandle ?? '' }));
      try {
        await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
      } catch (error) {
        console.error(`local poller: DeleteMessageBatch failed; ${entries.length} finished messages will be delivered again and dropped:`, errorText(error));
        await sleep(RETRY_BACKOFF_MS.first);
      }
    }
  };
  /** Runs a consumer loop, and starts it again (after a pause) should it ever throw. */
  const supervised = async (name: string, loop: () => Promise<void>): Promise<void> => {
    let backoff = 0;
    while (!stopping) {
      try {
        await loop();
        return;
      } catch (error) {
        backoff = Math.min(backoff === 0 ? RETRY_BACKOFF_MS.first : backoff * 2, RETRY_BACKOFF_MS.max);
        console.error(`local poller: the ${name} loop of ${poolName} failed; restarting it in ${backoff / 1000} s:`, error);
        await sleep(backoff);
      }
    }
  };
  const loops =
    concurrency > 0
      ? [...Array.from({ length: fetchers }, () => supervised('fetch', fetch)), ...Array.from({ length: concurrency }, () => supervised('worker', work))]
      : [];
  return {
    halt: (): void => {
      stopping = true;
    },
    stop: async (): Promise<void> => {
      stopping = true;
      delivery.close();
      if (refresher) clearInterval(refresher);
      await Promise.allSettled(loops);
      // Messages fetched but not yet handed to a worker go back to the queue at once.
      visibleAt.clear();
      await returnToQueue(delivery.drain());
    },
  };
}
