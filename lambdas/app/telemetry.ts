// What the scheduler reports about its runs: metrics (EMF lines, for CloudWatch and the dashboard)
// and, from the workers, per-tenant roll-ups and the runs each worker holds (for GET /v1/health).
// Use cases record events here; the handlers flush once per invocation.
import { traceIdOf } from '../domain/trace-context';
import { logger } from '../core/logger';
import type { MetricName } from '../core/metrics';
import { Metric, MetricsRecorder, workflowDimension } from '../core/metrics';
import type { Histogram } from '../domain/histogram';
import { record } from '../domain/histogram';
import type { Run } from '../domain/run';
import type { Counters, InFlightEntry, OutcomeCounter, TelemetryStore } from '../store/telemetry-store';

/** A run that is still running this long after its lease is registered as in flight. */
const REGISTER_AFTER_MS = 1_000;
/**
 * How long past its lease an external claim stays in this process's registry: long enough for the
 * health report to show a lapsed lease until the ticker recovers it, then it leaves (its complete or
 * fail may have landed on another process).
 */
const CLAIM_KEPT_PAST_LEASE_MS = 10 * 60_000;
/**
 * Registrations this close together are written as one: the runs of a batch cross their second
 * together, and each write of the registry is billed on the whole list (decision 0177).
 */
const REGISTRY_COALESCE_MS = 250;
/** Roll-ups of minutes older than this are no longer written. */
const KEEP_MINUTES = 20;
/**
 * A registry holding runs is written again at least this often, changed or not: the health report
 * reads workers seen within the hour (and the item's TTL is an hour), and an external run
 * heartbeated on the same process for longer changes nothing in it.
 */
const REGISTRY_REFRESH_MS = 10 * 60_000;

type Outcome = 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'DEAD';

const OUTCOME_METRIC: Record<Outcome, MetricName> = {
  SUCCEEDED: Metric.RunsSucceeded,
  FAILED: Metric.RunsFailed,
  TIMED_OUT: Metric.RunsTimedOut,
  DEAD: Metric.RunsDead,
};
const OUTCOME_COUNTER: Record<Outcome, OutcomeCounter> = { SUCCEEDED: 'succeeded', FAILED: 'failed', TIMED_OUT: 'timedOut', DEAD: 'dead' };

interface PendingRollup {
  readonly tenantId: string;
  readonly minute: string;
  readonly counts: Counters;
  readonly startLag: Histogram;
  readonly claimWait: Histogram;
  dirty: boolean;
}

type RunRef = Pick<Run, 'runId' | 'tenantId' | 'jobType'>;
/** What a transition's log line names: enough to find the run, never its payload. */
export type RunLine = Pick<Run, 'runId' | 'tenantId' | 'jobId' | 'jobType'> & {
  readonly attempt?: number;
  /** The run's trace (decision 0111): its id goes on the run's log lines. */
  readonly traceparent?: string;
  readonly scheduledFor?: string;
  readonly availableAt?: string;
};

