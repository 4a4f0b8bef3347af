// The worker registry (the runs a worker holds, for GET /v1/health): each write is billed on the
// whole list, so registrations close together are written as one, and an entry keeps only what the
// health report reads (decision 0177).
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MetricsRecorder } from '../../lambdas/core/metrics';
import { Telemetry } from '../../lambdas/app/telemetry';
import { processWorkerId } from '../../lambdas/app/deps';
import type { Run } from '../../lambdas/domain/run';
import type { TelemetryStore, WorkerRecord } from '../../lambdas/store/telemetry-store';

const at = Date.parse('2026-11-27T10:00:00.000Z');

function runOf(index: number): Run {
  const iso = new Date(at).toISOString();
  return {
    runId: `job_${index}.mwyu93k0.1`,
    jobId: `job_${index}`,
    tenantId: 'tenant-acme',
    jobType: 'report',
    priority: 'normal',
    scheduledFor: iso,
    attempt: 1,
    status: 'RUNNING',
    availableAt: iso,
    enqueuedAt: iso,
    startedAt: iso,
    finishedAt: null,
    leaseOwner: 'worker-1',
    leaseExpiresAt: new Date(at + 300_000).toISOString(),
    version: 1,
    leaseSeconds: 300,
    progress: null,
    error: null,
    reason: null,
    idempotencyKey: `job_${index}#${iso}`,
    trigger: 'manual',
    delivery: 'at-least-once',
    consumedAt: null,
    result: null,
    createdAt: iso,
    updatedAt: iso,
  };
}

/** A telemetry store that hands each registry write to `onWrite` and takes roll-ups silently. */
function registryStore(onWrite: (record: WorkerRecord) => unknown): TelemetryStore {
  return {
    putWorker: (record: WorkerRecord) => {
      onWrite(record);
      return Promise.resolve();
    },
    putRollup: () => Promise.resolve(),
  } as unknown as TelemetryStore;
}

