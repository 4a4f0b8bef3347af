// The wall-time walk (lambdas/domain/cron-wall-times.ts) against cron-parser's own next(): the
// same matches, in order, for every kind of field the syntax accepts and for what stored jobs
// may still hold.
import { CronExpressionParser } from 'cron-parser';
import { describe, expect, it } from 'vitest';
import { CronWallTimes } from '../../lambdas/domain/cron-wall-times';

const EXPRESSIONS = [
  '* * * * *',
  '*/15 9-17 * * MON-FRI',
  '5/20 0 1 JAN,JUL *',
  '0 0 1-15/7 * *',
  '0 12 * * 0-7/2',
  '0 12 * * 5-7',
  '0 12 * * 1-7/3',
  '30 2 * * 7',
  '0 0 13 * FRI', // either day field
  '0 0 */2 * MON', // a stepped day of month is restricted too
  '0 9 L * *',
  '0 9 1,L * *',
  '0 9 L 2 *',
  '0 9 L * 5', // L or a Friday
  '0 9 * * 5L',
  '0 9 * * 0L',
  '0 9 * * MON#2',
  '0 9 * * 5#5',
  '0 9 15 * SUN#1',
  '0 0 29 2 *',
  '0 0 31 * *',
  '0 9 1 1 *',
  '59 23 31 12 *',
  '0,30 1-3 * OCT,MAR SUN',
  // Six fields: seconds first.
  '* * * * * *',
  '*/10 * * * * *',
  '30 0 9 * * MON-FRI',
  '0,15,45 */7 1-3 * * *',
  '5-10/2 59 23 L * *',
  '59 59 23 31 12 *',
  // Accepted before the syntax was narrowed; stored jobs may hold them.
  '0 9 ? * MON',
  'H H * * *',
  '0 9 * * 5L,1',
];

function cronParserMatches(expression: string, start: number, count: number): number[] {
  const parsed = CronExpressionParser.parse(expression, { tz: 'UTC', currentDate: new Date(start - 1000), hashSeed: expression });
  return Array.from({ length: count }, () => parsed.next().getTime());
}

function walkMatches(expression: string, start: number, count: number): number[] {
  const walk = new CronWallTimes(CronExpressionParser.parse(expression, { tz: 'UTC', currentDate: new Date(0), hashSeed: expression }));
  const times = walk.from(start);
  return Array.from({ length: count }, () => times.next() ?? Number.NaN);
}

describe('the wall-time walk', () => {
  it.each(EXPRESSIONS)('matches what cron-parser matches: %s', (expression) => {
    for (const start of ['2026-01-01T00:00:00Z', '2027-02-27T23:59:00Z', '2028-02-28T09:00:00Z']) {
      const iso = (times: number[]): string[] => times.map((t) => new Date(t).toISOString());
      expect(iso(walkMatches(expression, Date.parse(start), 40))).toEqual(iso(cronParserMatches(expression, Date.parse(start), 40)));
    }
  });

  it('finds a rare day as cron-parser does: a fifth Sunday in February', () => {
    const start = Date.parse('2026-01-01T00:00:00Z');
    expect(walkMatches('0 0 * 2 SUN#5', start, 2)).toEqual(cronParserMatches('0 0 * 2 SUN#5', start, 2));
    expect(new Date(walkMatches('0 0 * 2 SUN#5', start, 1)[0] ?? 0).toISOString()).toBe('2032-02-29T00:00:00.000Z');
  });

  it('starts at the given wall time when it matches', () => {
    expect(walkMatches('0 9 * * *', Date.parse('2026-01-01T09:00:00Z'), 1)).toEqual([Date.parse('2026-01-01T09:00:00Z')]);
  });
});
