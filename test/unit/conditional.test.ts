// The store's conditional-write helper: expressions from objects, a failed condition as a result,
// a transaction's cancellation read by the names of its items, and the conflict-retry policy.
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it, vi } from 'vitest';
import {
  absent,
  absentOr,
  atMost,
  conditionExpressions,
  exists,
  ifHeld,
  lessThan,
  oneOf,
  plus,
  transact,
  transactRetryingConflicts,
  updateExpressions,
} from '../../lambdas/store/conditional';

const cancelled = (...codes: string[]) =>
  new TransactionCanceledException({ message: 'cancelled', $metadata: {}, CancellationReasons: codes.map((Code) => ({ Code })) });

function fakeDynamo(answers: (Error | null)[]): { client: DynamoDBDocumentClient; transacts: () => number } {
  let transacts = 0;
  const client = {
    send: (command: unknown) => {
      if (!(command instanceof TransactWriteCommand)) return Promise.reject(new Error('unexpected command'));
      const answer = answers[Math.min(transacts++, answers.length - 1)];
      return answer ? Promise.reject(answer) : Promise.resolve({});
    },
  } as unknown as DynamoDBDocumentClient;
  return { client, transacts: () => transacts };
}

const put = { Put: { TableName: 't', Item: { pk: 'a', sk: 'a' } } };

describe('expressions from objects', () => {
  it('names every attribute and value by placeholder, leaving out undefined values', () => {
    const built = updateExpressions({
      set: { status: 'RUNNING', leaseExpiresAtMs: plus('leaseMs', 1000), version: plus('version', 1), reason: undefined },
      add: { creates: 1 },
      remove: ['gateKey'],
      if: { pk: exists, status: oneOf(['SCHEDULED', 'QUEUED']), availableAt: atMost('2026'), consumedAt: absent, seq: absentOr(lessThan(4)), version: 2 },
    });
    expect(built.UpdateExpression).toBe('SET #status = :v0, #leaseExpiresAtMs = #leaseMs + :v1, #version = #version + :v2 ADD #creates :v3 REMOVE #gateKey');
    expect(built.ConditionExpression).toBe(
      'attribute_exists(#pk) AND #status IN (:v4, :v5) AND #availableAt <= :v6 AND attribute_not_exists(#consumedAt) AND (attribute_not_exists(#seq) OR #seq < :v7) AND #version = :v8',
    );
    expect(built.ExpressionAttributeNames).not.toHaveProperty('#reason');
    expect(built.ExpressionAttributeValues).toEqual({
      ':v0': 'RUNNING',
      ':v1': 1000,
      ':v2': 1,
      ':v3': 1,
      ':v4': 'SCHEDULED',
      ':v5': 'QUEUED',
      ':v6': '2026',
      ':v7': 4,
      ':v8': 2,
    });
  });

  it('writes one allowed value as an equality, nested paths part by part, and no empty value map', () => {
    expect(conditionExpressions({ status: oneOf(['RUNNING']) }).ConditionExpression).toBe('#status = :v0');
    const nested = updateExpressions({ set: { 'limits.maxActiveJobs': 5 } });
    expect(nested.UpdateExpression).toBe('SET #limits.#maxActiveJobs = :v0');
    const onlyNames = conditionExpressions({ pk: absent });
    expect(onlyNames).toEqual({ ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': 'pk' } });
  });

  it('in the compact style names every attribute part by a counter and shares one placeholder per string value', () => {
    const built = updateExpressions({ set: { 'steps.load_orders': 1 }, if: { status: 'RUNNING', 'steps.load_orders.status': 'RUNNING' } }, 'compact');
    expect(built.UpdateExpression).toBe('SET #n0.#n1 = :v0');
    expect(built.ConditionExpression).toBe('#n2 = :v1 AND #n0.#n1.#n2 = :v1');
    expect(built.ExpressionAttributeNames).toEqual({ '#n0': 'steps', '#n1': 'load_orders', '#n2': 'status' });
    expect(built.ExpressionAttributeValues).toEqual({ ':v0': 1, ':v1': 'RUNNING' });
  });
});

describe('a failed condition is a result', () => {
  it('answers the item as it was, translated, and passes other errors on', async () => {
    const failed = new ConditionalCheckFailedException({ message: 'failed', $metadata: {}, Item: marshall({ status: 'DONE' }) });
    expect(await ifHeld(() => Promise.reject(failed))).toEqual({ held: false, item: { status: 'DONE' } });
    expect(await ifHeld(() => Promise.resolve(7))).toEqual({ held: true, value: 7 });
    await expect(ifHeld(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  });
});

describe('transactions', () => {
  it('name the items whose conditions failed, whatever their positions', async () => {
    const result = await transact(fakeDynamo([cancelled('None', 'ConditionalCheckFailed', 'None')]).client, { job: put, name: put, run: put });
    expect(result.committed).toBe(false);
    if (!result.committed) {
      expect([...result.failed]).toEqual(['name']);
      expect(result.conflict).toBe(false);
    }
  });

  it('are tried again while they conflict, waiting a random part of a doubling bound, up to the attempts given', async () => {
    vi.useFakeTimers();
    const random = vi.spyOn(Math, 'random').mockReturnValue(0.5);
    try {
      const dynamo = fakeDynamo([cancelled('TransactionConflict', 'None')]);
      const started = Date.now();
      const pending = transactRetryingConflicts(dynamo.client, { a: put, b: put }, 4);
      await vi.runAllTimersAsync();
      const result = await pending;
      expect(result.committed === false && result.conflict).toBe(true);
      expect(dynamo.transacts()).toBe(4);
      expect(Date.now() - started).toBe(35); // half of 10, 20 and 40 ms
    } finally {
      random.mockRestore();
      vi.useRealTimers();
    }
    const settled = fakeDynamo([cancelled('TransactionConflict', 'None'), null]);
    expect(await transactRetryingConflicts(settled.client, { a: put, b: put }, 4)).toEqual({ committed: true });
    expect(settled.transacts()).toBe(2);
  });
});
