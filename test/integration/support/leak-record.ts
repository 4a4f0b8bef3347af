// What an integration file's process says and sends, recorded for the suite-wide leak check
// (test/support/leak-scan.ts, checked by test/leaks after the integration project). Installed by the
// project's setup file before any test: the structured logger runs at DEBUG so that no line is left
// unwritten, and every line written to stdout, stderr or the console is kept (only the lines the
// project's own level would print reach the terminal); every call to the API through fetch (the
// harness, the client package, tests' own calls) has its request's header values and payloads and
// its answer's body kept. Captures that take the streams over (support/log-capture.ts), the
// harness's metric sinks and the worker processes tests start hand their lines here too.
import { relative } from 'node:path';
import { logger } from '../../../lambdas/core/logger';
import type { LeakRecord } from '../../support/leak-scan';
import { RECORDING_STARTED, payloadNeedlesOf, sentValuesOf } from '../../support/leak-scan';

interface Recorder {
  lines: string[];
  responses: string[];
  headerValues: Set<string>;
  payloadNeedles: Set<string>;
  /** Strings the requests sent outside payloads (names, types): logged by design. */
  otherStrings: Set<string>;
}

/** Kept on the process, not the module: the streams are patched once per process, whatever file runs. */
const STATE = Symbol.for('job-scheduler.leak-record');
type Global = typeof globalThis & { [STATE]?: { recorder: Recorder; installed: boolean } };

function state(): { recorder: Recorder; installed: boolean } {
  const global = globalThis as Global;
  global[STATE] ??= { recorder: emptyRecorder(), installed: false };
  return global[STATE];
}

function emptyRecorder(): Recorder {
  return { lines: [], responses: [], headerValues: new Set(), payloadNeedles: new Set(), otherStrings: new Set() };
}

/** Keeps what was logged (one or more lines). */
export function recordLogLines(text: string): void {
  const { lines } = state().recorder;
  for (const line of text.split('\n')) if (line.trim() !== '') lines.push(line);
}

/** Keeps a header value the test sent by a way the fetch wrapper does not see (a secret's value). */
export function recordHeaderValue(value: string): void {
  state().recorder.headerValues.add(value);
}

/** Keeps what a request body to the API sent: header values and payloads. */
export function recordRequestBody(body: unknown): void {
  const { recorder } = state();
  const { headerValues, payloads, otherStrings } = sentValuesOf(body);
  for (const value of headerValues) recorder.headerValues.add(value);
  for (const value of otherStrings) recorder.otherStrings.add(value);
  for (const payload of payloads) for (const needle of payloadNeedlesOf(payload)) recorder.payloadNeedles.add(needle);
}

/** Structured lines below this level are kept but not printed (the project's POWERTOOLS_LOG_LEVEL). */
function quietLevels(): RegExp | null {
  const order = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT'];
  const at = order.indexOf((process.env.POWERTOOLS_LOG_LEVEL ?? 'INFO').toUpperCase());
  const quiet = order.slice(0, Math.max(0, at));
  return quiet.length === 0 ? null : new RegExp(`^\\{"level":"(${quiet.join('|')})"`);
}

function textOf(chunk: unknown): string {
  return typeof chunk === 'string' ? chunk : chunk instanceof Uint8Array ? Buffer.from(chunk).toString('utf8') : String(chunk);
}

/** Patches the streams, the console and fetch of this process (once), and starts a fresh record. */
export function installLeakRecorder(): void {
  const current = state();
  current.recorder = emptyRecorder();
  logger.setLogLevel('DEBUG');
  if (current.installed) return;
  current.installed = true;
  const quiet = quietLevels();

  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
    stream.write = (chunk: unknown, ...rest: unknown[]) => {
      const text = textOf(chunk);
      recordLogLines(text);
      const lines = text.split('\n').filter((line) => line.trim() !== '');
      if (quiet && lines.length > 0 && lines.every((line) => quiet.test(line))) {
        // Not printed, as the project's level would not have written it; a callback still runs.
        const callback = rest.find((arg): arg is () => void => typeof arg === 'function');
        callback?.();
        return true;
      }
      return write(chunk, ...rest);
    };
  }

  // The test runner takes the console over (its lines go to the runner, not the streams): record them too.
  const consoleMethods: Record<string, (...args: unknown[]) => void> = console as unknown as Record<string, (...args: unknown[]) => void>;
  for (const method of ['log', 'info', 'warn', 'error', 'debug']) {
    const original = consoleMethods[method]!.bind(consoleMethods);
    consoleMethods[method] = (...args: unknown[]) => {
      recordLogLines(args.map((arg) => (typeof arg === 'string' ? arg : JSON.stringify(arg))).join(' '));
      original(...args);
    };
  }

  const originalFetch = globalThis.fetch;
  globalThis.fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (!url.pathname.startsWith('/v1/')) return originalFetch(input, init);
    const headers = new Headers(input instanceof Request ? input.headers : init?.headers);
    const bearer = /^Bearer\s+(.+)$/i.exec(headers.get('authorization') ?? '')?.[1];
    // An API key is a header value too: never to be logged or answered.
    if (bearer && bearer.length >= 16) recordHeaderValue(bearer);
    if (typeof init?.body === 'string') {
      let parsed: unknown;
      try {
        parsed = JSON.parse(init.body);
      } catch {
        parsed = undefined;
      }
      if (parsed !== undefined) recordRequestBody(parsed);
    }
    const response = await originalFetch(input, init);
    const body = await response.clone().text();
    const issued = issuedSigningSecretOf(url, init?.method ?? (input instanceof Request ? input.method : 'GET'), response.status, body);
    if (issued) {
      // A signing secret's value is answered once, by its issue, and never logged nor answered again.
      recordHeaderValue(issued);
      recordHeaderValue(issued.slice('whsec_'.length));
      state().recorder.responses.push(body.split(issued).join('<issued>'));
    } else {
      state().recorder.responses.push(body);
    }
    return response;
  };
}

/** The value of a signing secret an issue answered (POST /v1/signing-secrets, 201), if this is one. */
function issuedSigningSecretOf(url: URL, method: string, status: number, body: string): string | null {
  if (url.pathname !== '/v1/signing-secrets' || method.toUpperCase() !== 'POST' || status !== 201) return null;
  try {
    const { secret } = JSON.parse(body) as { secret?: unknown };
    return typeof secret === 'string' && secret.startsWith('whsec_') ? secret : null;
  } catch {
    return null;
  }
}

/** Logs the line by which the check knows this file's capture of the logger worked. */
export function markRecordingStarted(): void {
  logger.debug(RECORDING_STARTED);
}

/** The record of the file that ran, as the leak check reads it. */
export function leakRecordOf(filepath: string): LeakRecord {
  const { recorder } = state();
  return {
    file: relative(process.cwd(), filepath),
    lines: recorder.lines,
    responses: recorder.responses,
    headerValues: [...recorder.headerValues],
    // A payload value the requests also sent as a name or a type is logged as that, by design.
    payloadNeedles: [...recorder.payloadNeedles].filter((needle) => !recorder.otherStrings.has(needle)),
  };
}
