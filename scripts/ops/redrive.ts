// Moves messages from a dead-letter queue back to the lanes they came from. Works on AWS and on
// emulators that lack StartMessageMoveTask (moto). A message is deleted from the DLQ only after it
// was sent, and counts as moved only once SQS confirmed its delete.
// Like StartMessageMoveTask, it moves the messages that were there when it started: a message that
// fails again and comes back meanwhile is not moved round and round.
import { parseArgs } from 'node:util';
import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ListDeadLetterSourceQueuesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
} from '@aws-sdk/client-sqs';

/** Where the messages of a DLQ go back to. */
export interface RedriveTargets {
  /**
   * The lane for a message whose source the DLQ does not name (moto sets no
   * DeadLetterQueueSourceArn) or names a queue not in `lanes`: the pool's standard lane.
   */
  readonly fallbackUrl: string;
  /** The lanes that redrive into the DLQ: queue ARN → queue URL. */
  readonly lanes?: ReadonlyMap<string, string>;
}

/** What a redrive did, so far when it stopped. */
export interface RedriveReport {
  /** Sent back and deleted from the DLQ. */
  readonly moved: number;
  /** `moved` by the queue URL each went to. */
  readonly movedTo: Readonly<Record<string, number>>;
  /** Of `moved`, those whose source lane was not known: sent to the fallback lane. */
  readonly toFallback: number;
  /** The source ARNs the DLQ named that are no known lane. */
  readonly unknownSources: readonly string[];
}

/** A redrive that stopped part way; `report` says what it had moved (those stay moved). */
export class RedriveError extends Error {
  constructor(
    reason: string,
    readonly report: RedriveReport,
  ) {
    super(`${reason}; moved ${report.moved} message(s) before stopping`);
    this.name = 'RedriveError';
  }
}

/** Moves up to `limit` messages from `fromUrl` back to `to` (one queue, or the lanes by source); returns how many moved. */
export async function redriveMessages(sqs: SQSClient, fromUrl: string, to: string | RedriveTargets, limit = Infinity): Promise<number> {
  return (await redrive(sqs, fromUrl, typeof to === 'string' ? { fallbackUrl: to } : to, limit)).moved;
}

/**
 * Moves up to `limit` messages from the DLQ `fromUrl` back, each to the lane its
 * DeadLetterQueueSourceArn names (the fallback lane when it names none or an unknown one), with its
 * group id and X-Ray trace header. Throws a RedriveError carrying the report when a send or a
 * delete fails: an unsent message stays in the DLQ; a sent message whose delete failed is in both.
 */
export async function redrive(sqs: SQSClient, fromUrl: string, targets: RedriveTargets, limit = Infinity): Promise<RedriveReport> {
  const { Attributes: attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: fromUrl, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
  );
  const present = Number(attributes.ApproximateNumberOfMessages ?? 0) + Number(attributes.ApproximateNumberOfMessagesNotVisible ?? 0);
  const max = Math.min(limit, present);
  const lanes = targets.lanes ?? new Map<string, string>();
  const movedTo: Record<string, number> = {};
  const unknownSources = new Set<string>();
  let moved = 0;
  let toFallback = 0;
  const report = (): RedriveReport => ({ moved, movedTo: { ...movedTo }, toFallback, unknownSources: [...unknownSources] });
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
    // Each message's lane; one batch per lane. An entry's id is its index in `messages`.
    const routed = messages.map((message) => {
      const source = message.Attributes?.DeadLetterQueueSourceArn;
      const lane = source === undefined ? undefined : lanes.get(source);
      if (source !== undefined && lane === undefined) unknownSources.add(source);
      return { message, url: lane ?? targets.fallbackUrl, known: lane !== undefined };
    });
    const problems: string[] = [];
    const sent = new Set<number>();
    for (const url of new Set(routed.map((entry) => entry.url))) {
      const indexes = routed.flatMap((entry, index) => (entry.url === url ? [index] : []));
      try {
        const result = await sqs.send(
          new SendMessageBatchCommand({ QueueUrl: url, Entries: indexes.map((index) => sendEntry(String(index), messages[index]!)) }),
        );
        for (const entry of result.Successful ?? []) sent.add(Number(entry.Id));
        const failed = indexes.length - indexes.filter((index) => sent.has(index)).length;
        if (failed > 0) problems.push(`${failed} message(s) could not be sent to ${url} (${reasons(result.Failed)}); they stay in the DLQ`);
      } catch (error) {
        problems.push(`${indexes.length} message(s) could not be sent to ${url} (${errorText(error)}); they stay in the DLQ`);
      }
    }
    if (sent.size > 0) {
      const deleted = new Set<number>();
      let failure: string;
      try {
        const result = await sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: fromUrl,
            Entries: [...sent].map((index) => ({ Id: String(index), ReceiptHandle: messages[index]!.ReceiptHandle ?? '' })),
          }),
        );
        for (const entry of result.Successful ?? []) if (sent.has(Number(entry.Id))) deleted.add(Number(entry.Id));
        failure = reasons(result.Failed);
      } catch (error) {
        failure = errorText(error);
      }
      for (const index of deleted) {
        const { url, known } = routed[index]!;
        movedTo[url] = (movedTo[url] ?? 0) + 1;
        if (!known) toFallback += 1;
      }
      moved += deleted.size;
      const stayed = [...sent].filter((index) => !deleted.has(index));
      if (stayed.length > 0) {
        problems.push(
          `${stayed.length} message(s) were sent back but could not be deleted from the DLQ (${failure}): they are in both queues, ` +
            `and a later redrive sends them again (ids ${stayed.map((index) => messages[index]!.MessageId ?? '?').join(', ')})`,
        );
      }
    }
    if (problems.length > 0) throw new RedriveError(problems.join('; '), report());
  }
  return report();
}

