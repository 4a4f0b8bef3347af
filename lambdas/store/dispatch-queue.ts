// The dispatch queue and its wire format. Messages carry a run id, its tenant (for the in-flight
// limit, before the run is read), how often it was deferred, the run's trace context (for the
// log lines written before the run is read, or when it cannot be; decision 0117) and, delayed,
// when they were meant to arrive (decision 0172). Nothing of the
// run that can change: the run item is the truth, so a stale or duplicated message can never carry
// stale data (a run's trace is fixed when it is made).
import { parseTraceparent, xrayTraceIdOf } from '../domain/trace-context';
import { Coalescer } from './coalescer';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { ChangeMessageVisibilityBatchCommand, ChangeMessageVisibilityCommand, GetQueueAttributesCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { z } from 'zod';
import { MAX_SQS_DELAY_SECONDS } from './schema';
import type { NotifyEvent } from '../domain/notify';
import { NOTIFY_EVENTS } from '../domain/notify';
import type { PoolRoute } from './pools';
import { DEFAULT_POOL_NAME } from './pools';

const messageSchema = z.object({
  v: z.literal(1),
  runId: z.string().min(1).max(256),
  tenantId: z.string().min(1).max(256).optional(),
  /** Times the run waited for an in-flight slot of its tenant. */
  deferrals: z.number().int().min(0).max(1000).optional(),
  /** Not the run itself: the notification of this run's event (docs/notifications.md). */
  notify: z.enum(NOTIFY_EVENTS).optional(),
  /** Of a notification's message: the try it is sent for (1 when absent). A copy older than the try scheduled since is dropped. */
  notifyTry: z.number().int().min(1).max(1000).optional().catch(undefined),
  /**
   * When the message was meant to arrive (epoch ms), for a delayed one: SQS delays are whole
   * seconds, rounded down, so it comes up to a second early, and the worker waits out the rest
   * before its lease rather than try it early (decision 0172). A hint only: the lease's own
   * condition keeps a run from starting before its time, whatever the message says.
   */
  notBefore: z.number().int().min(0).optional().catch(undefined),
  /**
   * The run's W3C trace context, as the run keeps it (decision 0117), for log lines. A value that
   * is not one is dropped, never a reason to refuse the message: it says nothing about the run.
   */
  traceparent: z.string().max(64).optional().catch(undefined),
});
export type DispatchMessage = z.infer<typeof messageSchema>;

export interface Dispatch {
  readonly runId: string;
  readonly tenantId: string;
  /** When the run becomes due; the message is delayed until then (at most 900 s ahead). */
  readonly availableAt: number;
  readonly deferrals?: number;
  /** The run's job type: it picks the worker pool (see DispatchRouter). */
  readonly jobType?: string;
  /** The run's priority: `high` goes to the pool's high lane, `normal` to its standard lane, `low` to its low lane. */
  readonly priority?: Priority;
  /** Send to exactly this queue (a deferred message goes back to the lane it came from). */
  readonly queueUrl?: string;
  /**
   * The run's W3C trace context: the message carries it in its body, for the worker's log lines
   * (decision 0117), and as X-Ray's AWSTraceHeader, so in AWS the worker invocation that receives
   * it is linked to the run's trace (decision 0111).
   */
  readonly traceparent?: string;
  /** A notification of the run's event rather than the run (sent to the default pool's standard lane). */
  readonly notify?: NotifyEvent;
  /** The notification's try this message is for (a retry's); 1 when absent. */
  readonly notifyTry?: number;
}

/** The message that sends a run (its queue from its type and priority), due at `availableAt` (epoch ms). */
export function dispatchOfRun(
  run: { readonly runId: string; readonly tenantId: string; readonly jobType?: string; readonly priority?: Priority; readonly traceparent?: string },
  availableAt: number,
  deferrals?: number,
): Dispatch {
  return {
    runId: run.runId,
    tenantId: run.tenantId,
    availableAt,
    jobType: run.jobType,
    priority: run.priority,
    traceparent: run.traceparent,
    ...(deferrals !== undefined ? { deferrals } : {}),
  };
}

/** X-Ray's trace header for a W3C trace context (`Root=1-<8 hex>-<24 hex>;Parent=…;Sampled=…`), or undefined for an invalid one. */
function traceAttributeOf(traceparent: string | undefined) {
  const header = awsTraceHeaderOf(traceparent);
  return header ? { MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: header } } } : {};
}

