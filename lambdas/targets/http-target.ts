// Calls an HTTP target: the payload as a JSON body, the occurrence's idempotency key, the run's
// identity and its fencing token (X-Fencing-Token) as headers, signed when the tenant has a signing
// secret (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature), aborted at the attempt's timeout. The host is resolved and every address
// checked against the deployment's egress policy before connecting, and the connection goes to a
// checked address. Redirects are not followed, so a target cannot bounce the scheduler to an
// address it would not call directly. A failed call is retryable
// for 408, 429 and 5xx unless the target answers `X-Retryable: false` (or `true` to retry a 4xx).
import type { LookupAddress } from 'node:dns';
import type { IncomingHttpHeaders, RequestOptions } from 'node:http';
import * as http from 'node:http';
import * as https from 'node:https';
import type { LookupFunction } from 'node:net';
import { createHash } from 'node:crypto';
import type { HttpTarget } from '../domain/job';
import type { Run } from '../domain/run';
import { deliveryOf, fencingTokenOf } from '../domain/delivery';
import { occurrenceKey } from '../domain/run';
import { parseRetryAfter } from '../domain/retry';
import type { TargetInvocation, TargetResult } from './target';
import type { Egress } from './egress';
import { resolveTarget } from './egress';
import { signDelivery } from './webhook-signature';
import { stepFieldsOf } from './envelope';
import { stepResultOf } from './target';
import { MAX_STEP_RESULT_BYTES } from '../domain/workflow';

/**
 * A delivery's `webhook-id`: the same for every attempt of an occurrence (a retry, a replay), so a
 * target deduplicates on it as on the Idempotency-Key header, and free of the `.` that separates
 * the signed content's parts.
 */
export function deliveryIdOf(run: Pick<Run, 'jobId' | 'scheduledFor'>): string {
  return `msg_${createHash('sha256').update(occurrenceKey(run.jobId, run.scheduledFor)).digest('base64url').slice(0, 32)}`;
}

export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** The header by which a target overrides the class of its failure (`false`: do not retry). */
export const RETRYABLE_HEADER = 'x-retryable';

/** The target's own word on retrying wins over the status code's class. */
export function classifyStatus(status: number, retryableHeader: string | null): boolean {
  const said = retryableHeader?.trim().toLowerCase();
  if (said === 'false') return false;
  if (said === 'true') return true;
  return isRetryableStatus(status);
}

/** A response body is drained (so its connection can be reused) up to this much, then dropped. */
const MAX_DRAINED_BYTES = 1024 * 1024;

// Target connections have their own pools, apart from the SDK's.
const agents = { 'http:': new http.Agent({ keepAlive: true }), 'https:': new https.Agent({ keepAlive: true }) } as const;

/** A `lookup` that answers with the addresses already checked, and never asks DNS again. */
function pinnedLookup(addresses: readonly LookupAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    const usable = addresses.filter((candidate) => !options.family || candidate.family === options.family);
    const chosen = usable.length > 0 ? usable : addresses;
    if (options.all) {
      callback(null, [...chosen]);
      return;
    }
    const first = chosen[0];
    if (!first) callback(Object.assign(new Error('no checked address'), { code: 'ENOTFOUND' }), '', 0);
    else callback(null, first.address, first.family);
  };
}

interface TargetResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** The answer's first bytes, when asked for (a workflow step's result). */
  readonly body?: string;
  /** How many bytes the answer had (read up to MAX_DRAINED_BYTES). */
  readonly bodyBytes?: number;
}

/**
 * A kept-alive connection the target had already closed: the request was written to a socket the
 * server was closing, before any byte of an answer came back. Node's documentation names this race
 * (`request.reusedSocket`) and its remedy, one more try on a new connection.
 */
class StaleConnectionError extends Error {}

function send(url: URL, options: RequestOptions, body: string | undefined, keepBytes = 0): Promise<TargetResponse> {
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise<TargetResponse>((resolve, reject) => {
    let answered = false;
    const request = transport.request(url, options, (response) => {
      answered = true;
      let drained = 0;
      const kept: Buffer[] = [];
      const answer = { status: response.statusCode ?? 0, headers: response.headers };
      const withBody = () => (keepBytes > 0 ? { ...answer, body: Buffer.concat(kept).toString('utf8'), bodyBytes: drained } : answer);
      response.on('data', (chunk: Buffer) => {
        if (drained < keepBytes) kept.push(chunk.subarray(0, keepBytes - drained));
        drained += chunk.length;
        // The content is never recorded; a target that keeps talking only loses its connection.
        if (drained > MAX_DRAINED_BYTES) {
          response.destroy();
          resolve(withBody());
        }
      });
      response.on('end', () => resolve(withBody()));
      response.on('error', reject);
      response.on('close', () => {
        if (!response.complete && drained <= MAX_DRAINED_BYTES) reject(new Error('the target closed the connection before the end of its answer'));
      });
    });
    request.on('error', (error: NodeJS.ErrnoException) => {
      if (request.reusedSocket && !answered && (error.code === 'ECONNRESET' || error.code === 'EPIPE')) {
        reject(new StaleConnectionError(error.message, { cause: error }));
      } else reject(error);
    });
    request.end(body);
  });
}

