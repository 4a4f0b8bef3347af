// API keys, stored as SHA-256 hashes: a leaked table does not leak usable keys. Each key has a
// record under its hash (for lookups) and one under its tenant (to list and revoke by key id).
import { createHash } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { absent, conditionExpressions, exists, IF_NEW, transact, updateExpressions } from './conditional';
import { apiKeyKey, tenantApiKeyKey, tenantPartition } from './keys';

export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey, 'utf8').digest('hex');
}

/** A key's public name: derived from its hash, so it says nothing about the key. */
export function keyIdOf(apiKey: string): string {
  return `key_${hashApiKey(apiKey).slice(0, 16)}`;
}

export interface ApiKeyRecord {
  readonly keyId: string;
  readonly tenantId: string;
  readonly createdAt: string;
  readonly revokedAt: string | null;
}

export class ApiKeysRepository {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** The tenant a key belongs to, or null for an unknown or revoked key. */
  async tenantOf(apiKey: string): Promise<string | null> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: apiKeyKey(hashApiKey(apiKey)) }));
    if (!item || item.revokedAt) return null;
    return typeof item.tenantId === 'string' ? item.tenantId : null;
  }

  /**
   * Stores a key for a tenant and returns its key id. Storing a key the tenant already holds is a
   * no-op; a key of another tenant, or a revoked one, is refused.
   */
  async issue(apiKey: string, tenantId: string, now: number): Promise<string> {
    const keyHash = hashApiKey(apiKey);
    const keyId = keyIdOf(apiKey);
    const createdAt = new Date(now).toISOString();
    const ifNew = conditionExpressions(IF_NEW);
    const stored = await transact(this.dynamo, {
      key: { Put: { TableName: this.tableName, Item: { ...apiKeyKey(keyHash), tenantId, keyId, createdAt }, ...ifNew } },
      tenantKey: { Put: { TableName: this.tableName, Item: { ...tenantApiKeyKey(tenantId, keyId), tenantId, keyId, keyHash, createdAt }, ...ifNew } },
    });
    if (!stored.committed) {
      const { Item: existing } = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: apiKeyKey(keyHash), ConsistentRead: true }));
      if (existing?.tenantId !== tenantId || existing.revokedAt)
        throw new Error('This API key is already stored for another tenant, or was revoked', { cause: stored.error });
    }
    return keyId;
  }

  /** Revokes a tenant's key by id: 'revoked', 'already-revoked' or 'not-found'. */
  async revoke(tenantId: string, keyId: string, now: number): Promise<'revoked' | 'already-revoked' | 'not-found'> {
    const { Item: record } = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: tenantApiKeyKey(tenantId, keyId), ConsistentRead: true }));
    if (!record) return 'not-found';
    if (record.revokedAt) return 'already-revoked';
    const revokedAt = new Date(now).toISOString();
    const update = (key: Record<string, string>) => ({
      Update: { TableName: this.tableName, Key: key, ...updateExpressions({ set: { revokedAt }, if: { pk: exists, revokedAt: absent } }) },
    });
    const revoked = await transact(this.dynamo, { key: update(apiKeyKey(String(record.keyHash))), tenantKey: update(tenantApiKeyKey(tenantId, keyId)) });
    return revoked.committed ? 'revoked' : 'already-revoked';
  }

  async list(tenantId: string): Promise<ApiKeyRecord[]> {
    const { Items: items = [] } = await this.dynamo.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': tenantPartition(tenantId), ':prefix': 'KEY#' },
        ConsistentRead: true,
      }),
    );
    return items.map((item) => ({
      keyId: String(item.keyId),
      tenantId: String(item.tenantId),
      createdAt: String(item.createdAt),
      revokedAt: typeof item.revokedAt === 'string' ? item.revokedAt : null,
    }));
  }
}