export function awsTraceHeaderOf(traceparent: string | undefined): string | undefined {
  const context = parseTraceparent(traceparent);
  if (!context) return undefined;
  return `Root=${xrayTraceIdOf(context.traceId)};Parent=${context.parentId};Sampled=${parseInt(context.flags, 16) & 1}`;
}

export type Priority = 'high' | 'normal' | 'low';

export function encodeDispatchMessage(
  runId: string,
  fields: Partial<Pick<Dispatch, 'tenantId' | 'deferrals' | 'notify' | 'notifyTry' | 'traceparent'>> & { readonly notBefore?: number } = {},
): string {
  const { tenantId, deferrals, notify, notifyTry, traceparent, notBefore } = fields;
  return JSON.stringify({
    v: 1,
    runId,
    ...(tenantId ? { tenantId } : {}),
    ...(deferrals ? { deferrals } : {}),
    ...(notify ? { notify } : {}),
    ...(notify && notifyTry !== undefined && notifyTry > 1 ? { notifyTry } : {}),
    ...(traceparent ? { traceparent } : {}),
    ...(notBefore !== undefined ? { notBefore: Math.round(notBefore) } : {}),
  } satisfies DispatchMessage);
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

/** A request waiting to share a batch call, with how to settle its caller. */
type Pending<T> = T & { readonly resolve: () => void; readonly reject: (error: unknown) => void };
type PendingVisibility = Pending<{ readonly receiptHandle: string; readonly seconds: number }>;
/** `now` is the sender's clock when it sent; `heldSince` the process's, to count the time it waited for its batch. */
type PendingSend = Pending<{ readonly dispatch: Dispatch; readonly now: number; readonly heldSince: number }>;

/**
 * Makes one batch call for the waiting requests (entry ids are their positions) and settles each
 * caller: the entries SQS refused, or all of them if the call failed, are rejected.
 */
async function settleBatch(
  batch: readonly Pending<object>[],
  refused: string,
  call: () => Promise<readonly { Id?: string; Code?: string; Message?: string }[]>,
): Promise<void> {
  try {
    const failed = new Map((await call()).map((entry) => [Number(entry.Id), `${entry.Code ?? 'unknown'}${entry.Message ? `: ${entry.Message}` : ''}`]));
    batch.forEach((entry, index) => {
      const reason = failed.get(index);
      if (reason === undefined) entry.resolve();
      else entry.reject(new Error(`${refused}: ${reason}`));
    });
  } catch (error) {
    for (const entry of batch) entry.reject(error);
  }
}

/** Options of a visibility change. */
export interface VisibilityOptions {
  /**
   * Share a ChangeMessageVisibilityBatch request with the changes made around it (the leases of
   * one worker batch land within a few milliseconds of each other): it goes once none has joined
   * for `quietMs`, and at most `capMs` after the first. Absent: send it alone, now.
   */
  readonly coalesce?: { readonly quietMs: number; readonly capMs: number };
}

/** Options of a send. */
export interface SendOptions {
  /**
   * Share a SendMessageBatch request with the sends made around it (the successors a worker batch's
   * runs write, one per recurring job, land within milliseconds of each other): it goes once none
   * has joined for `quietMs`, and at most `capMs` after the first, or when ten wait. Absent: sent
   * with the sends of the same moment only.
   */
  readonly coalesce?: { readonly quietMs: number; readonly capMs: number };
}

export class DispatchQueue {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {}

  private pending: PendingSend[] = [];
  private flushScheduled = false;

  /**
   * Sends the messages; throws if any could not be sent, naming the runs. Sends made at the same
   * moment by concurrent callers (the runs of one worker batch, say) share SendMessageBatch calls
   * of up to ten messages: one request instead of ten.
   */
  async send(dispatches: readonly Dispatch[], now: number, options: SendOptions = {}): Promise<void> {
    if (dispatches.length === 0) return;
    const { coalesce } = options;
    if (coalesce) this.sendBatches ??= new Coalescer({ maxBatch: 10, ...coalesce }, (batch) => void this.sendBatch(batch));
    const gathered = coalesce ? this.sendBatches : undefined;
    const heldSince = Date.now();
    const results = await Promise.allSettled(
      dispatches.map(
        (dispatch) =>
          new Promise<void>((resolve, reject) => {
            if (gathered) {
              gathered.add({ dispatch, now, heldSince, resolve, reject });
              return;
            }
            this.pending.push({ dispatch, now, heldSince, resolve, reject });
            this.scheduleFlush();
          }),
      ),
    );
    const refused = results.flatMap((result, index) =>
      result.status === 'rejected' ? [{ runId: dispatches[index]!.runId, reason: result.reason as unknown }] : [],
    );
    if (refused.length > 0) {
      const first = refused[0]!.reason;
      throw new Error(
        `SQS refused dispatch of runs ${refused.map((entry) => entry.runId).join(', ')}: ${first instanceof Error ? first.message : String(first)}`,
        { cause: first },
      );
    }
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      const pending = this.pending;
      this.pending = [];
      for (let start = 0; start < pending.length; start += 10) void this.sendBatch(pending.slice(start, start + 10));
    });
  }

  private async sendBatch(batch: PendingSend[]): Promise<void> {
    await settleBatch(batch, 'send refused', async () => {
      const result = await this.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: batch.map(({ dispatch, now, heldSince }, index) => ({
            Id: String(index),
            // A delayed message says when it was meant for (decision 0172).
            MessageBody: encodeDispatchMessage(dispatch.runId, { ...dispatch, ...(dispatch.availableAt > now ? { notBefore: dispatch.availableAt } : {}) }),
            // Its delay counts from now: the time it waited for its batch (a coalesced send) is not added on.
            DelaySeconds: delaySecondsUntil(dispatch.availableAt, now + (Date.now() - heldSince)),
            // Fair queues: a tenant with a deep backlog yields to quiet tenants.
            MessageGroupId: dispatch.tenantId,
            ...traceAttributeOf(dispatch.traceparent),
          })),
        }),
      );
      return result.Failed ?? [];
    });
  }

  private sendBatches: Coalescer<PendingSend> | undefined;
  private visibilityBatches: Coalescer<PendingVisibility> | undefined;

  /** Sets when a received message becomes visible again: `seconds` from now. */
  async setVisibility(receiptHandle: string, seconds: number, options: VisibilityOptions = {}): Promise<void> {
    if (!options.coalesce) {
      await this.sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: this.queueUrl, ReceiptHandle: receiptHandle, VisibilityTimeout: seconds }));
      return;
    }
    this.visibilityBatches ??= new Coalescer({ maxBatch: 10, ...options.coalesce }, (batch) => void this.changeVisibilityBatch(batch));
    const batches = this.visibilityBatches;
    await new Promise<void>((resolve, reject) => batches.add({ receiptHandle, seconds, resolve, reject }));
  }

  private async changeVisibilityBatch(batch: PendingVisibility[]): Promise<void> {
    await settleBatch(batch, 'visibility change refused', async () => {
      const result = await this.sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: batch.map((entry, index) => ({ Id: String(index), ReceiptHandle: entry.receiptHandle, VisibilityTimeout: entry.seconds })),
        }),
      );
      return result.Failed ?? [];
    });
  }

  async depth(): Promise<QueueDepth> {
    const { Attributes: attributes = {} } = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: this.queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
      }),
    );
    return {
      visible: Number(attributes.ApproximateNumberOfMessages ?? 0),
      inFlight: Number(attributes.ApproximateNumberOfMessagesNotVisible ?? 0),
      delayed: Number(attributes.ApproximateNumberOfMessagesDelayed ?? 0),
    };
  }
}

