// The emulator as the scheduler relies on it: scripts/local/moto_server.py gives moto's standard
// queues the delivery order of SQS fair queues, and answers a query from the partition it names
// rather than by walking the table. These tests pin both down against the emulator process: the
// fairness the scheduler claims in local mode rests on the first, and every index read the ticker
// and the API make goes through the second, which must answer exactly as a walk of the table would.
import { randomUUID } from 'node:crypto';
import {
  CreateTableCommand,
  DeleteItemCommand,
  DeleteTableCommand,
  PutItemCommand,
  QueryCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { AttributeValue, QueryCommandInput } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, DeleteQueueCommand, ReceiveMessageCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { awsClients } from './harness';

const queues: string[] = [];
const tables: string[] = [];

afterEach(async () => {
  const { sqs, dynamo } = awsClients();
  await Promise.all(queues.splice(0).map((QueueUrl) => sqs.send(new DeleteQueueCommand({ QueueUrl })).catch(() => undefined)));
  await Promise.all(tables.splice(0).map((TableName) => dynamo.send(new DeleteTableCommand({ TableName })).catch(() => undefined)));
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

describe('long polls in the emulator', () => {
  it('answer as a delayed message comes due, not at the next one-second look', async () => {
    const url = await queue();
    const sentAt = Date.now();
    await awsClients().sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: [{ Id: '0', MessageBody: 'due-in-1s', DelaySeconds: 1 }] }));
    // The poll starts 0.1 s before the message is due: moto alone looks again a second after the
    // poll began, 0.9 s after due.
    await new Promise((resolve) => setTimeout(resolve, 900));
    const received = await awsClients().sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 1, WaitTimeSeconds: 5 }));
    const answeredAt = Date.now();
    expect((received.Messages ?? []).map((message) => message.Body)).toEqual(['due-in-1s']);
    expect(answeredAt - sentAt).toBeGreaterThanOrEqual(1_000);
    // Within half a second of due; the one-second look would answer about 0.9 s after it.
    expect(answeredAt - sentAt).toBeLessThan(1_500);
  });
});

