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
