// Conditional writes, the one way the store writes DynamoDB under a condition. Expressions are built
// from objects (the placeholders of names and values are this module's business), a failed
// condition is a result rather than an exception, a transaction's cancellation is read by the names
// of its items rather than by their positions, and a transaction that DynamoDB cancels for a
// conflict with another one in flight is tried again by one policy.
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient, PutCommandInput, TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Item } from './keys';

// ---- Operands and tests ------------------------------------------------------------------------

/** Another attribute of the item, as a value to write: `#leaseMs`. */
export class Ref {
  constructor(readonly path: string) {}
}
/** An attribute plus a value, computed inside DynamoDB: `#leaseMs + :v`. */
export class Sum {
  constructor(
    readonly attribute: Ref,
    readonly addend: number,
  ) {}
}
class Compare {
  constructor(
    readonly operator: '<' | '<=' | '>',
    readonly operand: unknown,
  ) {}
}
class Presence {
  constructor(readonly present: boolean) {}
}
class OneOf {
  constructor(readonly values: readonly unknown[]) {}
}
class AbsentOr {
  constructor(readonly test: unknown) {}
}
class Between {
  constructor(
    readonly low: unknown,
    readonly high: unknown,
  ) {}
}

export const ref = (path: string): Ref => new Ref(path);
export const plus = (attribute: Ref | string, addend: number): Sum => new Sum(typeof attribute === 'string' ? ref(attribute) : attribute, addend);
export const lessThan = (operand: unknown): Compare => new Compare('<', operand);
export const atMost = (operand: unknown): Compare => new Compare('<=', operand);
export const greaterThan = (operand: unknown): Compare => new Compare('>', operand);
export const exists: Presence = new Presence(true);
export const absent: Presence = new Presence(false);
/** Within the bounds, both included: `#a BETWEEN :v0 AND :v1` (an absent attribute fails it). */
export const between = (low: unknown, high: unknown): Between => new Between(low, high);
/** One of the values: `#a IN (:v0, :v1)`, or `#a = :v0` for one. */
export const oneOf = (values: readonly unknown[]): OneOf => new OneOf(values);
/** The attribute is absent or passes the test (a counter not yet written passes); a plain value is compared for equality. */
export const absentOr = (test: unknown): AbsentOr => new AbsentOr(test);

/** What each named attribute must be: a plain value is compared for equality. All must hold. */
export type Condition = Readonly<Record<string, unknown>>;

export interface UpdateSpec {
  /** Attributes to set; an `undefined` value is left out (a plain value, `ref`, or `plus`). */
  readonly set?: Readonly<Record<string, unknown>>;
  /** Numbers added to attributes (a missing one counts from zero). */
  readonly add?: Readonly<Record<string, number>>;
  readonly remove?: readonly string[];
  readonly if?: Condition;
}

/**
 * How placeholders are written. `readable` (the default) names an attribute `#status` where its
 * name allows, so expressions read like their items. `compact` names every attribute part `#n<k>`
 * and gives equal strings one value placeholder: an expression that names many attributes (a
 * workflow run's steps, keyed by ids of up to 64 characters) stays under DynamoDB's 4 KB limit on
 * each expression string.
 */
export type PlaceholderStyle = 'readable' | 'compact';

/** DynamoDB refuses an expression string (update, condition, projection) longer than this many bytes. */
export const MAX_EXPRESSION_BYTES = 4096;

export interface Expressions {
  readonly UpdateExpression?: string;
  readonly ConditionExpression?: string;
  readonly ExpressionAttributeNames: Record<string, string>;
  readonly ExpressionAttributeValues?: Record<string, unknown>;
}

const PLAIN_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

class Placeholders {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  private valueCount = 0;
  private nameCount = 0;
  private readonly byName = new Map<string, string>();
  private readonly byString = new Map<string, string>();

  constructor(private readonly style: PlaceholderStyle = 'readable') {}

  name(path: string): string {
    return path
      .split('.')
      .map((part) => {
        let placeholder = this.byName.get(part);
        if (!placeholder) {
          placeholder = this.style === 'readable' && PLAIN_NAME.test(part) ? `#${part}` : `#n${this.nameCount++}`;
          this.byName.set(part, placeholder);
          this.names[placeholder] = part;
        }
        return placeholder;
      })
      .join('.');
  }

