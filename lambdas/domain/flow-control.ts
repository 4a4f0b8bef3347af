// Keyed flow control of a job's runs (issue 19 items 8 and 9): a concurrency limit and a start rate
// shared, tenant-wide, by every run whose key renders the same. The key is a template over the
// job's type, its labels and the run's payload; this module parses and renders it and decides the
// rate. No I/O: the slots and the start log live in lambdas/store/keyed-slots.ts.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { RunStatus } from './run';
import { PENDING_STATUSES } from './run';

export const MAX_KEY_TEMPLATE_LENGTH = 128;
/** A rendered key longer than this is stored as its SHA-256 (keys sit in DynamoDB partition keys). */
export const MAX_RENDERED_KEY_LENGTH = 200;
export const MAX_CONCURRENCY_LIMIT = 1000;
export const MAX_RATE_LIMIT = 1000;
export const MAX_RATE_PERIOD_SECONDS = 3600;

/** A placeholder: `{type}`, `{label.<key>}` or `{payload.<field>[.<field>…]}`. */
const PLACEHOLDER = /\{(type|label\.[A-Za-z0-9][A-Za-z0-9._/-]{0,62}|payload(?:\.[A-Za-z0-9_-]{1,64}){1,8})\}/g;
/** Literal text around placeholders. */
const LITERAL = /^[A-Za-z0-9._:/=@-]*$/;

export type KeyPart = { readonly literal: string } | { readonly type: true } | { readonly label: string } | { readonly payload: readonly string[] };

/** The parts of a key template, or a message saying what is wrong with it. */
export function parseKeyTemplate(template: string): KeyPart[] | string {
  const parts: KeyPart[] = [];
  let at = 0;
  for (const match of template.matchAll(PLACEHOLDER)) {
    const literal = template.slice(at, match.index);
    if (!LITERAL.test(literal)) return literalProblem(literal);
    if (literal) parts.push({ literal });
    const name = match[1]!;
    if (name === 'type') parts.push({ type: true });
    else if (name.startsWith('label.')) parts.push({ label: name.slice('label.'.length) });
    else parts.push({ payload: name.split('.').slice(1) });
    at = match.index + match[0].length;
  }
  const rest = template.slice(at);
  if (!LITERAL.test(rest)) return literalProblem(rest);
  if (rest) parts.push({ literal: rest });
  return parts;
}

function literalProblem(literal: string): string {
  return /[{}]/.test(literal)
    ? 'placeholders are {type}, {label.<key>} or {payload.<field>[.<field>…]}'
    : 'literal text may use letters, digits and . _ : / = @ -';
}

const keyTemplateSchema = z
  .string()
  .min(1)
  .max(MAX_KEY_TEMPLATE_LENGTH)
  .check((ctx) => {
    const parsed = parseKeyTemplate(ctx.value);
    if (typeof parsed === 'string') ctx.issues.push({ code: 'custom', message: parsed, input: ctx.value });
  });

export const concurrencySchema = z.strictObject({
  key: keyTemplateSchema,
  limit: z.number().int().min(1).max(MAX_CONCURRENCY_LIMIT),
});
export type Concurrency = z.infer<typeof concurrencySchema>;

export const rateLimitSchema = z.strictObject({
  key: keyTemplateSchema,
  limit: z.number().int().min(1).max(MAX_RATE_LIMIT),
  periodSeconds: z.number().int().min(1).max(MAX_RATE_PERIOD_SECONDS),
});
export type RateLimit = z.infer<typeof rateLimitSchema>;

/** What a key renders from: the job's type and labels, and the payload the run is called with. */
export interface KeySource {
  readonly type: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly payload: unknown;
}

/**
 * The key of a run. A label or payload field that is missing, or is not a string, number or
 * boolean, renders empty: such runs share the key with the rest that lack it (documented).
 */
