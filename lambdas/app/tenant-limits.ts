// A tenant's limits and grants as the functions see them: read from the tenant's profile, cached for
// a minute. The worker reads them for every run it takes (the in-flight limit) and every call that
// names an ARN (the grants, decision 0194): one read of the profile serves both.
import type { TenantGrants, TenantLimits } from '../domain/tenant';
import { effectiveLimits } from '../domain/tenant';
import type { TenantsRepository } from '../store/tenants-repository';

const CACHE_TTL_MS = 60_000;
const CACHE_MAX_ENTRIES = 10_000;

/** What the functions use of a tenant's profile. */
interface TenantPolicy {
  readonly limits: TenantLimits;
  readonly grants: TenantGrants;
}

export class TenantLimitsCache {
  private readonly cache = new Map<string, { policy: Promise<TenantPolicy>; expiresAt: number }>();

  constructor(
    private readonly tenants: TenantsRepository,
    private readonly defaults: TenantLimits,
    private readonly clock: () => number,
  ) {}

  /** The tenant's limits; concurrent callers (the runs of one batch) share a single read. */
  async of(tenantId: string): Promise<TenantLimits> {
    return (await this.policyOf(tenantId)).limits;
  }

  /** The ARNs the tenant may use, or null (none set: every ARN the deployment grants); the same read as its limits. */
  async grantsOf(tenantId: string): Promise<TenantGrants> {
    return (await this.policyOf(tenantId)).grants;
  }

  private policyOf(tenantId: string): Promise<TenantPolicy> {
    const now = this.clock();
    const cached = this.cache.get(tenantId);
    if (cached && cached.expiresAt > now) return cached.policy;
    if (this.cache.size >= CACHE_MAX_ENTRIES) this.cache.clear();
    const policy = this.tenants
      .get(tenantId)
      .then((tenant): TenantPolicy => ({ limits: effectiveLimits(this.defaults, tenant?.limits), grants: tenant?.grants ?? null }));
    this.cache.set(tenantId, { policy, expiresAt: now + CACHE_TTL_MS });
    // A failed read is not remembered: the next caller tries again.
    policy.catch(() => {
      if (this.cache.get(tenantId)?.policy === policy) this.cache.delete(tenantId);
    });
    return policy;
  }
}
