// Sends the run's envelope to an SQS target: the envelope as the body, the run's identity as
// message attributes (the idempotency key and fencing token among them). A FIFO queue gets the job
// as its message group (one job's occurrences in order) and the occurrence's key as the
// deduplication id, so SQS itself drops a second send of the same occurrence within its 5-minute
// window.
import { createHash } from 'node:crypto';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { Target } from '../domain/job';
import { queueUrlTransportRefusal } from '../domain/target-allowlist';
import { envelopeOf } from './envelope';
import { callSignal, sdkFailure } from './sdk-failure';
import type { TargetInvocation, TargetResult } from './target';

export type SqsTarget = Extract<Target, { kind: 'sqs' }>;

/** SQS allows 128 characters for a deduplication id; a longer key is hashed. */
export function deduplicationIdOf(idempotencyKey: string): string {
  return idempotencyKey.length <= 128 && /^[\x21-\x7e]+$/.test(idempotencyKey) ? idempotencyKey : createHash('sha256').update(idempotencyKey).digest('hex');
}

export function sqsMessageOf(
  target: SqsTarget,
  invocation: Pick<TargetInvocation, 'job' | 'run' | 'payload' | 'traceparent' | 'step'>,
): SendMessageCommand['input'] {
  const envelope = envelopeOf(invocation.job, invocation.run, invocation.payload, invocation.traceparent, invocation.step);
  const text = (value: string) => ({ DataType: 'String', StringValue: value });
  const number = (value: number) => ({ DataType: 'Number', StringValue: String(value) });
  const fifo = new URL(target.queueUrl).pathname.endsWith('.fifo');
  return {
    QueueUrl: target.queueUrl,
    MessageBody: JSON.stringify(envelope),
    MessageAttributes: {
      'idempotency-key': text(envelope.idempotencyKey),
      'fencing-token': number(envelope.fencingToken),
      'job-id': text(envelope.job.jobId),
      'run-id': text(envelope.run.runId),
      attempt: number(envelope.attempt),
      ...(envelope.traceparent ? { traceparent: text(envelope.traceparent) } : {}),
    },
    ...(fifo ? { MessageGroupId: invocation.run.jobId, MessageDeduplicationId: deduplicationIdOf(envelope.idempotencyKey) } : {}),
  };
}

export async function callSqsTarget(sqs: SQSClient, target: SqsTarget, invocation: TargetInvocation): Promise<TargetResult> {
  // Checked on every call too, not only at create: a job stored before the check, or written some
  // other way, must not make the worker send a signed request with its session token over plain
  // http. Local mode sends to the emulator's http URL.
  const refusal = invocation.egress.policy.allowPlainHttp ? null : queueUrlTransportRefusal(target.queueUrl);
  if (refusal !== null) return { ok: false, timedOut: false, error: { code: 'TARGET_URL_REFUSED', message: `target.queueUrl ${refusal}`, retryable: false } };
  const { timeout, signal } = callSignal(invocation.timeoutMs, invocation.signal);
  try {
    const sent = await sqs.send(new SendMessageCommand(sqsMessageOf(target, invocation)), { abortSignal: signal });
    return { ok: true, detail: `SQS message ${sent.MessageId ?? '(no id)'}` };
  } catch (error) {
    return sdkFailure(error, timeout, invocation.signal, invocation.timeoutMs);
  }
}
