// API keys, stored as SHA-256 hashes: a leaked table does not leak usable keys.
import { createHash } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { apiKeyKey } from './keys';

export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey, 'utf8').digest('hex');
}

export class ApiKeysRepository {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** The tenant a key belongs to, or null for an unknown or revoked key. */
  async tenantOf(apiKey: string): Promise<string | null> {
    const { Item: item } = await this.dynamo.send(
      new GetCommand({ TableName: this.tableName, Key: apiKeyKey(hashApiKey(apiKey)) }),
    );
    if (!item || item.revokedAt) return null;
    return typeof item.tenantId === 'string' ? item.tenantId : null;
  }

  async issue(apiKey: string, tenantId: string, now: number): Promise<void> {
    await this.dynamo.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { ...apiKeyKey(hashApiKey(apiKey)), tenantId, createdAt: new Date(now).toISOString() },
      }),
    );
  }
}