  value(value: unknown): string {
    const shared = this.style === 'compact' && typeof value === 'string' ? this.byString.get(value) : undefined;
    if (shared) return shared;
    const placeholder = `:v${this.valueCount++}`;
    this.values[placeholder] = value;
    if (this.style === 'compact' && typeof value === 'string') this.byString.set(value, placeholder);
    return placeholder;
  }

  operand(operand: unknown): string {
    if (operand instanceof Ref) return this.name(operand.path);
    if (operand instanceof Sum) return `${this.name(operand.attribute.path)} + ${this.value(operand.addend)}`;
    return this.value(operand);
  }

  test(path: string, test: unknown): string {
    const name = this.name(path);
    if (test instanceof Presence) return `${test.present ? 'attribute_exists' : 'attribute_not_exists'}(${name})`;
    if (test instanceof Compare) return `${name} ${test.operator} ${this.operand(test.operand)}`;
    if (test instanceof AbsentOr) return `(attribute_not_exists(${name}) OR ${this.test(path, test.test)})`;
    if (test instanceof Between) return `${name} BETWEEN ${this.operand(test.low)} AND ${this.operand(test.high)}`;
    if (test instanceof OneOf) {
      if (test.values.length === 0) throw new Error(`no value is allowed for ${path}`);
      if (test.values.length === 1) return `${name} = ${this.value(test.values[0])}`;
      return `${name} IN (${test.values.map((value) => this.value(value)).join(', ')})`;
    }
    return `${name} = ${this.operand(test)}`;
  }

  condition(condition: Condition): string {
    return Object.entries(condition)
      .map(([path, test]) => this.test(path, test))
      .join(' AND ');
  }

  expressions(update: string | undefined, condition: string | undefined): Expressions {
    return {
      ...(update ? { UpdateExpression: update } : {}),
      ...(condition ? { ConditionExpression: condition } : {}),
      ExpressionAttributeNames: this.names,
      // DynamoDB refuses an empty map of values.
      ...(Object.keys(this.values).length > 0 ? { ExpressionAttributeValues: this.values } : {}),
    };
  }
}

/** The expressions of an UpdateItem (alone or in a transaction) from its changes and condition. */
export function updateExpressions(spec: UpdateSpec, style: PlaceholderStyle = 'readable'): Expressions & { readonly UpdateExpression: string } {
  const p = new Placeholders(style);
  const clauses: string[] = [];
  const sets = Object.entries(spec.set ?? {}).filter(([, value]) => value !== undefined);
  if (sets.length > 0) clauses.push(`SET ${sets.map(([path, value]) => `${p.name(path)} = ${p.operand(value)}`).join(', ')}`);
  const adds = Object.entries(spec.add ?? {});
  if (adds.length > 0) clauses.push(`ADD ${adds.map(([path, value]) => `${p.name(path)} ${p.value(value)}`).join(', ')}`);
  if (spec.remove && spec.remove.length > 0) clauses.push(`REMOVE ${spec.remove.map((path) => p.name(path)).join(', ')}`);
  if (clauses.length === 0) throw new Error('an update changes nothing');
  const condition = spec.if ? p.condition(spec.if) : undefined;
  return { ...p.expressions(clauses.join(' '), condition || undefined), UpdateExpression: clauses.join(' ') };
}

/** The condition of a PutItem or DeleteItem. */
export function conditionExpressions(condition: Condition): Expressions & { readonly ConditionExpression: string } {
  const p = new Placeholders();
  const expression = p.condition(condition);
  return { ...p.expressions(undefined, expression), ConditionExpression: expression };
}

/** A put that writes only a new item. */
export const IF_NEW: Condition = { pk: absent };

// ---- Conditional writes ------------------------------------------------------------------------

export type Conditional<T> =
  | { readonly held: true; readonly value: T }
  /** The condition failed; `item` is the item as it was, when the write asked for it (ALL_OLD). */
  | { readonly held: false; readonly item: Item | undefined };

/** Runs a conditional write, answering a failed condition as a result rather than an exception. */
export async function ifHeld<T>(write: () => Promise<T>): Promise<Conditional<T>> {
  try {
    return { held: true, value: await write() };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    // The document client does not translate the item carried by the exception.
    return { held: false, item: error.Item ? unmarshall(error.Item) : undefined };
  }
}

