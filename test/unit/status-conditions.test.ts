// The store's status conditions come from the domain's transition table (`sourcesOf`), narrowed
// to the statuses a write starts from: the table is the one truth of which writes may happen.
import type { DynamoDBDocumentClient, UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { sourcesOf } from '../../lambdas/domain/run';
import { RunLeases } from '../../lambdas/store/run-leases';
import { RunRecords } from '../../lambdas/store/run-records';
import { TimeIndex } from '../../lambdas/store/time-index';

function recordingDynamo(): { client: DynamoDBDocumentClient; updates: UpdateCommandInput[] } {
  const updates: UpdateCommandInput[] = [];
  const client = {
    send: (command: unknown) => {
      if (!(command instanceof UpdateCommand)) return Promise.reject(new Error('unexpected command'));
      updates.push(command.input);
      return Promise.resolve({ Attributes: { runId: 'r', status: 'RUNNING' } });
    },
  } as unknown as DynamoDBDocumentClient;
  return { client, updates };
}

/** The statuses a recorded update's condition allows. */
function allowedStatuses(input: UpdateCommandInput): unknown[] {
  const names = input.ExpressionAttributeNames ?? {};
  const status = Object.keys(names).find((placeholder) => names[placeholder] === 'status');
  const match = new RegExp(`${status} (?:= (:\\w+)|IN \\(([^)]*)\\))`).exec(input.ConditionExpression ?? '');
  const placeholders = match?.[1] ? [match[1]] : (match?.[2] ?? '').split(', ');
  return placeholders.map((placeholder) => input.ExpressionAttributeValues?.[placeholder]);
}

describe('status conditions from the transition table', () => {
  it('narrows the statuses a run may leave to those a write starts from, and refuses a write the table forbids', () => {
    expect(sourcesOf('CANCELLED')).toEqual(['SCHEDULED', 'QUEUED', 'RUNNING']);
    expect(sourcesOf('CANCELLED', ['RUNNING'])).toEqual(['RUNNING']);
    expect(sourcesOf('QUEUED', ['SCHEDULED'])).toEqual(['SCHEDULED']);
    expect(() => sourcesOf('SCHEDULED')).toThrow(/no run may move to SCHEDULED/);
    expect(() => sourcesOf('RUNNING', ['SUCCEEDED'])).toThrow();
  });

  it('writes each transition on the condition the table gives', async () => {
    const dynamo = recordingDynamo();
    const leases = new RunLeases(dynamo.client, 'runs');
    const records = new RunRecords(dynamo.client, 'runs');
    const timeIndex = new TimeIndex(dynamo.client, 'runs');
    const now = Date.parse('2026-01-01T00:00:00.000Z');
    await leases.lease('r', { owner: 'w', now, checkBackAt: now + 60_000, shards: 4 });
    await leases.complete('r', 2, { status: 'SUCCEEDED', now, error: null });
    await leases.giveBack('r', 2, now, now + 1000, 4, 'buffered');
    await leases.cancelRunning('r', now, 'cancelled');
    await records.retirePending('r', 'SKIPPED', 'skipped', now);
    await timeIndex.markQueued('r', now, now + 1000, 4);
    expect(dynamo.updates.map(allowedStatuses)).toEqual([
      sourcesOf('RUNNING'),
      sourcesOf('SUCCEEDED', ['RUNNING']),
      sourcesOf('QUEUED', ['RUNNING']),
      sourcesOf('CANCELLED', ['RUNNING']),
      sourcesOf('SKIPPED', ['SCHEDULED', 'QUEUED']),
      sourcesOf('QUEUED', ['SCHEDULED']),
    ]);
    expect(dynamo.updates.map(allowedStatuses)).toEqual([
      ['SCHEDULED', 'QUEUED'],
      ['RUNNING'],
      ['RUNNING'],
      ['RUNNING'],
      ['SCHEDULED', 'QUEUED'],
      ['SCHEDULED'],
    ]);
  });
});
