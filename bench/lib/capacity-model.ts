// DynamoDB capacity units as AWS would bill them, for the requests a process makes against the
// emulator. moto's ConsumedCapacity is a flat figure per request (no item sizes, no index writes,
// no transaction surcharge), so this model reads each written item before and after the write
// (with a client of its own, not counted) and applies DynamoDB's rules:
//
// - a write costs ceil(size / 1 KB) units of the larger of the item's before and after images; a
//   transactional write (TransactWriteItems, ConditionCheck included) costs twice that; a single-item
//   write whose condition fails costs the units of the item as it is (a cancelled transaction is
//   not counted);
// - each global secondary index the item enters, leaves, or whose projected attributes change costs
//   one write of the projected size; a change of the index's key attributes costs two (delete + put);
//   index writes are counted once, transactions or not;
// - a read costs ceil(size / 4 KB) units, half for an eventually consistent read; a Query or a
//   BatchGetItem rounds per item.
//
// Before and after images are read around the request, not atomically with it: items written by two
// requests at the same moment (a shared counter) may be attributed to the wrong one. Benchmarks that
// use it keep concurrency modest.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { IndexDefinition, TableDefinition } from '../../lambdas/store/schema';

type Image = Record<string, AttributeValue>;
type Handler = (args: { input: Record<string, unknown> }) => Promise<{ output: Record<string, unknown> }>;
interface Stack {
  add(middleware: (next: Handler, context: { commandName?: string }) => Handler, options: { step: 'initialize'; name: string }): void;
}

/** Units by table, base table and indexes apart. */
export interface CapacityTally {
  readonly writeUnits: number;
  readonly indexWriteUnits: number;
  readonly readUnits: number;
  /** Write units (base table + indexes) by table and operation, e.g. `Runs.UpdateItem`. */
  readonly writesByOperation: Record<string, number>;
}

interface WriteTarget {
  readonly tableName: string;
  readonly key: Image;
  readonly transactional: boolean;
  /** A condition check writes nothing; it is billed as a transactional write of the item. */
  readonly checkOnly: boolean;
}

export class CapacityModel {
  private readonly raw = new DynamoDBClient({});
  private writeUnits = 0;
  private indexWriteUnits = 0;
  private readUnits = 0;
  private byOperation = new Map<string, number>();

  /** `tables`: each table's definition by its deployed name. */
  constructor(private readonly tables: ReadonlyMap<string, TableDefinition>) {}

  attach(dynamo: DynamoDBDocumentClient): void {
    (dynamo.middlewareStack as unknown as Stack).add(
      (next, context) => async (args) => {
        const operation = (context.commandName ?? '').replace(/Command$/, '');
        const targets = this.writeTargets(operation, args.input);
        const before = await Promise.all(targets.map((target) => this.image(target)));
        let result: Awaited<ReturnType<Handler>>;
        try {
          result = await next(args);
        } catch (error) {
          // A single-item write whose condition failed is billed all the same, for the item as it is;
          // it writes no index.
          if (error instanceof Error && error.name === 'ConditionalCheckFailedException') {
            targets.forEach((target, index) => this.addWrite(operation, { ...target, checkOnly: true }, before[index], before[index]));
          }
          throw error;
        }
        const after = await Promise.all(targets.map((target) => (target.checkOnly ? Promise.resolve(undefined) : this.image(target))));
        targets.forEach((target, index) => this.addWrite(operation, target, before[index], target.checkOnly ? before[index] : after[index]));
        this.addRead(operation, args.input, result.output);
        return result;
      },
      { step: 'initialize', name: 'capacityModel' },
    );
  }

  reset(): void {
    this.writeUnits = 0;
    this.indexWriteUnits = 0;
    this.readUnits = 0;
    this.byOperation = new Map();
  }

  tally(): CapacityTally {
    return {
      writeUnits: this.writeUnits,
      indexWriteUnits: this.indexWriteUnits,
      readUnits: this.readUnits,
      writesByOperation: Object.fromEntries([...this.byOperation].sort(([a], [b]) => a.localeCompare(b))),
    };
  }

