// A tenant's webhook signing secrets, encrypted with the deployment's KMS key (the tenant and the
// secret's id bound in as encryption context, so a ciphertext copied to another item or tenant
// does not decrypt). Live: the current one, and each one a rotation replaced, until the end of the
// grace it was given (at most MAX_LIVE_SIGNING_SECRETS in all). The plaintext leaves this module
// only towards the signer and, once, in the answer that issued it.
import { DecryptCommand, EncryptCommand } from '@aws-sdk/client-kms';
import type { KMSClient } from '@aws-sdk/client-kms';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DeleteCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { TransactItem } from './conditional';
import { absent, absentOr, conditionExpressions, exists, greaterThan, IF_NEW, ifHeld, transact, updateExpressions } from './conditional';
import { signingHeadKey, signingSecretKey, SIGNING_SECRET_PREFIX, tenantPartition } from './keys';

export interface SigningSecretRecord {
  readonly secretId: string;
  readonly createdAt: string;
  /** When a replaced secret stops signing; null for the current one. */
  readonly expiresAt: string | null;
}

interface StoredSecret extends SigningSecretRecord {
  readonly ciphertext: Uint8Array;
}

/** Another rotation of the same tenant's secrets committed first. */
export class SigningSecretConflict extends Error {}

/**
 * The most secrets of a tenant that sign at once: each is one more signature on every delivery and
 * one more decrypt per worker and minute. A rotation with a grace that would pass it is refused.
 */
export const MAX_LIVE_SIGNING_SECRETS = 5;

/** A rotation with a grace when the tenant already has MAX_LIVE_SIGNING_SECRETS live. */
export class SigningSecretsFull extends Error {}

