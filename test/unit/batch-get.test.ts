// Batch reads when DynamoDB leaves keys unprocessed (an SDK stand-in: moto always answers whole).
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { BatchGetCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { batchGetConsistent } from '../../lambdas/store/batch-get';

describe('batchGetConsistent', () => {
  it('asks again for unprocessed keys, then reads the stragglers one by one, so nothing is dropped', async () => {
    const sent: string[] = [];
    const client = {
      send: (command: unknown) => {
        if (command instanceof BatchGetCommand) {
          const keys = command.input.RequestItems?.t?.Keys ?? [];
          sent.push(`batch:${keys.length}`);
          // Answers the first key and leaves the rest unprocessed, every time.
          return Promise.resolve({ Responses: { t: keys.slice(0, 1) }, UnprocessedKeys: keys.length > 1 ? { t: { Keys: keys.slice(1) } } : {} });
        }
        if (command instanceof GetCommand) {
          sent.push('get');
          return Promise.resolve({ Item: command.input.Key });
        }
        return Promise.reject(new Error('unexpected command'));
      },
    } as unknown as DynamoDBDocumentClient;

    const items = await batchGetConsistent(client, 't', [{ pk: 'a' }, { pk: 'b' }, { pk: 'c' }, { pk: 'd' }, { pk: 'e' }]);
    expect(items.map((item) => item.pk).sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(sent).toEqual(['batch:5', 'batch:4', 'batch:3', 'get', 'get']);
  });
});