/** A message as it goes back: its body, its fair-queue group and its X-Ray trace header. */
function sendEntry(id: string, message: Message) {
  const trace = message.Attributes?.AWSTraceHeader;
  return {
    Id: id,
    MessageBody: message.Body ?? '',
    ...(message.Attributes?.MessageGroupId ? { MessageGroupId: message.Attributes.MessageGroupId } : {}),
    ...(trace ? { MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: trace } } } : {}),
  };
}

function reasons(failed: readonly { readonly Code?: string; readonly Message?: string }[] | undefined): string {
  const codes = [...new Set((failed ?? []).map((entry) => [entry.Code, entry.Message].filter(Boolean).join(': ')))];
  return codes.length > 0 ? codes.join('; ') : 'no reason given';
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** The lanes by ARN (→ URL), for the queue URLs given. */
export async function lanesByArn(sqs: SQSClient, urls: readonly string[]): Promise<Map<string, string>> {
  const lanes = new Map<string, string>();
  for (const url of new Set(urls)) {
    const { Attributes: attributes = {} } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
    if (attributes.QueueArn) lanes.set(attributes.QueueArn, url);
  }
  return lanes;
}

/** The URLs of the queues whose redrive policy names this DLQ (a pool's lanes). */
export async function sourceQueuesOf(sqs: SQSClient, dlqUrl: string): Promise<string[]> {
  const urls: string[] = [];
  let token: string | undefined;
  do {
    const page = await sqs.send(new ListDeadLetterSourceQueuesCommand({ QueueUrl: dlqUrl, MaxResults: 1000, ...(token ? { NextToken: token } : {}) }));
    urls.push(...(page.queueUrls ?? []));
    token = page.NextToken;
  } while (token);
  return urls;
}

export class RedriveUsageError extends Error {}

export const REDRIVE_USAGE = `Usage: npm run dlq:redrive -- [--pool <name>] [--max <n>]
       npm run dlq:redrive -- --from <DLQ url> --to <standard lane url> [--max <n>]
  --pool <name>   a local pool of the emulator (LOCAL_POOLS); the default pool without it
  --from, --to    a deployment's pool DLQ and its standard lane (AWS credentials); both or neither
  --max <n>       move at most n messages (a positive whole number); all of them without it
Each message goes back to the lane it came from; one whose lane the DLQ does not name goes to
the standard lane. Exit codes: 0 moved, 1 stopped part way (the count moved is printed), 2 usage.`;

export type RedriveArgs =
  | { readonly kind: 'queues'; readonly from: string; readonly to: string; readonly max: number }
  | { readonly kind: 'pool'; readonly pool: string | undefined; readonly max: number }
  | { readonly kind: 'help' };

/**
 * Parses dlq:redrive's arguments strictly. An unknown option, a stray argument, an option without
 * its value, a --max that is not a positive whole number, --from without --to (or the reverse) and
 * --pool with them are a RedriveUsageError, before anything is touched.
 */
export function parseRedriveArgs(argv: readonly string[]): RedriveArgs {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: { from: { type: 'string' }, to: { type: 'string' }, max: { type: 'string' }, pool: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    }));
  } catch (error) {
    throw new RedriveUsageError(`${error instanceof Error ? error.message : String(error)}\n${REDRIVE_USAGE}`);
  }
  if (values.help) return { kind: 'help' };
  for (const option of ['from', 'to', 'max', 'pool'] as const) {
    if (values[option] !== undefined && values[option].trim() === '') throw new RedriveUsageError(`--${option} needs a value\n${REDRIVE_USAGE}`);
  }
  let max = Infinity;
  if (values.max !== undefined) {
    max = /^[0-9]+$/.test(values.max) ? Number(values.max) : NaN;
    if (!Number.isSafeInteger(max) || max < 1) throw new RedriveUsageError(`--max must be a positive whole number, not ${values.max}\n${REDRIVE_USAGE}`);
  }
  const { from, to, pool } = values;
  if (from !== undefined || to !== undefined) {
    if (pool !== undefined)
      throw new RedriveUsageError(`--pool names a local pool; --from and --to name a deployment's queues: give one or the other\n${REDRIVE_USAGE}`);
    if (from === undefined || to === undefined)
      throw new RedriveUsageError(`--from and --to go together (the DLQ and its pool's standard lane)\n${REDRIVE_USAGE}`);
    return { kind: 'queues', from, to, max };
  }
  return { kind: 'pool', pool, max };
}