/**
 * A put of a new item under a fresh key (a new id, which no other writer uses), conditioned on the
 * key being free. The store client tries a write again when its answer is lost (a connection reset,
 * a 500), and the first try may have landed: the retry then meets the item it wrote, and its
 * condition fails. Such a refusal is read back (consistently): when the item there is this put's
 * (`mine`: the same creation), the put is taken as made. Any other refusal is thrown.
 */
export async function putFresh(
  dynamo: DynamoDBDocumentClient,
  input: PutCommandInput & { readonly Item: Item },
  key: Item,
  mine: (stored: Item, written: Item) => boolean,
): Promise<void> {
  try {
    await dynamo.send(new PutCommand({ ...input, ...conditionExpressions(IF_NEW) }));
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    const { Item: stored } = await dynamo.send(new GetCommand({ TableName: input.TableName, Key: key, ConsistentRead: true }));
    if (!stored || !mine(stored, input.Item)) throw error;
  }
}

/** A conditional UpdateItem; true when its condition held and it was applied. */
export async function updateIf(
  dynamo: DynamoDBDocumentClient,
  tableName: string,
  key: Item,
  spec: UpdateSpec,
  style: PlaceholderStyle = 'readable',
): Promise<boolean> {
  const result = await ifHeld(() => dynamo.send(new UpdateCommand({ TableName: tableName, Key: key, ...updateExpressions(spec, style) })));
  return result.held;
}

/** A conditional UpdateItem returning the item as it became, or (failed) as it was. */
export async function updateReturning(
  dynamo: DynamoDBDocumentClient,
  tableName: string,
  key: Item,
  spec: UpdateSpec,
  style: PlaceholderStyle = 'readable',
): Promise<Conditional<Item>> {
  const result = await ifHeld(() =>
    dynamo.send(
      new UpdateCommand({
        TableName: tableName,
        Key: key,
        ...updateExpressions(spec, style),
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    ),
  );
  if (!result.held) return result;
  if (!result.value.Attributes) throw new Error(`an update of ${JSON.stringify(key)} returned no attributes`);
  return { held: true, value: result.value.Attributes };
}

// ---- Transactions ------------------------------------------------------------------------------

export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

export type TransactionResult =
  | { readonly committed: true }
  | {
      readonly committed: false;
      /** The names of the items whose condition failed. */
      readonly failed: ReadonlySet<string>;
      /** DynamoDB met another transaction on one of the items and evaluated no condition. */
      readonly conflict: boolean;
      readonly error: TransactionCanceledException;
    };

/**
 * Writes the named items in one transaction. A cancellation answers which items' conditions
 * failed, by name (DynamoDB gives its reasons in the order of the items).
 */
export async function transact(dynamo: DynamoDBDocumentClient, items: Readonly<Record<string, TransactItem>>): Promise<TransactionResult> {
  const entries = Object.entries(items);
  try {
    await dynamo.send(new TransactWriteCommand({ TransactItems: entries.map(([, item]) => item) }));
    return { committed: true };
  } catch (error) {
    if (!(error instanceof TransactionCanceledException)) throw error;
    const reasons = error.CancellationReasons ?? [];
    const failed = new Set(entries.flatMap(([name], index) => (reasons[index]?.Code === 'ConditionalCheckFailed' ? [name] : [])));
    return { committed: false, failed, conflict: reasons.some((reason) => reason.Code === 'TransactionConflict'), error };
  }
}

/** The bound of the random wait after the given (1-based) conflicting try: 10 ms doubling, at most 250 ms. */
export function conflictBackoffBoundMs(attempt: number): number {
  return Math.min(250, 10 * 2 ** (attempt - 1));
}

/**
 * The conflict-retry policy. DynamoDB cancels a transaction that meets another one in flight on the
 * same item (TransactionConflict) without evaluating its conditions; tried again, the conditions
 * decide. Up to `attempts` tries, waiting a random time under a doubling bound between them (full
 * jitter, so colliding writers spread out); the last try's result is the caller's, conflict or not.
 */
export async function transactRetryingConflicts(
  dynamo: DynamoDBDocumentClient,
  items: Readonly<Record<string, TransactItem>>,
  attempts: number,
): Promise<TransactionResult> {
  for (let attempt = 1; ; attempt++) {
    const result = await transact(dynamo, items);
    if (result.committed || !result.conflict || attempt >= attempts) return result;
    await new Promise((resolve) => setTimeout(resolve, Math.random() * conflictBackoffBoundMs(attempt)));
  }
}
