// The time gate: where a run waits until it is due. Runs due soon wait in SQS (per-message delay,
// released on the second); runs due later wait in the sharded time index until the ticker's
// horizon reaches them. Every run that is not yet leased keeps an entry in the time index, at its
// due time while SCHEDULED and at a check-back time while QUEUED, so that a message lost between
// a write and its send is found and sent again.

export interface TimeGateSettings {
  readonly nearHorizonSeconds: number;
  readonly redeliveryGraceSeconds: number;
  readonly timeIndexShards: number;
}

export type Placement =
  /** Send now with a delay; the index entry is only a check-back in case the message is lost. */
  | { readonly status: 'QUEUED'; readonly gateAt: number }
  /** Wait in the time index until the ticker releases it. */
  | { readonly status: 'SCHEDULED'; readonly gateAt: number };

export function placeRun(availableAt: number, now: number, settings: TimeGateSettings): Placement {
  if (availableAt - now <= settings.nearHorizonSeconds * 1000) {
    return { status: 'QUEUED', gateAt: checkBackAt(availableAt, now, settings) };
  }
  return { status: 'SCHEDULED', gateAt: availableAt };
}

/** When to look again at a queued run that should have been leased by then. */
export function checkBackAt(availableAt: number, now: number, settings: Pick<TimeGateSettings, 'redeliveryGraceSeconds'>): number {
  return Math.max(availableAt, now) + settings.redeliveryGraceSeconds * 1000;
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
