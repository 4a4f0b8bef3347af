// What the load benches share: the workload (which runs, for which tenant, due when), an open-loop
// driver that offers it at a set rate, a local HTTP target, and the figures (throughput in a
// steady window, start lag percentiles) printed the same way for every system measured.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export type RunKind = 'now' | 'delay';

/** One run the workload asks for: whose, which kind, and how long after its create it is due. */
export interface WorkItem {
  readonly index: number;
  readonly tenant: string;
  readonly kind: RunKind;
  /** 0 for run-now. */
  readonly delaySeconds: number;
}

export interface WorkloadSpec {
  /** Runs offered per second. */
  readonly rate: number;
  readonly seconds: number;
  readonly tenants: readonly string[];
  /** Share of each kind, summing to 1. */
  readonly mix: Readonly<Record<RunKind, number>>;
  /** Delayed runs are due 1 to this many seconds after their create. */
  readonly maxDelaySeconds: number;
}

/** `now:0.5,delay:0.5` → shares of each kind. */
/** The workload's command-line options, the same for the scheduler and its peer. */
export const WORKLOAD_OPTIONS = {
  rate: { type: 'string', default: '50' },
  seconds: { type: 'string', default: '30' },
  tenants: { type: 'string', default: '4' },
  mix: { type: 'string', default: 'now:0.5,delay:0.5' },
  'max-delay': { type: 'string', default: '5' },
} as const;

export function parseMix(text: string): Record<RunKind, number> {
  const mix: Record<RunKind, number> = { now: 0, delay: 0 };
  for (const part of text.split(',')) {
    const [kind, share] = part.split(':');
    if (kind !== 'now' && kind !== 'delay') throw new Error(`--mix: unknown kind "${kind ?? ''}" (now, delay)`);
    const value = Number(share ?? '1');
    if (!(value >= 0)) throw new Error(`--mix: share of ${kind} must be a number >= 0`);
    mix[kind] = value;
  }
  const total = mix.now + mix.delay;
  if (total <= 0) throw new Error('--mix: give at least one kind a share');
  return { now: mix.now / total, delay: mix.delay / total };
}

/** The i-th run of the workload: deterministic, so every system gets the same sequence. */
export function workItem(spec: WorkloadSpec, index: number): WorkItem {
  const tenant = spec.tenants[index % spec.tenants.length] ?? 'tenant';
  // A low-discrepancy sequence spreads the kinds evenly through time rather than in runs.
  const u = (index * 0.618_033_988_75) % 1;
  const kind: RunKind = u < spec.mix.now ? 'now' : 'delay';
  const delaySeconds = kind === 'now' ? 0 : 1 + (index % Math.max(1, spec.maxDelaySeconds));
  return { index, tenant, kind, delaySeconds };
}

export interface DriveResult {
  readonly offered: number;
  readonly submitted: number;
  readonly submitErrors: number;
  readonly startedAt: number;
  readonly endedAt: number;
  /** The last submission's lateness against its slot (ms): how far behind the driver fell. */
  readonly behindMs: number;
  readonly firstError?: string;
}

/**
 * Offers the workload open loop: item i is submitted at start + i/rate whatever the system's
 * answers, with at most `maxInFlight` submissions outstanding (beyond that the driver falls behind,
 * which shows as a created rate under the offered one).
 */
export async function drive(spec: WorkloadSpec, maxInFlight: number, submit: (item: WorkItem) => Promise<void>): Promise<DriveResult> {
  const total = Math.round(spec.rate * spec.seconds);
  const startedAt = Date.now();
  let inFlight = 0;
  let submitted = 0;
  let submitErrors = 0;
  let firstError: string | undefined;
  let behindMs = 0;
  const slotFreed: (() => void)[] = [];
  const pending = new Set<Promise<void>>();
  for (let index = 0; index < total; index++) {
    const due = startedAt + (index * 1000) / spec.rate;
    const wait = due - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    while (inFlight >= maxInFlight) await new Promise<void>((resolve) => slotFreed.push(resolve));
    behindMs = Math.max(0, Date.now() - due);
    inFlight++;
    const done = submit(workItem(spec, index))
      .then(() => {
        submitted++;
      })
      .catch((error: unknown) => {
        submitErrors++;
        firstError ??= error instanceof Error ? error.message : String(error);
      })
      .finally(() => {
        inFlight--;
        pending.delete(done);
        slotFreed.shift()?.();
      });
    pending.add(done);
  }
  await Promise.all(pending);
  return { offered: total, submitted, submitErrors, startedAt, endedAt: Date.now(), behindMs, ...(firstError ? { firstError } : {}) };
}

/** One execution as read back from the system: when it was due, leased and finished (epoch ms). */
export interface Execution {
  readonly kind: RunKind;
  readonly dueAt: number;
  readonly startedAt: number | null;
  readonly finishedAt: number | null;
  readonly succeeded: boolean;
}

export interface PhaseFigures {
  readonly system: string;
  readonly phase: string;
  readonly offeredRate: number;
  /** Submissions accepted per second over the driving time. */
  readonly createdRate: number;
  /** Executions finished per second in the steady window. */
  readonly executionsPerSecond: number;
  readonly lag: LagFigures;
  readonly lagByKind: Partial<Record<RunKind, LagFigures>>;
  readonly errors: number;
  readonly notes: string[];
}

export interface LagFigures {
  readonly count: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly max: number;
}

export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

