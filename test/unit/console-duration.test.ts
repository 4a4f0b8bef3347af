// The console's durations: rounded once, so no unit ever shows its own limit (60 s, 1000 ms).
import { describe, expect, it } from 'vitest';
import { duration } from '../../console/src/duration';

describe('durations in the console', () => {
  it('carry a rounded-up second into the minute: 1 min 59.6 s is 2 min 0 s, not 1 min 60 s', () => {
    expect(duration(119_600)).toBe('2 min 0 s');
    expect(duration(60_000 + 59_500)).toBe('2 min 0 s');
    expect(duration(60_000 + 59_499)).toBe('1 min 59 s');
    expect(duration(125_000)).toBe('2 min 5 s');
  });

  it('carry a rounded-up tenth into the next unit: 59.96 s is 1 min 0 s, 999.6 ms is 1.0 s', () => {
    expect(duration(59_960)).toBe('1 min 0 s');
    expect(duration(59_940)).toBe('59.9 s');
    expect(duration(999.6)).toBe('1.0 s');
    expect(duration(999.4)).toBe('999 ms');
  });

  it('keep the sign of a negative duration and say nothing of a missing one', () => {
    expect(duration(-1_500)).toBe('-1.5 s');
    expect(duration(-90_000)).toBe('-1 min 30 s');
    expect(duration(null)).toBe('—');
    expect(duration(Number.NaN)).toBe('—');
  });
});
