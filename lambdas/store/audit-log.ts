// The audit trail in the jobs table: each entry is written twice, under its tenant and under the
// object it concerns, so that both listings (a tenant's trail, one object's) are a Query of one
// partition, newest first, within a time range, never a scan. Entries leave through the table's TTL
// after the retention period. Appended only: nothing updates or deletes an entry.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { BatchWriteCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { AuditEntry } from '../domain/audit';
import { auditObjectPartition, auditSortOf, auditTenantPartition, decodeCursor, encodeCursor } from './keys';
import { cursorOfOtherFilters, sortKeyWithin } from './page';

export interface AuditQuery {
  readonly objectId?: string;
  /** Inclusive bounds, ISO instants. */
  readonly from?: string;
  readonly to?: string;
  readonly limit: number;
  readonly cursor?: string;
}

export interface AuditPage {
  readonly items: AuditEntry[];
  readonly nextCursor: string | null;
}

/** A cursor that is not one of this listing's. */
export class InvalidAuditCursor extends Error {}

const MAX_WRITE_TRIES = 5;
/** BatchWriteItem takes at most 25 items a call. */
const BATCH_ITEMS = 25;

export class AuditLog {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** Writes entries (each under its tenant and its object), expiring `retentionDays` after their instant. */
  async append(entries: AuditEntry | readonly AuditEntry[], retentionDays: number): Promise<void> {
    const requests = (Array.isArray(entries) ? entries : [entries]).flatMap((entry: AuditEntry) => {
      const item = { ...entry, sk: auditSortOf(entry.at, entry.auditId), expiresAtEpoch: expiresAtEpochOf(entry.at, retentionDays) };
      return [
        { PutRequest: { Item: { ...item, pk: auditTenantPartition(entry.tenantId) } } },
        { PutRequest: { Item: { ...item, pk: auditObjectPartition(entry.tenantId, entry.objectId) } } },
      ];
    });
    for (let start = 0; start < requests.length; start += BATCH_ITEMS) await this.writeBatch(requests.slice(start, start + BATCH_ITEMS));
  }

  private async writeBatch(requests: readonly { PutRequest: { Item: Record<string, unknown> } }[]): Promise<void> {
    let pending = requests;
    // A batch may leave items unprocessed under throttling: written again, a few times.
    for (let tries = 1; pending.length > 0; tries++) {
      if (tries > MAX_WRITE_TRIES) throw new Error(`${pending.length} audit items were not written after ${MAX_WRITE_TRIES} tries`);
      const result = await this.dynamo.send(new BatchWriteCommand({ RequestItems: { [this.tableName]: [...pending] } }));
      pending = (result.UnprocessedItems?.[this.tableName] ?? []) as typeof pending;
      if (pending.length > 0) await new Promise((resolve) => setTimeout(resolve, 20 * 2 ** tries));
    }
  }

  /** The tenant's entries, or one object's, newest first. */
  async list(tenantId: string, query: AuditQuery): Promise<AuditPage> {
    const pk = query.objectId === undefined ? auditTenantPartition(tenantId) : auditObjectPartition(tenantId, query.objectId);
    // Sort keys are `<at>#<auditId>`: `to` includes every entry of its instant.
    const lower = query.from ?? '0000';
    const upper = `${query.to ?? '9999'}#~`;
    let start: Record<string, unknown> | undefined;
    if (query.cursor !== undefined) {
      start = decodeCursor(query.cursor, { pk }) ?? undefined;
      if (!start) throw new InvalidAuditCursor('not a cursor of this listing');
      // Returned under another from/to: DynamoDB refuses a start key outside the key condition (a 500).
      if (!sortKeyWithin(String(start.sk), { between: [lower, upper] })) throw cursorOfOtherFilters('from/to');
    }
    const result = await this.dynamo.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :lower AND :upper',
        ExpressionAttributeValues: { ':pk': pk, ':lower': lower, ':upper': upper },
        ScanIndexForward: false,
        Limit: query.limit,
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    const items = (result.Items ?? []).map((item) => {
      const { pk: _pk, sk: _sk, expiresAtEpoch: _ttl, ...entry } = item;
      return entry as AuditEntry;
    });
    return { items, nextCursor: encodeCursor(result.LastEvaluatedKey) };
  }
}

/** When an entry leaves through the table's TTL: `retentionDays` (AUDIT_RETENTION_DAYS) after its instant. */
export function expiresAtEpochOf(at: string, retentionDays: number): number {
  return Math.ceil(Date.parse(at) / 1000) + retentionDays * 86_400;
}