describe('queries in the emulator read one partition', () => {
  const s = (value: string): AttributeValue => ({ S: value });

  async function table(): Promise<string> {
    const name = `partitions-${randomUUID().slice(0, 8)}`;
    await awsClients().dynamo.send(
      new CreateTableCommand({
        TableName: name,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
          { AttributeName: 'shard', AttributeType: 'S' },
          { AttributeName: 'due', AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: [
          {
            IndexName: 'byShard',
            KeySchema: [
              { AttributeName: 'shard', KeyType: 'HASH' },
              { AttributeName: 'due', KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'KEYS_ONLY' },
          },
        ],
      }),
    );
    tables.push(name);
    return name;
  }

  async function put(name: string, pk: string, sk: string, index?: { shard: string; due: string }): Promise<void> {
    const item: Record<string, AttributeValue> = { pk: s(pk), sk: s(sk), payload: s('x') };
    if (index) Object.assign(item, { shard: s(index.shard), due: s(index.due) });
    await awsClients().dynamo.send(new PutItemCommand({ TableName: name, Item: item }));
  }

  /** Every page of a query, as `pk/sk` strings in the order DynamoDB returns them. */
  async function query(input: QueryCommandInput): Promise<string[]> {
    const keys: string[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await awsClients().dynamo.send(new QueryCommand({ ...input, ExclusiveStartKey: start }));
      for (const item of page.Items ?? []) keys.push(`${item.pk?.S}/${item.sk?.S}`);
      start = page.LastEvaluatedKey;
    } while (start);
    return keys;
  }

  const shard = (name: string, value: string, extra: Partial<QueryCommandInput> = {}): Promise<string[]> =>
    query({
      TableName: name,
      IndexName: 'byShard',
      KeyConditionExpression: '#shard = :shard',
      ExpressionAttributeNames: { '#shard': 'shard' },
      ExpressionAttributeValues: { ':shard': s(value) },
      ...extra,
    });

  it('answers an index query from its partition, in key order, across pages and with a range condition', async () => {
    const name = await table();
    await put(name, 'a', '1', { shard: 'S1', due: '03' });
    await put(name, 'b', '1', { shard: 'S1', due: '01' });
    await put(name, 'c', '1', { shard: 'S2', due: '02' });
    await put(name, 'd', '1'); // not in the index

    expect(await shard(name, 'S1')).toEqual(['b/1', 'a/1']);
    expect(await shard(name, 'S1', { Limit: 1 })).toEqual(['b/1', 'a/1']);
    expect(await shard(name, 'S1', { ScanIndexForward: false })).toEqual(['a/1', 'b/1']);
    expect(
      await shard(name, 'S1', {
        KeyConditionExpression: '#shard = :shard AND #due <= :due',
        ExpressionAttributeNames: { '#shard': 'shard', '#due': 'due' },
        ExpressionAttributeValues: { ':shard': s('S1'), ':due': s('02') },
      }),
    ).toEqual(['b/1']);
    expect(await shard(name, 'S2')).toEqual(['c/1']);
    expect(await shard(name, 'S9')).toEqual([]);
  });

  it('follows items that move between partitions, leave the index, are deleted, or are made by an update', async () => {
    const name = await table();
    await put(name, 'a', '1', { shard: 'S1', due: '01' });
    await put(name, 'b', '1', { shard: 'S1', due: '02' });
    await put(name, 'c', '1', { shard: 'S1', due: '03' });
    expect(await shard(name, 'S1')).toEqual(['a/1', 'b/1', 'c/1']); // the map exists from here on

    const { dynamo: dynamodb } = awsClients();
    await dynamodb.send(
      new UpdateItemCommand({
        TableName: name,
        Key: { pk: s('a'), sk: s('1') },
        UpdateExpression: 'SET #shard = :shard',
        ExpressionAttributeNames: { '#shard': 'shard' },
        ExpressionAttributeValues: { ':shard': s('S2') },
      }),
    );
    await dynamodb.send(
      new UpdateItemCommand({
        TableName: name,
        Key: { pk: s('b'), sk: s('1') },
        UpdateExpression: 'REMOVE #shard, #due',
        ExpressionAttributeNames: { '#shard': 'shard', '#due': 'due' },
      }),
    );
    await dynamodb.send(new DeleteItemCommand({ TableName: name, Key: { pk: s('c'), sk: s('1') } }));
    await dynamodb.send(
      new UpdateItemCommand({
        TableName: name,
        Key: { pk: s('e'), sk: s('1') },
        UpdateExpression: 'SET #shard = :shard, #due = :due',
        ExpressionAttributeNames: { '#shard': 'shard', '#due': 'due' },
        ExpressionAttributeValues: { ':shard': s('S1'), ':due': s('00') },
      }),
    );
    await put(name, 'c', '1', { shard: 'S2', due: '00' }); // back, in the other partition

    expect(await shard(name, 'S1')).toEqual(['e/1']);
    expect(await shard(name, 'S2')).toEqual(['c/1', 'a/1']);
  });

  it('leaves a partition as it was when a transaction that would have changed it fails', async () => {
    const name = await table();
    await put(name, 'a', '1', { shard: 'S1', due: '01' });
    expect(await shard(name, 'S1')).toEqual(['a/1']);

    const failed = awsClients().dynamo.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          { Put: { TableName: name, Item: { pk: s('n'), sk: s('1'), shard: s('S1'), due: s('00') } } },
          {
            Update: {
              TableName: name,
              Key: { pk: s('a'), sk: s('1') },
              UpdateExpression: 'SET #shard = :shard',
              ExpressionAttributeNames: { '#shard': 'shard' },
              ExpressionAttributeValues: { ':shard': s('S2') },
            },
          },
          { ConditionCheck: { TableName: name, Key: { pk: s('zz'), sk: s('1') }, ConditionExpression: 'attribute_exists(pk)' } },
        ],
      }),
    );
    await expect(failed).rejects.toThrow(/cancel/i);

    expect(await shard(name, 'S1')).toEqual(['a/1']);
    expect(await shard(name, 'S2')).toEqual([]);
  });

  it('answers a table query from the items under its hash key', async () => {
    const name = await table();
    await put(name, 'a', '2');
    await put(name, 'a', '1');
    await put(name, 'b', '1');
    const byKey = (pk: string): Promise<string[]> =>
      query({ TableName: name, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': s(pk) } });

    expect(await byKey('a')).toEqual(['a/1', 'a/2']);
    expect(await byKey('b')).toEqual(['b/1']);
    expect(await byKey('none')).toEqual([]);
  });
});
