// The suite-wide leak check (issue 21: header values are write-only and never logged; payloads are
// never logged). Every integration file records what its process logged (every line, at DEBUG, its
// metric lines and its child processes' lines among them), every API answer it received, and the
// header values and payloads it sent (test/integration/support/leak-record.ts); it writes them to
// .local/leak-scan when it ends. The `leaks` project (test/leaks) runs after the integration project
// and fails if a header value the suite sent is in any log line or API answer, or a payload in any
// log line. This module holds the record's shape, what counts as a value sent, and the scan.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';

/** Where the integration files write their records, for the check that runs after them. */
export const LEAK_SCAN_DIR = join(process.cwd(), '.local', 'leak-scan');

/**
 * A header value shorter than this cannot be told apart from the rest of a log line ("1" is in
 * every line): the check refuses it, so that every header value a test sends is one it can find.
 */
export const MIN_HEADER_VALUE_LENGTH = 8;
/** Payload text shorter than this is not looked for: `{"n":1}` says nothing found or not. */
export const MIN_PAYLOAD_NEEDLE_LENGTH = 8;
/**
 * The message of a line each file's recorder logs through the structured logger when it starts: a
 * record without it did not capture the logger's lines, and finding nothing in it would mean nothing.
 */
export const RECORDING_STARTED = 'leak check: recording this file';
/**
 * Lines that show a value on purpose, each with why; they are not scanned. Keep this list short: a
 * line belongs here only when printing the value is its point.
 */
export const INTENDED_LINES: readonly { readonly pattern: RegExp; readonly why: string }[] = [
  {
    pattern: /^\s*API key\s+\S+\s+\(tenant "[^"]*"/,
    why: '`npm run dev` prints its dev API key at start so that a developer can call the API (README, Try it); tests start it as a worker process',
  },
  {
    pattern: /^\s*-H "Authorization: Bearer \S+" -H 'content-type: application\/json' \\$/,
    why: "the same start banner's example request (`Try it:`), with that key",
  },
];
/** The mask the API shows for a header value: a value a test sends back as it was shown. */
const MASK = '<redacted>';

/** What one integration file said and sent. */
export interface LeakRecord {
  /** The test file, relative to the repository. */
  readonly file: string;
  /** Every line its process (and the processes it started) logged, metric lines included. */
  readonly lines: readonly string[];
  /** The body of every API answer it received. */
  readonly responses: readonly string[];
  /** Header values it sent: target and step headers, secrets' values, API keys. */
  readonly headerValues: readonly string[];
  /** Texts of the payloads it sent (whole JSON, and string values), each long enough to find. */
  readonly payloadNeedles: readonly string[];
}

export interface Leak {
  readonly file: string;
  readonly kind: 'header value' | 'payload';
  readonly where: 'log line' | 'API answer';
  readonly value: string;
  readonly excerpt: string;
}

/** Fields of a request body whose values are a job's (or a step's) data: never to be logged. */
const PAYLOAD_FIELDS = new Set(['payload', 'result', 'checkpoint', 'progress']);
/**
 * Bodies are walked this deep and no deeper: the API refuses JSON nested past 32 levels (a fuzz test
 * sends thousands), so nothing deeper is ever stored or logged.
 */
const MAX_DEPTH = 64;

/**
 * The header values and payloads in a request body sent to the API: the text values of every
 * `target.headers` (a job's, a PATCH's, a workflow step's; references to secrets are not values) and
 * the value of every payload-like field, wherever they are in the body. `otherStrings`: the body's
 * other string values (names, types, URLs), which the scheduler logs by design: a payload value equal
 * to one of them is not the payload's to find.
 */
export function sentValuesOf(body: unknown): { headerValues: string[]; payloads: unknown[]; otherStrings: string[] } {
  const headerValues: string[] = [];
  const payloads: unknown[] = [];
  const otherStrings: string[] = [];
  const walk = (value: unknown, key: string | null, depth: number): void => {
    if (depth > MAX_DEPTH) return;
    if (key !== null && PAYLOAD_FIELDS.has(key)) {
      payloads.push(value);
      return;
    }
    if (typeof value === 'string') otherStrings.push(value);
    if (Array.isArray(value)) {
      for (const item of value) walk(item, null, depth + 1);
      return;
    }
    if (typeof value !== 'object' || value === null) return;
    const entries = Object.entries(value as Record<string, unknown>);
    if (key === 'target') {
      const headers = (value as { headers?: unknown }).headers;
      if (typeof headers === 'object' && headers !== null) {
        for (const header of Object.values(headers as Record<string, unknown>)) if (typeof header === 'string' && header !== MASK) headerValues.push(header);
      }
    }
    for (const [name, child] of entries) walk(child, name, depth + 1);
  };
  walk(body, null, 0);
  return { headerValues, payloads, otherStrings };
}

