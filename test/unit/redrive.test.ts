import type { Message, SendMessageBatchRequestEntry, SQSClient } from '@aws-sdk/client-sqs';
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ListDeadLetterSourceQueuesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { lanesByArn, parseRedriveArgs, redrive, RedriveError, redriveMessages, RedriveUsageError, sourceQueuesOf } from '../../scripts/ops/redrive';

const DLQ = 'https://sqs.test/1/pool-dlq';
const STANDARD = 'https://sqs.test/1/pool';
const HIGH = 'https://sqs.test/1/pool-high';
const LOW = 'https://sqs.test/1/pool-low';
const arnOf = (url: string) => `arn:aws:sqs:eu-west-1:1:${url.split('/').pop() ?? ''}`;
const LANES = new Map([STANDARD, HIGH, LOW].map((url) => [arnOf(url), url]));
const TRACE = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';

interface FakeOptions {
  /** An entry SQS refuses to send (the rest of its batch goes). */
  readonly refuseSend?: (entry: SendMessageBatchRequestEntry) => boolean;
  /** A receipt handle SQS refuses to delete (expired, say). */
  readonly refuseDelete?: (receiptHandle: string) => boolean;
  /** Every DeleteMessageBatch call fails (throttled). */
  readonly deleteThrows?: boolean;
}

/** An SQS with one DLQ holding `messages`: receive hides them, delete removes them, sends are recorded by queue. */
function fakeSqs(messages: readonly Message[], options: FakeOptions = {}) {
  const dlq = new Map(messages.map((message) => [message.ReceiptHandle ?? '', message]));
  const hidden = new Set<string>();
  const sent: { queueUrl: string; entry: SendMessageBatchRequestEntry }[] = [];
  const receives: (number | undefined)[] = [];
  const handle = (command: unknown): unknown => {
    if (command instanceof GetQueueAttributesCommand) {
      const url = command.input.QueueUrl ?? '';
      if (command.input.AttributeNames?.includes('QueueArn')) return { Attributes: { QueueArn: arnOf(url) } };
      return { Attributes: { ApproximateNumberOfMessages: String(dlq.size - hidden.size), ApproximateNumberOfMessagesNotVisible: String(hidden.size) } };
    }
    if (command instanceof ReceiveMessageCommand) {
      expect(command.input.QueueUrl).toBe(DLQ);
      receives.push(command.input.MaxNumberOfMessages);
      const batch = [...dlq.values()].filter((message) => !hidden.has(message.ReceiptHandle ?? '')).slice(0, command.input.MaxNumberOfMessages ?? 1);
      for (const message of batch) hidden.add(message.ReceiptHandle ?? '');
      return { Messages: batch };
    }
    if (command instanceof SendMessageBatchCommand) {
      const entries = command.input.Entries ?? [];
      const refused = entries.filter((entry) => options.refuseSend?.(entry));
      for (const entry of entries.filter((candidate) => !refused.includes(candidate))) sent.push({ queueUrl: command.input.QueueUrl ?? '', entry });
      return {
        Successful: entries.filter((entry) => !refused.includes(entry)).map((entry) => ({ Id: entry.Id, MessageId: `sent-${entry.Id}` })),
        Failed: refused.map((entry) => ({ Id: entry.Id, Code: 'InternalError', SenderFault: false })),
      };
    }
    if (command instanceof DeleteMessageBatchCommand) {
      expect(command.input.QueueUrl).toBe(DLQ);
      if (options.deleteThrows) throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
      const entries = command.input.Entries ?? [];
      const refused = entries.filter((entry) => options.refuseDelete?.(entry.ReceiptHandle ?? ''));
      for (const entry of entries.filter((candidate) => !refused.includes(candidate))) dlq.delete(entry.ReceiptHandle ?? '');
      return {
        Successful: entries.filter((entry) => !refused.includes(entry)).map((entry) => ({ Id: entry.Id })),
        Failed: refused.map((entry) => ({ Id: entry.Id, Code: 'ReceiptHandleIsInvalid', SenderFault: true })),
      };
    }
    if (command instanceof ListDeadLetterSourceQueuesCommand) {
      return command.input.NextToken ? { queueUrls: [LOW] } : { queueUrls: [STANDARD, HIGH], NextToken: 'page-2' };
    }
    throw new Error(`unexpected command ${String(command)}`);
  };
  // Asynchronous like the client: a refusal is a rejected promise.
  const send = (command: unknown): Promise<unknown> => Promise.resolve().then(() => handle(command));
  return { sqs: { send } as unknown as SQSClient, sent, receives, left: () => [...dlq.values()].map((message) => message.Body) };
}

