import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Coalescer } from '../../lambdas/store/coalescer';

describe('Coalescer', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  function coalescer(maxBatch = 10) {
    const sent: number[][] = [];
    const instance = new Coalescer<number>(
      { maxBatch, quietMs: 10, capMs: 50 },
      (batch) => sent.push(batch),
      () => Date.now(),
    );
    return { instance, sent };
  }

  it('sends requests that trickle in closer than the quiet time as one batch', () => {
    const { instance, sent } = coalescer();
    for (let i = 0; i < 5; i++) {
      instance.add(i);
      vi.advanceTimersByTime(6);
    }
    expect(sent).toEqual([]);
    vi.advanceTimersByTime(10);
    expect(sent).toEqual([[0, 1, 2, 3, 4]]);
  });

  it('sends once nothing has joined for the quiet time', () => {
    const { instance, sent } = coalescer();
    instance.add(1);
    vi.advanceTimersByTime(9);
    expect(sent).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(sent).toEqual([[1]]);
    instance.add(2);
    vi.advanceTimersByTime(10);
    expect(sent).toEqual([[1], [2]]);
  });

  it('never holds the first request longer than the cap, however steady the trickle', () => {
    const { instance, sent } = coalescer(100);
    for (let t = 0; t < 80; t += 5) {
      instance.add(t);
      vi.advanceTimersByTime(5);
    }
    // The first batch went at 50 ms with the ten requests made before then.
    expect(sent[0]).toEqual([0, 5, 10, 15, 20, 25, 30, 35, 40, 45]);
    vi.advanceTimersByTime(50);
    expect(sent.flat()).toHaveLength(16);
  });

  it('sends a full batch at once', () => {
    const { instance, sent } = coalescer(3);
    instance.add(1);
    instance.add(2);
    expect(sent).toEqual([]);
    instance.add(3);
    expect(sent).toEqual([[1, 2, 3]]);
    instance.add(4);
    vi.advanceTimersByTime(10);
    expect(sent).toEqual([[1, 2, 3], [4]]);
  });
});
