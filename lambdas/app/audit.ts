// The audit trail: what people changed through the API or the operator's CLI, appended after each
// change succeeded, and listed per tenant (decision 0079).
import { randomBytes } from 'node:crypto';
import { ValidationError } from '../core/errors';
import { logger } from '../core/logger';
import type { AuditAction, AuditEntry, FieldChange } from '../domain/audit';
import type { AuditQuery } from '../api/schemas';
import type { AuditLog, AuditPage } from '../store/audit-log';
import { InvalidAuditCursor } from '../store/audit-log';

export interface AuditDeps {
  readonly audit: AuditLog;
  readonly clock: () => number;
  readonly config: { readonly auditRetentionDays: number };
}

export interface AuditRecord {
  readonly tenantId: string;
  readonly actor: string;
  readonly action: AuditAction;
  readonly objectId: string;
  readonly changes?: Readonly<Record<string, FieldChange>>;
  readonly requested?: readonly string[];
}

function entryOf(record: AuditRecord, at: string): AuditEntry {
  return {
    auditId: `aud_${randomBytes(10).toString('base64url')}`,
    at,
    tenantId: record.tenantId,
    actor: record.actor,
    action: record.action,
    objectId: record.objectId,
    changes: record.changes ?? {},
    ...(record.requested ? { requested: record.requested } : {}),
  };
}

/**
 * Appends an entry for a change that has succeeded. The change stands whatever happens here: an
 * entry that cannot be written is logged whole at ERROR (it holds no secret) for the operator to
 * find, and the caller's answer is not turned into a failure after the fact.
 */
export async function recordAudit(deps: AuditDeps, record: AuditRecord): Promise<AuditEntry> {
  const [entry] = await recordAudits(deps, [record]);
  return entry!;
}

/**
 * Appends the entries of one request that changed several objects (a bulk replay: an entry per
 * replayed run, so that each object's trail finds its own; decision 0119), at one instant, in as
 * few batch writes as the store allows. Failures are handled as `recordAudit`'s.
 */
export async function recordAudits(deps: AuditDeps, records: readonly AuditRecord[]): Promise<AuditEntry[]> {
  const at = new Date(deps.clock()).toISOString();
  const entries = records.map((record) => entryOf(record, at));
  if (entries.length === 0) return entries;
  try {
    await deps.audit.append(entries, deps.config.auditRetentionDays);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    for (const entry of entries) logger.error('audit entry not written', { audit: entry, error: message });
  }
  return entries;
}

export async function listAudit(deps: AuditDeps, tenantId: string, input: AuditQuery): Promise<AuditPage> {
  try {
    return await deps.audit.list(tenantId, input);
  } catch (error) {
    if (error instanceof InvalidAuditCursor)
      throw new ValidationError('Invalid cursor', [{ path: 'cursor', message: 'is not a cursor this listing returned' }]);
    throw error;
  }
}