export type LaneName = 'high' | 'standard' | 'low';

/** One lane of one pool, with its queue. */
export interface Lane {
  readonly pool: string;
  readonly lane: LaneName;
  readonly queueUrl: string;
  readonly queue: DispatchQueue;
}

/**
 * The dispatch queues of every worker pool and lane. A run goes to the pool of its job type (the
 * default pool for types no pool lists) and, there, to the lane of its priority (high, standard
 * for normal, low; decision 0051); every send path routes through here, so the API, retries, the ticker's releases and
 * redeliveries all agree. Receipt handles are queue-specific: visibility changes name the queue the
 * message came from (the default pool's standard lane when none is given).
 */
export class DispatchRouter {
  readonly pools: readonly PoolRoute[];
  private readonly byJobType = new Map<string, PoolRoute>();
  private readonly queues = new Map<string, DispatchQueue>();
  readonly defaultPool: PoolRoute;

  /** `pools`: every pool's routing entry; the one named `default` takes the job types no other lists. */
  constructor(
    private readonly sqs: SQSClient,
    pools: readonly PoolRoute[],
  ) {
    const fallback = pools.find((pool) => pool.name === DEFAULT_POOL_NAME);
    if (!fallback) throw new Error('the dispatch routes have no default pool');
    this.defaultPool = fallback;
    this.pools = [fallback, ...pools.filter((pool) => pool !== fallback)];
    for (const pool of this.pools) for (const jobType of pool.jobTypes) this.byJobType.set(jobType, pool);
  }

