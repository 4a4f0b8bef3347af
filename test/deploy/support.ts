// Helpers of the deploy test (test/deploy/deploy-test.ts): child processes it starts and stops by
// pid, an HTTPS target on 127.0.0.2 with a certificate of its own CA, and calls to the deployed API
// through MiniStack's gateway, which routes an API by its Host header.
import type { ChildProcess } from 'node:child_process';
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import * as path from 'node:path';

/** Every child process started here, so that a failure or a signal still stops them all. */
const children = new Set<ChildProcess>();

export function stopChildren(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  children.clear();
}

export interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to its end (killed, by its pid, after `timeoutMs`); never throws on a non-zero exit. */
export function run(command: string, args: readonly string[], options: { env: NodeJS.ProcessEnv; cwd: string; timeoutMs: number; log?: string }): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(command, [...args], { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      children.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A free TCP port on 127.0.0.1 within [from, to]. */
export async function freePortIn(from: number, to: number): Promise<number> {
  for (let port = from; port <= to; port++) {
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error(`no free port in ${from}-${to}`);
}

/** A self-signed certificate for 127.0.0.2 (its own CA), made with the openssl command. */
export function makeCertificate(dir: string): { certFile: string; cert: string; key: string } {
  const certFile = path.join(dir, 'target-ca.pem');
  const keyFile = path.join(dir, 'target-key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.2',
      '-addext',
      'subjectAltName=IP:127.0.0.2',
    ],
    { stdio: 'ignore' },
  );
  return { certFile, cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
}

export interface TargetCall {
  readonly path: string;
  readonly at: number;
  readonly headers: http.IncomingHttpHeaders;
  /** The request body's length, and the body itself when it is a large-payload scenario's. */
  readonly bodyBytes: number;
  readonly body: string;
}

export interface HttpsTarget {
  readonly url: string;
  readonly calls: TargetCall[];
  /** Paths answered 500 until `heal` (the failing-target scenario). Paths under /large are recorded with their bodies. */
  readonly failing: Set<string>;
  close(): Promise<void>;
}

/** An HTTPS target on 127.0.0.2 (MiniStack's Node shim turns https to 127.0.0.1 into http). */
export async function startHttpsTarget(cert: string, key: string): Promise<HttpsTarget> {
  const calls: TargetCall[] = [];
  const failing = new Set<string>();
  const server = https.createServer({ cert, key }, (request, response) => {
    const at = Date.now();
    const urlPath = request.url ?? '/';
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      calls.push({ path: urlPath, at, headers: request.headers, bodyBytes: body.length, body: urlPath.startsWith('/large') ? body.toString('utf8') : '' });
      const fails = [...failing].some((prefix) => urlPath.startsWith(prefix));
      response.writeHead(fails ? 500 : 200, { 'content-type': 'application/json' });
      // A workflow step under /large-result answers a 100 KB result, stored in the payload bucket (decision 0163).
      const answer = fails ? { error: 'failing on purpose' } : urlPath.startsWith('/large-result') ? { ok: true, blob: 'r'.repeat(100_000) } : { ok: true };
      response.end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.2:${port}`,
    calls,
    failing,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export interface Proxy {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * A plain-http proxy to MiniStack on `targetPort` that marks every request `x-forwarded-proto:
 * https`, as a TLS-terminating proxy would. With AUTH=true MiniStack resolves `aws:SecureTransport`
 * from that header, and the CDK bootstrap bucket and our queues deny every request without it; in
 * AWS every call is https. The header is not signed, so signatures still verify.
 */
export async function startSecureTransportProxy(port: number, targetPort: number): Promise<Proxy> {
  const server = http.createServer((request, response) => {
    const upstream = http.request(
      { host: '127.0.0.1', port: targetPort, method: request.method, path: request.url, headers: { ...request.headers, 'x-forwarded-proto': 'https' } },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    upstream.on('error', (error) => {
      if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain' });
      response.end(`proxy: ${error.message}`);
    });
    request.pipe(upstream);
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface ApiAnswer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: any;
}

/** The deployed API: connects to MiniStack's gateway and names the API by its Host header. */
export function apiClient(apiUrl: string, gateway: string, defaultKey: string) {
  // Not new URL(): WHATWG refuses a host whose last label is a number (`<id>.execute-api.127.0.0.1`).
  const host = /^https?:\/\/([^/]+)/.exec(apiUrl)?.[1];
  if (!host) throw new Error(`not an API URL: ${apiUrl}`);
  const { hostname, port } = new URL(gateway);
  return (method: string, urlPath: string, body?: unknown, headers: Record<string, string> = {}, key = defaultKey): Promise<ApiAnswer> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const request = http.request(
        {
          host: hostname,
          port,
          method,
          path: urlPath,
          headers: {
            host,
            authorization: `Bearer ${key}`,
            ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
            ...headers,
          },
          timeout: 60_000,
        },
        (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk.toString()));
          response.on('end', () => {
            let parsed: unknown = text;
            try {
              parsed = text ? JSON.parse(text) : null;
            } catch {
              // not JSON: kept as text
            }
            resolve({ status: response.statusCode ?? 0, headers: response.headers, body: parsed });
          });
        },
      );
      request.on('timeout', () => request.destroy(new Error(`${method} ${urlPath}: no answer in 60 s`)));
      request.on('error', reject);
      if (payload !== undefined) request.write(payload);
      request.end();
    });
}

export type Api = ReturnType<typeof apiClient>;

/** Polls `read` until `done` holds; throws with the last value after `timeoutMs`. */
export async function eventually<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number, intervalMs = 1_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    try {
      last = await read();
      if (done(last)) return last;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${Math.round(timeoutMs / 1000)} s; last: ${JSON.stringify(last)?.slice(0, 600)}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(message);
}
