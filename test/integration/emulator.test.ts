// The emulator as the scheduler relies on it: scripts/local/moto_server.py gives moto's standard
// queues the delivery order of SQS fair queues. These tests pin that behaviour down against the
// emulator process, since the fairness the scheduler claims in local mode rests on it.
import { randomUUID } from 'node:crypto';
import { CreateQueueCommand, DeleteQueueCommand, ReceiveMessageCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { awsClients } from './harness';

const queues: string[] = [];

afterEach(async () => {
  const { sqs } = awsClients();
  await Promise.all(queues.splice(0).map((QueueUrl) => sqs.send(new DeleteQueueCommand({ QueueUrl })).catch(() => undefined)));
});

async function queue(): Promise<string> {
  const created = await awsClients().sqs.send(new CreateQueueCommand({ QueueName: `fair-${randomUUID().slice(0, 8)}` }));
  queues.push(created.QueueUrl!);
  return created.QueueUrl!;
}

async function send(queueUrl: string, group: string | undefined, count: number): Promise<void> {
  for (let start = 0; start < count; start += 10) {
    const entries = Array.from({ length: Math.min(10, count - start) }, (_, index) => ({
      Id: String(index),
      MessageBody: `${group ?? 'none'}-${start + index}`,
      ...(group ? { MessageGroupId: group } : {}),
    }));
    await awsClients().sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
  }
}

async function receive(queueUrl: string, max = 10): Promise<string[]> {
  const received = await awsClients().sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: max, VisibilityTimeout: 60 }));
  return (received.Messages ?? []).map((message) => message.Body ?? '');
}

describe('fair queues in the emulator', () => {
  it('delivers a quiet group first once a group holds 30 or more messages in flight', async () => {
    const url = await queue();
    await send(url, 'noisy', 100);
    for (let i = 0; i < 3; i++) expect(await receive(url)).toHaveLength(10); // 30 noisy in flight
    await send(url, 'quiet', 2);
    await send(url, undefined, 1);

    // Arrival order would give noisy-30..39; a fair queue gives the quiet messages first.
    expect(await receive(url)).toEqual(['quiet-0', 'quiet-1', 'none-0', 'noisy-30', 'noisy-31', 'noisy-32', 'noisy-33', 'noisy-34', 'noisy-35', 'noisy-36']);
  });

  it('keeps arrival order while no group is noisy (fewer than 30 in flight)', async () => {
    const url = await queue();
    await send(url, 'busy', 40);
    for (let i = 0; i < 2; i++) await receive(url); // 20 in flight: below the threshold
    await send(url, 'quiet', 1);

    expect(await receive(url)).toEqual(Array.from({ length: 10 }, (_, index) => `busy-${20 + index}`));
  });

  it('serves the noisy group with the fewest messages in flight first', async () => {
    const url = await queue();
    await send(url, 'a', 60);
    for (let i = 0; i < 5; i++) await receive(url); // a: 50 in flight, 10 waiting
    await send(url, 'b', 45);
    for (let i = 0; i < 4; i++) await receive(url); // b: 40 in flight (b is quiet until then), 5 waiting
    await send(url, 'c', 1);

    expect(await receive(url)).toEqual(['c-0', 'b-40', 'b-41', 'b-42', 'b-43', 'b-44', 'a-50', 'a-51', 'a-52', 'a-53']);
  });
});
