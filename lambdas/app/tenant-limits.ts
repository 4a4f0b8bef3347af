// A tenant's limits as the worker sees them: read from the tenant's profile, cached for a minute.
import type { TenantLimits } from '../domain/tenant';
import { effectiveLimits } from '../domain/tenant';
import type { TenantsRepository } from '../store/tenants-repository';

const CACHE_TTL_MS = 60_000;
const CACHE_MAX_ENTRIES = 10_000;

export class TenantLimitsCache {
  private readonly cache = new Map<string, { limits: Promise<TenantLimits>; expiresAt: number }>();

  constructor(
    private readonly tenants: TenantsRepository,
    private readonly defaults: TenantLimits,
    private readonly clock: () => number,
  ) {}

  /** The tenant's limits; concurrent callers (the runs of one batch) share a single read. */
  async of(tenantId: string): Promise<TenantLimits> {
    const now = this.clock();
    const cached = this.cache.get(tenantId);
    if (cached && cached.expiresAt > now) return cached.limits;
    if (this.cache.size >= CACHE_MAX_ENTRIES) this.cache.clear();
    const limits = this.tenants.get(tenantId).then((tenant) => effectiveLimits(this.defaults, tenant?.limits));
    this.cache.set(tenantId, { limits, expiresAt: now + CACHE_TTL_MS });
    // A failed read is not remembered: the next caller tries again.
    limits.catch(() => {
      if (this.cache.get(tenantId)?.limits === limits) this.cache.delete(tenantId);
    });
    return limits;
  }
}
