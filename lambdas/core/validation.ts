// Turns zod's issues into the field errors of a 400 problem: one entry per failing field, with a
// dotted path a caller can find in its own request.
import type { z } from 'zod';
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
