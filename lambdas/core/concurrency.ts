// Work over a list with a bound on how much is in flight at once.

/** `fn` over every item, at most `limit` at once; results in the items' order. */
export async function mapWithConcurrency<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index] as T);
    }
  });
  await Promise.all(workers);
  return results;
}

/**
 * Work on one key done one at a time, in the order asked (a process's continuations of one workflow
 * run, decision 0179): each waits for the work on its key before it, not for other keys' work.
 */
export class KeyedTurns {
  private readonly tails = new Map<string, Promise<void>>();

  async inTurn<T>(key: string, work: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    let done!: () => void;
    const tail = before.then(() => new Promise<void>((resolve) => (done = resolve)));
    this.tails.set(key, tail);
    await before;
    try {
      return await work();
    } finally {
      done();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /** Keys with work under way or waiting (for tests). */
  get size(): number {
    return this.tails.size;
  }
}
