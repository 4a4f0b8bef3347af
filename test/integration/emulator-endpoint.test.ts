// Local mode calls loopback targets, but a job must never reach the emulator itself: moto's control
// plane (`/moto-api/reset`) would wipe every tenant's tables and queues. The tests aim at a harmless
// path of it (`/moto-api/data.json`, a read), so that a regression cannot wipe the suite's emulator.
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type { Scheduler } from './harness';
import { eventually, jobBody, startScheduler } from './harness';

describe("the emulator's endpoint as a job's target", () => {
  const emulator = new URL(inject('awsEndpoint'));
  const port = emulator.port || '80';
  let scheduler: Scheduler;

  beforeAll(async () => {
    // A name that resolves to this machine, as any DNS name may: only the call-time check sees it.
    scheduler = await startScheduler({
      workerConcurrency: 1,
      resolveHost: (hostname) => Promise.resolve(hostname === 'rebound.example' ? [{ address: '127.0.0.1', family: 4 }] : []),
    });
  });
  afterAll(() => scheduler.stop());

  it('is refused at create in every spelling of this machine, and nothing is written', async () => {
    for (const host of ['127.0.0.1', 'localhost', '[::1]', '127.0.0.2', '0.0.0.0', 'LOCALHOST.']) {
      const created = await scheduler.api('POST', '/v1/jobs', jobBody(`http://${host}:${port}/moto-api/data.json`));
      expect(created.status, host).toBe(400);
      expect(created.body.errors, host).toEqual([{ path: 'target.url', message: expect.stringMatching(/AWS emulator/) }]);
    }
    expect((await scheduler.countJobAndRunItems()).jobs).toBe(0);
  });

  it('ends a run whose host resolves to it DEAD with TARGET_ADDRESS_BLOCKED, and the tables are still there', async () => {
    const created = await scheduler.api('POST', '/v1/jobs', jobBody(`http://rebound.example:${port}/moto-api/data.json`, { retryPolicy: { maxAttempts: 3 } }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const run = await eventually(
      async () =>
        (await scheduler.api('GET', `/v1/jobs/${created.body.job.jobId}/runs`)).body.items[0] as
          { status: string; error?: { code: string; message: string; retryable: boolean } } | undefined,
      (r) => r?.status === 'DEAD',
      30_000,
    );
    expect(run?.error).toMatchObject({ code: 'TARGET_ADDRESS_BLOCKED', retryable: false, message: expect.stringContaining('AWS emulator') });
    const { Table: table } = await scheduler.clients.dynamo.send(new DescribeTableCommand({ TableName: scheduler.config.jobsTable }));
    expect(table?.TableStatus).toBe('ACTIVE');
  });
});
