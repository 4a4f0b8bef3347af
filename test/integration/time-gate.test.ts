// Delayed and `at` runs through the real queue and pollers: never leased before their time, and
// started within the 2 s promise.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scheduler, TargetServer } from './harness';
import { eventually, jobBody, startScheduler, startTarget } from './harness';

describe('the time gate', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 4 });
    target = await startTarget();
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  it('starts delayed and at runs on time and never early', async () => {
    const schedules = [
      ...[1, 2, 3].map((seconds) => ({ kind: 'delay', seconds })),
      ...[1_250, 2_600, 3_900].map((ms) => ({ kind: 'at', at: new Date(Date.now() + ms).toISOString() })),
    ];
    const runIds: string[] = [];
    for (const schedule of schedules) {
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(target.url, { schedule }));
      expect(created.status).toBe(201);
      runIds.push(created.body.job.nextRunId);
    }
    const runs = await eventually(
      () => Promise.all(runIds.map((runId) => scheduler.deps.runs.get(runId))),
      (all) => all.every((run) => run?.status === 'SUCCEEDED'),
      20_000,
    );
    for (const run of runs) {
      const lag = Date.parse(run?.startedAt ?? '') - Date.parse(run?.scheduledFor ?? '');
      expect(lag).toBeGreaterThanOrEqual(0);
      expect(lag).toBeLessThan(2_000);
    }
    // Every target call came after its run's time.
    for (const call of target.calls) {
      const run = runs.find((r) => r?.runId === call.headers['x-run-id']);
      expect(call.at).toBeGreaterThanOrEqual(Date.parse(run?.scheduledFor ?? ''));
    }
  });
});