const message = (n: number, attributes: Record<string, string> = {}): Message => ({
  MessageId: `m-${n}`,
  ReceiptHandle: `rh-${n}`,
  Body: `{"v":1,"runId":"run-${n}"}`,
  Attributes: { ApproximateReceiveCount: '6', ...attributes },
});

describe('the DLQ redrive', () => {
  it('counts as moved only the messages SQS deleted from the DLQ, and says how many moved when a delete fails', async () => {
    const fake = fakeSqs([message(1), message(2), message(3)], { refuseDelete: (handle) => handle === 'rh-2' });
    const error: unknown = await redriveMessages(fake.sqs, DLQ, STANDARD).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RedriveError);
    expect(String(error)).toMatch(/moved 2 message\(s\) before stopping/);
    expect(String(error)).toMatch(/1 message\(s\) were sent back but could not be deleted from the DLQ \(ReceiptHandleIsInvalid\).*ids m-2/);
    expect((error as RedriveError).report).toMatchObject({ moved: 2, movedTo: { [STANDARD]: 2 } });
    expect(fake.left()).toEqual([message(2).Body]);
  });

  it('moves none when the deletes are throttled, and says so rather than reporting them moved', async () => {
    const fake = fakeSqs([message(1), message(2)], { deleteThrows: true });
    const error: unknown = await redriveMessages(fake.sqs, DLQ, STANDARD).catch((caught: unknown) => caught);
    expect(String(error)).toMatch(/2 message\(s\) were sent back but could not be deleted from the DLQ \(ThrottlingException: Rate exceeded\)/);
    expect(String(error)).toMatch(/moved 0 message\(s\) before stopping/);
    expect(fake.left()).toHaveLength(2);
  });

  it('says how many it moved when a send partly fails, deletes only those sent, and leaves the rest in the DLQ', async () => {
    const fake = fakeSqs([message(1), message(2), message(3)], { refuseSend: (entry) => entry.MessageBody === message(3).Body });
    const error: unknown = await redriveMessages(fake.sqs, DLQ, STANDARD).catch((caught: unknown) => caught);
    expect(String(error)).toMatch(/1 message\(s\) could not be sent to .*pool \(InternalError\); they stay in the DLQ; moved 2 message\(s\) before stopping/);
    expect((error as RedriveError).report.moved).toBe(2);
    expect(fake.left()).toEqual([message(3).Body]);
  });

  it('sends each message back to the lane it came from, and a message of no known lane to the standard lane', async () => {
    const fake = fakeSqs([
      message(1, { DeadLetterQueueSourceArn: arnOf(HIGH) }),
      message(2, { DeadLetterQueueSourceArn: arnOf(LOW) }),
      message(3, { DeadLetterQueueSourceArn: arnOf(STANDARD) }),
      message(4, { DeadLetterQueueSourceArn: 'arn:aws:sqs:eu-west-1:1:another-queue' }),
      message(5), // moto names no source
    ]);
    const report = await redrive(fake.sqs, DLQ, { fallbackUrl: STANDARD, lanes: LANES });
    expect(report).toStrictEqual({
      moved: 5,
      movedTo: { [HIGH]: 1, [LOW]: 1, [STANDARD]: 3 },
      toFallback: 2,
      unknownSources: ['arn:aws:sqs:eu-west-1:1:another-queue'],
    });
    expect(fake.sent.map(({ queueUrl, entry }) => [queueUrl, entry.MessageBody])).toEqual(
      expect.arrayContaining([
        [HIGH, message(1).Body],
        [LOW, message(2).Body],
        [STANDARD, message(3).Body],
        [STANDARD, message(4).Body],
        [STANDARD, message(5).Body],
      ]),
    );
    expect(fake.left()).toEqual([]);
  });

  it("keeps a message's X-Ray trace header and its fair-queue group", async () => {
    const fake = fakeSqs([message(1, { AWSTraceHeader: TRACE, MessageGroupId: 'tenant-a' }), message(2)]);
    expect(await redriveMessages(fake.sqs, DLQ, STANDARD)).toBe(2);
    expect(fake.sent.map(({ entry }) => entry)).toEqual([
      {
        Id: '0',
        MessageBody: message(1).Body,
        MessageGroupId: 'tenant-a',
        MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: TRACE } },
      },
      { Id: '1', MessageBody: message(2).Body },
    ]);
  });

  it('moves at most the limit, asking SQS for no more than that', async () => {
    const fake = fakeSqs(Array.from({ length: 13 }, (_, index) => message(index)));
    expect(await redriveMessages(fake.sqs, DLQ, STANDARD, 12)).toBe(12);
    expect(fake.receives).toEqual([10, 2]);
    expect(fake.left()).toHaveLength(1);
  });

  it('finds the lanes that redrive into a DLQ, over pages, and their ARNs', async () => {
    const fake = fakeSqs([]);
    const urls = await sourceQueuesOf(fake.sqs, DLQ);
    expect(urls).toEqual([STANDARD, HIGH, LOW]);
    expect(await lanesByArn(fake.sqs, [STANDARD, ...urls])).toStrictEqual(LANES);
  });
});

