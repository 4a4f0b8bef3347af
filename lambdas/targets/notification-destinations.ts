// Delivers one try of an outcome notification to its destination (docs/notifications.md): an HTTP
// POST under the targets' egress checks, signed like a delivery (webhook-id is the notification's
// id, the same on every try); an SNS publish; an EventBridge event whose detail is the body. Each
// answers as a target does: ok, or a failure saying whether another try may succeed.
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { PutEventsCommand } from '@aws-sdk/client-eventbridge';
import type { SNSClient } from '@aws-sdk/client-sns';
import { PublishCommand } from '@aws-sdk/client-sns';
import type { NotificationBody, NotifyDestination } from '../domain/notify';
import type { Egress } from './egress';
import { putEventsResultOf } from './eventbridge-target';
import { postJson } from './http-target';
import { callSignal, sdkFailure } from './sdk-failure';
import type { TargetResult } from './target';
import { signDelivery } from './webhook-signature';

export interface NotificationClients {
  readonly sns: SNSClient;
  readonly eventbridge: EventBridgeClient;
}

export interface NotificationTry {
  readonly destination: NotifyDestination;
  readonly body: NotificationBody;
  readonly egress: Egress;
  readonly timeoutMs: number;
  /** The tenant's live signing secrets, newest first: an HTTP notification is signed with each. */
  readonly signingSecrets?: readonly string[];
  /** Unix seconds of this try (`webhook-timestamp`). */
  readonly nowSeconds: number;
}

/** The EventBridge detail type of a notification: `Job run dead`, `Workflow run failed`, … a rule matches on it. */
export const detailTypeOf = (body: Pick<NotificationBody, 'event' | 'subject'>): string =>
  `${body.subject.kind === 'workflow' ? 'Workflow' : 'Job'} run ${body.event}`;

export async function deliverNotification(clients: NotificationClients, attempt: NotificationTry): Promise<TargetResult> {
  const { destination, body } = attempt;
  const text = JSON.stringify(body);
  switch (destination.kind) {
    case 'http': {
      const signed = attempt.signingSecrets?.length ? signDelivery(attempt.signingSecrets, body.notificationId, attempt.nowSeconds, text) : {};
      return postJson(destination.url, { ...signed, 'x-notification-event': body.event }, text, attempt.egress, attempt.timeoutMs);
    }
    case 'sns': {
      const { timeout, signal } = callSignal(attempt.timeoutMs, undefined);
      const fifo = destination.topicArn.endsWith('.fifo');
      try {
        await clients.sns.send(
          new PublishCommand({
            TopicArn: destination.topicArn,
            Message: text,
            MessageAttributes: { event: { DataType: 'String', StringValue: body.event } },
            // A FIFO topic deduplicates the tries of one notification by its id.
            ...(fifo ? { MessageGroupId: body.subject.id, MessageDeduplicationId: body.notificationId } : {}),
          }),
          { abortSignal: signal },
        );
        return { ok: true, detail: 'published' };
      } catch (error) {
        return sdkFailure(error, timeout, undefined, attempt.timeoutMs);
      }
    }
    case 'eventbridge': {
      const { timeout, signal } = callSignal(attempt.timeoutMs, undefined);
      try {
        return putEventsResultOf(
          await clients.eventbridge.send(
            new PutEventsCommand({
              Entries: [{ EventBusName: destination.eventBusName, Source: destination.source, DetailType: detailTypeOf(body), Detail: text }],
            }),
            { abortSignal: signal },
          ),
        );
      } catch (error) {
        return sdkFailure(error, timeout, undefined, attempt.timeoutMs);
      }
    }
  }
}