const header = (headers: IncomingHttpHeaders, name: string): string | null => {
  const value = headers[name];
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
};

/** The headers to send: those the worker resolved, or the target's own when all are text; null when a secret was left unresolved. */
function headersToSend(target: HttpTarget, resolved: Readonly<Record<string, string>> | undefined): Readonly<Record<string, string>> | null {
  if (resolved) return resolved;
  const entries = Object.entries(target.headers);
  return entries.every((entry): entry is [string, string] => typeof entry[1] === 'string') ? Object.fromEntries(entries) : null;
}

export async function callHttpTarget(target: HttpTarget, invocation: TargetInvocation): Promise<TargetResult> {
  const { run, payload, timeoutMs, egress } = invocation;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = invocation.signal ? AbortSignal.any([timeout, invocation.signal]) : timeout;
  const hasBody = target.method !== 'GET';
  try {
    const reached = await reachUrl(target.url, egress, signal);
    if ('refused' in reached) return reached.refused;
    const { url, resolved } = reached;
    // Never a call with a header missing: a secret's value is read by the worker (header-secrets.ts).
    const jobHeaders = headersToSend(target, invocation.headers);
    if (jobHeaders === null) {
      return {
        ok: false,
        timedOut: false,
        error: { code: 'HEADER_SECRET_UNAVAILABLE', message: 'a header names a secret that was not read; the target was not called', retryable: true },
      };
    }
    // A workflow step's body carries its dependencies' results and where it is beside its payload.
    const body = hasBody ? JSON.stringify(invocation.step ? { payload, ...stepFieldsOf(invocation.step) } : payload) : undefined;
    const signed = invocation.signingSecrets?.length
      ? signDelivery(invocation.signingSecrets, deliveryIdOf(run), Math.floor(Date.now() / 1000), body ?? '')
      : {};
    const call = (agent: http.Agent) =>
      send(
        url,
        {
          method: target.method,
          agent,
          // Connect only to the addresses checked above; Host and SNI stay the target's name.
          lookup: pinnedLookup(resolved.addresses),
          signal,
          headers: {
            ...jobHeaders,
            ...(invocation.traceparent ? { traceparent: invocation.traceparent } : {}),
            ...(body !== undefined ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } : {}),
            'idempotency-key': occurrenceKey(run.jobId, run.scheduledFor),
            'x-job-id': run.jobId,
            'x-run-id': run.runId,
            'x-attempt': String(run.attempt),
            'x-fencing-token': String(fencingTokenOf(run)),
            'user-agent': 'job-scheduler/1',
            ...signed,
          },
        },
        body,
        // One byte over the bound tells a result too large from one that fits.
        invocation.step ? (invocation.resultLimitBytes ?? MAX_STEP_RESULT_BYTES) + 1 : 0,
      );
    const pooled = agents[url.protocol === 'https:' ? 'https:' : 'http:'];
    let response: TargetResponse;
    try {
      response = await call(pooled);
    } catch (error) {
      // The target never saw that request: its server closed the idle connection as it was sent.
      // Sent again once, on a new connection. Not for at-most-once, which never risks a second call.
      if (!(error instanceof StaleConnectionError) || deliveryOf(invocation.run, invocation.job) === 'at-most-once') throw error;
      response = await call(url.protocol === 'https:' ? new https.Agent({ keepAlive: false }) : new http.Agent({ keepAlive: false }));
    }
    // Redirects are not followed (decision 0010): a 3xx is the answer.
    if (response.status >= 200 && response.status < 300) {
      const detail = `HTTP ${response.status}`;
      if (invocation.step && response.body !== undefined) {
        return stepResultOf(response.body, header(response.headers, 'content-type'), detail, response.bodyBytes, invocation.resultLimitBytes);
      }
      return { ok: true, detail };
    }
    const redirect = response.status >= 300 && response.status < 400;
    const retryAfterSeconds = parseRetryAfter(header(response.headers, 'retry-after'), Date.now());
    return {
      ok: false,
      timedOut: false,
      ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
      error: {
        code: `HTTP_${response.status}`,
        message: redirect ? `target answered ${response.status}; redirects are not followed` : `target answered ${response.status}`,
        retryable: classifyStatus(response.status, header(response.headers, RETRYABLE_HEADER)),
      },
    };
  } catch (error) {
    if (timeout.aborted) {
      return {
        ok: false,
        timedOut: true,
        error: { code: 'TIMEOUT', message: `no answer within ${timeoutMs} ms`, retryable: true },
      };
    }
    if (invocation.signal?.aborted) {
      return { ok: false, timedOut: false, error: { code: 'ABORTED', message: 'the run was cancelled or its lease lost', retryable: false } };
    }
    const cause = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
    return { ok: false, timedOut: false, error: { code: 'NETWORK_ERROR', message: cause, retryable: true } };
  }
}

