// KeyedTurns (decision 0179): work on one key runs one at a time in the order asked, other keys'
// work does not wait, a failure passes the turn on, and nothing is kept once the work is done.
import { describe, expect, it } from 'vitest';
import { KeyedTurns } from '../../lambdas/core/concurrency';

const tick = () => new Promise<void>((resolve) => setTimeout(resolve, 1));

describe('KeyedTurns', () => {
  it('runs one key’s work in turn, in the order asked, and other keys’ alongside', async () => {
    const turns = new KeyedTurns();
    const log: string[] = [];
    let inside = 0;
    let most = 0;
    const work = (name: string) => async () => {
      inside++;
      most = Math.max(most, inside);
      log.push(`${name}:start`);
      await tick();
      await tick();
      log.push(`${name}:end`);
      inside--;
      return name;
    };
    const results = await Promise.all([
      turns.inTurn('a', work('a1')),
      turns.inTurn('a', work('a2')),
      turns.inTurn('b', work('b1')),
      turns.inTurn('a', work('a3')),
    ]);
    expect(results).toEqual(['a1', 'a2', 'b1', 'a3']);
    const ofA = log.filter((line) => line.startsWith('a'));
    expect(ofA).toEqual(['a1:start', 'a1:end', 'a2:start', 'a2:end', 'a3:start', 'a3:end']);
    // b ran while a1 did: two at once at most (one per key).
    expect(log.indexOf('b1:start')).toBeLessThan(log.indexOf('a1:end'));
    expect(most).toBe(2);
    expect(turns.size).toBe(0);
  });

  it('passes the turn on when the work before failed', async () => {
    const turns = new KeyedTurns();
    const failed = turns.inTurn('a', async () => {
      await tick();
      throw new Error('store refused');
    });
    const next = turns.inTurn('a', () => Promise.resolve('next'));
    await expect(failed).rejects.toThrow('store refused');
    await expect(next).resolves.toBe('next');
    expect(turns.size).toBe(0);
  });
});
