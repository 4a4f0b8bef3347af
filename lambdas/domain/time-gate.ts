// The time gate: where a run waits until it is due. Runs due soon wait in SQS (per-message delay,
// released on the second); runs due later wait in the sharded time index until the ticker's
// horizon reaches them. Every run that is not yet leased keeps an entry in the time index, at its
// due time while SCHEDULED and at a check-back time while QUEUED, so that a message lost between
// a write and its send is found and sent again. Every leased run keeps one too, by its lease's end,
// so that a worker lost with its message still tied to the queue's timeout is found all the same.
// A queued run's first check-back is where its lease's would be had it started when due, so that
// a lease taken in time keeps the entry where it is (decision 0170).

export interface TimeGateSettings {
  readonly nearHorizonSeconds: number;
  readonly redeliveryGraceSeconds: number;
  readonly timeIndexShards: number;
  readonly leaseMarginSeconds: number;
}

export type Placement =
  /** Send now with a delay; the index entry is only a check-back in case the message is lost. */
  | { readonly status: 'QUEUED'; readonly gateAt: number }
  /** Wait in the time index until the ticker releases it. */
  | { readonly status: 'SCHEDULED'; readonly gateAt: number };

export function placeRun(availableAt: number, now: number, settings: TimeGateSettings): Placement {
  if (availableAt - now <= settings.nearHorizonSeconds * 1000) {
    return { status: 'QUEUED', gateAt: firstCheckAt(availableAt, now, settings) };
  }
  return { status: 'SCHEDULED', gateAt: availableAt };
}

/** When to look again at a queued run that should have been leased by then (its message lost). */
export function checkBackAt(availableAt: number, now: number, settings: Pick<TimeGateSettings, 'redeliveryGraceSeconds'>): number {
  return Math.max(availableAt, now) + settings.redeliveryGraceSeconds * 1000;
}

/**
 * A newly queued run's check-back (decision 0170): where a lease taken when the run came due would
 * put its own (`leaseCheckAt`), so that a lease taken by then keeps the entry (`RunLeases.lease`).
 * A run still queued there is not given up on yet: the ticker moves it to the redelivery grace
 * (`queuedCheck`).
 */
export function firstCheckAt(availableAt: number, now: number, settings: Pick<TimeGateSettings, 'leaseMarginSeconds'>): number {
  return leaseCheckAt(Math.max(availableAt, now), settings);
}

/**
 * A lease keeps the run's queued check-back when it is no later than the lease's own
 * (`leaseCheckAt`, so never after the lease's end) and still ahead by at least this much: a
 * check-back that has come (or nearly) may be in a tick's hands, and the tick's move of a queued
 * run fails once the run is leased, so the lease moves it instead. Measured from the worker's clock
 * when it asked: more than the longest a store write can take to land after that (a 1 s connect, a
 * retry's pause, a 3 s request: store/aws.ts), or a lease landing after a tick's read could keep an
 * entry in a minute the tick's cursor then passes.
 */
export const KEPT_CHECK_MIN_AHEAD_MS = 6_000;

export type QueuedCheck =
  /** Queued for less than the grace: its message may still be on its way. Look again at the grace's end. */
  | { readonly kind: 'early'; readonly checkAt: number }
  /** Queued for the whole grace: its message is taken as lost and sent again. */
  | { readonly kind: 'lost' };

/** What the ticker does with a queued run whose check-back has come, given when it was queued and became due. */
export function queuedCheck(
  run: { readonly availableAt: string; readonly enqueuedAt: string | null },
  now: number,
  settings: Pick<TimeGateSettings, 'redeliveryGraceSeconds'>,
): QueuedCheck {
  const since = Math.max(Date.parse(run.availableAt), run.enqueuedAt === null ? Number.NEGATIVE_INFINITY : Date.parse(run.enqueuedAt));
  const graceEnd = since + settings.redeliveryGraceSeconds * 1000;
  return Number.isFinite(graceEnd) && graceEnd > now ? { kind: 'early', checkAt: graceEnd } : { kind: 'lost' };
}

/** A lease is checked this long after it ends, so that a heartbeat just in time is not raced. */
export const LEASE_CHECK_SLACK_MS = 1_000;

/** The shortest attempt timeout a job may have (`timeoutSeconds` is at least 1). */
const SHORTEST_TIMEOUT_SECONDS = 1;

/**
 * Where a fresh lease's check-back goes. The lease is one write with no read before it, so the
 * writer does not know the lease's length (it lives on the run): the check-back goes at the end of
 * the shortest lease a called target can have, never after the lease's own end, and the ticker
 * moves it to the lease's real end when it finds it early (`checkLease`).
 */
export function leaseCheckAt(leasedAt: number, settings: { readonly leaseMarginSeconds: number }): number {
  return leasedAt + (SHORTEST_TIMEOUT_SECONDS + settings.leaseMarginSeconds) * 1000 + LEASE_CHECK_SLACK_MS;
}

export type LeaseCheck =
  /** The run is no longer running under the lease the entry was read for: nothing to do. */
  | { readonly kind: 'gone' }
  /** The lease still holds (heartbeats extended it): look again just after its end. */
  | { readonly kind: 'live'; readonly checkAt: number }
  /** The lease ended unrenewed: its worker was lost, and the run is to be recovered. */
  | { readonly kind: 'lapsed' };

/**
 * What the ticker does with a leased run whose check-back has passed, given the run as read now
 * (consistently). The move it then makes is fenced by the version read with it.
 */
export function checkLease(run: { readonly status: string; readonly leaseExpiresAt: string | null } | undefined, now: number): LeaseCheck {
  if (!run || run.status !== 'RUNNING') return { kind: 'gone' };
  // A running run always has a lease end; one without is treated as lapsed, so that it is not kept.
  const end = run.leaseExpiresAt === null ? Number.NaN : Date.parse(run.leaseExpiresAt);
  if (Number.isFinite(end) && end + LEASE_CHECK_SLACK_MS > now) return { kind: 'live', checkAt: end + LEASE_CHECK_SLACK_MS };
  return { kind: 'lapsed' };
}

/** A stable shard for a run id (FNV-1a), spreading one minute's runs over the index partitions. */
export function shardOf(runId: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < runId.length; i++) {
    hash ^= runId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % shards;
}

/** Minute buckets (epoch ms at the start of each minute) from `from` to `to`, inclusive. */
export function minuteBuckets(from: number, to: number): number[] {
  const buckets: number[] = [];
  for (let minute = Math.floor(from / 60_000) * 60_000; minute <= to; minute += 60_000) buckets.push(minute);
  return buckets;
}
