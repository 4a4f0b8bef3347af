// countAll: the count of a query's matches, page by page, up to a cap that says when more match.
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countAll } from '../../lambdas/store/query-all';
import type { Scheduler } from './harness';
import { startScheduler } from './harness';

describe('countAll', () => {
  let scheduler: Scheduler;
  const pk = 'COUNT-ALL-TEST';

  beforeAll(async () => {
    scheduler = await startScheduler();
    for (let index = 0; index < 5; index += 1) {
      await scheduler.clients.dynamo.send(
        new PutCommand({ TableName: scheduler.config.jobsTable, Item: { pk, sk: `item#${index}`, kind: index % 2 === 0 ? 'even' : 'odd' } }),
      );
    }
  });

  afterAll(async () => {
    await scheduler?.stop();
  });

  const query = () => ({
    TableName: scheduler.config.jobsTable,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': pk },
    ConsistentRead: true,
  });

  it('counts every match without a cap, and the matches of a filter', async () => {
    expect(await countAll(scheduler.clients.dynamo, query())).toEqual({ count: 5, capped: false });
    const even = { ...query(), FilterExpression: 'kind = :kind', ExpressionAttributeValues: { ':pk': pk, ':kind': 'even' } };
    expect(await countAll(scheduler.clients.dynamo, even)).toEqual({ count: 3, capped: false });
  });

  it('stops at the cap and says so only when more items match than the cap', async () => {
    expect(await countAll(scheduler.clients.dynamo, query(), 3)).toEqual({ count: 3, capped: true });
    expect(await countAll(scheduler.clients.dynamo, query(), 5)).toEqual({ count: 5, capped: false });
    expect(await countAll(scheduler.clients.dynamo, query(), 9)).toEqual({ count: 5, capped: false });
  });
});