export function renderKey(template: string, source: KeySource): string {
  const parts = parseKeyTemplate(template);
  if (typeof parts === 'string') throw new Error(`invalid key template: ${parts}`);
  const rendered = parts
    .map((part) => {
      if ('literal' in part) return part.literal;
      if ('type' in part) return source.type;
      if ('label' in part) return source.labels[part.label] ?? '';
      return scalarText(fieldOf(source.payload, part.payload));
    })
    .join('');
  return rendered.length > MAX_RENDERED_KEY_LENGTH ? `sha256:${createHash('sha256').update(rendered).digest('hex')}` : rendered;
}

function fieldOf(value: unknown, path: readonly string[]): unknown {
  let current = value;
  for (const name of path) {
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[name];
  }
  return current;
}

function scalarText(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : '';
}

/**
 * The rate as a sliding log of `limit` start marks per key: a start takes a mark last used at least
 * `periodSeconds` ago, so no window of that length holds more than `limit` starts. Given the marks'
 * times (ms; absent marks are free), the mark to take now, or when the earliest one frees.
 * Marks are looked at from `start` on (each run its own, from its id), so that runs starting at
 * once try different marks rather than all race for the first free one: an unused mark first, then
 * the first one used at least a period ago. Any of those keeps the log's bound.
 */
export function decideRate(
  rate: Pick<RateLimit, 'limit' | 'periodSeconds'>,
  marks: ReadonlyMap<number, number>,
  now: number,
  start = 0,
): { readonly take: number; readonly lastUsedAt: number | null } | { readonly waitUntil: number } {
  const periodMs = rate.periodSeconds * 1000;
  let freed: { slot: number; at: number } | null = null;
  for (let i = 0; i < rate.limit; i++) {
    const slot = (start + i) % rate.limit;
    const at = marks.get(slot);
    if (at === undefined) return { take: slot, lastUsedAt: null };
    if (at <= now - periodMs && !freed) freed = { slot, at };
  }
  if (freed) return { take: freed.slot, lastUsedAt: freed.at };
  const earliest = Math.min(...Array.from({ length: rate.limit }, (_, slot) => marks.get(slot) ?? now));
  return { waitUntil: earliest + periodMs };
}

/** How long a run that found its key's slots all held waits before it tries again (seconds). */
export function keyedWaitSeconds(waits: number, random: number): number {
  return Math.min(8, 2 ** Math.min(Math.max(0, waits - 1), 3)) + (random < 0.5 ? 0 : 1);
}

/**
 * How long after its lease a RUNNING run may still be deciding on its concurrency key: its entry in
 * a key's queue counts as waiting that long (it is asking for its slot again), and no longer: by
 * then it holds a slot and runs, or has given its lease back (decision 0187).
 */
export const KEY_DECISION_MS = 60_000;

/** The wait scope a give-back records for a run of a job without a concurrency key (decision 0187). */
export const NO_KEY_SCOPE = '-';

/** What a waiter entry's run item says of it, for the queue's stale check (decision 0187). */
export interface KeyWaitState {
  readonly status: RunStatus;
  readonly leaseExpiresAt: number | null;
  readonly startedAt: number | null;
  /** The key scope its last slot wait was for; absent on runs given back before decision 0187. */
  readonly waitScope?: string;
}

/**
 * Whether a run with an entry in `scope`'s queue still waits there: it is pending (or leased this
 * moment, asking again) and its last wait was for this key. A run that waits for another key now
 * (its job's key changed), runs with a slot, finished, was cancelled or whose lease lapsed does not.
 */
export function stillWaitsForKey(scope: string, state: KeyWaitState | undefined, now: number): boolean {
  if (state === undefined) return false;
  if (state.waitScope !== undefined && state.waitScope !== scope) return false;
  if (PENDING_STATUSES.includes(state.status)) return true;
  return (
    state.status === 'RUNNING' &&
    state.leaseExpiresAt !== null &&
    state.leaseExpiresAt > now &&
    state.startedAt !== null &&
    now - state.startedAt < KEY_DECISION_MS
  );
}
