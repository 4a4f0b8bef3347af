// Header values and payloads stay out of what the scheduler says: jobs whose header values (text and
// Secrets Manager secrets) and payloads carry unique markers are driven to success, a retried
// failure, a network failure, DEAD, replays, a manual trigger with its own payload, a PATCH and
// refused requests; then every read route is called. No API response carries a header value, and
// no log line (at DEBUG) or metric line carries a header value or a payload. Responses may carry a
// payload where the API shows it to its owner (a job's `payload`), which is the point of reading it.
import { randomBytes, randomUUID } from 'node:crypto';
import { CreateSecretCommand } from '@aws-sdk/client-secrets-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogCapture } from './support/log-capture';
import { captureLogs } from './support/log-capture';
import type { Scheduler, TargetServer } from './harness';
import { awsClients, eventually, jobBody, startScheduler, startTarget } from './harness';

type RunBody = Record<string, any>;
const marker = (kind: string) => `${kind}-${randomBytes(8).toString('hex')}`;

describe('no header value or payload in responses, logs or metrics', () => {
  const headerText = marker('hdrtext');
  const patchedHeaderText = marker('hdrpatched');
  const refusedHeaderText = marker('hdrrefused');
  const secretValue = marker('secretvalue');
  const payloadMark = marker('payload');
  const overrideMark = marker('override');
  const headerMarkers = [headerText, patchedHeaderText, refusedHeaderText, secretValue];
  const payloadMarkers = [payloadMark, overrideMark];

  let scheduler: Scheduler;
  let target: TargetServer;
  let logs: LogCapture;
  let secretArn: string;
  const responses: string[] = [];

  beforeAll(async () => {
    const created = await awsClients().secrets.send(new CreateSecretCommand({ Name: `it-${randomUUID().slice(0, 8)}/leak-check`, SecretString: secretValue }));
    secretArn = created.ARN!;
    logs = captureLogs('DEBUG');
    scheduler = await startScheduler({ config: { headerSecretArns: [secretArn] } });
    let flaky = 0;
    target = await startTarget((call) => {
      if (call.path.endsWith('/bad')) return { status: 400 };
      if (call.path.endsWith('/flaky')) return { status: flaky++ === 0 ? 503 : 200 };
      return { status: 200 };
    });
  });
  afterAll(async () => {
    logs.stop();
    await scheduler.stop();
    await target.stop();
  });

  /** Calls the API and keeps the answer's body for the scan. */
  async function api(method: string, path: string, body?: unknown) {
    const answer = await scheduler.api(method, path, body);
    responses.push(JSON.stringify(answer.body));
    return answer;
  }
  const runsOf = async (jobId: string): Promise<RunBody[]> =>
    ((await api('GET', `/v1/jobs/${jobId}/runs?limit=20`)).body.items as RunBody[]).sort((a, b) => a.attempt - b.attempt);
  const settled = (count: number) => (runs: RunBody[]) => runs.length >= count && runs.every((run) => ['SUCCEEDED', 'DEAD', 'FAILED'].includes(run.status));
  const fast = { retryPolicy: { maxAttempts: 2, initialDelaySeconds: 0, maxDelaySeconds: 1 } };
  const spec = (path: string, overrides: Record<string, unknown> = {}) =>
    jobBody(`${target.url}/${path}`, {
      target: { kind: 'http', url: `${target.url}/${path}`, headers: { 'X-Token': headerText, Authorization: { secretArn } } },
      payload: { note: payloadMark },
      ...fast,
      ...overrides,
    });

  it('keeps them out of every answer, log line and metric line, through success, failure, DEAD, replays, a trigger and a PATCH', async () => {
    const create = async (body: Record<string, unknown>) => {
      const created = await api('POST', '/v1/jobs', body);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      return created.body.job.jobId as string;
    };
    const ok = await create(spec('ok'));
    const flaky = await create(spec('flaky'));
    const bad = await create(spec('bad'));
    // Nothing listens there: a network failure, whose error message is recorded.
    const unreachable = await create(
      jobBody('http://127.0.0.1:9/none', {
        target: { kind: 'http', url: 'http://127.0.0.1:9/none', headers: { 'X-Token': headerText } },
        payload: { note: payloadMark },
        ...fast,
      }),
    );
    const later = await create(spec('later', { schedule: { kind: 'delay', seconds: 3600 } }));

    await eventually(() => runsOf(ok), settled(1), 30_000);
    await eventually(
      () => runsOf(flaky),
      (runs) => runs.some((run) => run.status === 'SUCCEEDED'),
      30_000,
    );
    const [dead] = await eventually(
      () => runsOf(bad),
      (runs) => runs[0]?.status === 'DEAD',
      30_000,
    );
    await eventually(
      () => runsOf(unreachable),
      (runs) => runs.some((run) => run.status === 'DEAD'),
      30_000,
    );

    // Replays: one run, then the dead list in bulk.
    expect((await api('POST', `/v1/runs/${dead!.runId}/replay`)).status).toBe(202);
    await eventually(
      () => runsOf(bad),
      (runs) => runs.length === 2 && runs[1]!.status === 'DEAD',
      30_000,
    );
    expect((await api('POST', '/v1/dead-runs/replay', {})).status).toBe(202);
    await eventually(
      () => runsOf(bad),
      (runs) => runs.length === 3 && runs[2]!.status === 'DEAD',
      30_000,
    );
    // A manual run with a payload of its own, and a PATCH of header values and payload.
    expect((await api('POST', `/v1/jobs/${ok}/trigger`, { payload: { note: overrideMark } })).status).toBe(202);
    await eventually(
      () => runsOf(ok),
      (runs) => runs.length === 2 && runs.every((run) => run.status === 'SUCCEEDED'),
      30_000,
    );
    const patched = await api('PATCH', `/v1/jobs/${later}`, {
      target: { kind: 'http', url: `${target.url}/later`, headers: { 'X-Token': patchedHeaderText, Authorization: { secretArn } } },
      payload: { note: overrideMark },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    // Refused requests: a header the scheduler sets, a value with a line break, a secret not listed.
    for (const headers of [{ Host: refusedHeaderText }, { 'X-Token': `${refusedHeaderText}\r\nX-Evil: 1` }, { 'X-Token': { secretArn: `${secretArn}x` } }]) {
      const refused = await api(
        'POST',
        '/v1/jobs',
        jobBody(target.url, { target: { kind: 'http', url: target.url, headers }, payload: { note: payloadMark } }),
      );
      expect(refused.status).toBe(400);
    }

    // Every read route.
    for (const jobId of [ok, flaky, bad, unreachable, later]) {
      await api('GET', `/v1/jobs/${jobId}`);
      for (const run of await runsOf(jobId)) await api('GET', `/v1/runs/${run.runId}`);
    }
    await api('GET', '/v1/jobs?limit=50');
    await api('GET', '/v1/runs?limit=50');
    await api('GET', '/v1/dead-runs?limit=50');
    const audit = await api('GET', '/v1/audit?limit=100');
    expect(audit.body.items.length).toBeGreaterThanOrEqual(8);
    await api('GET', '/v1/health');
    await scheduler.runtime.tickNow();

    // The markers did flow: the targets received them.
    const received = target.calls.map((call) => JSON.stringify(call.headers) + call.body).join('\n');
    for (const value of [headerText, secretValue, payloadMark, overrideMark]) expect(received).toContain(value);
    // And the capture saw the runs' lines.
    expect(logs.records().filter((line) => line.message === 'run finished').length).toBeGreaterThanOrEqual(8);

    const found = (texts: readonly string[], markers: readonly string[]) => texts.filter((text) => markers.some((value) => text.includes(value)));
    expect(found(responses, headerMarkers)).toEqual([]);
    expect(found(logs.lines, [...headerMarkers, ...payloadMarkers])).toEqual([]);
    expect(found(scheduler.metricLines, [...headerMarkers, ...payloadMarkers])).toEqual([]);
    // The audit trail records that a payload changed, not what it is.
    expect(found([JSON.stringify(audit.body)], payloadMarkers)).toEqual([]);
  });
});
