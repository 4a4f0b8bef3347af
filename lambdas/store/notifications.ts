// Outcome notifications as items of the jobs table (docs/notifications.md), one per run and event:
// made with a conditional put, so a redelivered outcome or two racing recorders make it once; each
// try claims it for a while with a conditional update, so two workers never send it at once; its
// end (sent, or dead when its budget is spent) is fenced by the try that claimed it.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { NotificationBody, NotifyDestination, NotifyEvent } from '../domain/notify';
import { IF_NEW, absent, absentOr, atMost, conditionExpressions, ifHeld, lessThan, plus, updateIf, updateReturning } from './conditional';
import type { Item } from './keys';
import { NOTIFICATION_PREFIX, notificationKey } from './keys';

export type NotificationStatus = 'PENDING' | 'SENT' | 'DEAD';

/** A notification record is kept this long, then DynamoDB's TTL removes it. */
export const NOTIFICATION_RETENTION_SECONDS = 14 * 24 * 3600;

export interface NotificationRecord {
  readonly notificationId: string;
  readonly tenantId: string;
  readonly runId: string;
  readonly event: NotifyEvent;
  readonly destination: NotifyDestination;
  readonly body: NotificationBody;
  readonly status: NotificationStatus;
  /** Tries started so far (each claim counts one). */
  readonly tries: number;
  readonly lastError: string | null;
  readonly createdAt: string;
  readonly sentAt: string | null;
  readonly deadAt: string | null;
  /** When it was last sent again on request (`resend`), its budget renewed. */
  readonly resentAt: string | null;
}

export type ClaimResult =
  | { readonly kind: 'claimed'; readonly record: NotificationRecord }
  /** Sent or dead already, or a later try has been scheduled since this message's: it has nothing to do. */
  | { readonly kind: 'done'; readonly record: NotificationRecord }
  /** Claimed by a try still under way, or waiting for its next try's time (epoch ms `until`). */
  | { readonly kind: 'busy'; readonly record: NotificationRecord; readonly until: number }
  | { readonly kind: 'missing' };

function recordOf(item: Item): NotificationRecord {
  return {
    notificationId: String(item.notificationId),
    tenantId: String(item.tenantId),
    runId: String(item.runId),
    event: item.event as NotifyEvent,
    destination: item.destination as NotifyDestination,
    body: JSON.parse(String(item.bodyJson)) as NotificationBody,
    status: item.status as NotificationStatus,
    tries: Number(item.tries ?? 0),
    lastError: typeof item.lastError === 'string' ? item.lastError : null,
    createdAt: String(item.createdAt),
    sentAt: typeof item.sentAt === 'string' ? item.sentAt : null,
    deadAt: typeof item.deadAt === 'string' ? item.deadAt : null,
    resentAt: typeof item.resentAt === 'string' ? item.resentAt : null,
  };
}

