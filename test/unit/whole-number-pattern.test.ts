// The page-size and window parameters' pattern says their bound (1 to max) as the check does, so the
// OpenAPI document a client or a fuzzer reads does not offer values the API refuses.
import { describe, expect, it } from 'vitest';
import { limitParam, wholeNumberPattern } from '../../lambdas/core/validation';

describe('wholeNumberPattern', () => {
  it.each([1, 9, 10, 60, 99, 100, 101, 250, 1000, 4096])('matches exactly the whole numbers from 1 to %i in digits', (max) => {
    const pattern = wholeNumberPattern(max);
    for (let value = 1; value <= max; value++) {
      expect(pattern.test(String(value)), `${value} of ${max}`).toBe(true);
      expect(pattern.test(`00${value}`), `00${value} of ${max}`).toBe(true);
    }
    for (const refused of ['0', '00', `0${max + 1}`, String(max + 1), String(max * 10), '-1', '+1', '1e2', ' 1', '1 ', '0x1', '']) {
      expect(pattern.test(refused), `${refused} of ${max}`).toBe(false);
    }
  });

  it('is what the page size checks, and says the bound in its message', () => {
    const limit = limitParam(20, 100);
    expect(limit.parse(undefined)).toBe(20);
    expect(limit.parse('100')).toBe(100);
    expect(limit.safeParse('101').error?.issues[0]?.message).toBe('must be a whole number from 1 to 100');
    expect(limit.parse('007')).toBe(7);
  });

  it('refuses a bound that is not a whole number from 1', () => {
    expect(() => wholeNumberPattern(0)).toThrow();
    expect(() => wholeNumberPattern(2.5)).toThrow();
  });
});