  private writeTargets(operation: string, input: Record<string, unknown>): WriteTarget[] {
    const single = (tableName: unknown, key: unknown, transactional: boolean, checkOnly = false): WriteTarget[] =>
      typeof tableName === 'string' && this.tables.has(tableName) && isRecord(key)
        ? [{ tableName, key: this.keyOf(tableName, key), transactional, checkOnly }]
        : [];
    switch (operation) {
      case 'PutItem':
        return single(input.TableName, input.Item, false);
      case 'UpdateItem':
      case 'DeleteItem':
        return single(input.TableName, input.Key, false);
      case 'TransactWriteItems':
        return (Array.isArray(input.TransactItems) ? input.TransactItems : []).flatMap((entry: unknown) => {
          if (!isRecord(entry)) return [];
          if (isRecord(entry.Put)) return single(entry.Put.TableName, entry.Put.Item, true);
          if (isRecord(entry.Update)) return single(entry.Update.TableName, entry.Update.Key, true);
          if (isRecord(entry.Delete)) return single(entry.Delete.TableName, entry.Delete.Key, true);
          if (isRecord(entry.ConditionCheck)) return single(entry.ConditionCheck.TableName, entry.ConditionCheck.Key, true, true);
          return [];
        });
      case 'BatchWriteItem':
        return Object.entries(isRecord(input.RequestItems) ? input.RequestItems : {}).flatMap(([tableName, requests]) =>
          (Array.isArray(requests) ? requests : []).flatMap((request: unknown) => {
            if (!isRecord(request)) return [];
            if (isRecord(request.PutRequest)) return single(tableName, request.PutRequest.Item, false);
            if (isRecord(request.DeleteRequest)) return single(tableName, request.DeleteRequest.Key, false);
            return [];
          }),
        );
      default:
        return [];
    }
  }

  /** The item's primary key, marshalled (the document client's inputs are plain values). */
  private keyOf(tableName: string, itemOrKey: Record<string, unknown>): Image {
    const table = this.tables.get(tableName)!;
    const names = [table.partitionKey.name, ...(table.sortKey ? [table.sortKey.name] : [])];
    const picked = Object.fromEntries(names.map((name) => [name, itemOrKey[name]]));
    return isMarshalled(picked) ? (picked as Image) : marshall(picked);
  }

  private async image(target: WriteTarget): Promise<Image | undefined> {
    const { Item } = await this.raw.send(new GetItemCommand({ TableName: target.tableName, Key: target.key, ConsistentRead: true }));
    return Item;
  }

  private addWrite(operation: string, target: WriteTarget, before: Image | undefined, after: Image | undefined): void {
    const table = this.tables.get(target.tableName)!;
    const size = Math.max(itemSize(before), itemSize(after), 1);
    const base = Math.ceil(size / 1024) * (target.transactional ? 2 : 1);
    let indexes = 0;
    const perIndex: string[] = [];
    if (!target.checkOnly)
      for (const index of table.indexes) {
        const writes = indexWrites(table, index, before, after);
        indexes += writes;
        if (writes > 0) perIndex.push(`${index.indexName}:${writes}`);
      }
    if (process.env.COST_TRACE)
      console.error(
        `TRACE ${table.id}.${operation} ${Object.values(target.key)
          .map((v) => v.S ?? v.N)
          .join('|')
          .slice(0, 60)} base=${base} ${perIndex.join(' ')}`,
      );
    this.writeUnits += base;
    this.indexWriteUnits += indexes;
    const name = `${table.id}.${operation}`;
    this.byOperation.set(name, (this.byOperation.get(name) ?? 0) + base + indexes);
  }

