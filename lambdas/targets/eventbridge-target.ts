// Puts the run's envelope on an EventBridge bus as one event (the envelope is the detail, so the
// idempotency key and fencing token are fields of it). PutEvents answers 200 even when an entry
// failed: a failed entry is the attempt's failure, retryable when EventBridge says it was its own
// fault or a throttle.
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { PutEventsCommand, type PutEventsCommandOutput } from '@aws-sdk/client-eventbridge';
import type { Target } from '../domain/job';
import { envelopeOf } from './envelope';
import { callSignal, sdkFailure } from './sdk-failure';
import type { TargetInvocation, TargetResult } from './target';

export type EventBridgeTarget = Extract<Target, { kind: 'eventbridge' }>;

export const RETRYABLE_ENTRY_ERRORS = new Set(['InternalFailure', 'ThrottlingException', 'InternalException']);

export function eventEntryOf(target: EventBridgeTarget, invocation: Pick<TargetInvocation, 'job' | 'run' | 'payload' | 'traceparent' | 'step'>) {
  return {
    EventBusName: target.eventBusName,
    Source: target.source,
    DetailType: target.detailType,
    Detail: JSON.stringify(envelopeOf(invocation.job, invocation.run, invocation.payload, invocation.traceparent, invocation.step)),
  };
}

export async function callEventBridgeTarget(events: EventBridgeClient, target: EventBridgeTarget, invocation: TargetInvocation): Promise<TargetResult> {
  const { timeout, signal } = callSignal(invocation.timeoutMs, invocation.signal);
  try {
    return putEventsResultOf(await events.send(new PutEventsCommand({ Entries: [eventEntryOf(target, invocation)] }), { abortSignal: signal }));
  } catch (error) {
    return sdkFailure(error, timeout, invocation.signal, invocation.timeoutMs);
  }
}

/** What a one-entry PutEvents answered: a refused entry fails the call (retryable when EventBridge says so). */
export function putEventsResultOf(out: Pick<PutEventsCommandOutput, 'Entries' | 'FailedEntryCount'>): TargetResult {
  const entry = out.Entries?.[0];
  if ((out.FailedEntryCount ?? 0) > 0 || entry?.ErrorCode) {
    const code = entry?.ErrorCode ?? 'UnknownError';
    return {
      ok: false,
      timedOut: false,
      error: {
        code: `EVENTBRIDGE_${code}`,
        message: (entry?.ErrorMessage ?? 'the event was not accepted').slice(0, 512),
        retryable: RETRYABLE_ENTRY_ERRORS.has(code),
      },
    };
  }
  return { ok: true, detail: `event ${entry?.EventId ?? '(no id)'}` };
}
