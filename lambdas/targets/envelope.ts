// What a non-HTTP target receives: the run's context around the job's payload. The same envelope
// is the Lambda event, the SQS message body and the EventBridge event detail, so a consumer reads
// one shape whichever way the scheduler reaches it.
import type { Job } from '../domain/job';
import type { Run } from '../domain/run';
import { deliveryOf, fencingTokenOf } from '../domain/delivery';
import { occurrenceKey } from '../domain/run';
import type { StepContext } from '../domain/workflow-jobs';

/** What a step's target receives besides its payload (the envelope's fields, and an HTTP step's body). */
export function stepFieldsOf(step: StepContext): Pick<TargetEnvelope, 'workflow' | 'results'> {
  const { results, storedResults: _stored, ...workflow } = step;
  return { workflow, results };
}

export const ENVELOPE_VERSION = 'job-scheduler/1';

export interface TargetEnvelope {
  readonly scheduler: typeof ENVELOPE_VERSION;
  readonly job: { readonly jobId: string; readonly name: string; readonly type: string; readonly delivery: Job['delivery'] };
  readonly run: { readonly runId: string; readonly attempt: number; readonly scheduledFor: string; readonly trigger: Run['trigger'] };
  readonly attempt: number;
  /** The occurrence's key (`jobId#scheduledFor`): the same for every attempt; deduplicate effects by it. */
  readonly idempotencyKey: string;
  /** Grows strictly across the attempts of an occurrence: refuse writes carrying a lower one. */
  readonly fencingToken: number;
  /** The attempt's W3C trace context: the run's trace id, a span of this attempt's own (decision 0111). */
  readonly traceparent?: string;
  readonly payload: unknown;
  /** A workflow step's run: its workflow run and step. */
  readonly workflow?: { readonly workflowId: string; readonly workflowRunId: string; readonly stepId: string; readonly version: number };
  /** A workflow step's run: its dependencies' results, by step id. */
  readonly results?: Readonly<Record<string, unknown>>;
}

export function envelopeOf(job: Job, run: Run, payload: unknown, traceparent?: string, step?: StepContext): TargetEnvelope {
  return {
    ...(step ? stepFieldsOf(step) : {}),
    scheduler: ENVELOPE_VERSION,
    // The attempt's own delivery (its run's, decision 0060), which a later PATCH of the job does not change.
    job: { jobId: job.jobId, name: job.name, type: job.type, delivery: deliveryOf(run, job) },
    run: { runId: run.runId, attempt: run.attempt, scheduledFor: run.scheduledFor, trigger: run.trigger },
    attempt: run.attempt,
    idempotencyKey: occurrenceKey(run.jobId, run.scheduledFor),
    fencingToken: fencingTokenOf(run),
    ...(traceparent ? { traceparent } : {}),
    payload,
  };
}