/**
 * The URL and its checked addresses, or why the deployment does not call it: a scheme it does not
 * call, or a name that resolves to an address the egress policy refuses. Checked after resolution,
 * on every call: the answer a name gives can change at any time. The resolution is bounded by the
 * call's `signal` (its timeout): a resolver that does not answer (the system's retries its name
 * servers for tens of seconds) must not stretch a call past the timeout its caller's lease or
 * claim was sized for.
 */
async function reachUrl(
  target: string,
  egress: Egress,
  signal: AbortSignal,
): Promise<{ readonly url: URL; readonly resolved: { readonly addresses: readonly LookupAddress[] } } | { readonly refused: TargetResult }> {
  const url = new URL(target);
  if (url.protocol !== 'https:' && !(egress.policy.allowPlainHttp && url.protocol === 'http:')) {
    return { refused: blocked('TARGET_URL_REFUSED', `${url.protocol} targets are not called by this deployment; use https`) };
  }
  const resolved = await untilAborted(resolveTarget(url.hostname, egress, Number(url.port || (url.protocol === 'https:' ? 443 : 80))), signal);
  if (resolved.kind === 'protected') {
    return {
      refused: blocked(
        'TARGET_ADDRESS_BLOCKED',
        `${url.hostname} resolves to ${resolved.address}, and port ${resolved.endpoint.port} there is this deployment's AWS emulator, which no job may call`,
      ),
    };
  }
  if (resolved.kind === 'blocked') {
    return {
      refused: blocked(
        'TARGET_ADDRESS_BLOCKED',
        `${url.hostname} resolves to ${resolved.address}, a ${resolved.addressClass} address, which this deployment does not call`,
      ),
    };
  }
  return { url, resolved };
}

/** `work`, or a rejection as soon as `signal` aborts (what `work` does after that is ignored). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  const aborted = () => (signal.reason instanceof Error ? signal.reason : new Error('aborted'));
  if (signal.aborted) return Promise.reject(aborted());
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(aborted());
    signal.addEventListener('abort', abort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}

/**
 * POSTs a JSON body to a URL under the same egress checks as an HTTP target (resolved, checked,
 * pinned, no redirects), with the headers given: an outcome notification. 2xx is success; 408,
 * 429, 5xx and network faults are retryable.
 */
export async function postJson(
  target: string,
  headers: Readonly<Record<string, string>>,
  body: string,
  egress: Egress,
  timeoutMs: number,
): Promise<TargetResult> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const reached = await reachUrl(target, egress, signal);
    if ('refused' in reached) return reached.refused;
    const { url, resolved } = reached;
    const response = await send(
      url,
      {
        method: 'POST',
        agent: agents[url.protocol === 'https:' ? 'https:' : 'http:'],
        lookup: pinnedLookup(resolved.addresses),
        signal,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'job-scheduler/1' },
      },
      body,
    );
    if (response.status >= 200 && response.status < 300) return { ok: true, detail: `HTTP ${response.status}` };
    return {
      ok: false,
      timedOut: false,
      error: { code: `HTTP_${response.status}`, message: `destination answered ${response.status}`, retryable: isRetryableStatus(response.status) },
    };
  } catch (error) {
    if (signal.aborted) return { ok: false, timedOut: true, error: { code: 'TIMEOUT', message: `no answer within ${timeoutMs} ms`, retryable: true } };
    const cause = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
    return { ok: false, timedOut: false, error: { code: 'NETWORK_ERROR', message: cause, retryable: true } };
  }
}

/** A target the deployment refuses to call: permanent, as calling again would be refused again. */
function blocked(code: 'TARGET_ADDRESS_BLOCKED' | 'TARGET_URL_REFUSED', message: string): TargetResult {
  return { ok: false, timedOut: false, error: { code, message, retryable: false } };
}