describe('the worker registry', () => {
  let written: WorkerRecord[];
  let telemetry: Telemetry;

  beforeEach(() => {
    vi.useFakeTimers({ now: at });
    written = [];
    const store = registryStore((record) => written.push(record));
    const silent = new MetricsRecorder(() => undefined);
    telemetry = new Telemetry(silent, store, 'worker-1', () => Date.now());
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it("writes a batch's runs still held after a second as one write, each entry its run and tenant", async () => {
    for (let index = 0; index < 10; index++) {
      telemetry.runStarted(runOf(index), at);
      await vi.advanceTimersByTimeAsync(5);
    }
    expect(written).toEqual([]);
    await vi.advanceTimersByTimeAsync(1_500);
    expect(written).toHaveLength(1);
    expect(written[0]!.runs).toEqual(Array.from({ length: 10 }, (_, index) => ({ runId: `job_${index}.mwyu93k0.1`, tenantId: 'tenant-acme' })));
  });

  it('writes nothing for runs released within their second, and the release of a registered run at the next flush', async () => {
    telemetry.runStarted(runOf(1), at);
    telemetry.runStarted(runOf(2), at);
    await vi.advanceTimersByTimeAsync(500);
    telemetry.released(runOf(1).runId);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(written.map((record) => record.runs.map((entry) => entry.runId))).toEqual([[runOf(2).runId]]);
    telemetry.released(runOf(2).runId);
    await telemetry.flush();
    expect(written.map((record) => record.runs.length)).toEqual([1, 0]);
    // Nothing changed since: the next flush writes nothing.
    await telemetry.flush();
    expect(written).toHaveLength(2);
  });
});

describe('the roll-up of runs per minute', () => {
  it('writes a minute again at the next flush when its write failed, though the minute has ended', async () => {
    vi.useFakeTimers({ now: at });
    try {
      const minutes: string[] = [];
      let fail = true;
      const store = {
        putWorker: () => Promise.resolve(),
        putRollup: (_worker: string, rollup: { minute: string; counts: Record<string, number> }) => {
          if (fail) {
            fail = false;
            return Promise.reject(new Error('throttled'));
          }
          minutes.push(`${rollup.minute} ${JSON.stringify(rollup.counts)}`);
          return Promise.resolve();
        },
      } as unknown as TelemetryStore;
      const telemetry = new Telemetry(new MetricsRecorder(() => undefined), store, 'worker-1', () => Date.now());
      telemetry.runFinished(runOf(1), 'SUCCEEDED', 10, false);
      await telemetry.flush();
      expect(minutes).toEqual([]);
      vi.setSystemTime(at + 60_000);
      telemetry.runFinished(runOf(2), 'SUCCEEDED', 10, false);
      await telemetry.flush();
      expect(minutes.map((line) => line.slice(0, 16)).sort()).toEqual(['2026-11-27T10:00', '2026-11-27T10:01']);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("a process's worker id", () => {
  it('is its log stream and a part of its own: a sandbox started again under the same stream is another worker', () => {
    const [first, second] = [processWorkerId('2026/11/28/[$LATEST]abc'), processWorkerId('2026/11/28/[$LATEST]abc')];
    expect(first.startsWith('worker-2026/11/28/[$LATEST]abc-')).toBe(true);
    expect(first).not.toBe(second);
    expect(processWorkerId(undefined)).toMatch(/^worker-[0-9a-f]{8}$/);
  });
});

describe("an API process's external claims in the registry", () => {
  it('leave it ten minutes after their leases end, though their complete landed on another process', async () => {
    vi.useFakeTimers({ now: at });
    try {
      const written: WorkerRecord[] = [];
      const store = registryStore((record) => written.push(record));
      const telemetry = new Telemetry(new MetricsRecorder(() => undefined), store, 'worker-api', () => Date.now());
      for (let index = 0; index < 3; index++) telemetry.runClaimed(runOf(index), at);
      await vi.advanceTimersByTimeAsync(1_500);
      await telemetry.flush();
      expect(written.at(-1)!.runs).toHaveLength(3);
      // The leases end at +5 min; nine minutes past them, still shown (a lapsed lease health reports).
      vi.setSystemTime(at + 300_000 + 540_000);
      await telemetry.flush();
      expect(written.at(-1)!.runs).toHaveLength(3);
      vi.setSystemTime(at + 300_000 + 600_000);
      await telemetry.flush();
      expect(written.at(-1)!.runs).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('stay while heartbeats extend their leases, on the claiming process or another', async () => {
    vi.useFakeTimers({ now: at });
    try {
      const writtenBy = new Map<string, WorkerRecord[]>();
      const store = registryStore((record) => writtenBy.set(record.workerId, [...(writtenBy.get(record.workerId) ?? []), record]));
      const claiming = new Telemetry(new MetricsRecorder(() => undefined), store, 'worker-api-1', () => Date.now());
      const other = new Telemetry(new MetricsRecorder(() => undefined), store, 'worker-api-2', () => Date.now());
      const [first, second] = [runOf(0), runOf(1)];
      claiming.runClaimed(first, at);
      claiming.runClaimed(second, at);
      await vi.advanceTimersByTimeAsync(1_500);
      await claiming.flush();
      // An hour of heartbeats, each extending the lease 5 minutes: the first run's on the claiming
      // process, the second run's on another.
      for (let minute = 4; minute <= 60; minute += 4) {
        vi.setSystemTime(at + minute * 60_000);
        const leaseExpiresAt = new Date(at + minute * 60_000 + 300_000).toISOString();
        claiming.runHeartbeat({ ...first, leaseExpiresAt });
        other.runHeartbeat({ ...second, leaseExpiresAt });
        await claiming.flush();
        await other.flush();
      }
      const named = (workerId: string): string[] => (writtenBy.get(workerId)?.at(-1)?.runs ?? []).map((entry) => entry.runId);
      // Seen within the last ten minutes, though nothing in its list changed for the hour: the report
      // reads workers seen within the hour. Before, the claiming process's last write was at its claim.
      expect(Date.parse(writtenBy.get('worker-api-1')!.at(-1)!.lastSeenAt)).toBeGreaterThanOrEqual(at + 50 * 60_000);
      expect(named('worker-api-1')).toEqual([first.runId]);
      expect(named('worker-api-2')).toEqual([second.runId]);
      // Ten minutes past the last lease's end, both leave.
      vi.setSystemTime(at + 65 * 60_000 + 600_000);
      await claiming.flush();
      await other.flush();
      expect(named('worker-api-1')).toEqual([]);
      expect(named('worker-api-2')).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
  });
});
