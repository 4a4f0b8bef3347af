// A process's share of a tenant's per-second create rate (decision 0169). The counter in the store
// stays the only authority: a process reserves places in the tenant's window of one second with one
// conditional write and spends them locally until the second ends, so a busy tenant's creates count
// with one write per block instead of one each. A place reserved and not spent by the end of its
// second is lost, which can only make that second's limit stricter, never looser: the block stays
// small against the limit (`MAX_BLOCK_SHARE`), starts at one for each tenant and second that follows
// a quiet one, and grows only while this process keeps spending what it reserves.

/** At most this share of a tenant's per-second limit is reserved in one write. */
export const MAX_BLOCK_SHARE = 1 / 20;
/** How many tenants a process keeps places for; the quietest are forgotten first. */
const MAX_TENANTS = 1000;

interface TenantWindow {
  /** The epoch second these places belong to. */
  readonly second: number;
  /** Places reserved in `second` and not spent yet. */
  remaining: number;
  /** The size of the last block reserved, in `second`. */
  lastBlock: number;
}

/** How many places to ask for at once: never more than a twentieth of the limit, and at least one. */
export function maxBlockOf(perSecond: number): number {
  return Math.max(1, Math.floor(perSecond * MAX_BLOCK_SHARE));
}

export class RateAllowance {
  private readonly windows = new Map<string, TenantWindow>();

  /** Spends a place this process reserved in the tenant's current second; false when it holds none. */
  spend(tenantId: string, now: number): boolean {
    const window = this.windows.get(tenantId);
    if (!window || window.second !== secondOf(now) || window.remaining < 1) return false;
    window.remaining--;
    return true;
  }

  /**
   * How many places to reserve now for the tenant: one after a quiet second, then twice the last
   * block while this process keeps spending its blocks, up to `maxBlockOf(perSecond)`.
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

  /** Records `granted` places reserved in the second of `now`; the request that reserved them spends one. */
  reserved(tenantId: string, granted: number, now: number): void {
    const second = secondOf(now);
    const window = this.windows.get(tenantId);
    const carried = window && window.second === second ? window.remaining : 0;
    this.windows.delete(tenantId); // re-inserted last: the map's order is from the longest quiet to the latest
    this.windows.set(tenantId, { second, remaining: carried + granted - 1, lastBlock: granted });
    if (this.windows.size > MAX_TENANTS) {
      const quietest = this.windows.keys().next().value;
      if (quietest !== undefined) this.windows.delete(quietest);
    }
  }
}

const secondOf = (now: number): number => Math.floor(now / 1000);
