// A page of a listing, and the cursor that asks for the next one.
import { ValidationError } from '../core/errors';
import { decodeCursor } from './keys';

export interface Page<T> {
  readonly items: T[];
  readonly nextCursor: string | null;
}

/** The start key a cursor stands for; a cursor this listing did not return is the caller's error (400). */
export function decodeCursorOrThrow(cursor: string, expect: Record<string, string>, sortKey?: string): Record<string, unknown> {
  const key = decodeCursor(cursor, expect, sortKey);
  if (!key) throw new ValidationError('Invalid cursor', [{ path: 'cursor', message: 'is not a cursor this listing returned' }]);
  return key;
}

/** The sort keys a query's key condition takes: `BETWEEN` (both ends included), `begins_with` or `=`. */
export type SortKeyCondition = { readonly between: readonly [string, string] } | { readonly beginsWith: string } | { readonly equals: string };

/** Whether a sort key satisfies a key condition on it, as DynamoDB does (ranges here are of ASCII keys: ISO instants and ids). */
export function sortKeyWithin(value: string, condition: SortKeyCondition): boolean {
  if ('between' in condition) return condition.between[0] <= value && value <= condition.between[1];
  if ('beginsWith' in condition) return value.startsWith(condition.beginsWith);
  return value === condition.equals;
}

/** The 400 of a cursor returned under other filters (`filters`: which, e.g. "from/to"). */
export function cursorOfOtherFilters(filters: string): ValidationError {
  return new ValidationError('Invalid cursor', [
    { path: 'cursor', message: `was returned under another ${filters}: give the same, or list again without a cursor` },
  ]);
}

/**
 * As decodeCursorOrThrow, for a query with a condition on the sort key (a `from`/`to` range, a name
 * or name prefix): a cursor whose key lies outside it was returned under other filters (`filters`
 * names them), and DynamoDB refuses such a start key (a ValidationException, which would be a
 * 500): a 400 instead. Cursors carry no copy of their filters: one inside the condition is taken,
 * as DynamoDB takes it, and goes on from where it stopped.
 */
export function decodeCursorWithin(
  cursor: string,
  expect: Record<string, string>,
  sortKey: string,
  condition: SortKeyCondition,
  filters: string,
): Record<string, unknown> {
  const key = decodeCursorOrThrow(cursor, expect, sortKey);
  if (!sortKeyWithin(String(key[sortKey]), condition)) throw cursorOfOtherFilters(filters);
  return key;
}
