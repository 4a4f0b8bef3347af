// `client.signingSecrets` and `client.audit`: the webhook signing secrets of the tenant
// (docs/delivery.md#signed-deliveries) and its audit trail (docs/api.md#audit-trail).
import type { Transport } from './transport.js';
import { segment } from './transport.js';
import type { AuditEntry, AuditQuery, IssueSigningSecretRequest, IssuedSigningSecret, Page, SigningSecret } from './types.js';
import type { CallOptions } from './api-calls.js';
import { everyItem } from './api-calls.js';

export class SigningSecretsApi {
  constructor(private readonly transport: Transport) {}

  /** Issues a secret (rotating: the current one keeps signing for `graceSeconds`); its value is in this answer only. */
  async issue(request: IssueSigningSecretRequest = {}, options: CallOptions = {}): Promise<IssuedSigningSecret> {
    // Sent once: a repeat would issue another secret (the secrets before keep their grace, decision 0185).
    return (await this.transport.send({ method: 'POST', path: '/v1/signing-secrets', body: request, repeat: 'once', signal: options.signal }))
      .body as IssuedSigningSecret;
  }

  /** The secrets that sign deliveries now, newest first, without their values. */
  async list(options: CallOptions = {}): Promise<SigningSecret[]> {
    const answer = await this.transport.send({ method: 'GET', path: '/v1/signing-secrets', repeat: 'repeatable', signal: options.signal });
    return (answer.body as { items: SigningSecret[] }).items;
  }

  /** Stops a secret signing at once (a 404 for one no longer signing). */
  async revoke(secretId: string, options: CallOptions = {}): Promise<void> {
    // Sent once: a repeat after a revoke that landed would answer 404.
    await this.transport.send({ method: 'DELETE', path: `/v1/signing-secrets/${segment(secretId)}`, repeat: 'once', signal: options.signal });
  }
}

export class AuditApi {
  constructor(private readonly transport: Transport) {}

  /** The audit trail, newest first, filtered by object and time: one page. */
  async list(query: AuditQuery = {}, options: CallOptions = {}): Promise<Page<AuditEntry>> {
    return (await this.transport.send({ method: 'GET', path: '/v1/audit', query: { ...query }, repeat: 'repeatable', signal: options.signal }))
      .body as Page<AuditEntry>;
  }

  iterate(query: AuditQuery = {}, options: CallOptions = {}): AsyncGenerator<AuditEntry, void, undefined> {
    return everyItem((cursor) => this.list({ ...query, cursor }, options), query.cursor);
  }
}
