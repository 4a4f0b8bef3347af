// The create transaction's handling of DynamoDB's cancellation reasons (an SDK stand-in: DynamoDB
// Local and moto do not produce TransactionConflict, which real DynamoDB does under concurrency).
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it, vi } from 'vitest';
import type { Job } from '../../lambdas/domain/job';
import { JobsRepository } from '../../lambdas/store/jobs-repository';

const job = { jobId: 'job_1', tenantId: 't', name: 'n', createdAt: '2026-01-01T00:00:00.000Z', payload: {} } as unknown as Job;
const cancelled = (...codes: string[]) =>
  new TransactionCanceledException({ message: 'cancelled', $metadata: {}, CancellationReasons: codes.map((Code) => ({ Code })) });

function fakeDynamo(transactAnswers: (Error | null)[]): { client: DynamoDBDocumentClient; transacts: () => number } {
  let transacts = 0;
  const client = {
    send: (command: unknown) => {
      if (command instanceof TransactWriteCommand) {
        const answer = transactAnswers[Math.min(transacts++, transactAnswers.length - 1)];
        return answer ? Promise.reject(answer) : Promise.resolve({});
      }
      if (command instanceof GetCommand) return Promise.resolve({ Item: { jobId: 'job_first', requestHash: 'h' } });
      return Promise.reject(new Error('unexpected command'));
    },
  } as unknown as DynamoDBDocumentClient;
  return { client, transacts: () => transacts };
}

describe('JobsRepository.insert', () => {
  const idempotency = { key: 'k', requestHash: 'h', expiresAtEpoch: 1 };

  it('tries again after a TransactionConflict and replays the record the winner wrote', async () => {
    const dynamo = fakeDynamo([
      cancelled('None', 'None', 'TransactionConflict'),
      cancelled('ConditionalCheckFailed', 'ConditionalCheckFailed', 'ConditionalCheckFailed'),
    ]);
    const result = await new JobsRepository(dynamo.client, 'jobs', 'runs').insert(job, null, idempotency);
    expect(result).toEqual({ kind: 'idempotent-replay', jobId: 'job_first', requestHash: 'h' });
    expect(dynamo.transacts()).toBe(2);
  });

  it('answers conflicted, not an error, when every try meets a TransactionConflict, after waiting under a second in all', async () => {
    vi.useFakeTimers();
    // The longest wait the jitter allows, every time.
    const random = vi.spyOn(Math, 'random').mockReturnValue(0.999_999);
    try {
      const dynamo = fakeDynamo([cancelled('None', 'TransactionConflict', 'None')]);
      const started = Date.now();
      const pending = new JobsRepository(dynamo.client, 'jobs', 'runs').insert(job, null, idempotency, { maxActiveJobs: 10 });
      await vi.runAllTimersAsync();
      expect(await pending).toEqual({ kind: 'conflicted', retryAfterMs: 1000 });
      expect(dynamo.transacts()).toBe(8);
      expect(Date.now() - started).toBeLessThan(1000);
    } finally {
      random.mockRestore();
      vi.useRealTimers();
    }
  });

  it('waits a random part of each bound between tries (full jitter), so colliding creates spread out', async () => {
    vi.useFakeTimers();
    const random = vi.spyOn(Math, 'random').mockReturnValue(0);
    try {
      const dynamo = fakeDynamo([cancelled('TransactionConflict')]);
      const started = Date.now();
      const pending = new JobsRepository(dynamo.client, 'jobs', 'runs').insert(job, null, idempotency);
      await vi.runAllTimersAsync();
      expect(await pending).toMatchObject({ kind: 'conflicted' });
      expect(Date.now() - started).toBe(0);
    } finally {
      random.mockRestore();
      vi.useRealTimers();
    }
  });
});
