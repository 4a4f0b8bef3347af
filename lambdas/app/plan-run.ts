// Builds a new run of an occurrence and decides where it waits (the time gate).
import type { SchedulerConfig } from '../config/config';
import type { Job } from '../domain/job';
import { leaseSecondsOf } from '../domain/job';
import type { Run, RunTrigger } from '../domain/run';
import { occurrenceKey, runIdFor } from '../domain/run';
import { placeRun } from '../domain/time-gate';
import { startOf } from '../domain/schedule';
import { formatTraceparent, newTraceContext } from '../domain/trace-context';
import type { Dispatch } from '../store/dispatch-queue';
import type { NewRun } from '../store/jobs-repository';
import type { RunPayload } from '../domain/payload';
import { dispatchOfRun } from '../store/dispatch-queue';
import { isCreationOccurrence } from '../store/job-runs';

export interface RunPlan extends NewRun {
  /** Set when the run goes straight to the dispatch queue. */
  readonly dispatch: Dispatch | null;
}

export function planRun(
  config: SchedulerConfig,
  job: Job,
  occurrence: {
    scheduledFor: number;
    attempt: number;
    trigger: RunTrigger;
    availableAt?: number;
    /** The run's own payload (a trigger's), inline or stored apart. */
    payload?: RunPayload;
    backfillRemaining?: number;
    /** Since when the occurrence has waited behind the one before it (buffer-one): an edit's plan of it again carries it. */
    bufferedSince?: number;
    reason?: string | null;
    /** The last checkpoint an external worker saved on the previous attempt of this occurrence. */
    checkpoint?: unknown;
    /** The trace the run belongs to (a request's, or its previous attempt's); a new trace without it (decision 0111). */
    traceparent?: string;
    /** A workflow step's context and its parents' results. */
    inputs?: unknown;
    /**
     * A run planned as its job's pending occurrence: the run the job pointed at when it was planned
     * (the occurrence it follows in the chain, or the one an edit replaces; null for none), which it
     * keeps (decision 0175). None for runs no job points at (backfills, triggers, retries, replays).
     */
    chainedFrom?: string | null;
  },
  now: number,
): RunPlan {
  const scheduledFor = new Date(occurrence.scheduledFor).toISOString();
  // An occurrence of the schedule starts at its fire time plus its jitter (none without
  // jitterSeconds); manual, retried and replayed runs have their own time.
  const availableAt =
    occurrence.availableAt ?? (occurrence.trigger === 'schedule' ? startOf(job.jobId, job.schedule, occurrence.scheduledFor) : occurrence.scheduledFor);
  const placement = placeRun(availableAt, now, config);
  const at = new Date(now).toISOString();
  const run: Run = {
    runId: runIdFor(job.jobId, scheduledFor, occurrence.attempt),
    jobId: job.jobId,
    tenantId: job.tenantId,
    jobType: job.type,
    priority: job.priority,
    scheduledFor,
    attempt: occurrence.attempt,
    status: placement.status,
    availableAt: new Date(availableAt).toISOString(),
    enqueuedAt: placement.status === 'QUEUED' ? at : null,
    startedAt: null,
    finishedAt: null,
    leaseOwner: null,
    leaseExpiresAt: null,
    version: 0,
    leaseSeconds: leaseSecondsOf(job, config.leaseMarginSeconds),
    progress: null,
    error: null,
    reason: occurrence.reason ?? null,
    idempotencyKey: occurrenceKey(job.jobId, scheduledFor),
    trigger: occurrence.trigger,
    delivery: job.delivery,
    traceparent: occurrence.traceparent ?? formatTraceparent(newTraceContext(now)),
    createdAt: at,
    updatedAt: at,
  };
  return {
    run,
    extras: {
      gate: { at: placement.gateAt, shards: config.timeIndexShards },
      ...(occurrence.payload
        ? 'ref' in occurrence.payload
          ? { payloadOverrideRef: occurrence.payload.ref }
          : { payloadOverride: occurrence.payload.inline }
        : {}),
      ...(occurrence.backfillRemaining !== undefined ? { backfillRemaining: occurrence.backfillRemaining } : {}),
      ...(occurrence.bufferedSince !== undefined ? { bufferedSince: occurrence.bufferedSince } : {}),
      // An occurrence planned again under its next attempt number (a resume, an edit, a repair)
      // starts its retry budget afresh (decision 0016): the attempts before it never called its
      // target. A retry counts on from its attempt's budget (set by its writer).
      ...(occurrence.trigger !== 'retry' && occurrence.attempt > 1 ? { budgetFrom: occurrence.attempt } : {}),
      ...(occurrence.checkpoint !== undefined ? { checkpoint: occurrence.checkpoint } : {}),
      ...(occurrence.inputs !== undefined ? { inputs: occurrence.inputs } : {}),
      ...(occurrence.chainedFrom !== undefined ? { chainedFrom: occurrence.chainedFrom } : {}),
      // The occurrence at its job's creation (a run-now job's) is found through the tenant's index:
      // no byJob entry (decision 0188).
      ...(isCreationOccurrence(job, scheduledFor) ? { unlistedByJob: true } : {}),
    },
    dispatch: placement.status === 'QUEUED' ? dispatchOfRun(run, availableAt) : null,
  };
}
