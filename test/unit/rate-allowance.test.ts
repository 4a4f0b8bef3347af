// A process's places in a tenant's per-second create window (decision 0169): what it spends without
// a write, how many places it asks for, and what it does at the limit. The store's counter is an
// in-memory window here with the same rule (a block it cannot hold is refused whole).
import { describe, expect, it } from 'vitest';
import type { ReservePlaces } from '../../lambdas/domain/rate-allowance';
import { maxBlockOf, RateAllowance } from '../../lambdas/domain/rate-allowance';

const second = (n: number, ms = 0): number => Date.parse('2030-01-01T00:00:00.000Z') + n * 1000 + ms;

/** One tenant's window in the store, shared by every process: the asks it saw, and what it counted. */
function storeWindow(limit: number, answerAfter: () => Promise<void> = () => Promise.resolve()) {
  const window = { counted: 0, asks: [] as number[] };
  const reserve: ReservePlaces = async (count) => {
    window.asks.push(count);
    await answerAfter();
    if (window.counted + count > limit) return { granted: false, counted: window.counted };
    window.counted += count;
    return { granted: true };
  };
  return { window, reserve };
}

describe('RateAllowance', () => {
  it('asks for one place after a quiet second, then doubles while its blocks are spent, up to a twentieth of the limit', async () => {
    const allowance = new RateAllowance();
    const { window, reserve } = storeWindow(100);
    for (let i = 0; i < 30; i++) expect(await allowance.take('t', 100, second(0, i), reserve)).toBe(true);
    expect(window.asks).toEqual([1, 2, 4, 5, 5, 5, 5, 5]);
    expect(window.counted).toBe(32); // 2 places held, unspent
    // The next second goes on from the last block, all of which was spent; after a quiet one, from one.
    expect(allowance.blockSize('t', 100, second(1))).toBe(3);
    expect(allowance.blockSize('t', 100, second(3))).toBe(1);
  });

  it('spends no place of an earlier second', async () => {
    const allowance = new RateAllowance();
    const first = storeWindow(100);
    await allowance.take('t', 100, second(0), first.reserve);
    await allowance.take('t', 100, second(0), first.reserve); // a block of 2: one held
    const next = storeWindow(100);
    expect(await allowance.take('t', 100, second(1), next.reserve)).toBe(true);
    expect(next.window.asks).toHaveLength(1);
  });

  it('keeps each tenant apart', async () => {
    const allowance = new RateAllowance();
    const a = storeWindow(100);
    const b = storeWindow(100);
    for (let i = 0; i < 3; i++) await allowance.take('a', 100, second(0), a.reserve); // 1, then a block of 2
    await allowance.take('b', 100, second(0), b.reserve);
    expect(a.window.asks).toEqual([1, 2]);
    expect(b.window.asks).toEqual([1]);
  });

  it('lets concurrent requests wait for the reservation in flight, and asks next for as many as wait', async () => {
    const allowance = new RateAllowance();
    const { window, reserve } = storeWindow(100, () => new Promise((resolve) => setTimeout(resolve, 5)));
    const taken = await Promise.all(Array.from({ length: 10 }, () => allowance.take('t', 100, second(0), reserve)));
    expect(taken).toEqual(Array.from({ length: 10 }, () => true));
    expect(window.asks).toEqual([1, 9]);
    expect(window.counted).toBe(10);
  });

  it('admits exactly the limit from one process: a block the window cannot hold becomes what it has left', async () => {
    const allowance = new RateAllowance();
    const { window, reserve } = storeWindow(12);
    const taken: boolean[] = [];
    // maxBlockOf(12) is 1: one place at a time.
    for (let i = 0; i < 14; i++) taken.push(await allowance.take('t', 12, second(0), reserve));
    expect(taken.filter(Boolean)).toHaveLength(12);
    expect(window.counted).toBe(12);

    const big = new RateAllowance();
    const store = storeWindow(100);
    store.window.counted = 97; // other processes' places
    const results = await Promise.all(Array.from({ length: 6 }, () => big.take('t', 100, second(0), store.reserve)));
    expect(results.filter(Boolean)).toHaveLength(3);
    expect(store.window.counted).toBe(100);
  });

  it('refuses without a write for the rest of a second once the window had no place left', async () => {
    const allowance = new RateAllowance();
    const { window, reserve } = storeWindow(2);
    expect(await allowance.take('t', 2, second(0), reserve)).toBe(true);
    expect(await allowance.take('t', 2, second(0), reserve)).toBe(true);
    expect(await allowance.take('t', 2, second(0), reserve)).toBe(false);
    const asks = window.asks.length;
    expect(await allowance.take('t', 2, second(0, 900), reserve)).toBe(false);
    expect(window.asks).toHaveLength(asks);
    // A new second is a new window.
    const next = storeWindow(2);
    expect(await allowance.take('t', 2, second(1), next.reserve)).toBe(true);
  });

  it('under a small limit, asks one place at a time beyond the requests waiting', () => {
    expect([1, 5, 19, 20, 39, 40, 100, 100_000].map(maxBlockOf)).toEqual([1, 1, 1, 1, 1, 2, 5, 5000]);
  });

  it('lets a waiting request reserve for itself when the reservation it waited for fails', async () => {
    const allowance = new RateAllowance();
    let calls = 0;
    const reserve: ReservePlaces = async () => {
      calls++;
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (calls === 1) throw new Error('the store did not answer');
      return { granted: true };
    };
    const [first, second_] = await Promise.allSettled([allowance.take('t', 100, second(0), reserve), allowance.take('t', 100, second(0), reserve)]);
    expect(first.status).toBe('rejected');
    expect(second_).toEqual({ status: 'fulfilled', value: true });
  });
});
