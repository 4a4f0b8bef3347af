// A tenant's limits. Every tenant has them: the deployment's defaults, overridden per tenant by the
// admin command, resolved when they are used (so a changed default reaches every tenant that did
// not set that limit). `null` means no limit.
import { z } from 'zod';

export interface TenantLimits {
  /** Jobs that are ACTIVE or PAUSED at once. */
  readonly maxActiveJobs: number | null;
  /**
   * Runs Lambda workers hold at once, each from just before its lease until its outcome is recorded;
   * more wait in the queue (deferred, never dropped). An external job's run counts only while it is
   * offered, not while an external worker holds it (decision 0062).
   */
  readonly maxInFlightRuns: number | null;
  /** Job creates per second (a one-second window). */
  readonly createsPerSecond: number | null;
  /** Backfills releasing at once (`POST /v1/jobs/{jobId}/backfill`); each holds up to a year of fire times. */
  readonly maxActiveBackfills: number | null;
}

export const DEFAULT_TENANT_LIMITS: TenantLimits = {
  maxActiveJobs: 10_000,
  maxInFlightRuns: null,
  createsPerSecond: 100,
  maxActiveBackfills: 100,
};

const limit = (max: number) => z.number().int().min(1).max(max).nullable();

export const tenantLimitsSchema = z.strictObject({
  maxActiveJobs: limit(10_000_000),
  maxInFlightRuns: limit(100_000),
  createsPerSecond: limit(100_000),
  maxActiveBackfills: limit(100_000),
});

export const tenantIdSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{1,62}$/, 'must be 2 to 63 lowercase letters, digits or hyphens, starting with a letter or digit');

/**
 * The ARNs of secrets, Lambda functions, queues, event buses and topics a tenant may name (decision
 * 0194), each exact; null when none are set: every ARN the deployment grants (its stack properties
 * `headerSecretArns` and `targets`), as before grants existed. A deployment shared by tenants gives
 * each its own, as the deployment's lists are one for all of them.
 */
export type TenantGrants = readonly string[] | null;

/** At most this many grants a tenant: every check reads them, and the worker caches them. */
export const MAX_TENANT_GRANTS = 200;

export interface Tenant {
  readonly tenantId: string;
  readonly name: string;
  /**
   * The limits set for this tenant, and only those: every other one is the deployment's default at
   * the time of use (`effectiveLimits`). Tenants created before this hold a full set, which applies
   * as it is.
   */
  readonly limits: Partial<TenantLimits>;
  /** The ARNs it may use (decision 0194); absent: every ARN the deployment grants. */
  readonly grants?: readonly string[];
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** The tenant's limits over the deployment's defaults. */
export function effectiveLimits(defaults: TenantLimits, own: Partial<TenantLimits> | undefined): TenantLimits {
  return { ...defaults, ...(own ?? {}) };
}