/** The texts by which a payload would be recognised in a log line: its JSON, and its string values. */
export function payloadNeedlesOf(payload: unknown): string[] {
  const needles: string[] = [];
  const strings = (value: unknown, depth: number): void => {
    if (depth > MAX_DEPTH) return;
    if (typeof value === 'string') needles.push(value);
    else if (Array.isArray(value)) for (const item of value) strings(item, depth + 1);
    else if (typeof value === 'object' && value !== null) for (const item of Object.values(value as Record<string, unknown>)) strings(item, depth + 1);
  };
  if (typeof payload === 'object' && payload !== null) {
    try {
      const text = JSON.stringify(payload);
      if (text !== undefined) needles.push(text);
    } catch {
      // Nested too deep to write: refused by the API, never stored or logged.
    }
  }
  strings(payload, 0);
  return [...new Set(needles.filter((needle) => needle.length >= MIN_PAYLOAD_NEEDLE_LENGTH))];
}

/**
 * Header values too short to be recognised: a test that sends one should send a distinctive value.
 * Values of white space only (a test of refused values sends `"\n"`) hold nothing to keep secret.
 */
export function unrecognisableHeaderValues(record: LeakRecord): string[] {
  return record.headerValues.filter((value) => value.length < MIN_HEADER_VALUE_LENGTH && value.trim() !== '');
}

function excerptAround(text: string, value: string): string {
  const at = text.indexOf(value);
  const start = Math.max(0, at - 80);
  return `${start > 0 ? '…' : ''}${text.slice(start, at + Math.min(value.length, 60) + 80)}${at + value.length + 80 < text.length ? '…' : ''}`;
}

/** Every header value found in a log line or an API answer, and every payload found in a log line. */
export function findLeaks(record: LeakRecord): Leak[] {
  const leaks: Leak[] = [];
  const headerValues = [...new Set(record.headerValues)].filter((value) => value.length >= MIN_HEADER_VALUE_LENGTH);
  const payloads = [...new Set(record.payloadNeedles)].filter((needle) => needle.length >= MIN_PAYLOAD_NEEDLE_LENGTH);
  const lines = record.lines.filter((line) => !INTENDED_LINES.some(({ pattern }) => pattern.test(line)));
  const scan = (texts: readonly string[], where: Leak['where'], kind: Leak['kind'], values: readonly string[]) => {
    for (const value of values) {
      const text = texts.find((candidate) => candidate.includes(value));
      if (text !== undefined) leaks.push({ file: record.file, kind, where, value: value.slice(0, 60), excerpt: excerptAround(text, value) });
    }
  };
  scan(lines, 'log line', 'header value', headerValues);
  scan(record.responses, 'API answer', 'header value', headerValues);
  scan(lines, 'log line', 'payload', payloads);
  return leaks;
}

/** Writes one integration file's record (a file of its own, so that files running at once never share one). */
export function writeLeakRecord(record: LeakRecord): void {
  mkdirSync(LEAK_SCAN_DIR, { recursive: true });
  writeFileSync(join(LEAK_SCAN_DIR, `${record.file.replace(/[^A-Za-z0-9.-]/g, '_')}-${randomUUID().slice(0, 8)}.json`), JSON.stringify(record));
}

/** Starts a new run's records: the integration suite's global setup calls it. */
export function clearLeakRecords(): void {
  rmSync(LEAK_SCAN_DIR, { recursive: true, force: true });
}

/** Every record the integration files of the last run wrote. */
export function readLeakRecords(): LeakRecord[] {
  let files: string[];
  try {
    files = readdirSync(LEAK_SCAN_DIR).filter((file) => file.endsWith('.json'));
  } catch {
    return [];
  }
  return files.map((file) => JSON.parse(readFileSync(join(LEAK_SCAN_DIR, file), 'utf8')) as LeakRecord);
}
