// A tenant's webhook signing secrets: issued (and rotated) with the value shown once, listed without
// values, revoked. The worker reads the live ones through a short cache (decision 0078).
import { randomBytes } from 'node:crypto';
import { ConflictError, NotFoundError, ServiceUnavailableError } from '../core/errors';
import type { IssueSigningSecretRequest } from '../api/schemas';
import type { SigningSecretRecord, SigningSecretsRepository } from '../store/signing-secrets';
import { MAX_LIVE_SIGNING_SECRETS, SigningSecretConflict, SigningSecretsFull } from '../store/signing-secrets';
import { newSigningSecret } from '../targets/webhook-signature';

export interface SigningSecretsDeps {
  readonly signingSecrets: SigningSecretsRepository;
  readonly clock: () => number;
}

export interface IssuedSigningSecret extends SigningSecretRecord {
  /** The value, `whsec_` + base64: shown in this answer only, never again. */
  readonly secret: string;
  /** The secrets that sign beside it, until their `expiresAt`: the one it replaced, and those still in their grace. */
  readonly previous: readonly SigningSecretRecord[];
  /**
   * From when every delivery is signed with it: workers hold a tenant's secrets for up to a minute
   * (`SigningSecretsCache`), so until then a delivery may carry only the secrets before it, or no
   * signature when it is the tenant's first.
   */
  readonly signsFrom: string;
}

/** How long a worker signs with the secrets it read (SigningSecretsCache). */
const CACHE_TTL_MS = 60_000;
/** Added to the cache's hold in `signsFrom`: the read a worker started as the issue committed, clocks apart. */
const SIGNS_FROM_MARGIN_MS = 5_000;

/** The answer, and the secrets the issue stopped (every live one, with `graceSeconds: 0`), for the audit trail. */
export async function issueSigningSecret(
  deps: SigningSecretsDeps,
  tenantId: string,
  input: IssueSigningSecretRequest,
): Promise<IssuedSigningSecret & { readonly ended: readonly string[] }> {
  if (!deps.signingSecrets.configured)
    throw new ServiceUnavailableError('This deployment has no KMS key for signing secrets (SIGNING_KEY_ID); its operator configures one');
  const secretId = `sec_${randomBytes(12).toString('base64url')}`;
  const secret = newSigningSecret();
  const now = deps.clock();
  try {
    // Nothing is read after the commit: the answer is the only place the value is shown.
    const issued = await deps.signingSecrets.rotate(tenantId, secretId, secret, now, input.graceSeconds);
    return { ...issued, secret, signsFrom: new Date(deps.clock() + CACHE_TTL_MS + SIGNS_FROM_MARGIN_MS).toISOString() };
  } catch (error) {
    if (error instanceof SigningSecretConflict)
      throw new ConflictError('Another rotation of the signing secrets committed first; list them and rotate again if needed');
    if (error instanceof SigningSecretsFull)
      throw new ConflictError(
        `At most ${MAX_LIVE_SIGNING_SECRETS} signing secrets sign at once, and the tenant has as many: revoke one no receiver verifies with, wait for a grace period to end, or rotate with graceSeconds 0 (every other secret stops now)`,
      );
    throw error;
  }
}

export async function listSigningSecrets(deps: SigningSecretsDeps, tenantId: string): Promise<SigningSecretRecord[]> {
  return deps.signingSecrets.list(tenantId, deps.clock());
}

export async function revokeSigningSecret(deps: SigningSecretsDeps, tenantId: string, secretId: string): Promise<void> {
  if (!(await deps.signingSecrets.revoke(tenantId, secretId, deps.clock()))) throw new NotFoundError(`No signing secret ${secretId}`);
}

const CACHE_MAX_ENTRIES = 10_000;

/**
 * The live secret values per tenant, as the worker signs with them: read and decrypted once a
 * minute per tenant and process, so a batch's deliveries share one query and one decrypt each. A
 * rotation reaches deliveries within the minute, inside any grace period; a revocation too.
 */
export class SigningSecretsCache {
  private readonly cache = new Map<string, { values: Promise<readonly string[]>; expiresAt: number }>();

  constructor(
    private readonly secrets: Pick<SigningSecretsRepository, 'values'>,
    private readonly clock: () => number,
  ) {}

  of(tenantId: string): Promise<readonly string[]> {
    const now = this.clock();
    const cached = this.cache.get(tenantId);
    if (cached && cached.expiresAt > now) return cached.values;
    if (this.cache.size >= CACHE_MAX_ENTRIES) this.cache.clear();
    const values = this.secrets.values(tenantId, now);
    this.cache.set(tenantId, { values, expiresAt: now + CACHE_TTL_MS });
    // A failed read is not remembered: the next delivery tries again.
    values.catch(() => {
      if (this.cache.get(tenantId)?.values === values) this.cache.delete(tenantId);
    });
    return values;
  }
}
