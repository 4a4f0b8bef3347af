// The tenant's per-second create rate (decision 0074): job creates, manual triggers, replays and
// notification resends share one counter per tenant and second, counted by a conditional update
// before what it admits is written; over the limit, a 429 with Retry-After and nothing written. A
// create counts itself outside its transaction (decision 0155).
import { TooManyRequestsError } from '../core/errors';
import type { TenantLimits } from '../domain/tenant';
import type { SchedulerDeps } from './deps';

/**
 * Counts a create, a manual trigger, a replay or a resend against the tenant's per-second create rate (decision 0074):
 * over it, a 429 with Retry-After, and nothing is written.
 */
export async function admitRunRequest(deps: SchedulerDeps, tenantId: string, limits: TenantLimits, now: number): Promise<void> {
  const counted = await deps.jobs.countRunRequest(tenantId, limits.createsPerSecond, now);
  if (!counted.allowed) {
    throw new TooManyRequestsError(
      `Over this tenant's limit of ${limits.createsPerSecond ?? 0} job creates, manual triggers and replays per second`,
      counted.retryAfterMs / 1000,
    );
  }
}
