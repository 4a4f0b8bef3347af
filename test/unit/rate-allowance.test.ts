// A process's reserved places in a tenant's per-second create window (decision 0169): what it may
// spend without a write, and how many places it asks for next.
import { describe, expect, it } from 'vitest';
import { maxBlockOf, RateAllowance } from '../../lambdas/domain/rate-allowance';

const second = (n: number, ms = 0): number => Date.parse('2030-01-01T00:00:00.000Z') + n * 1000 + ms;

describe('RateAllowance', () => {
  it('holds no place before it reserves one, and the request that reserves a place spends it', () => {
    const allowance = new RateAllowance();
    expect(allowance.spend('t', second(0))).toBe(false);
    allowance.reserved('t', 1, second(0));
    expect(allowance.spend('t', second(0, 10))).toBe(false);
  });

  it('spends the rest of a block within its second, and none of it after', () => {
    const allowance = new RateAllowance();
    allowance.reserved('t', 4, second(0, 100));
    expect([1, 2, 3].map(() => allowance.spend('t', second(0, 900)))).toEqual([true, true, true]);
    expect(allowance.spend('t', second(0, 950))).toBe(false);

    allowance.reserved('t', 4, second(1, 100));
    expect(allowance.spend('t', second(2))).toBe(false); // a new second: what was left is lost
  });

  it('keeps each tenant apart', () => {
    const allowance = new RateAllowance();
    allowance.reserved('a', 5, second(0));
    expect(allowance.spend('b', second(0))).toBe(false);
    expect(allowance.spend('a', second(0))).toBe(true);
  });

  it('asks for one place after a quiet second, then doubles while its blocks are spent, up to a twentieth of the limit', () => {
    const allowance = new RateAllowance();
    const sizes: number[] = [];
    for (let i = 0; i < 6; i++) {
      const size = allowance.blockSize('t', 100, second(0, i));
      sizes.push(size);
      allowance.reserved('t', size, second(0, i));
      while (allowance.spend('t', second(0, i)));
    }
    expect(sizes).toEqual([1, 2, 4, 5, 5, 5]);
    // The next second goes on from the last block, all of which was spent.
    expect(allowance.blockSize('t', 100, second(1))).toBe(5);
    // After a second with nothing reserved, it starts again from one.
    expect(allowance.blockSize('t', 100, second(3))).toBe(1);
  });

  it('in the next second, asks for what was spent of a block that was not all spent', () => {
    const allowance = new RateAllowance();
    allowance.reserved('t', 8, second(0));
    allowance.spend('t', second(0));
    allowance.spend('t', second(0)); // 3 of the 8 spent (the reserving request's included), 5 lost
    expect(allowance.blockSize('t', 1000, second(1))).toBe(3);
  });

  it('reserves one place at a time under a small limit, so that the limit counts every request', () => {
    expect([1, 5, 19, 20, 39, 40, 100, 100_000].map(maxBlockOf)).toEqual([1, 1, 1, 1, 1, 2, 5, 5000]);
    const allowance = new RateAllowance();
    allowance.reserved('t', 1, second(0));
    expect(allowance.blockSize('t', 19, second(0))).toBe(1);
  });

  it('adds a block reserved while places of the same second were still held', () => {
    const allowance = new RateAllowance();
    allowance.reserved('t', 2, second(0)); // one held
    allowance.reserved('t', 3, second(0)); // a concurrent request reserved too: 1 + 2 held
    expect([1, 2, 3, 4].map(() => allowance.spend('t', second(0)))).toEqual([true, true, true, false]);
  });
});
