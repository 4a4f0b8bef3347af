// What every target adapter receives and returns. Adapters classify failures; the worker decides
// what a failure means for the run.
import type { Job } from '../domain/job';
import type { Run, RunError } from '../domain/run';
import type { Egress } from './egress';
import type { StepContext } from '../domain/workflow-jobs';
import { MAX_STEP_RESULT_BYTES } from '../domain/workflow';

export interface TargetInvocation {
  readonly job: Job;
  readonly run: Run;
  readonly payload: unknown;
  readonly timeoutMs: number;
  /** Aborted when the run is cancelled or its lease lost. */
  readonly signal?: AbortSignal;
  /** Where network targets may connect (the deployment's policy) and how names are resolved. */
  readonly egress: Egress;
  /** The tenant's live webhook signing secrets, newest first: an HTTP delivery is signed with each (docs/delivery.md). */
  readonly signingSecrets?: readonly string[];
  /**
   * An HTTP target's headers as sent: its text values, and the values of the secrets it names
   * (resolved by the worker before the call). Without it only text values are sent.
   */
  readonly headers?: Readonly<Record<string, string>>;
  /** The W3C `traceparent` of this attempt: the run's trace, a span of its own (decision 0111). */
  readonly traceparent?: string;
  /** A workflow step's run: where it is and its parents' results; its target's JSON answer is its result. */
  readonly step?: StepContext;
  /** How many bytes of JSON a step's result may have (stepResultLimit); MAX_STEP_RESULT_BYTES when absent. */
  readonly resultLimitBytes?: number;
}

export type TargetResult =
  | { readonly ok: true; readonly detail: string; /** A step's result: the JSON its target answered. */ readonly result?: unknown }
  | {
      readonly ok: false;
      readonly timedOut: boolean;
      readonly error: RunError;
      readonly retryAfterSeconds?: number;
      /** The attempt failed before its target was called (a secret that could not be read): even at-most-once may retry it. */
      readonly notCalled?: true;
    };

export interface TargetInvoker {
  invoke(invocation: TargetInvocation): Promise<TargetResult>;
}

/**
 * A workflow step's result from its target's answer: JSON of at most `limit` bytes. A larger answer
 * fails the step for good (its dependants would otherwise see a result cut short); an empty or
 * non-JSON answer is no result.
 */
export function stepResultOf(
  body: string,
  contentType: string | null,
  detail: string,
  bytes = Buffer.byteLength(body, 'utf8'),
  limit = MAX_STEP_RESULT_BYTES,
): TargetResult {
  if (bytes === 0 || !/json/i.test(contentType ?? '')) return { ok: true, detail };
  if (bytes > limit) {
    return {
      ok: false,
      timedOut: false,
      error: { code: 'RESULT_TOO_LARGE', message: `a step's result is at most ${limit} bytes of JSON (got ${bytes})`, retryable: false },
    };
  }
  try {
    return { ok: true, detail, result: JSON.parse(body) as unknown };
  } catch {
    return { ok: true, detail };
  }
}
