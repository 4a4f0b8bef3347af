// Gathers requests made within moments of each other into one batch call. The runs of a worker
// batch lease, read their jobs and tie their messages to their leases at about the same time; on
// AWS those calls land within a few milliseconds, on a slower backend they trickle in one after
// another. A batch goes out when it is full, when no request has joined it for `quietMs`, or when
// its first request has waited `capMs`, whichever comes first.

export interface CoalescerOptions {
  /** The batch call's limit (10 for SQS batch calls, 100 keys for BatchGetItem). */
  readonly maxBatch: number;
  /** Send once no request has joined for this long. */
  readonly quietMs: number;
  /** Never hold the first request longer than this. */
  readonly capMs: number;
}

export class Coalescer<T> {
  private pending: T[] = [];
  private timer: NodeJS.Timeout | undefined;
  private firstAt = 0;

  constructor(
    private readonly options: CoalescerOptions,
    private readonly send: (batch: T[]) => void,
    private readonly now: () => number = Date.now,
  ) {}

  add(entry: T): void {
    this.pending.push(entry);
    if (this.pending.length >= this.options.maxBatch) {
      this.flush();
      return;
    }
    const now = this.now();
    if (this.pending.length === 1) this.firstAt = now;
    clearTimeout(this.timer);
    const wait = Math.max(0, Math.min(this.options.quietMs, this.firstAt + this.options.capMs - now));
    this.timer = setTimeout(() => this.flush(), wait);
  }

  /** Sends what waits now. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.send(batch);
  }
}
