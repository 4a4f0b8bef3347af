import { describe, expect, it } from 'vitest';
import { isValidTimeZone, offsetAt, timeZoneCacheSizes } from '../../lambdas/domain/time-zone';

/** The `n`th of the 2^k spellings of `zone` that differ only in the case of its letters. */
function spelling(zone: string, n: number): string {
  let bit = 0;
  return [...zone]
    .map((c) => {
      if (!/[a-z]/i.test(c)) return c;
      const upper = ((n >> bit++) & 1) === 1;
      return upper ? c.toUpperCase() : c.toLowerCase();
    })
    .join('');
}

describe('time zone formatter cache', () => {
  it('shares one formatter between the spellings of a zone, and bounds the spellings it remembers', () => {
    const instant = Date.parse('2026-07-01T12:00:00Z');
    offsetAt(instant, 'America/New_York');
    const before = timeZoneCacheSizes();
    for (let n = 0; n < 5000; n++) {
      expect(offsetAt(instant, spelling('America/New_York', n))).toBe(-4 * 3_600_000);
    }
    expect(isValidTimeZone('US/Eastern')).toBe(true); // an alias of the same zone
    const after = timeZoneCacheSizes();
    expect(after.formatters).toBe(before.formatters);
    expect(after.spellings).toBeLessThanOrEqual(1024);
  });

  it('keeps at most 256 formatters however many zones are used', () => {
    for (const zone of Intl.supportedValuesOf('timeZone')) offsetAt(0, zone);
    expect(Intl.supportedValuesOf('timeZone').length).toBeGreaterThan(256);
    expect(timeZoneCacheSizes().formatters).toBeLessThanOrEqual(256);
  });

  it('still refuses an unknown zone', () => {
    expect(isValidTimeZone('Europe/Atlantis')).toBe(false);
  });
});
