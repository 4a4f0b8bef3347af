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
  readonly objectIds?: readonly string[];
  readonly changes?: Readonly<Record<string, FieldChange>>;
  readonly requested?: readonly string[];
}

/**
 * Appends an entry for a change that has succeeded. The change stands whatever happens here: an
 * entry that cannot be written is logged whole at ERROR (it holds no secret) for the operator to
 * find, and the caller's answer is not turned into a failure after the fact.
 */
export async function recordAudit(deps: AuditDeps, record: AuditRecord): Promise<AuditEntry> {
  const entry: AuditEntry = {
    auditId: `aud_${randomBytes(10).toString('base64url')}`,
    at: new Date(deps.clock()).toISOString(),
    tenantId: record.tenantId,
    actor: record.actor,
    action: record.action,
    objectId: record.objectId,
    ...(record.objectIds ? { objectIds: record.objectIds } : {}),
    changes: record.changes ?? {},
    ...(record.requested ? { requested: record.requested } : {}),
  };
  try {
    await deps.audit.append(entry, deps.config.auditRetentionDays);
  } catch (error) {
    logger.error('audit entry not written', { audit: entry, error: error instanceof Error ? error.message : String(error) });
  }
  return entry;
}

export async function listAudit(deps: AuditDeps, tenantId: string, input: AuditQuery): Promise<AuditPage> {
  if (input.from !== undefined && input.to !== undefined && input.from > input.to) {
    throw new ValidationError('Invalid time range', [{ path: 'query.from', message: 'must not be after `to`' }]);
  }
  try {
    return await deps.audit.list(tenantId, input);
  } catch (error) {
    if (error instanceof InvalidAuditCursor)
      throw new ValidationError('Invalid cursor', [{ path: 'query.cursor', message: 'is not a cursor of this listing' }]);
    throw error;
  }
}
