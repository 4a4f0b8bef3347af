// Debounced triggers through the API and the local runtime (issue 19 item 10): the triggers of a
// window coalesce into one run, due at the window's end and carrying the last payload; racing
// triggers open one window; a trigger after the window's run started opens a new one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scheduler, TargetServer } from './harness';
import { eventually, startScheduler, startTarget } from './harness';

describe('a debounced trigger', () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  let jobId: string;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 2 });
    target = await startTarget(() => ({ status: 200 }));
    const created = await scheduler.api('POST', '/v1/jobs', {
      name: 'debounced',
      type: 'sync',
      schedule: { kind: 'cron', expression: '0 0 1 1 *' },
      target: { kind: 'http', url: target.url },
      payload: { from: 'job' },
    });
    expect(created.status).toBe(201);
    jobId = created.body.job.jobId as string;
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  const trigger = (body: Record<string, unknown>) => scheduler.api('POST', `/v1/jobs/${jobId}/trigger`, body);

  it('refuses a window out of range with a 400 naming it', async () => {
    for (const debounceSeconds of [0, 3601, 1.5]) {
      const refused = await trigger({ debounceSeconds });
      expect(refused.status).toBe(400);
      expect(refused.body.errors[0].path).toBe('debounceSeconds');
    }
  });

  it('coalesces the triggers of a window into one run at its end, carrying the last payload', async () => {
    const first = await trigger({ debounceSeconds: 3, payload: { n: 1 } });
    expect(first.status).toBe(202);
    const run = first.body.run as { runId: string; availableAt: string; createdAt: string };
    expect(Date.parse(run.availableAt) - Date.parse(run.createdAt)).toBe(3_000);
    const second = await trigger({ debounceSeconds: 3, payload: { n: 2 } });
    const third = await trigger({ debounceSeconds: 3, payload: { n: 3 } });
    expect([second.status, third.status]).toEqual([202, 202]);
    expect([second.body.run.runId, third.body.run.runId]).toEqual([run.runId, run.runId]);

    const done = await eventually(
      async () => (await scheduler.api('GET', `/v1/runs/${run.runId}`)).body,
      (body) => body.status === 'SUCCEEDED',
      30_000,
    );
    expect(done.attempt).toBe(1);
    const calls = target.calls.filter((call) => call.headers['x-run-id'] === run.runId);
    expect(calls).toHaveLength(1);
    expect(JSON.parse(calls[0]!.body)).toEqual({ n: 3 });
    // Not before the window's end.
    expect(calls[0]!.at).toBeGreaterThanOrEqual(Date.parse(run.availableAt));

    // The window's run has started: the next trigger opens a new window, with the job's payload.
    const next = await trigger({ debounceSeconds: 1 });
    expect(next.body.run.runId).not.toBe(run.runId);
    await eventually(
      () => Promise.resolve(target.calls.filter((call) => call.headers['x-run-id'] === next.body.run.runId)),
      (found) => found.length === 1,
      30_000,
    );
    expect(JSON.parse(target.calls.find((call) => call.headers['x-run-id'] === next.body.run.runId)!.body)).toEqual({ from: 'job' });
  });

  it('opens one window for triggers that race', async () => {
    const raced = await Promise.all(Array.from({ length: 6 }, (_, i) => trigger({ debounceSeconds: 2, payload: { i } })));
    expect(raced.every((response) => response.status === 202)).toBe(true);
    const runIds = new Set(raced.map((response) => response.body.run.runId as string));
    expect(runIds.size).toBe(1);
    const [runId] = [...runIds];
    await eventually(
      async () => (await scheduler.api('GET', `/v1/runs/${runId}`)).body.status as string,
      (status) => status === 'SUCCEEDED',
      30_000,
    );
    expect(target.calls.filter((call) => call.headers['x-run-id'] === runId)).toHaveLength(1);
  });
});
