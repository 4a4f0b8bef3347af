// `npm run build:console [-- dir]`: writes the web console to dir (default console/dist) and says
// how big each file is, as sent and gzipped (the budget: about 50 kB gzipped).
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { buildConsole, writeConsole } from '../console/build';

const directory = path.resolve(process.argv[2] ?? path.join(import.meta.dirname, '..', 'console', 'dist'));
const assets = await buildConsole();
writeConsole(assets, directory);
for (const [name, asset] of assets) {
  console.log(`${name.padEnd(12)} ${String(asset.body.length).padStart(8)} bytes, ${String(gzipSync(asset.body).length).padStart(7)} gzipped`);
}
console.log(`written to ${path.relative(process.cwd(), directory) || '.'}`);
