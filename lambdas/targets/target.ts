// What every target adapter receives and returns. Adapters classify failures; the worker decides
// what a failure means for the run.
import type { Job } from '../domain/job';
import type { Run, RunError } from '../domain/run';
import type { Egress } from './egress';

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
}

export type TargetResult =
  | { readonly ok: true; readonly detail: string }
  | { readonly ok: false; readonly timedOut: boolean; readonly error: RunError; readonly retryAfterSeconds?: number };

export interface TargetInvoker {
  invoke(invocation: TargetInvocation): Promise<TargetResult>;
}
