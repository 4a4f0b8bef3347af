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

/**
 * A pattern that matches the whole numbers from 1 to `max` in digits (no sign, no exponent; leading
 * zeros allowed, as they always were): the OpenAPI document says the bound as the check does, so a
 * client or a fuzzer built from it sends only what the API takes. For 100: `^0*(?:[1-9]\d{0,1}|100)$`.
 */
export function wholeNumberPattern(max: number): RegExp {
  if (!Number.isInteger(max) || max < 1) throw new Error(`wholeNumberPattern: ${max} is not a whole number from 1`);
  const digits = String(max);
  const alternatives: string[] = [];
  // Every number with fewer digits.
  if (digits.length === 2) alternatives.push('[1-9]');
  if (digits.length > 2) alternatives.push(`[1-9]\\d{0,${digits.length - 2}}`);
  // Numbers with as many digits: the max's first i digits, a lower digit, then any digits.
  for (let index = 0; index < digits.length; index++) {
    const digit = Number(digits[index]);
    const lowest = index === 0 ? 1 : 0;
    if (digit - 1 < lowest) continue;
    const rest = digits.length - index - 1;
    alternatives.push(`${digits.slice(0, index)}[${lowest}-${digit - 1}]${rest > 0 ? `\\d{${rest}}` : ''}`);
  }
  alternatives.push(digits);
  return new RegExp(`^0*(?:${alternatives.join('|')})$`);
}

/** A page size in a query string: digits only (no `1e2`, `0x10` or blanks), from 1 to `max`. */
export const limitParam = (fallback: number, max: number) =>
  z
    .string()
    .regex(wholeNumberPattern(max), `must be a whole number from 1 to ${max}`)
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