  /** The queue of one URL (one client per queue, each batching its own sends). */
  queue(queueUrl: string): DispatchQueue {
    let queue = this.queues.get(queueUrl);
    if (!queue) {
      queue = new DispatchQueue(this.sqs, queueUrl);
      this.queues.set(queueUrl, queue);
    }
    return queue;
  }

  poolOf(jobType: string | undefined): PoolRoute {
    return (jobType !== undefined && this.byJobType.get(jobType)) || this.defaultPool;
  }

  /** The pool whose lane is this queue (the default pool for a queue it does not know). */
  poolOfQueueUrl(queueUrl: string | undefined): PoolRoute {
    const name = queueUrl === undefined ? undefined : this.lanes().find((lane) => lane.queueUrl === queueUrl)?.pool;
    return this.pools.find((pool) => pool.name === name) ?? this.defaultPool;
  }

  /** The queue a run of this job type and priority is sent to. */
  queueUrlFor(jobType: string | undefined, priority: Priority | undefined): string {
    const pool = this.poolOf(jobType);
    if (priority === 'high' && pool.highQueueUrl) return pool.highQueueUrl;
    if (priority === 'low' && pool.lowQueueUrl) return pool.lowQueueUrl;
    return pool.queueUrl;
  }

  /** Every lane of every pool (the consumers' view). */
  lanes(): Lane[] {
    return this.pools.flatMap((pool) => [
      ...(pool.highQueueUrl ? [{ pool: pool.name, lane: 'high' as const, queueUrl: pool.highQueueUrl, queue: this.queue(pool.highQueueUrl) }] : []),
      { pool: pool.name, lane: 'standard' as const, queueUrl: pool.queueUrl, queue: this.queue(pool.queueUrl) },
      ...(pool.lowQueueUrl ? [{ pool: pool.name, lane: 'low' as const, queueUrl: pool.lowQueueUrl, queue: this.queue(pool.lowQueueUrl) }] : []),
    ]);
  }

  /** The URL of a known dispatch queue from its ARN (an SQS record's eventSourceARN): same queue name. */
  queueUrlOfArn(arn: string | undefined): string {
    const name = arn?.split(':').pop();
    const lane = this.lanes().find(({ queueUrl }) => name !== undefined && queueUrl.split('/').pop() === name);
    return lane?.queueUrl ?? this.defaultPool.queueUrl;
  }

  async send(dispatches: readonly Dispatch[], now: number, options: SendOptions = {}): Promise<void> {
    const byQueue = new Map<string, Dispatch[]>();
    for (const dispatch of dispatches) {
      const url = dispatch.queueUrl ?? (dispatch.notify ? this.defaultPool.queueUrl : this.queueUrlFor(dispatch.jobType, dispatch.priority));
      byQueue.set(url, [...(byQueue.get(url) ?? []), dispatch]);
    }
    const results = await Promise.allSettled([...byQueue].map(([url, batch]) => this.queue(url).send(batch, now, options)));
    const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failed) throw failed.reason;
  }

  async setVisibility(receiptHandle: string, seconds: number, queueUrl?: string, options: VisibilityOptions = {}): Promise<void> {
    await this.queue(queueUrl ?? this.defaultPool.queueUrl).setVisibility(receiptHandle, seconds, options);
  }

  /** The default pool's standard lane (what `queues.dispatch` of the health report shows). */
  async depth(): Promise<QueueDepth> {
    return this.queue(this.defaultPool.queueUrl).depth();
  }
}
