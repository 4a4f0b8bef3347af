// The audit trail in the jobs table: each entry is written twice, under its tenant and under the
// object it concerns, so that both listings (a tenant's trail, one object's) are a Query of one
// partition, newest first, within a time range, never a scan. Entries leave through the table's TTL
// after the retention period. Appended only: nothing updates or deletes an entry.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { BatchWriteCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { AuditEntry } from '../domain/audit';
import { auditObjectPartition, auditSortOf, auditTenantPartition, decodeCursor, encodeCursor } from './keys';

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

export class AuditLog {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async append(entry: AuditEntry, retentionDays: number): Promise<void> {
    const sk = auditSortOf(entry.at, entry.auditId);
    const expiresAtEpoch = Math.ceil(Date.parse(entry.at) / 1000) + retentionDays * 86_400;
    const item = { ...entry, sk, expiresAtEpoch };
    let pending = [
      { PutRequest: { Item: { ...item, pk: auditTenantPartition(entry.tenantId) } } },
      { PutRequest: { Item: { ...item, pk: auditObjectPartition(entry.tenantId, entry.objectId) } } },
    ];
    // A batch may leave items unprocessed under throttling: written again, a few times.
    for (let tries = 1; pending.length > 0; tries++) {
      if (tries > MAX_WRITE_TRIES) throw new Error(`the audit entry ${entry.auditId} was not written after ${MAX_WRITE_TRIES} tries`);
      const result = await this.dynamo.send(new BatchWriteCommand({ RequestItems: { [this.tableName]: pending } }));
      pending = (result.UnprocessedItems?.[this.tableName] ?? []) as typeof pending;
      if (pending.length > 0) await new Promise((resolve) => setTimeout(resolve, 20 * 2 ** tries));
    }
  }

  /** The tenant's entries, or one object's, newest first. */
  async list(tenantId: string, query: AuditQuery): Promise<AuditPage> {
    const pk = query.objectId === undefined ? auditTenantPartition(tenantId) : auditObjectPartition(tenantId, query.objectId);
    let start: Record<string, unknown> | undefined;
    if (query.cursor !== undefined) {
      start = decodeCursor(query.cursor, { pk }) ?? undefined;
      if (!start) throw new InvalidAuditCursor('not a cursor of this listing');
    }
    // Sort keys are `<at>#<auditId>`: `to` includes every entry of its instant.
    const lower = query.from ?? '0000';
    const upper = `${query.to ?? '9999'}#~`;
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
