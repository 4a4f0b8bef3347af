// What every command of the `scheduler` CLI shares: its streams and environment, whether --json
// was given, the client for the global options, paging, and reading a document from a file.
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { parse as parseYaml } from 'yaml';
import { SchedulerClient } from '../scheduler-client.js';
import type { RetryOptions } from '../transport.js';
import type { JobStatus, Page, RunStatus } from '../types.js';
import { MissingKeyError, UsageError } from './exit-codes.js';

export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Reads standard input whole (for `-f -`). */
  readonly readStdin: () => Promise<string>;
  /** For tests: the client's fetch and retry budget. */
  readonly fetch?: typeof fetch;
  readonly retry?: RetryOptions;
}

export interface GlobalOptions {
  readonly url?: string;
  readonly apiKey?: string;
  readonly json?: boolean;
}

export interface CliContext {
  readonly io: CliIo;
  /** Whether --json was given: set before each action runs. */
  json: boolean;
  print(text: string): void;
  printJson(value: unknown): void;
  /** The client for the command's global options (or the environment). */
  clientOf(command: Command): SchedulerClient;
  /** One page, or every page with --all (printed as one page whose nextCursor is null). */
  listed<T>(options: { all?: boolean; limit?: number; cursor?: string }, pageOf: (cursor: string | undefined) => Promise<Page<T>>): Promise<Page<T>>;
  showPage<T>(page: Page<T>, render: (items: T[]) => string): void;
  /** Adds --limit, --cursor and --all to a listing command. */
  pageOptions(command: Command): Command;
  /** The document in a JSON or YAML file (`-` for standard input), which must be an object. */
  readDocument(path: string): Promise<Record<string, unknown>>;
  /** Any JSON or YAML value in a file (`-` for standard input): a payload. */
  readValue(path: string): Promise<unknown>;
}

export function createContext(io: CliIo): CliContext {
  const ctx: CliContext = {
    io,
    json: false,
    print: (text) => io.stdout(text.endsWith('\n') ? text : `${text}\n`),
    printJson: (value) => io.stdout(`${JSON.stringify(value, null, 2)}\n`),
    clientOf: (command) => {
      const options = command.optsWithGlobals<GlobalOptions>();
      const url = options.url ?? io.env.SCHEDULER_URL;
      const apiKey = options.apiKey ?? io.env.SCHEDULER_API_KEY;
      if (!url) throw new UsageError("no API URL: set SCHEDULER_URL or pass --url (the API's base URL, such as http://localhost:3000, with or without /v1)");
      checkApiUrl(url, options.url !== undefined ? '--url' : 'SCHEDULER_URL');
      if (!apiKey) throw new MissingKeyError('no API key: set SCHEDULER_API_KEY or pass --api-key');
      // The client takes the base URL with or without the routes' /v1 (transport.ts).
      return new SchedulerClient({ baseUrl: url, apiKey, ...(io.fetch ? { fetch: io.fetch } : {}), ...(io.retry ? { retry: io.retry } : {}) });
    },
    listed: async (options, pageOf) => {
      if (!options.all) return pageOf(options.cursor);
      const items = [];
      let cursor = options.cursor;
      do {
        const page = await pageOf(cursor);
        items.push(...page.items);
        cursor = page.nextCursor ?? undefined;
      } while (cursor !== undefined);
      return { items, nextCursor: null };
    },
    showPage: (page, render) => {
      if (ctx.json) return ctx.printJson(page);
      ctx.print(render(page.items));
      if (page.nextCursor) io.stderr(`more: --cursor ${page.nextCursor} (or --all)\n`);
    },
    pageOptions: (command) =>
      command
        .option('--limit <n>', 'page size (1-100)', integer('--limit', 1, 100))
        .option('--cursor <cursor>', 'the page after this cursor (printed under a page that has more)')
        .option('--all', 'every page'),
    readDocument: (path) => readDocument(io, path),
    readValue: (path) => readValue(io, path),
  };
  return ctx;
}

export const JOB_STATUSES: readonly JobStatus[] = ['ACTIVE', 'PAUSED', 'COMPLETED', 'CANCELLED'];
export const RUN_STATUSES: readonly RunStatus[] = ['SCHEDULED', 'QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELLED', 'SKIPPED', 'DEAD'];