describe("dlq:redrive's arguments", () => {
  it('takes a local pool, or a deployment DLQ and its lane, with an optional limit', () => {
    expect(parseRedriveArgs([])).toStrictEqual({ kind: 'pool', pool: undefined, max: Infinity });
    expect(parseRedriveArgs(['--pool', 'exports', '--max', '25'])).toStrictEqual({ kind: 'pool', pool: 'exports', max: 25 });
    expect(parseRedriveArgs(['--from', DLQ, '--to', STANDARD])).toStrictEqual({ kind: 'queues', from: DLQ, to: STANDARD, max: Infinity });
    expect(parseRedriveArgs([`--from=${DLQ}`, `--to=${STANDARD}`, '--max=1'])).toStrictEqual({ kind: 'queues', from: DLQ, to: STANDARD, max: 1 });
    expect(parseRedriveArgs(['--help'])).toStrictEqual({ kind: 'help' });
  });

  it('refuses a --max that is not a positive whole number', () => {
    for (const max of ['abc', '2.5', '0', '-1', '1e3', ' 7', '0x10', '', '99999999999999999999']) {
      expect(() => parseRedriveArgs(['--max', max]), max).toThrow(RedriveUsageError);
    }
    expect(() => parseRedriveArgs(['--max', 'abc'])).toThrow(/--max must be a positive whole number, not abc/);
  });

  it('refuses --from without --to (or the reverse), and --pool with them, rather than redriving the local queues', () => {
    expect(() => parseRedriveArgs(['--from', DLQ])).toThrow(/--from and --to go together/);
    expect(() => parseRedriveArgs(['--to', STANDARD])).toThrow(/--from and --to go together/);
    expect(() => parseRedriveArgs(['--from', DLQ, '--to', STANDARD, '--pool', 'exports'])).toThrow(/one or the other/);
    expect(() => parseRedriveArgs(['--from', '', '--to', STANDARD])).toThrow(/--from needs a value/);
  });

  it('refuses an unknown option, an option without its value and a stray argument', () => {
    for (const argv of [['--form', DLQ], ['--max'], ['--pool'], ['exports'], ['--max', '5', 'extra']]) {
      expect(() => parseRedriveArgs(argv), argv.join(' ')).toThrow(RedriveUsageError);
    }
  });
});
