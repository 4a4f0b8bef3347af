// Serves the web console's three built files under /console. The same answers come from the
// local runtime and from the console function of the stack (decision 0105). The files are public:
// everything the console shows comes from the API, with the key the user signs in with.

export interface ConsoleFile {
  readonly contentType: string;
  readonly body: Uint8Array;
}

export interface ConsoleResponse {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly body: Uint8Array | string;
}

/** The console's path prefix, beside the API's `/v1`. */
export const CONSOLE_PATH = '/console';

/**
 * Only this origin: no CDN, no remote font or script, no other API. Styles set by script
 * (the charts) are CSSOM writes, which `style-src 'self'` allows.
 */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
};

/** The built files of a directory, read once (the function reads its bundle's console/ at start). */
export function consoleFilesIn(
  directory: string,
  fs: { readdirSync(directory: string): string[]; readFileSync(file: string): Uint8Array },
): Map<string, ConsoleFile> {
  const files = new Map<string, ConsoleFile>();
  for (const name of fs.readdirSync(directory)) {
    const contentType = CONTENT_TYPES[name.split('.').pop() ?? ''];
    if (contentType) files.set(name, { contentType, body: fs.readFileSync(`${directory}/${name}`) });
  }
  if (!files.has('index.html')) throw new Error(`no console in ${directory}: the bundle must hold index.html, app.js and app.css`);
  return files;
}

export function isConsolePath(path: string): boolean {
  return path === CONSOLE_PATH || path.startsWith(`${CONSOLE_PATH}/`);
}

/** The answer to a GET or HEAD of a console path; `files` are keyed by name (`index.html`). */
export function serveConsole(files: ReadonlyMap<string, ConsoleFile>, method: string, path: string): ConsoleResponse {
  if (method !== 'GET' && method !== 'HEAD') {
    return { statusCode: 405, headers: { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }, body: 'Method not allowed' };
  }
  // The page names its files by absolute path, so `/console` and `/console/` both serve it: a
  // gateway may hand either to the function for either address (MiniStack passes `/console`).
  const name = path.slice(CONSOLE_PATH.length + 1) || 'index.html';
  const file = files.get(name);
  if (!file) return { statusCode: 404, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: 'Not found' };
  return {
    statusCode: 200,
    headers: {
      'content-type': file.contentType,
      // Each deploy ships new files under the same names: revalidate, never serve a stale bundle.
      'cache-control': 'no-cache',
      ...SECURITY_HEADERS,
    },
    body: method === 'HEAD' ? '' : file.body,
  };
}
