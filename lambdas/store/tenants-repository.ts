// Tenants: a profile with limits and grants (decision 0194), and the usage counter that the create transaction checks.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { conditionExpressions, exists, IF_NEW, ifHeld, updateIf } from './conditional';
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
      // As stored: the admin command checked each when it set them.
      ...(Array.isArray(item.grants) ? { grants: item.grants.map(String) } : {}),
      createdAt: String(item.createdAt),
      updatedAt: String(item.updatedAt),
    };
  }

  /** Creates the tenant; false when it exists already. */
  async create(tenant: Tenant): Promise<boolean> {
    const created = await ifHeld(() =>
      this.dynamo.send(new PutCommand({ TableName: this.tableName, Item: { ...tenantKey(tenant.tenantId), ...tenant }, ...conditionExpressions(IF_NEW) })),
    );
    return created.held;
  }

  /** Sets some of a tenant's limits; null when the tenant does not exist. */
  async setLimits(tenantId: string, limits: Partial<TenantLimits>, now: number): Promise<Tenant | null> {
    const entries = Object.entries(limits);
    if (entries.length === 0) return this.get(tenantId);
    const updated = await updateIf(this.dynamo, this.tableName, tenantKey(tenantId), {
      set: { ...Object.fromEntries(entries.map(([name, value]) => [`limits.${name}`, value])), updatedAt: new Date(now).toISOString() },
      if: { pk: exists },
    });
    return updated ? this.get(tenantId) : null;
  }

  /**
   * Sets the ARNs the tenant may use (decision 0194), or removes them (null: every ARN the
   * deployment grants); null when the tenant does not exist.
   */
  async setGrants(tenantId: string, grants: readonly string[] | null, now: number): Promise<Tenant | null> {
    const updatedAt = new Date(now).toISOString();
    const updated = await updateIf(this.dynamo, this.tableName, tenantKey(tenantId), {
      ...(grants === null ? { set: { updatedAt }, remove: ['grants'] } : { set: { grants: [...grants], updatedAt } }),
      if: { pk: exists },
    });
    return updated ? this.get(tenantId) : null;
  }

  async usage(tenantId: string): Promise<TenantUsage> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: tenantUsageKey(tenantId), ConsistentRead: true }));
    return { activeJobs: typeof item?.activeJobs === 'number' ? item.activeJobs : 0 };
  }
}
