// Turns zod's issues into the field errors of a 400 problem: one entry per failing field, with a
// dotted path a caller can find in its own request.
import { z } from 'zod';
import type { FieldError } from './errors';
import { ValidationError } from './errors';

export function toFieldErrors(issues: readonly z.core.$ZodIssue[], prefix = ''): FieldError[] {
  const errors: FieldError[] = [];
  for (const issue of issues) {
    const base = [prefix, ...issue.path.map(String)].filter((part) => part !== '').join('.');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) errors.push({ path: base ? `${base}.${key}` : key, message: 'is not a known field' });
    } else {
      errors.push({ path: base || '(body)', message: issue.message });
    }
  }
  return errors;
}

export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, title = 'Invalid request', prefix = ''): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new ValidationError(title, toFieldErrors(result.error.issues, prefix));
  return result.data;
}

/** Job and run ids in paths and filters: opaque, but only ever these characters and this long. */
export const resourceId = z
  .string()
  .min(1, 'must not be empty')
  .max(128, 'must be at most 128 characters')
  .regex(/^[A-Za-z0-9._-]+$/, 'must be an id (letters, digits and . _ -)');

/** A page size in a query string: digits only (no `1e2`, `0x10` or blanks), from 1 to `max`. */
export const limitParam = (fallback: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,6}$/, `must be a whole number from 1 to ${max}`)
    .transform(Number)
    .pipe(z.number().int().min(1, `must be a whole number from 1 to ${max}`).max(max, `must be a whole number from 1 to ${max}`))
    .optional()
    .transform((value) => value ?? fallback);

/** Cursors are base64url text returned by a listing; anything else is refused before decoding. */
export const cursorParam = z
  .string()
  .min(1)
  .max(2048)
  .regex(/^[A-Za-z0-9_-]+$/, 'is not a cursor this listing returned');
