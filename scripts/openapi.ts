// Writes the API's OpenAPI document (generated from its route table and zod schemas) to
// docs/openapi.json. A unit test fails when the file is stale: run `npm run openapi` after changing
// a route or a schema.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApiFileText } from '../lambdas/api/openapi';

const file = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'openapi.json');
writeFileSync(file, openApiFileText());
console.log(`wrote ${path.relative(process.cwd(), file)}`);
