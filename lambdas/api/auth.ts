// Resolves the caller's tenant from its API key. Lookups are cached briefly in the process, so a
// warm API function reads DynamoDB once per key per minute; a revoked key stops working within that.
import { UnauthorizedError } from '../core/errors';
import type { ApiKeysRepository } from '../store/api-keys-repository';
import { hashApiKey } from '../store/api-keys-repository';
import type { ApiEvent } from './http';
import { header } from './http';

const CACHE_TTL_MS = 60_000;
/** Unknown keys are remembered for less time, so a key just issued works almost at once. */
const NEGATIVE_CACHE_TTL_MS = 5_000;
const CACHE_MAX_ENTRIES = 10_000;

export class Authenticator {
  private readonly cache = new Map<string, { tenantId: string | null; expiresAt: number }>();

  constructor(
    private readonly apiKeys: ApiKeysRepository,
    private readonly clock: () => number,
  ) {}

  async tenantOf(event: ApiEvent): Promise<string> {
    // Behind a Lambda authorizer, the authorizer has already resolved the tenant.
    const authorizer = (event.requestContext as { authorizer?: { lambda?: { tenantId?: unknown } } }).authorizer;
    if (typeof authorizer?.lambda?.tenantId === 'string') return authorizer.lambda.tenantId;

    const match = /^Bearer\s+(\S{16,512})\s*$/i.exec(header(event, 'authorization') ?? '');
    if (!match?.[1]) throw new UnauthorizedError();
    const apiKey = match[1];
    const cacheKey = hashApiKey(apiKey);
    const now = this.clock();
    const cached = this.cache.get(cacheKey);
    let tenantId: string | null;
    if (cached && cached.expiresAt > now) {
      tenantId = cached.tenantId;
    } else {
      tenantId = await this.apiKeys.tenantOf(apiKey);
      if (this.cache.size >= CACHE_MAX_ENTRIES) this.cache.clear();
      this.cache.set(cacheKey, { tenantId, expiresAt: now + (tenantId ? CACHE_TTL_MS : NEGATIVE_CACHE_TTL_MS) });
    }
    if (!tenantId) throw new UnauthorizedError('Unknown or revoked API key');
    return tenantId;
  }
}
