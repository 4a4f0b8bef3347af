// A workflow's step targets keep header values write-only, as a job's target does (decision 0110):
// the definition as every workflow route shows it has each text header value masked and a Secrets
// Manager reference as given, while the step's call still carries the real values.
import { randomBytes, randomUUID } from 'node:crypto';
import { CreateSecretCommand } from '@aws-sdk/client-secrets-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scheduler, TargetServer } from './harness';
import { awsClients, eventually, startScheduler, startTarget } from './harness';

describe("a workflow's header values", () => {
  const headerValue = `wf-hdr-${randomBytes(8).toString('hex')}`;
  const updatedValue = `wf-hdr-updated-${randomBytes(8).toString('hex')}`;
  const secretValue = `wf-secret-${randomBytes(8).toString('hex')}`;
  let secretArn: string;
  let scheduler: Scheduler;
  let target: TargetServer;

  beforeAll(async () => {
    const created = await awsClients().secrets.send(new CreateSecretCommand({ Name: `it-${randomUUID().slice(0, 8)}/wf-token`, SecretString: secretValue }));
    secretArn = created.ARN!;
    scheduler = await startScheduler({ workerConcurrency: 2, config: { headerSecretArns: [secretArn] } });
    target = await startTarget(() => ({ status: 200, body: '{}' }));
  });
  afterAll(async () => {
    await scheduler.stop();
    await target.stop();
  });

  const name = `headers-${randomUUID().slice(0, 8)}`;
  const definition = (value: string) => ({
    name,
    steps: [
      {
        id: 'call',
        target: { kind: 'http', url: `${target.url}/call`, headers: { 'X-Token': value, Authorization: { secretArn } } },
        payload: { step: 'call' },
        retryPolicy: { maxAttempts: 1 },
      },
    ],
  });
  const shownHeaders = (body: { definition: { steps: { target: { headers?: unknown } }[] } }) => body.definition.steps[0]!.target.headers;

  it('are masked in GET /v1/workflows/{id} (and every answer showing the definition); references are shown as given', async () => {
    const created = await scheduler.api('POST', '/v1/workflows', definition(headerValue));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const workflowId = created.body.workflowId as string;
    const masked = { 'X-Token': '<redacted>', Authorization: { secretArn } };

    const read = await scheduler.api('GET', `/v1/workflows/${workflowId}`);
    expect(read.status).toBe(200);
    expect(shownHeaders(read.body)).toEqual(masked);
    expect(shownHeaders(created.body)).toEqual(masked);

    const updated = await scheduler.api('POST', `/v1/workflows/${workflowId}/versions`, definition(updatedValue));
    expect(updated.status, JSON.stringify(updated.body)).toBe(201);
    expect(shownHeaders(updated.body)).toEqual(masked);
    const first = await scheduler.api('GET', `/v1/workflows/${workflowId}?version=1`);
    expect(first.status).toBe(200);
    expect(shownHeaders(first.body)).toEqual(masked);

    for (const answer of [created, read, updated, first]) {
      const text = JSON.stringify(answer.body);
      for (const value of [headerValue, updatedValue, secretValue]) expect(text).not.toContain(value);
    }

    // The values are kept, only never shown: the step's call carries them.
    const started = await scheduler.api('POST', `/v1/workflows/${workflowId}/runs`);
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const call = await eventually(
      () => Promise.resolve(target.calls.find((c) => c.path.endsWith('/call'))),
      (found) => found !== undefined,
      30_000,
    );
    expect(call!.headers['x-token']).toBe(updatedValue);
    expect(call!.headers.authorization).toBe(secretValue);
  });
});
