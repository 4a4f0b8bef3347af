// Builds the client package (clients/package.json) into clients/dist, or the directory given:
// tsc's JavaScript and declarations, then every relative import path is given its `.js`, which
// Node's ESM loader and TypeScript's NodeNext resolution need and the backend's sources (extensionless,
// for the bundler) do not spell. Run by `npm run build:client` and by `npm pack` in clients/.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const outDir = resolve(process.argv[2] ?? join(here, 'dist'));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

rmSync(outDir, { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', join(here, 'tsconfig.build.json'), '--outDir', outDir], { stdio: 'inherit' });

/** `from './delivery'` and `import('./delivery')` become `./delivery.js`; paths with an extension stay. */
export function withJsExtensions(source: string): string {
  return source.replace(/(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}\/[^'"]*?)\2/g, (match, lead: string, quote: string, path: string) =>
    /\.(js|json|mjs|cjs)$/.test(path) ? match : `${lead}${quote}${path}.js${quote}`,
  );
}

function rewrite(directory: string): number {
  let files = 0;
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) files += rewrite(path);
    else if (/\.(js|d\.ts)$/.test(entry.name)) {
      const before = readFileSync(path, 'utf8');
      const after = withJsExtensions(before);
      if (after !== before) writeFileSync(path, after);
      files += 1;
    }
  }
  return files;
}

process.stdout.write(`built ${rewrite(outDir)} files into ${outDir}\n`);
