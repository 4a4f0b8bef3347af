// HTTP target headers whose value is a Secrets Manager secret ({"secretArn": …}): read by the worker
// at the call, kept a short while per process so a batch's deliveries share one read, and never
// written anywhere (no log line, no error message carries a value). A secret that cannot be read,
// or whose value cannot be a header, fails the attempt before the call, retryably (decision 0110).
import { GetSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { HeaderValue } from '../domain/job';
import { headerTextSchema, isSecretReference } from '../domain/job';
import type { RunError } from '../domain/run';
import { tenantReadable } from './sdk-failure';

/** Reads a secret's current string value. */
export type SecretRead = (secretArn: string) => Promise<string>;

/** A secret that cannot be used as a header value; its message names the secret, never a value. */
export class HeaderSecretError extends Error {}

export function secretsManagerRead(client: Pick<SecretsManagerClient, 'send'>): SecretRead {
  return async (secretArn) => {
    const answer = await client.send(new GetSecretValueCommand({ SecretId: secretArn }));
    if (answer.SecretString === undefined) throw new HeaderSecretError(`secret ${secretArn} has no string value (a binary secret cannot be a header)`);
    return answer.SecretString;
  };
}

const MAX_ENTRIES = 1_000;

/** Secret values by ARN, each kept `ttlMs` from its read; a failed read is not remembered. */
export class HeaderSecretsCache {
  private readonly cache = new Map<string, { value: Promise<string>; expiresAt: number }>();

  constructor(
    private readonly read: SecretRead,
    private readonly ttlMs: number,
    private readonly clock: () => number,
  ) {}

  valueOf(secretArn: string): Promise<string> {
    const now = this.clock();
    const cached = this.cache.get(secretArn);
    if (cached && cached.expiresAt > now) return cached.value;
    if (this.cache.size >= MAX_ENTRIES) this.cache.clear();
    const value = this.read(secretArn);
    this.cache.set(secretArn, { value, expiresAt: now + this.ttlMs });
    value.catch(() => {
      if (this.cache.get(secretArn)?.value === value) this.cache.delete(secretArn);
    });
    return value;
  }
}

export type ResolvedHeaders = { readonly ok: true; readonly headers: Record<string, string> } | { readonly ok: false; readonly error: RunError };

/**
 * A target's headers as they are sent: text as given, each secret reference replaced by the
 * secret's value, which must be a header value as the API would have accepted it.
 */
export async function resolveHeaders(headers: Readonly<Record<string, HeaderValue>>, secrets: Pick<HeaderSecretsCache, 'valueOf'>): Promise<ResolvedHeaders> {
  const resolved: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!isSecretReference(value)) {
      resolved[name] = value;
      continue;
    }
    try {
      const secret = await secrets.valueOf(value.secretArn);
      if (!headerTextSchema.safeParse(secret).success) {
        throw new HeaderSecretError(`secret ${value.secretArn} is not a header value (at most 1024 visible ASCII characters, spaces or tabs)`);
      }
      resolved[name] = secret;
    } catch (error) {
      // The SDK's error names what went wrong (not found, access denied, a decryption failure)
      // and carries no secret value; our own say what the value is not.
      const why =
        error instanceof HeaderSecretError
          ? error.message
          : `secret ${value.secretArn} could not be read: ${tenantReadable(errorName(error), 'HEADER_SECRET_UNAVAILABLE')}`;
      return {
        ok: false,
        error: { code: 'HEADER_SECRET_UNAVAILABLE', message: `header ${name}: ${why}; the target was not called`, retryable: true },
      };
    }
  }
  return { ok: true, headers: resolved };
}

function errorName(error: unknown): string {
  if (error instanceof Error) return error.name === 'Error' ? error.message : `${error.name}${error.message ? ` (${error.message})` : ''}`;
  return String(error);
}