export class Telemetry {
  private readonly rollups = new Map<string, PendingRollup>();
  private readonly inFlight = new Map<string, InFlightEntry>();
  private readonly registerTimers = new Map<string, NodeJS.Timeout>();
  /**
   * Runs claimed by external workers through this (API) process, and until when their entries are
   * kept: their complete or fail often lands on another process, which cannot release them here.
   */
  private readonly claimedUntil = new Map<string, number>();
  private registryDirty = false;
  /** A registry write is queued behind the one in flight: later changes ride on it. */
  private registryQueued = false;
  private registryTimer: NodeJS.Timeout | null = null;
  /** When the registry was last written (epoch ms, this process's clock). */
  private registryWrittenAt = Number.NEGATIVE_INFINITY;
  private seq = 0;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    readonly metrics: MetricsRecorder,
    private readonly store: TelemetryStore | null,
    private readonly workerId: string,
    private readonly clock: () => number,
  ) {}

  static metricsOnly(clock: () => number = Date.now): Telemetry {
    return new Telemetry(new MetricsRecorder(), null, 'none', clock);
  }

  /** A run was written (SCHEDULED in the time index, or QUEUED when it goes straight to the queue). */
  runCreated(run: RunLine & Pick<Run, 'status'>): void {
    this.metrics.count(Metric.RunsCreated, run.jobType);
    logger.info('run created', { ...lineOf(run), status: run.status, scheduledFor: run.scheduledFor, availableAt: run.availableAt });
  }

  /** A run waits for an in-flight slot of its tenant; its message comes back after `delaySeconds`. */
  runDeferred(run: Pick<RunLine, 'runId' | 'tenantId' | 'traceparent'>, deferrals: number, delaySeconds: number): void {
    this.metrics.count(Metric.RunsDeferred);
    logger.info('run deferred: tenant at its in-flight limit', {
      runId: run.runId,
      tenantId: run.tenantId,
      traceId: traceIdOf(run.traceparent),
      status: 'QUEUED',
      deferrals,
      delaySeconds,
    });
  }

  /** A leased run gave its lease back to wait for its concurrency or rate key (issue 19). */
  runWaitingForKey(run: Pick<RunLine, 'runId' | 'tenantId' | 'traceparent'>, reason: string, delaySeconds: number): void {
    this.metrics.count(Metric.RunsDeferred);
    logger.info('run waits for its key', {
      runId: run.runId,
      tenantId: run.tenantId,
      traceId: traceIdOf(run.traceparent),
      status: 'QUEUED',
      reason,
      delaySeconds,
    });
  }

  /** A run's message was sent to the dispatch queue. */
  runQueued(run: RunLine): void {
    this.metrics.count(Metric.RunsQueued, run.jobType);
    logger.info('run queued', { ...lineOf(run), status: 'QUEUED', availableAt: run.availableAt });
  }

  /** A worker took the lease: `receivedAt` is when its message reached the worker. */
  runStarted(run: Run, receivedAt: number): void {
    // Due: when this attempt was to start (the occurrence's time, or a retry's backoff end).
    const due = Date.parse(run.availableAt);
    const leasedAt = Date.parse(run.startedAt ?? run.updatedAt);
    const startLag = leasedAt - due;
    this.metrics.count(Metric.RunsStarted, run.jobType);
    this.metrics.add(Metric.StartLag, Math.max(0, startLag), run.jobType);
    this.metrics.add(Metric.SchedulingLag, Math.max(0, receivedAt - due), run.jobType);
    const rollup = this.rollupOf(run.tenantId, leasedAt);
    bump(rollup, 'started');
    record(rollup.startLag, startLag);
    rollup.dirty = true;
    this.registerLater(run);
  }

  /**
   * An external worker claimed a run the dispatch worker offered (and counted as started, with its
   * start lag, then). The wait from due to the claim is the pollers' and is its own figure.
   */
  runClaimed(run: Run, claimedAt: number): void {
    const wait = claimedAt - Date.parse(run.availableAt);
    this.metrics.add(Metric.ClaimWait, Math.max(0, wait), run.jobType);
    const rollup = this.rollupOf(run.tenantId, claimedAt);
    record(rollup.claimWait, wait);
    rollup.dirty = true;
    this.registerLater(run);
    const leaseEnd = run.leaseExpiresAt ? Date.parse(run.leaseExpiresAt) : claimedAt + run.leaseSeconds * 1000;
    this.claimedUntil.set(run.runId, leaseEnd + CLAIM_KEPT_PAST_LEASE_MS);
  }

  /**
   * An external worker's heartbeat extended its lease. The claim's entry stays until well past the
   * new lease's end; a heartbeat landing on a process that did not take the claim registers the run
   * there (the health report reads each run once, whichever registries name it), so a run
   * heartbeated for longer than its first lease plus the margin stays in the report.
   */
  runHeartbeat(run: Pick<Run, 'runId' | 'tenantId' | 'leaseExpiresAt'>): void {
    if (!this.store || !run.leaseExpiresAt) return;
    this.claimedUntil.set(run.runId, Date.parse(run.leaseExpiresAt) + CLAIM_KEPT_PAST_LEASE_MS);
    if (this.inFlight.has(run.runId) || this.registerTimers.has(run.runId)) return;
    this.inFlight.set(run.runId, { runId: run.runId, tenantId: run.tenantId });
    this.registryDirty = true;
  }

  /** Registers the run as in flight (for GET /v1/health) if it is still held after a second. */
  private registerLater(run: Run): void {
    if (!this.store) return;
    const timer = setTimeout(() => {
      this.registerTimers.delete(run.runId);
      // What the health report reads (it reads the rest from the run): decision 0177.
      this.inFlight.set(run.runId, { runId: run.runId, tenantId: run.tenantId });
      this.registryDirty = true;
      this.writeRegistrySoon();
    }, REGISTER_AFTER_MS);
    timer.unref();
    this.registerTimers.set(run.runId, timer);
  }

  /** The attempt ended with an outcome; `retried` when a retry run was written with it. */
  runFinished(run: RunRef, outcome: Outcome, durationMs: number, retried: boolean): void {
    this.metrics.count(OUTCOME_METRIC[outcome], run.jobType);
    this.metrics.add(Metric.RunDuration, Math.max(0, durationMs), run.jobType);
    const rollup = this.rollupOf(run.tenantId, this.clock());
    bump(rollup, OUTCOME_COUNTER[outcome]);
    if (retried) {
      this.metrics.count(Metric.RunsRetried, run.jobType);
      bump(rollup, 'retried');
    }
    this.released(run.runId);
  }

  /** A run ended without executing (SKIPPED) or was cancelled. */
  runEnded(run: RunLine, status: 'SKIPPED' | 'CANCELLED', reason: string, fields: Record<string, unknown> = {}): void {
    logger.info(status === 'SKIPPED' ? 'run skipped' : 'run cancelled', { ...lineOf(run), status, reason, ...fields });
    this.metrics.count(status === 'SKIPPED' ? Metric.RunsSkipped : Metric.RunsCancelled, run.jobType);
    bump(this.rollupOf(run.tenantId, this.clock()), status === 'SKIPPED' ? 'skipped' : 'cancelled');
    this.released(run.runId);
  }

  /** A workflow run started (or started again from its failed steps). */
  workflowRunStarted(run: { readonly workflowRunId: string; readonly tenantId: string }, workflowName: string): void {
    this.metrics.count(Metric.WorkflowRunsStarted, workflowDimension(workflowName));
  }

  /** A workflow run ended (counted once: its end is a conditional write only one writer wins). */
  workflowRunEnded(run: { readonly status: string }, workflowName: string, durationMs: number): void {
    const metric =
      run.status === 'SUCCEEDED' ? Metric.WorkflowRunsSucceeded : run.status === 'CANCELLED' ? Metric.WorkflowRunsCancelled : Metric.WorkflowRunsFailed;
    this.metrics.count(metric, workflowDimension(workflowName));
    this.metrics.add(Metric.WorkflowRunDuration, Math.max(0, durationMs), workflowDimension(workflowName));
  }

  /** A step of a workflow run ended other than SUCCEEDED. */
  workflowStepFailed(workflowName: string): void {
    this.metrics.count(Metric.WorkflowStepFailures, workflowDimension(workflowName));
  }

  /**
   * A worker found a lease expired: another worker's (`recorded`: its attempt is now on the record
   * as WORKER_LOST) or its own, after a stall (its outcome was fenced off).
   */
  leaseExpired(run: RunRef, recorded: boolean): void {
    this.metrics.count(Metric.LeaseExpirations, run.jobType);
    if (!recorded) return;
    this.metrics.count(Metric.WorkerLost, run.jobType);
    bump(this.rollupOf(run.tenantId, this.clock()), 'workerLost');
  }

  /** The worker stopped holding a run (whatever the reason). */
  released(runId: string): void {
    const timer = this.registerTimers.get(runId);
    if (timer) {
      clearTimeout(timer);
      this.registerTimers.delete(runId);
    }
    this.claimedUntil.delete(runId);
    if (this.inFlight.delete(runId)) this.registryDirty = true;
  }

  /** Writes the metric lines, the changed roll-ups and the registry if it changed. Never throws. */
  async flush(): Promise<void> {
    this.metrics.flush();
    if (!this.store) return;
    const now = this.clock();
    // Claims whose leases ended a while ago leave the registry, wherever they were completed.
    for (const [runId, until] of this.claimedUntil) if (until <= now) this.released(runId);
    if (this.inFlight.size > 0 && now - this.registryWrittenAt >= REGISTRY_REFRESH_MS) this.registryDirty = true;
    const oldest = minuteOf(now - KEEP_MINUTES * 60_000);
    const writes: Promise<void>[] = [];
    for (const [key, rollup] of this.rollups) {
      if (rollup.minute < oldest) {
        this.rollups.delete(key);
        continue;
      }
      if (!rollup.dirty) continue;
      rollup.dirty = false;
      const store = this.store;
      writes.push(
        store
          .putRollup(
            this.workerId,
            {
              tenantId: rollup.tenantId,
              minute: rollup.minute,
              counts: { ...rollup.counts },
              startLag: { ...rollup.startLag },
              claimWait: { ...rollup.claimWait },
            },
            ++this.seq,
            now,
          )
          .catch((error: unknown) => {
            // Not written: the next flush writes it again (a minute that has ended changes no more,
            // and would otherwise never be written).
            rollup.dirty = true;
            throw error;
          }),
      );
    }
    writes.push(this.writeRegistry());
    const results = await Promise.allSettled(writes);
    for (const result of results) {
      if (result.status === 'rejected') {
        logger.warn('telemetry write failed; health figures may lag', {
          error: result.reason instanceof Error ? result.reason.message : String(result.reason),
        });
      }
    }
  }

  private writeRegistrySoon(): void {
    if (this.registryTimer) return;
    this.registryTimer = setTimeout(() => {
      this.registryTimer = null;
      void this.writeRegistry();
    }, REGISTRY_COALESCE_MS);
    this.registryTimer.unref();
  }

  /** Writes the registry as it is when the write before has ended: changes meanwhile make one write, not one each. */
  private writeRegistry(): Promise<void> {
    if (!this.store || !this.registryDirty || this.registryQueued) return this.writing;
    this.registryQueued = true;
    const store = this.store;
    this.writing = this.writing
      .then(async () => {
        this.registryQueued = false;
        if (!this.registryDirty) return;
        this.registryDirty = false;
        const runs = [...this.inFlight.values()];
        const now = this.clock();
        await store.putWorker({ workerId: this.workerId, lastSeenAt: new Date(now).toISOString(), runs }, ++this.seq, now);
        this.registryWrittenAt = now;
      })
      .catch((error: unknown) => {
        this.registryDirty = true;
        logger.warn('worker registry write failed', { error: error instanceof Error ? error.message : String(error) });
      });
    return this.writing;
  }

  private rollupOf(tenantId: string, at: number): PendingRollup {
    const minute = minuteOf(at);
    const key = `${tenantId}#${minute}`;
    let rollup = this.rollups.get(key);
    if (!rollup) {
      rollup = { tenantId, minute, counts: {}, startLag: {}, claimWait: {}, dirty: false };
      this.rollups.set(key, rollup);
    }
    return rollup;
  }
}

function lineOf(run: RunLine): Record<string, unknown> {
  return { runId: run.runId, jobId: run.jobId, tenantId: run.tenantId, jobType: run.jobType, attempt: run.attempt, traceId: traceIdOf(run.traceparent) };
}

function bump(rollup: PendingRollup, counter: OutcomeCounter): void {
  rollup.counts[counter] = (rollup.counts[counter] ?? 0) + 1;
  rollup.dirty = true;
}

export function minuteOf(at: number): string {
  return new Date(Math.floor(at / 60_000) * 60_000).toISOString();
}
