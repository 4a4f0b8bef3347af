// Wall time (process.hrtime) of one schedule evaluation, a call without I/O (`fireTimes`,
// lambdas/domain/schedule.ts; cron through `cronFireTimes`, schedule-series.ts): microseconds per
// call for dense, sparse and daylight-saving-crossing cron expressions (with seconds too), an
// interval, and excluded dates, at the counts the code asks for (1 for the next occurrence, 5 for
// a job view, 100 for the largest preview); then the one-off cost of a count's last fire time.
// Pure CPU, no AWS.
//
//   npm run bench:cron -- [--reps 200] [--counts 1,5,100]
import { parseArgs } from 'node:util';
import type { RecurringSchedule } from '../lambdas/domain/schedule-series';
import { fireTimes } from '../lambdas/domain/schedule';
import { lastOccurrenceOf } from '../lambdas/domain/schedule-series';

const { values } = parseArgs({
  options: {
    /** Evaluations per case and count; the figure is their median. */
    reps: { type: 'string', default: '200' },
    counts: { type: 'string', default: '1,5,100' },
  },
});
const reps = Number(values.reps);
const counts = values.counts.split(',').map(Number);
if (!Number.isInteger(reps) || reps < 1 || counts.some((n) => !Number.isInteger(n) || n < 1)) {
  throw new Error('--reps and --counts: positive integers');
}

interface Case {
  readonly name: string;
  readonly schedule: RecurringSchedule;
  readonly from: string;
}

const cases: Case[] = [
  { name: 'dense, UTC', schedule: { kind: 'cron', expression: '* * * * *', timezone: 'UTC' }, from: '2026-06-01T00:00:00Z' },
  { name: 'dense, New York', schedule: { kind: 'cron', expression: '* * * * *', timezone: 'America/New_York' }, from: '2026-06-01T00:00:00Z' },
  { name: 'every 15 min across fall back', schedule: { kind: 'cron', expression: '*/15 * * * *', timezone: 'America/New_York' }, from: '2026-11-01T04:00:00Z' },
  { name: 'sparse (0 9 1 1 *)', schedule: { kind: 'cron', expression: '0 9 1 1 *', timezone: 'Europe/Paris' }, from: '2026-06-01T00:00:00Z' },
  { name: 'weekdays 09:00', schedule: { kind: 'cron', expression: '0 9 * * MON-FRI', timezone: 'Europe/Paris' }, from: '2026-06-01T00:00:00Z' },
  { name: '30 2 * * * NY, March gap', schedule: { kind: 'cron', expression: '30 2 * * *', timezone: 'America/New_York' }, from: '2026-03-07T00:00:00Z' },
  { name: '30 1 * * * NY, November overlap', schedule: { kind: 'cron', expression: '30 1 * * *', timezone: 'America/New_York' }, from: '2026-10-31T00:00:00Z' },
  { name: 'seconds, every 5 s, NY', schedule: { kind: 'cron', expression: '*/5 * * * * *', timezone: 'America/New_York' }, from: '2026-06-01T00:00:00Z' },
  {
    name: 'seconds across the March gap',
    schedule: { kind: 'cron', expression: '*/30 * 2 * * *', timezone: 'America/New_York' },
    from: '2026-03-07T00:00:00Z',
  },
  {
    name: 'weekdays, 10 excluded dates',
    schedule: {
      kind: 'cron',
      expression: '0 9 * * MON-FRI',
      timezone: 'Europe/Paris',
      excludeDates: [
        '2026-06-01',
        '2026-06-02',
        '2026-06-03',
        '2026-06-04',
        '2026-06-05',
        '2026-06-08',
        '2026-06-09',
        '2026-06-10',
        '2026-06-11',
        '2026-06-12',
      ],
    },
    from: '2026-06-01T00:00:00Z',
  },
  { name: 'interval PT15M', schedule: { kind: 'every', interval: 'PT15M', anchor: '2026-01-01T00:07:00Z', timezone: 'UTC' }, from: '2026-06-01T00:00:00Z' },
];

const label = (schedule: RecurringSchedule): string => (schedule.kind === 'cron' ? schedule.expression : `every ${schedule.interval}`);

function microsPerCall(schedule: RecurringSchedule, from: number, count: number): number {
  const samples: number[] = [];
  for (let i = 0; i < reps; i++) {
    const start = process.hrtime.bigint();
    fireTimes({ schedule }, from, count);
    samples.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)] ?? Number.NaN;
}

// Warm up the JIT and the zone formatters before measuring.
for (let i = 0; i < 10; i++) for (const c of cases) fireTimes({ schedule: c.schedule }, Date.parse(c.from), 5);

const header = ['expression', 'zone', ...counts.map((n) => `N=${n} (µs)`)];
const rows = cases.map((c) => [
  `${c.name}: ${label(c.schedule)}`,
  c.schedule.timezone,
  ...counts.map((n) => microsPerCall(c.schedule, Date.parse(c.from), n).toFixed(0)),
]);
console.log(`fireTimes, median of ${reps} calls, Node ${process.version}`);
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
for (const row of [header, widths.map((w) => '-'.repeat(w)), ...rows]) {
  console.log(row.map((cell, i) => (i < 2 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('  '));
}

// A count's last fire time (maxOccurrences): computed once per process and schedule, then cached.
console.log('\nlastOccurrenceOf, one call (uncached): the last of maxOccurrences fire times');
for (const [expression, max] of [
  ['0 9 * * *', 1_000],
  ['* * * * *', 100_000],
  ['* * * * * *', 100_000],
] as const) {
  const start = process.hrtime.bigint();
  lastOccurrenceOf({ kind: 'cron', expression, timezone: 'America/New_York', startAt: '2026-01-01T00:00:00Z', maxOccurrences: max });
  console.log(`  ${expression.padEnd(12)} maxOccurrences ${String(max).padStart(7)}: ${(Number(process.hrtime.bigint() - start) / 1e6).toFixed(1)} ms`);
}