  private addRead(operation: string, input: Record<string, unknown>, output: Record<string, unknown>): void {
    const factor = (consistent: unknown): number => (consistent === true ? 1 : 0.5);
    const units = (item: unknown): number => Math.ceil(Math.max(itemSize(asImage(item)), 1) / 4096);
    switch (operation) {
      case 'GetItem':
        this.readUnits += units(output.Item) * factor(input.ConsistentRead);
        break;
      case 'Query':
      case 'Scan': {
        const items = Array.isArray(output.Items) ? output.Items : [];
        const total = items.reduce((sum: number, item: unknown) => sum + itemSize(asImage(item)), 0);
        this.readUnits += Math.max(1, Math.ceil(total / 4096)) * factor(input.ConsistentRead);
        break;
      }
      case 'BatchGetItem': {
        const requests = isRecord(input.RequestItems) ? input.RequestItems : {};
        for (const [tableName, items] of Object.entries(isRecord(output.Responses) ? output.Responses : {})) {
          const request = requests[tableName];
          const consistent = isRecord(request) ? request.ConsistentRead : undefined;
          for (const item of Array.isArray(items) ? items : []) this.readUnits += units(item) * factor(consistent);
        }
        break;
      }
      default:
        break;
    }
  }
}

function indexWrites(table: TableDefinition, index: IndexDefinition, before: Image | undefined, after: Image | undefined): number {
  const keyNames = [index.partitionKey.name, ...(index.sortKey ? [index.sortKey.name] : [])];
  const inIndex = (image: Image | undefined): image is Image => image !== undefined && keyNames.every((name) => image[name] !== undefined);
  const wasIn = inIndex(before);
  const isIn = inIndex(after);
  if (!wasIn && !isIn) return 0;
  if (wasIn !== isIn) return 1;
  if (keyNames.some((name) => !sameValue(before![name], after![name]))) return 2;
  const tableKeys = [table.partitionKey.name, ...(table.sortKey ? [table.sortKey.name] : [])];
  const projected =
    index.projection === 'all'
      ? new Set([...Object.keys(before!), ...Object.keys(after!)])
      : new Set([...keyNames, ...tableKeys, ...(index.projection === 'keys' ? [] : index.projection)]);
  return [...projected].some((name) => !sameValue(before![name], after![name])) ? 1 : 0;
}

const sameValue = (a: AttributeValue | undefined, b: AttributeValue | undefined): boolean => JSON.stringify(a) === JSON.stringify(b);

/** An item's size as DynamoDB counts it: attribute names plus values (close enough for numbers). */
function itemSize(image: Image | undefined): number {
  if (!image) return 0;
  return Object.entries(image).reduce((sum, [name, value]) => sum + Buffer.byteLength(name) + valueSize(value), 0);
}

function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S);
  if (value.N !== undefined) return Math.ceil(value.N.replace(/^-|\.|e.*$/gi, '').length / 2) + 1;
  if (value.B !== undefined) return value.B.length;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.SS) return value.SS.reduce((sum, entry) => sum + Buffer.byteLength(entry), 0);
  if (value.NS) return value.NS.reduce((sum, entry) => sum + Math.ceil(entry.length / 2) + 1, 0);
  if (value.L) return 3 + value.L.reduce((sum, entry) => sum + 1 + valueSize(entry), 0);
  if (value.M) return 3 + Object.entries(value.M).reduce((sum, [name, entry]) => sum + 1 + Buffer.byteLength(name) + valueSize(entry), 0);
  return 0;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const MARSHALLED_TYPES = new Set(['S', 'N', 'B', 'BOOL', 'NULL', 'M', 'L', 'SS', 'NS', 'BS']);

function isMarshalled(record: Record<string, unknown>): boolean {
  return Object.values(record).every((value) => isRecord(value) && Object.keys(value).length === 1 && MARSHALLED_TYPES.has(Object.keys(value)[0]!));
}

/** An item from a response: marshalled when the middleware sits below the document client's, plain otherwise. */
function asImage(item: unknown): Image | undefined {
  if (!isRecord(item)) return undefined;
  return isMarshalled(item) ? (item as Image) : marshall(item, { removeUndefinedValues: true, convertClassInstanceToMap: true });
}