export function lagFigures(lags: readonly number[]): LagFigures {
  const sorted = [...lags].sort((a, b) => a - b);
  return { count: sorted.length, p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99), max: sorted.at(-1) ?? Number.NaN };
}

/**
 * The figures of one phase. Throughput counts executions that finished inside the steady window:
 * from `warmupSeconds` after the first submission (delayed runs have come due, pollers are busy)
 * to the end of driving, so the drain after the load stops does not flatter or hurt it.
 */
export function phaseFigures(
  system: string,
  phase: string,
  spec: WorkloadSpec,
  drive: DriveResult,
  executions: readonly Execution[],
  warmupSeconds: number,
  notes: string[] = [],
): PhaseFigures {
  const windowStart = drive.startedAt + warmupSeconds * 1000;
  const windowEnd = drive.startedAt + spec.seconds * 1000;
  const inWindow = executions.filter(
    (execution) => execution.succeeded && execution.finishedAt !== null && execution.finishedAt >= windowStart && execution.finishedAt < windowEnd,
  ).length;
  const lagOf = (execution: Execution): number[] => (execution.startedAt === null ? [] : [execution.startedAt - execution.dueAt]);
  const lagByKind: Partial<Record<RunKind, LagFigures>> = {};
  for (const kind of ['now', 'delay'] as const) {
    const lags = executions.filter((execution) => execution.kind === kind).flatMap(lagOf);
    if (lags.length > 0) lagByKind[kind] = lagFigures(lags);
  }
  const failed = executions.filter((execution) => !execution.succeeded).length;
  // A run that never started has no lag: the percentiles are of the runs that did, a lower bound when any did not.
  const unstarted = executions.filter((execution) => execution.startedAt === null).length;
  const early = executions.flatMap(lagOf).filter((lag) => lag < 0).length;
  return {
    system,
    phase,
    offeredRate: spec.rate,
    createdRate: drive.submitted / ((drive.endedAt - drive.startedAt) / 1000),
    executionsPerSecond: inWindow / Math.max(1, spec.seconds - warmupSeconds),
    lag: lagFigures(executions.flatMap(lagOf)),
    lagByKind,
    errors: drive.submitErrors + failed,
    notes: [
      ...notes,
      ...(drive.firstError ? [`first submit error: ${drive.firstError}`] : []),
      ...(failed > 0 ? [`${failed} runs did not succeed`] : []),
      ...(unstarted > 0 ? [`${unstarted} runs never started: the start lag percentiles leave them out, so they are a lower bound`] : []),
      ...(early > 0 ? [`${early} runs started before they were due`] : []),
      ...(drive.behindMs > 1000 ? [`driver fell ${(drive.behindMs / 1000).toFixed(1)} s behind the offered rate`] : []),
    ],
  };
}

const fmt = (value: number, digits = 0): string => (Number.isFinite(value) ? value.toFixed(digits) : '-');

/** The results table: one line per system and phase, lag in milliseconds. */
export function printTable(rows: readonly PhaseFigures[]): void {
  const header = ['system', 'phase', 'offered/s', 'created/s', 'exec/s', 'lag p50', 'p95', 'p99', 'max', 'errors'];
  const lines = rows.map((row) => [
    row.system,
    row.phase,
    fmt(row.offeredRate, 1),
    fmt(row.createdRate, 1),
    fmt(row.executionsPerSecond, 1),
    fmt(row.lag.p50),
    fmt(row.lag.p95),
    fmt(row.lag.p99),
    fmt(row.lag.max),
    String(row.errors),
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...lines.map((line) => (line[column] ?? '').length)));
  const render = (cells: readonly string[]) =>
    cells.map((cell, column) => (column < 2 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join('  ');
  console.log(render(header));
  console.log(widths.map((width) => '-'.repeat(width)).join('  '));
  for (const line of lines) console.log(render(line));
  for (const row of rows) {
    const kinds = Object.entries(row.lagByKind).map(([kind, lag]) => `${kind} p50/p95/p99 ${fmt(lag.p50)}/${fmt(lag.p95)}/${fmt(lag.p99)} ms (${lag.count})`);
    console.log(`  ${row.system} ${row.phase}: ${[...kinds, ...row.notes].join('; ')}`);
  }
}

export interface LocalTarget {
  readonly url: string;
  readonly calls: () => number;
  close(): Promise<void>;
}

/** The HTTP target every system calls once per execution: answers 200 at once. */
export async function startTarget(): Promise<LocalTarget> {
  let calls = 0;
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      calls++;
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  // Longer than any phase: Node's default (5 s) closes idle sockets while the scheduler's
  // keep-alive agent may be reusing one, and the run fails with a NETWORK_ERROR (then retries).
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 121_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    calls: () => calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A system the load bench drives: the scheduler, or a peer. One session per phase. */
export interface SystemUnderTest {
  readonly name: string;
  /** Forgets what earlier phases submitted. */
  beginPhase(): Promise<void>;
  submit(item: WorkItem): Promise<void>;
  /** Waits (up to `timeoutMs`) until every submitted run has ended, then reads them back. */
  collect(timeoutMs: number): Promise<Execution[]>;
  /** Anything worth printing about the phase (requests per execution, for instance). */
  phaseNotes(executions: number): string[];
  stop(): Promise<void>;
}

/** Polls `probe` every `pollMs` until `accept` takes its value; throws naming `what` after `timeoutMs`. */
export async function waitFor<T>(probe: () => Promise<T>, accept: (value: T) => boolean, timeoutMs: number, what: string, pollMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (accept(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
