// A process's share of a tenant's per-second create rate (decision 0169). The counter in the store
// stays the only authority: a process reserves places in the tenant's window of one second with one
// conditional write and spends them locally until the second ends, so a busy tenant's creates count
// with one write per block instead of one each. Requests that find a reservation in flight wait for
// it, and the next reservation asks for as many places as requests wait. A place reserved and not
// spent by the end of its second is lost, which can only make that second's limit stricter, never
// looser: beyond the requests waiting, a block stays small against the limit (`MAX_BLOCK_SHARE`),
// starts at one after a quiet second, and grows only while this process spends what it reserves.

/** Beyond the requests waiting for them, at most this share of a tenant's per-second limit is reserved in one write. */
export const MAX_BLOCK_SHARE = 1 / 20;
/** How many tenants a process keeps places for; the quietest are forgotten first. */
const MAX_TENANTS = 1000;

/**
 * One conditional write of the store's counter: `count` places in the window, if it has room for
 * all of them; otherwise nothing is counted and `counted` is what the window held.
 */
export type ReservePlaces = (count: number) => Promise<{ readonly granted: true } | { readonly granted: false; readonly counted: number }>;

interface TenantWindow {
  /** The epoch second these places belong to. */
  readonly second: number;
  /** Places reserved in `second` and not spent yet. */
  remaining: number;
  /** The size of the last block reserved, in `second`. */
  lastBlock: number;
  /** The window had no place left for this process's last ask: nothing more in this second. */
  full: boolean;
}

/** How many places to ask for beyond the requests waiting: at most a twentieth of the limit, and at least one. */
export function maxBlockOf(perSecond: number): number {
  return Math.max(1, Math.floor(perSecond * MAX_BLOCK_SHARE));
}

export class RateAllowance {
  private readonly windows = new Map<string, TenantWindow>();
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly waiting = new Map<string, number>();

  /**
   * Takes a place in the tenant's window of the second of `now`: one this process holds, or one of
   * a block reserved with `reserve`. False when the window is full (nothing was counted for it).
   */
  async take(tenantId: string, perSecond: number, now: number, reserve: ReservePlaces): Promise<boolean> {
    for (;;) {
      const window = this.windowAt(tenantId, now);
      if (window?.full) return false;
      if (window && window.remaining > 0) {
        window.remaining--;
        return true;
      }
      const pending = this.inFlight.get(tenantId);
      if (!pending) break;
      // Another request of this process is reserving: its block may hold a place for this one too.
      this.waiting.set(tenantId, (this.waiting.get(tenantId) ?? 0) + 1);
      try {
        await pending;
      } finally {
        const left = (this.waiting.get(tenantId) ?? 1) - 1;
        if (left > 0) this.waiting.set(tenantId, left);
        else this.waiting.delete(tenantId);
      }
    }
    const reservation = this.reserveBlock(tenantId, perSecond, now, reserve);
    const settled = reservation.then(
      () => undefined,
      () => undefined,
    );
    this.inFlight.set(tenantId, settled);
    try {
      return await reservation;
    } finally {
      if (this.inFlight.get(tenantId) === settled) this.inFlight.delete(tenantId);
    }
  }

  /**
   * How many places to ask for now beyond the requests waiting: one after a quiet second, then
   * twice the last block while this process spends its blocks, up to `maxBlockOf(perSecond)`.
   */
  blockSize(tenantId: string, perSecond: number, now: number): number {
    const window = this.windows.get(tenantId);
    const second = secondOf(now);
    let block = 1;
    // Places are asked for only once those held are spent: in the same second, the last block was.
    if (window?.second === second) block = window.lastBlock * 2;
    // The second before: as much as was spent of its last block, doubled only if all of it was.
    else if (window?.second === second - 1) block = window.remaining === 0 ? window.lastBlock * 2 : Math.max(1, window.lastBlock - window.remaining);
    return Math.min(maxBlockOf(perSecond), block);
  }

  private async reserveBlock(tenantId: string, perSecond: number, now: number, reserve: ReservePlaces): Promise<boolean> {
    const demand = 1 + (this.waiting.get(tenantId) ?? 0);
    let ask = Math.min(perSecond, Math.max(demand, this.blockSize(tenantId, perSecond, now)));
    for (;;) {
      const result = await reserve(ask);
      if (result.granted) {
        this.record(tenantId, now, ask - 1, false);
        return true;
      }
      // A block the window cannot hold is refused whole: ask for what it has left.
      const left = perSecond - result.counted;
      if (ask === 1 || left < 1) {
        this.record(tenantId, now, 0, true);
        return false;
      }
      ask = Math.min(ask - 1, left);
    }
  }

  private windowAt(tenantId: string, now: number): TenantWindow | undefined {
    const window = this.windows.get(tenantId);
    return window?.second === secondOf(now) ? window : undefined;
  }

  /** Records a reservation's outcome: `unspent` places added (the reserving request spent one), or the window full. */
  private record(tenantId: string, now: number, unspent: number, full: boolean): void {
    const second = secondOf(now);
    const current = this.windowAt(tenantId, now);
    const remaining = (current?.remaining ?? 0) + unspent;
    this.windows.delete(tenantId); // re-inserted last: the map's order goes from the quietest tenant to the latest
    this.windows.set(tenantId, { second, remaining, lastBlock: full ? (current?.lastBlock ?? 1) : unspent + 1, full });
    if (this.windows.size > MAX_TENANTS) {
      const quietest = this.windows.keys().next().value;
      if (quietest !== undefined) this.windows.delete(quietest);
    }
  }
}

const secondOf = (now: number): number => Math.floor(now / 1000);
