// The console's files as the local runtime and the console function serve them.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsoleAssets } from '../../console/build';
import { buildConsole, writeConsole } from '../../console/build';
import type { ConsoleFile } from '../../lambdas/console/adapter';
import { consoleFilesIn, serveConsole } from '../../lambdas/console/adapter';

let assets: ConsoleAssets;
let directory: string;
let files: Map<string, ConsoleFile>;

beforeAll(async () => {
  assets = await buildConsole();
  directory = mkdtempSync(path.join(tmpdir(), 'console-'));
  writeConsole(assets, directory);
  files = consoleFilesIn(directory, { readdirSync, readFileSync });
}, 60_000);

afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('the console files', () => {
  it("are three, and the whole console is under 50 kB gzipped (the issue's budget)", () => {
    expect([...assets.keys()].sort()).toEqual(['app.css', 'app.js', 'index.html']);
    const gzipped = [...assets.values()].reduce((sum, asset) => sum + gzipSync(asset.body).length, 0);
    expect(gzipped).toBeLessThan(50 * 1024);
  });

  it('load nothing from another origin: no absolute URL in the page, and a policy that allows only this one', () => {
    const html = Buffer.from(assets.get('index.html')!.body).toString('utf8');
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    const answer = serveConsole(files, 'GET', '/console/');
    expect(answer.headers['content-security-policy']).toContain("default-src 'none'");
    expect(answer.headers['content-security-policy']).toContain("connect-src 'self'");
  });

  it('answers the pages, their types and what is not there', () => {
    // With or without the slash: a gateway may pass either.
    expect(serveConsole(files, 'GET', '/console')).toEqual(serveConsole(files, 'GET', '/console/'));
    const index = serveConsole(files, 'GET', '/console/');
    expect(index.statusCode).toBe(200);
    expect(index.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(Buffer.from(index.body).toString('utf8')).toContain('<script type="module" src="/console/app.js">');
    expect(serveConsole(files, 'GET', '/console/app.js').headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(serveConsole(files, 'GET', '/console/app.css').headers['content-type']).toBe('text/css; charset=utf-8');
    expect(serveConsole(files, 'HEAD', '/console/app.js')).toMatchObject({ statusCode: 200, body: '' });
    expect(serveConsole(files, 'GET', '/console/../package.json').statusCode).toBe(404);
    expect(serveConsole(files, 'GET', '/console/nothing.js').statusCode).toBe(404);
    expect(serveConsole(files, 'POST', '/console/')).toMatchObject({ statusCode: 405, headers: { allow: 'GET, HEAD' } });
  });

  it('refuse to start from a directory without the console', () => {
    expect(() => consoleFilesIn(tmpdir(), { readdirSync: () => [], readFileSync })).toThrow(/no console/);
  });
});
