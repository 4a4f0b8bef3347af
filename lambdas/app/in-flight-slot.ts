// The in-flight limit around a run's execution: a tenant with a limit takes one of its slots before
// the lease and gives it back after the run; a run without a slot waits, its message sent again
// after a growing delay (decision 0025).
import { logger } from '../core/logger';
import type { SchedulerDeps } from './deps';
import type { DispatchContext, ExecuteResult } from './execute-run';

/** Longest wait of a deferred run before it tries for a slot again. */
const MAX_DEFERRAL_SECONDS = 16;

/**
 * A run deferred for its tenant's slot is not leased, and its check-back was set for a message
 * that would be taken at once: past it, the ticker would take the message for lost and send
 * another, and each copy would go round on its own. At its first deferral, and every so many
 * after it (so that the deferrals between two moves wait under half the grace), its check-back is
 * moved a grace on: one write for every few minutes a run waits. Best effort: a move that fails
 * costs at most one more message.
 */
async function postponeCheckBack(deps: SchedulerDeps, runId: string, deferrals: number): Promise<void> {
  const every = Math.max(1, Math.floor(deps.config.redeliveryGraceSeconds / (2 * (MAX_DEFERRAL_SECONDS + 1))));
  if (deferrals !== 1 && deferrals % every !== 0) return;
  const now = deps.clock();
  await deps.timeIndex
    .postponeQueuedCheck(runId, now + deps.config.redeliveryGraceSeconds * 1000, deps.config.timeIndexShards)
    .catch((error: unknown) => logger.warn("a deferred run's check-back was not moved on", { runId, error: String(error) }));
}
/** How long a tenant found at its in-flight limit is taken to be full, in this process. */
const FULL_MEMO_MS = 500;

/**
 * The tenants this process found at their in-flight limit a moment ago, with the slots it gave
 * back since (one try each). One per process, made by createDeps.
 */
export class TenantsFullMemo {
  /** Per tenant: full until when, and the slots this process gave back since. */
  private readonly tenants = new Map<string, { until: number; freed: number[] }>();

  /** Whether to try for a slot: yes, unless the tenant was found full a moment ago. The slot to try first. */
  mayTry(tenantId: string, now: number): { readonly try: boolean; readonly freed?: number } {
    const full = this.tenants.get(tenantId);
    if (full && full.until <= now) this.tenants.delete(tenantId);
    if (!full || full.until <= now) return { try: true };
    const freed = full.freed.shift();
    return freed === undefined ? { try: false } : { try: true, freed };
  }

  markFull(tenantId: string, now: number): void {
    const full = this.tenants.get(tenantId);
    if (full && full.until > now) return;
    this.tenants.set(tenantId, { until: now + FULL_MEMO_MS, freed: [] });
  }

  /**
   * A slot this process gave back: the next run of a tenant found full tries it. Kept only while
   * the tenant counts as full: after that every run tries anyway, and the list would only grow.
   */
  freed(tenantId: string, slot: number, now: number): void {
    const full = this.tenants.get(tenantId);
    if (!full) return;
    if (full.until <= now) this.tenants.delete(tenantId);
    else full.freed.push(slot);
  }

  /** Slots kept for a tenant (tests). */
  keptFor(tenantId: string): number {
    return this.tenants.get(tenantId)?.freed.length ?? 0;
  }
}

/** Runs `execute` holding one of the tenant's in-flight slots, or defers the run when none is free. */
export async function withInFlightSlot(
  deps: SchedulerDeps,
  runId: string,
  message: DispatchContext,
  execute: () => Promise<ExecuteResult>,
): Promise<ExecuteResult> {
  const { tenantId } = message;
  const limit = tenantId ? (await deps.tenantLimits.of(tenantId)).maxInFlightRuns : null;
  if (!tenantId || limit === null) return execute();

  // A tenant found full a moment ago in this process is full still, except for the slots this
  // process gave back since (one try each): defer without asking DynamoDB, as a deep backlog would
  // otherwise cost a query and a write per message, per round.
  const attempt = deps.tenantsFull.mayTry(tenantId, deps.clock());
  const taken = attempt.try
    ? await deps.inFlight.acquireSlot(tenantId, runId, limit, deps.clock(), (runIds) => slotLiveness(deps, runIds), attempt.freed)
    : null;
  if (taken === null) {
    deps.tenantsFull.markFull(tenantId, deps.clock());
    // Waits, never dropped: the message goes round again after a growing delay, with a fresh
    // receive count (a kept message would count towards the DLQ).
    const deferrals = (message.deferrals ?? 0) + 1;
    const delaySeconds = Math.min(MAX_DEFERRAL_SECONDS, 2 ** Math.min(deferrals - 1, 4)) + (deps.random() < 0.5 ? 0 : 1);
    await deps.dispatch.send(
      [
        {
          runId,
          tenantId,
          availableAt: deps.clock() + delaySeconds * 1000,
          deferrals,
          traceparent: message.traceparent,
          ...(message.queueUrl ? { queueUrl: message.queueUrl } : {}),
        },
      ],
      deps.clock(),
    );
    deps.telemetry.runDeferred({ runId, tenantId, traceparent: message.traceparent }, deferrals, delaySeconds);
    await postponeCheckBack(deps, runId, deferrals);
    return 'deferred';
  }
  const { slot } = taken;
  let result: ExecuteResult | undefined;
  try {
    result = await execute();
    return result;
  } finally {
    // This message's hold is given back whatever became of the run. Another message of the run may
    // hold the slot too (a duplicate, the ticker's resend), and which of them leases the run is known
    // only to that one: the slot stays while any holds it, so the run's lease holder keeps it until
    // its outcome, whichever message took it first; a duplicate's hold, alone (the run leased by an
    // external worker, which holds none), frees it (decision 0025). A run this message saw end (its
    // outcome, or a dead worker's recorded) frees the slot whatever holds are left: no message can
    // run it any more, and a dead worker's hold would keep the slot from the retry until a takeover.
    const ended = result !== undefined && RUN_ENDED.has(result);
    if (await deps.inFlight.release(tenantId, slot, runId, ended ? undefined : taken.token)) deps.tenantsFull.freed(tenantId, slot, deps.clock());
  }
}

/** What a message answers when the run is over (ended by it, or found ended): its slot is no one's. */
const RUN_ENDED: ReadonlySet<ExecuteResult> = new Set(['skipped', 'cancelled', 'succeeded', 'failed', 'timed-out', 'dead', 'worker-lost']);

/** Whether the runs holding slots still run: the run items are the truth (a dead worker's lease expires). */
export async function slotLiveness(deps: SchedulerDeps, runIds: readonly string[]) {
  const runs = await deps.runs.getMany(runIds);
  return new Map(
    runs.map((run) => [run.runId, { running: run.status === 'RUNNING', leaseExpiresAt: run.leaseExpiresAt ? Date.parse(run.leaseExpiresAt) : null }]),
  );
}
