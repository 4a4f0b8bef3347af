// Who is calling: the tenant of an API key, with its limits. Used by the Lambda authorizer in AWS and
// by the local runtime's authorizer step, the same code. Lookups are cached briefly in the process,
// so a warm function reads DynamoDB once per key per minute; a revoked key stops working within that
// (plus API Gateway's own authorizer cache in AWS).
import { UnauthorizedError } from '../core/errors';
import type { TenantLimits } from '../domain/tenant';
import { effectiveLimits } from '../domain/tenant';
import type { ApiKeysRepository } from '../store/api-keys-repository';
import { hashApiKey, keyIdOf } from '../store/api-keys-repository';
import type { TenantsRepository } from '../store/tenants-repository';

export interface Caller {
  readonly tenantId: string;
  readonly limits: TenantLimits;
  /** The key's public id (`key_…`, from its hash): who did it, in the audit trail. */
  readonly keyId: string;
}

const CACHE_TTL_MS = 60_000;
/** Unknown keys are remembered for less time, so a key just issued works almost at once. */
const NEGATIVE_CACHE_TTL_MS = 5_000;
const CACHE_MAX_ENTRIES = 10_000;

/** `Authorization: Bearer <key>`, the key 16 to 512 visible characters. */
export function bearerKeyOf(authorization: string | undefined): string | null {
  const match = /^Bearer\s+(\S{16,512})\s*$/i.exec(authorization ?? '');
  return match?.[1] ?? null;
}

export class Authenticator {
  private readonly cache = new Map<string, { caller: Caller | null; expiresAt: number }>();

  constructor(
    private readonly apiKeys: ApiKeysRepository,
    private readonly tenants: TenantsRepository,
    private readonly defaults: TenantLimits,
    private readonly clock: () => number,
  ) {}

  /** The caller of a request with this Authorization header; throws 401 when there is none. */
  async authenticate(authorization: string | undefined): Promise<Caller> {
    const apiKey = bearerKeyOf(authorization);
    if (!apiKey) throw new UnauthorizedError();
    const cacheKey = hashApiKey(apiKey);
    const now = this.clock();
    const cached = this.cache.get(cacheKey);
    let caller: Caller | null;
    if (cached && cached.expiresAt > now) {
      caller = cached.caller;
    } else {
      caller = await this.lookup(apiKey);
      if (this.cache.size >= CACHE_MAX_ENTRIES) this.cache.clear();
      this.cache.set(cacheKey, { caller, expiresAt: now + (caller ? CACHE_TTL_MS : NEGATIVE_CACHE_TTL_MS) });
    }
    if (!caller) throw new UnauthorizedError('Unknown or revoked API key');
    return caller;
  }

  private async lookup(apiKey: string): Promise<Caller | null> {
    const tenantId = await this.apiKeys.tenantOf(apiKey);
    if (!tenantId) return null;
    const tenant = await this.tenants.get(tenantId);
    return { tenantId, limits: effectiveLimits(this.defaults, tenant?.limits), keyId: keyIdOf(apiKey) };
  }
}

/** The authorizer's context, as API Gateway passes it on (values are strings). */
export function callerToContext(caller: Caller): Record<string, string> {
  return { tenantId: caller.tenantId, limits: JSON.stringify(caller.limits), keyId: caller.keyId };
}

/**
 * The caller the authorizer found; null without an authorizer's verdict (none, or `unresolved`: it
 * could not reach the store), when the API checks the key itself; 401 when it found none.
 */
export function callerFromContext(context: unknown, defaults: TenantLimits): Caller | null {
  if (typeof context !== 'object' || context === null) return null;
  const { tenantId, limits, keyId, unauthenticated } = context as { tenantId?: unknown; limits?: unknown; keyId?: unknown; unauthenticated?: unknown };
  if (typeof unauthenticated === 'string') throw new UnauthorizedError(unauthenticated);
  // A verdict cached before key ids were passed on has none: the API looks the key up itself.
  if (typeof tenantId !== 'string' || tenantId === '' || typeof keyId !== 'string' || keyId === '') return null;
  let parsed: Partial<TenantLimits> = {};
  if (typeof limits === 'string') {
    try {
      parsed = JSON.parse(limits) as Partial<TenantLimits>;
    } catch {
      parsed = {};
    }
  }
  return { tenantId, limits: effectiveLimits(defaults, parsed), keyId };
}
