// Builds the web console (console/src) with esbuild into three files: index.html, app.js, app.css.
// The local runtime builds it in memory on its first request; `npm run build:console` writes
// console/dist;
// the stack builds it at synth into the console function's code (lib/console.ts).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { BuildOptions, OutputFile } from 'esbuild';
import { build, buildSync } from 'esbuild';

const here = import.meta.dirname;

export interface ConsoleAsset {
  readonly contentType: string;
  readonly body: Uint8Array;
}

/** The console's files by name (`index.html`, `app.js`, `app.css`). */
export type ConsoleAssets = ReadonlyMap<string, ConsoleAsset>;

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

function options(): BuildOptions {
  return {
    entryPoints: { app: path.join(here, 'src', 'main.ts') },
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['chrome110', 'firefox110', 'safari16'],
    outdir: '/console-out',
    write: false,
    legalComments: 'none',
    logLevel: 'warning',
  };
}

function assetsOf(outputFiles: readonly OutputFile[]): Map<string, ConsoleAsset> {
  const assets = new Map<string, ConsoleAsset>();
  for (const file of outputFiles) {
    const name = path.basename(file.path);
    assets.set(name, { contentType: CONTENT_TYPES[path.extname(name)] ?? 'application/octet-stream', body: file.contents });
  }
  assets.set('index.html', { contentType: CONTENT_TYPES['.html']!, body: readFileSync(path.join(here, 'index.html')) });
  return assets;
}

export async function buildConsole(): Promise<ConsoleAssets> {
  const result = await build(options());
  return assetsOf(result.outputFiles ?? []);
}

/** For the CDK, whose constructs are built synchronously. */
export function buildConsoleSync(): ConsoleAssets {
  return assetsOf(buildSync(options()).outputFiles ?? []);
}

export function writeConsole(assets: ConsoleAssets, directory: string): void {
  mkdirSync(directory, { recursive: true });
  for (const [name, asset] of assets) writeFileSync(path.join(directory, name), asset.body);
}
