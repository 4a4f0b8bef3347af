// The one HTTP transport of the clients: the API key, JSON in and out, problem+json refusals as
// SchedulerApiError, and the retry of answers that say "later" (429, 503) within a bounded budget,
// honouring Retry-After. Global fetch (Node 20+), no other dependency.
import type { Problem } from './errors.js';
import { SchedulerApiError, SchedulerConnectionError, problemOf } from './errors.js';

export interface RetryOptions {
  /** Tries of one call in all, the first included (default 4; 1 turns retries off). */
  readonly maxAttempts?: number;
  /** No retry starts later than this after the first try began, waits included (default 30 s). */
  readonly maxElapsedMs?: number;
  /** The backoff when the API names no Retry-After: full jitter up to base × 2^(try−1) (default 500 ms)… */
  readonly baseDelayMs?: number;
  /** …capped at this (default 8 s). */
  readonly maxDelayMs?: number;
}

export interface TransportOptions {
  /**
   * The API's base URL, e.g. https://abc.execute-api.eu-west-1.amazonaws.com or http://127.0.0.1:3000;
   * a trailing `/v1` (the routes' own prefix, as `npm run dev` prints the API) is dropped.
   */
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly fetch?: typeof fetch;
  readonly retry?: RetryOptions;
  /** For tests: the jitter's source and the clock of the budget. */
  readonly random?: () => number;
  readonly now?: () => number;
}

/**
 * Whether a call may be sent again after an answer that does not say it was not done (a 503, or no
 * answer at all). 429 always means "not done" and is retried for every call; `repeatable` calls (reads,
 * creates under their Idempotency-Key, PATCH without If-Match, delete, cancel, heartbeat) are retried after a 503 or a lost
 * connection too; the others (trigger, replay, claim, complete, fail…) could act twice and are not.
 */
export type Repeatability = 'repeatable' | 'once';

export interface Call {
  readonly method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  readonly path: string;
  readonly query?: Readonly<Record<string, string | number | undefined>>;
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
  readonly repeat: Repeatability;
  readonly signal?: AbortSignal;
  /** Turns a refusal into a more specific error (the workers' stale lease). */
  readonly refusal?: (problem: Problem, request: string, retryAfterSeconds: number | null) => SchedulerApiError | undefined;
}

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  /** The parsed JSON body; null for 204 and empty bodies. */
  readonly body: unknown;
}

const DEFAULT_RETRY: Required<RetryOptions> = { maxAttempts: 4, maxElapsedMs: 30_000, baseDelayMs: 500, maxDelayMs: 8_000 };

export class Transport {
  readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly fetchFn: typeof fetch;
  private readonly retry: Required<RetryOptions>;
  private readonly random: () => number;
  private readonly now: () => number;

  constructor(options: TransportOptions) {
    if (!options.baseUrl) throw new TypeError('baseUrl is required (the scheduler API, e.g. http://127.0.0.1:3000)');
    if (!options.apiKey) throw new TypeError('apiKey is required');
    this.baseUrl = apiBaseUrl(options.baseUrl);
    this.apiKey = options.apiKey;
    this.fetchFn = options.fetch ?? ((input, init) => fetch(input, init));
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.random = options.random ?? Math.random;
    this.now = options.now ?? Date.now;
  }

  async send(call: Call): Promise<Answer> {
    const url = this.urlOf(call);
    const request = `${call.method} ${call.path}`;
    const headers: Record<string, string> = { authorization: `Bearer ${this.apiKey}`, accept: 'application/json', ...call.headers };
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    const body = call.body === undefined ? undefined : JSON.stringify(call.body);
    const started = this.now();
    for (let attempt = 1; ; attempt++) {
      let failure: Error;
      let waitMs: number;
      try {
        const response = await this.fetchFn(url, { method: call.method, headers, body, signal: call.signal });
        const parsed = await readBody(response);
        if (response.ok) return { status: response.status, headers: response.headers, body: parsed };
        const retryAfter = retryAfterSeconds(response.headers.get('retry-after'), this.now());
        const problem = problemOf(response.status, response.statusText, parsed);
        failure = call.refusal?.(problem, request, retryAfter) ?? new SchedulerApiError(problem, request, retryAfter);
        const retryable = response.status === 429 || (response.status === 503 && call.repeat === 'repeatable');
        if (!retryable) throw failure;
        waitMs = retryAfter !== null ? retryAfter * 1000 : this.backoff(attempt);
      } catch (error) {
        if (error instanceof SchedulerApiError) throw error;
        // The caller's own abort is not a lost connection.
        if (call.signal?.aborted) throw error;
        failure = new SchedulerConnectionError(request, error);
        if (call.repeat !== 'repeatable') throw failure;
        waitMs = this.backoff(attempt);
      }
      // Waiting past the budget would only delay the same failure.
      if (attempt >= this.retry.maxAttempts || this.now() + waitMs - started > this.retry.maxElapsedMs) throw failure;
      await sleep(waitMs, call.signal);
    }
  }

  private backoff(attempt: number): number {
    return Math.round(this.random() * Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** (attempt - 1)));
  }

  private urlOf(call: Call): string {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(call.query ?? {})) {
      if (value !== undefined) search.append(name, String(value));
    }
    const query = search.toString();
    return `${this.baseUrl}${call.path}${query ? `?${query}` : ''}`;
  }
}

/**
 * The base URL the routes (`/v1/…`) go after: without trailing slashes, nor a trailing `/v1`, so
 * that `http://localhost:3000/v1/` asks for `/v1/jobs`, not `/v1/v1/jobs` (a 404).
 */
export function apiBaseUrl(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
}

/** `/v1/jobs/${segment(id)}`: an id is one path segment, whatever it holds. */
export function segment(value: string): string {
  return encodeURIComponent(value);
}

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  if (!text) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // A proxy's HTML page, say: kept as text for the problem's detail.
    return text;
  }
}

/** Retry-After as seconds (`5`) or an HTTP date; null when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now: number): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d{1,9}$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