export class SigningSecretsRepository {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly kms: KMSClient,
    private readonly tableName: string,
    private readonly keyId: string | undefined,
  ) {}

  /** Whether this deployment can issue secrets (it has a KMS key for them). */
  get configured(): boolean {
    return this.keyId !== undefined;
  }

  /**
   * Stores `secret` as the tenant's current one. The current secret it replaces keeps signing
   * until `now + graceSeconds`; one already in its grace period keeps the end it was given, so a
   * rotation repeated because its answer was lost never cuts short the grace of the secret the
   * tenant's receivers still verify with. `graceSeconds` 0 stops every other secret now. All of
   * it commits together, only if no other rotation changed the tenant's secrets since they were
   * read. Throws SigningSecretsFull when a grace would leave more than MAX_LIVE_SIGNING_SECRETS live.
   */
  async rotate(
    tenantId: string,
    secretId: string,
    secret: string,
    now: number,
    graceSeconds: number,
  ): Promise<SigningSecretRecord & { readonly previous: readonly SigningSecretRecord[]; readonly ended: readonly string[] }> {
    if (this.keyId === undefined) throw new Error('no KMS key is configured for signing secrets (SIGNING_KEY_ID)');
    const { live, head } = await this.read(tenantId, now);
    if (graceSeconds > 0 && live.length >= MAX_LIVE_SIGNING_SECRETS)
      throw new SigningSecretsFull(`the tenant has ${live.length} live signing secrets, the most that sign at once`);
    const createdAt = new Date(now).toISOString();
    const { CiphertextBlob: ciphertext } = await this.kms.send(
      new EncryptCommand({ KeyId: this.keyId, Plaintext: Buffer.from(secret, 'utf8'), EncryptionContext: { tenantId, secretId } }),
    );
    if (!ciphertext) throw new Error('KMS returned no ciphertext');
    const graceEnd = new Date(now + graceSeconds * 1000).toISOString();
    // The current secret is given its grace (or, with none, every live one ends now); those already
    // in their grace keep it. The head moves to the new one.
    const replaced = Object.fromEntries(
      live.flatMap((old): [string, TransactItem][] =>
        graceSeconds === 0
          ? [
              [
                `replaced ${old.secretId}`,
                { Delete: { TableName: this.tableName, Key: signingSecretKey(tenantId, old.secretId), ...conditionExpressions({ pk: exists }) } },
              ],
            ]
          : old.expiresAt === null
            ? [
                [
                  `replaced ${old.secretId}`,
                  {
                    Update: {
                      TableName: this.tableName,
                      Key: signingSecretKey(tenantId, old.secretId),
                      ...updateExpressions({
                        set: { expiresAt: graceEnd, expiresAtEpoch: Math.ceil(Date.parse(graceEnd) / 1000) + 86_400 },
                        if: { pk: exists, expiresAt: absent },
                      }),
                    },
                  },
                ],
              ]
            : [],
      ),
    );
    const result = await transact(this.dynamo, {
      secret: {
        Put: {
          TableName: this.tableName,
          Item: { ...signingSecretKey(tenantId, secretId), secretId, createdAt, ciphertext },
          ...conditionExpressions(IF_NEW),
        },
      },
      ...replaced,
      head: {
        Update: {
          TableName: this.tableName,
          Key: signingHeadKey(tenantId),
          // The head as it was read: no other rotation moved it since.
          ...updateExpressions({ set: { currentSecretId: secretId }, if: { currentSecretId: head ?? absent } }),
        },
      },
    });
    if (!result.committed)
      throw new SigningSecretConflict(`the signing secrets changed while rotating (${[...result.failed].join(', ') || 'a concurrent transaction'})`, {
        cause: result.error,
      });
    // The secrets that sign beside it, as the transaction left them: known without another read, so
    // nothing can fail between the commit and the answer that shows the new value (a caller whose
    // answer was lost would rotate again, ending the grace of the secret its receivers know).
    const previous =
      graceSeconds === 0
        ? []
        : live.map(({ secretId: kept, createdAt: made, expiresAt }) => ({ secretId: kept, createdAt: made, expiresAt: expiresAt ?? graceEnd }));
    // With no grace, every secret that was live stops with this commit.
    const ended = graceSeconds === 0 ? live.map((old) => old.secretId) : [];
    return { secretId, createdAt, expiresAt: null, previous, ended };
  }

  /** The tenant's live secrets, newest first, without their values. */
  async list(tenantId: string, now: number): Promise<SigningSecretRecord[]> {
    return (await this.stored(tenantId, now)).map(({ secretId, createdAt, expiresAt }) => ({ secretId, createdAt, expiresAt }));
  }

  /**
   * Stops a secret signing at once; false when the tenant has no such live secret (one whose grace
   * has ended stays stored until its expiry removes it, and is no longer the tenant's to revoke).
   */
  async revoke(tenantId: string, secretId: string, now: number): Promise<boolean> {
    const live = { pk: exists, expiresAt: absentOr(greaterThan(new Date(now).toISOString())) };
    const result = await ifHeld(() =>
      this.dynamo.send(new DeleteCommand({ TableName: this.tableName, Key: signingSecretKey(tenantId, secretId), ...conditionExpressions(live) })),
    );
    return result.held;
  }

  /** The values of the tenant's live secrets, newest first: what signs its deliveries now. */
  async values(tenantId: string, now: number): Promise<string[]> {
    const live = await this.stored(tenantId, now);
    if (live.length === 0) return [];
    return Promise.all(
      live.map(async (stored) => {
        const { Plaintext: plaintext } = await this.kms.send(
          new DecryptCommand({ KeyId: this.keyId, CiphertextBlob: stored.ciphertext, EncryptionContext: { tenantId, secretId: stored.secretId } }),
        );
        if (!plaintext) throw new Error('KMS returned no plaintext');
        return Buffer.from(plaintext).toString('utf8');
      }),
    );
  }

  private async stored(tenantId: string, now: number): Promise<StoredSecret[]> {
    return (await this.read(tenantId, now)).live;
  }

  /** The live secrets, newest first, and the id the head names as current (the rotation's guard), in one query. */
  private async read(tenantId: string, now: number): Promise<{ live: StoredSecret[]; head: string | null }> {
    const { Items: items = [] } = await this.dynamo.send(
      new QueryCommand({
        TableName: this.tableName,
        // SIGNING# (the secrets) and SIGNINGHEAD sort together.
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': tenantPartition(tenantId), ':prefix': 'SIGNING' },
        ConsistentRead: true,
      }),
    );
    const headItem = items.find((item) => item.sk === signingHeadKey(tenantId).sk);
    const head = typeof headItem?.currentSecretId === 'string' ? headItem.currentSecretId : null;
    const live = items
      .filter((item) => typeof item.sk === 'string' && item.sk.startsWith(SIGNING_SECRET_PREFIX))
      .map((item) => ({
        secretId: String(item.secretId),
        createdAt: String(item.createdAt),
        expiresAt: typeof item.expiresAt === 'string' ? item.expiresAt : null,
        ciphertext: item.ciphertext as Uint8Array,
      }))
      .filter((secret) => secret.expiresAt === null || Date.parse(secret.expiresAt) > now)
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.secretId.localeCompare(a.secretId));
    return { live, head };
  }
}