export function integer(name: string, min: number, max: number) {
  return (raw: string): number => {
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}`);
    return Number(raw);
  };
}

export function workflowOrder(raw: string): 'newest' | 'name' {
  if (raw !== 'newest' && raw !== 'name') throw new InvalidArgumentError('must be newest or name');
  return raw;
}

export function jobStatus(raw: string): JobStatus {
  const status = raw.toUpperCase() as JobStatus;
  if (!JOB_STATUSES.includes(status)) throw new InvalidArgumentError(`must be one of ${JOB_STATUSES.join(', ')}`);
  return status;
}

export function runStatus(raw: string): RunStatus {
  const status = raw.toUpperCase() as RunStatus;
  if (!RUN_STATUSES.includes(status)) throw new InvalidArgumentError(`must be one of ${RUN_STATUSES.join(', ')}`);
  return status;
}

/**
 * The API's URL, from `source` (--url or SCHEDULER_URL): http or https. Without a scheme
 * (`localhost:3000`, which URL reads as the scheme `localhost:`), the message suggests http://.
 */
function checkApiUrl(url: string, source: '--url' | 'SCHEDULER_URL'): void {
  if (URL.canParse(url) && /^https?:$/.test(new URL(url).protocol)) return;
  const hint = !/^[a-z][a-z\d+.-]*:\/\//i.test(url)
    ? `: did you mean http://${url}?`
    : /^https?:\/\//i.test(url)
      ? ''
      : ': the API is served over http:// or https://';
  throw new UsageError(`${source} ${url} is not an http(s) URL${hint}`);
}

// An ISO 8601 instant exactly as the API's `isoInstant` (lambdas/domain/job.ts) takes it: zod's
// `z.iso.datetime({ offset: true })` pattern (a calendar date, seconds required, any fraction, `Z`
// or a ±hh:mm offset, upper-case T and Z), then a year from 0000 to 9999 once in UTC. Restated, not
// imported: the client's JavaScript loads nothing of the backend. test/unit/cli.test.ts holds the
// two to the same answers, so that the CLI refuses what the API would refuse, and nothing else.
const ISO_DATE = String.raw`(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|02-(?:0[1-9]|1\d|2[0-8])))`;
const ISO_TIME = String.raw`(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?`;
const ISO_OFFSET = String.raw`(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)`;
const ISO_INSTANT = new RegExp(`^${ISO_DATE}T${ISO_TIME}${ISO_OFFSET}$`);

export const INSTANT_MESSAGE = 'must be an ISO 8601 instant with seconds and an offset, such as 2026-01-31T09:00:00Z or 2026-01-31T10:00:00+01:00';
export const INSTANT_RANGE_MESSAGE = 'must be from 0000-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z';

/** Why the API would refuse `raw` as an instant, or undefined when it takes it. */
export function instantProblem(raw: string): string | undefined {
  if (!ISO_INSTANT.test(raw)) return INSTANT_MESSAGE;
  // An offset can carry 9999-12-31T23:59:59-12:00 past the year 9999 in UTC (and 0000-01-01T00:00:00+01:00 before 0000).
  const ms = Date.parse(raw);
  if (!Number.isNaN(ms) && !/^\d{4}-/.test(new Date(ms).toISOString())) return INSTANT_RANGE_MESSAGE;
  return undefined;
}

/** An option's ISO 8601 instant, checked as the API checks it: a usage error naming the option, before any request. */
export function instant(raw: string): string {
  const problem = instantProblem(raw);
  if (problem !== undefined) throw new InvalidArgumentError(problem);
  return raw;
}

/** A variadic or repeated option's instants, each checked as `instant` checks one. */
export function instants(raw: string, previous: readonly string[] | undefined): string[] {
  return [...(previous ?? []), instant(raw)];
}

/** A repeated `--label key=value` filter (the API takes several: all must match; it checks the key and value). */
export function labelFilter(raw: string, previous: readonly string[] | undefined): string[] {
  if (!/^[^=]+=/.test(raw)) throw new InvalidArgumentError('must be key=value, such as team=billing (repeat --label for more labels)');
  return [...(previous ?? []), raw];
}

/** The document in a JSON or YAML file (`-` for standard input), which must be an object. */
async function readDocument(io: CliIo, path: string): Promise<Record<string, unknown>> {
  const value = await readValue(io, path);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new UsageError(`${path} must hold an object (a job's fields)`);
  return value as Record<string, unknown>;
}

/** The value in a JSON or YAML file (`-` for standard input), whatever it is. */
async function readValue(io: CliIo, path: string): Promise<unknown> {
  let text: string;
  try {
    text = path === '-' ? await io.readStdin() : await readFile(path, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  let value: unknown;
  try {
    // YAML 1.2 reads JSON as well.
    value = parseYaml(text) as unknown;
  } catch (error) {
    throw new UsageError(`${path} is neither JSON nor YAML: ${error instanceof Error ? error.message : String(error)}`);
  }
  return value;
}

/** A value given on the command line, as JSON or YAML. */
export function parseValue(text: string, what: string): unknown {
  try {
    return parseYaml(text) as unknown;
  } catch (error) {
    throw new UsageError(`${what} is neither JSON nor YAML: ${error instanceof Error ? error.message : String(error)}`);
  }
}
