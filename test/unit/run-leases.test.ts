// The outcome transactions' handling of TransactionConflict (an SDK stand-in: moto does not produce
// it; real DynamoDB does when an external worker's complete meets the ticker's recovery, or two
// completes meet, on the same run at the same moment).
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import type { Run } from '../../lambdas/domain/run';
import { RunLeases } from '../../lambdas/store/run-leases';

const cancelled = (...codes: string[]) =>
  new TransactionCanceledException({ message: 'cancelled', $metadata: {}, CancellationReasons: codes.map((Code) => ({ Code })) });

function fakeDynamo(answers: (Error | null)[]): { client: DynamoDBDocumentClient; transacts: () => number } {
  let transacts = 0;
  const client = {
    send: (command: unknown) => {
      if (command instanceof TransactWriteCommand) {
        const answer = answers[Math.min(transacts++, answers.length - 1)];
        return answer ? Promise.reject(answer) : Promise.resolve({});
      }
      return Promise.reject(new Error('unexpected command'));
    },
  } as unknown as DynamoDBDocumentClient;
  return { client, transacts: () => transacts };
}

const run = {
  runId: 'job_1.occ.1',
  jobId: 'job_1',
  tenantId: 't',
  jobType: 'test',
  attempt: 1,
  version: 2,
  status: 'RUNNING',
  scheduledFor: '2026-01-01T00:00:00.000Z',
  availableAt: '2026-01-01T00:00:00.000Z',
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
} as unknown as Run;
const retry = { run: { ...run, runId: 'job_1.occ.2', attempt: 2, status: 'QUEUED', version: 0 } as Run, extras: {} };
const effect = { occurrence: 'job_1#2026-01-01T00:00:00.000Z', runId: run.runId, attempt: 1, fencingToken: 2, recordedAt: '2026-01-01T00:00:01.000Z' };
const failed = { status: 'FAILED' as const, now: Date.parse('2026-01-01T00:00:01.000Z'), error: { code: 'WORKER_LOST', message: 'lost', retryable: true } };
const succeeded = { status: 'SUCCEEDED' as const, now: Date.parse('2026-01-01T00:00:01.000Z'), error: null };

describe('RunLeases outcome transactions', () => {
  it('tries an attempt with its retry again after a TransactionConflict, and its conditions then decide', async () => {
    const recorded = fakeDynamo([cancelled('TransactionConflict', 'None'), null]);
    expect(await new RunLeases(recorded.client, 'runs').finishAttempt(run, failed, retry)).toBe('recorded');
    expect(recorded.transacts()).toBe(2);

    const fenced = fakeDynamo([cancelled('None', 'TransactionConflict'), cancelled('ConditionalCheckFailed', 'None')]);
    expect(await new RunLeases(fenced.client, 'runs').finishAttempt(run, failed, retry)).toBe('fenced');
    expect(fenced.transacts()).toBe(2);
  });

  it('does the same for an outcome written with its effect', async () => {
    const dynamo = fakeDynamo([cancelled('TransactionConflict', 'None'), cancelled('ConditionalCheckFailed', 'None')]);
    expect(await new RunLeases(dynamo.client, 'runs').finishAttempt(run, succeeded, null, { effect })).toBe('fenced');
    expect(dynamo.transacts()).toBe(2);
  });

  it('gives up after a few conflicts rather than looping', async () => {
    const dynamo = fakeDynamo([cancelled('TransactionConflict', 'None')]);
    await expect(new RunLeases(dynamo.client, 'runs').finishAttempt(run, succeeded, null, { effect })).rejects.toBeInstanceOf(TransactionCanceledException);
    expect(dynamo.transacts()).toBe(4);
  });
});
