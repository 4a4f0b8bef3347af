// Moves messages from a dead-letter queue back to its source queue. Works on AWS and on emulators
// that lack StartMessageMoveTask (moto). A message is deleted from the DLQ only after it was sent.
// Like StartMessageMoveTask, it moves the messages that were there when it started: a message that
// fails again and comes back meanwhile is not moved round and round.
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DeleteMessageBatchCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';

export async function redriveMessages(sqs: SQSClient, fromUrl: string, toUrl: string, limit = Infinity): Promise<number> {
  const { Attributes: attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: fromUrl, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
  );
  const present = Number(attributes.ApproximateNumberOfMessages ?? 0) + Number(attributes.ApproximateNumberOfMessagesNotVisible ?? 0);
  const max = Math.min(limit, present);
  let moved = 0;
  while (moved < max) {
    const { Messages: messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: fromUrl,
        MaxNumberOfMessages: Math.min(10, max - moved),
        VisibilityTimeout: 60,
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    if (messages.length === 0) break;
    const sent = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: toUrl,
        Entries: messages.map((message, index) => ({
          Id: String(index),
          MessageBody: message.Body ?? '',
          ...(message.Attributes?.MessageGroupId ? { MessageGroupId: message.Attributes.MessageGroupId } : {}),
        })),
      }),
    );
    const ok = new Set((sent.Successful ?? []).map((entry) => Number(entry.Id)));
    const done = messages.filter((_, index) => ok.has(index));
    if (done.length > 0) {
      await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: fromUrl,
          Entries: done.map((message, index) => ({ Id: String(index), ReceiptHandle: message.ReceiptHandle ?? '' })),
        }),
      );
    }
    moved += done.length;
    if (done.length < messages.length) throw new Error(`${messages.length - done.length} messages could not be sent back; they stay in the DLQ`);
  }
  return moved;
}
