// Tenants: a profile with limits, and the usage counter that the create transaction checks.
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Tenant, TenantLimits } from '../domain/tenant';
import { tenantLimitsSchema } from '../domain/tenant';
import { tenantKey, tenantUsageKey } from './keys';

export interface TenantUsage {
  readonly activeJobs: number;
}

export class TenantsRepository {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async get(tenantId: string): Promise<Tenant | null> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: tenantKey(tenantId) }));
    if (!item) return null;
    return {
      tenantId: String(item.tenantId),
      name: String(item.name),
      limits: tenantLimitsSchema.partial().parse(item.limits ?? {}),
      createdAt: String(item.createdAt),
      updatedAt: String(item.updatedAt),
    };
  }

  /** Creates the tenant; false when it exists already. */
  async create(tenant: Tenant): Promise<boolean> {
    try {
      await this.dynamo.send(
        new PutCommand({ TableName: this.tableName, Item: { ...tenantKey(tenant.tenantId), ...tenant }, ConditionExpression: 'attribute_not_exists(pk)' }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /** Sets some of a tenant's limits; null when the tenant does not exist. */
  async setLimits(tenantId: string, limits: Partial<TenantLimits>, now: number): Promise<Tenant | null> {
    const entries = Object.entries(limits);
    if (entries.length === 0) return this.get(tenantId);
    const names: Record<string, string> = { '#limits': 'limits', '#updatedAt': 'updatedAt' };
    const values: Record<string, unknown> = { ':now': new Date(now).toISOString() };
    const sets = entries.map(([name, value], i) => {
      names[`#l${i}`] = name;
      values[`:l${i}`] = value;
      return `#limits.#l${i} = :l${i}`;
    });
    try {
      await this.dynamo.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: tenantKey(tenantId),
          UpdateExpression: `SET ${sets.join(', ')}, #updatedAt = :now`,
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return null;
      throw error;
    }
    return this.get(tenantId);
  }

  async usage(tenantId: string): Promise<TenantUsage> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: tenantUsageKey(tenantId), ConsistentRead: true }));
    return { activeJobs: typeof item?.activeJobs === 'number' ? item.activeJobs : 0 };
  }
}