export class Notifications {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** Makes the notification of a run's event; 'exists' when it was made before (by this outcome's earlier delivery, or a racing recorder). */
  async create(
    notification: Pick<NotificationRecord, 'notificationId' | 'tenantId' | 'runId' | 'event' | 'destination' | 'body'>,
    now: number,
  ): Promise<'created' | 'exists'> {
    const at = new Date(now).toISOString();
    const result = await ifHeld(() =>
      this.dynamo.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...notificationKey(notification.runId, notification.event),
            notificationId: notification.notificationId,
            tenantId: notification.tenantId,
            runId: notification.runId,
            event: notification.event,
            destination: notification.destination,
            // Stored as text: the body is sent exactly as it was made, whatever its shape.
            bodyJson: JSON.stringify(notification.body),
            status: 'PENDING' satisfies NotificationStatus,
            tries: 0,
            createdAt: at,
            expiresAtEpoch: Math.floor(now / 1000) + NOTIFICATION_RETENTION_SECONDS,
          },
          ...conditionExpressions(IF_NEW),
        }),
      ),
    );
    return result.held ? 'created' : 'exists';
  }

  /**
   * Starts a try: a pending notification not claimed by a live try, nor waiting for its next try's
   * time, is claimed until `now + claimMs`. `messageTry`: the try the message was sent for; a copy
   * of an earlier one than the try scheduled since (a redelivery, a duplicate) is done.
   */
  async claim(runId: string, event: NotifyEvent, now: number, claimMs: number, messageTry = 1): Promise<ClaimResult> {
    const result = await updateReturning(this.dynamo, this.tableName, notificationKey(runId, event), {
      set: { claimedUntilMs: now + claimMs, tries: plus('tries', 1), updatedAt: new Date(now).toISOString() },
      if: { status: 'PENDING', claimedUntilMs: absentOr(lessThan(now)), scheduledTry: absentOr(atMost(messageTry)) },
    });
    if (result.held) return { kind: 'claimed', record: recordOf(result.value) };
    if (!result.item) return { kind: 'missing' };
    const record = recordOf(result.item);
    if (typeof result.item.scheduledTry === 'number' && result.item.scheduledTry > messageTry) return { kind: 'done', record };
    return record.status === 'PENDING' ? { kind: 'busy', record, until: Number(result.item.claimedUntilMs ?? now) } : { kind: 'done', record };
  }

  /** Ends the notification: sent (by try `tries`), or dead when its budget is spent. False when another try ended it. */
  async finish(runId: string, event: NotifyEvent, tries: number, end: { status: 'SENT' | 'DEAD'; now: number; error: string | null }): Promise<boolean> {
    const at = new Date(end.now).toISOString();
    return updateIf(this.dynamo, this.tableName, notificationKey(runId, event), {
      set: { status: end.status, updatedAt: at, ...(end.status === 'SENT' ? { sentAt: at } : { deadAt: at }), lastError: end.error ?? undefined },
      remove: ['claimedUntilMs'],
      if: { status: 'PENDING', tries },
    });
  }

  /**
   * A failed try with budget left, whose next try's message has been sent: the claim is held until
   * that try is due (`nextTryAtMs`), and copies of earlier messages are done from now on
   * (`scheduledTry`), so no copy arriving sooner (a redelivery, a duplicate) shortens the backoff.
   */
  async release(runId: string, event: NotifyEvent, tries: number, error: string, now: number, nextTryAtMs: number): Promise<boolean> {
    return updateIf(this.dynamo, this.tableName, notificationKey(runId, event), {
      set: { lastError: error, updatedAt: new Date(now).toISOString(), claimedUntilMs: nextTryAtMs, scheduledTry: tries + 1 },
      if: { status: 'PENDING', tries },
    });
  }

  /**
   * A DEAD notification made PENDING again with a fresh budget (its try count from zero), its last
   * error kept for the record, to `destination` when given (where its job or workflow sends
   * notifications now): one of two resends at once wins. False when it is not as `from` says.
   */
  async revive(
    runId: string,
    event: NotifyEvent,
    now: number,
    from: { readonly kind: 'dead' } | { readonly kind: 'stalled'; readonly resentBefore: number } | { readonly kind: 'unsent'; readonly createdBefore: number },
    destination?: NotifyDestination,
  ): Promise<boolean> {
    const at = new Date(now).toISOString();
    return updateIf(this.dynamo, this.tableName, notificationKey(runId, event), {
      set: {
        status: 'PENDING',
        tries: 0,
        resentAt: at,
        updatedAt: at,
        expiresAtEpoch: Math.floor(now / 1000) + NOTIFICATION_RETENTION_SECONDS,
        ...(destination ? { destination } : {}),
      },
      remove: ['deadAt', 'claimedUntilMs', 'scheduledTry'],
      // A resend whose message was never sent (its process stopped between the two) is PENDING with no
      // try since: it may be sent again once it has waited long enough for any message to have come.
      // A first try whose message was never sent (the API stopped, or its send failed, after the
      // outcome that made it) likewise, by when it was made.
      if:
        from.kind === 'dead'
          ? { status: 'DEAD' }
          : from.kind === 'stalled'
            ? { status: 'PENDING', tries: 0, resentAt: lessThan(new Date(from.resentBefore).toISOString()) }
            : { status: 'PENDING', tries: 0, resentAt: absent, createdAt: lessThan(new Date(from.createdBefore).toISOString()) },
    });
  }

  /** Undoes a revive whose message could not be sent: DEAD again, if no try has started since. */
  async reviveFailed(runId: string, event: NotifyEvent, resentAt: number): Promise<boolean> {
    const at = new Date(resentAt).toISOString();
    return updateIf(this.dynamo, this.tableName, notificationKey(runId, event), {
      set: { status: 'DEAD', deadAt: at, updatedAt: at },
      if: { status: 'PENDING', tries: 0, resentAt: at },
    });
  }

  /** A run's notifications (one per event it raised), in one query of its partition. */
  async ofRun(runId: string): Promise<NotificationRecord[]> {
    const { Items: items = [] } = await this.dynamo.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `${NOTIFICATION_PREFIX}${runId}` },
        ConsistentRead: true,
      }),
    );
    return items.map(recordOf);
  }

  async get(runId: string, event: NotifyEvent): Promise<NotificationRecord | null> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: notificationKey(runId, event), ConsistentRead: true }));
    return item ? recordOf(item) : null;
  }
}
