// The examples of the docs say what the code does: the job.yaml of docs/api.md is a job the API
// (and the CLI's create) takes, every operator command named in the OpenAPI document is one the
// admin CLI has, and the README's `now` job is answered COMPLETED (test/integration/run-now.test.ts).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { buildOpenApiDocument } from '../../lambdas/api/openapi';
import { jobSpecSchema } from '../../lambdas/domain/job';
import { parseAdminArgs } from '../../scripts/ops/admin';

const root = path.join(__dirname, '..', '..');
const read = (file: string): string => readFileSync(path.join(root, file), 'utf8');

describe('the examples of the docs', () => {
  it("docs/api.md's job.yaml is a valid job", () => {
    const block = /```yaml\n(# job\.yaml\n[\s\S]*?)```/.exec(read('docs/api.md'))?.[1];
    expect(block).toBeDefined();
    const parsed = jobSpecSchema.safeParse(parseYaml(block!));
    expect(parsed.error?.issues ?? []).toEqual([]);
  });

  it('examples/job.yaml, which the README creates with the CLI, is a valid job', () => {
    const parsed = jobSpecSchema.safeParse(parseYaml(read('examples/job.yaml')));
    expect(parsed.error?.issues ?? []).toEqual([]);
  });

  it('the OpenAPI document names only admin commands that exist', () => {
    const text = JSON.stringify(buildOpenApiDocument());
    const commands = [...text.matchAll(/npm run admin -- ([^`]+)`/g)].map((match) => (match[1] ?? '').replace(/<[^>]+>/g, 'acme').split(' '));
    expect(commands.length).toBeGreaterThan(0);
    for (const command of commands) expect(() => parseAdminArgs(command), command.join(' ')).not.toThrow();
  });

  it("the README's answer to a job that runs now says COMPLETED, as the API answers", () => {
    const readme = read('README.md');
    const create = /"schedule":\{"kind":"now"\}[\s\S]*?\n# -> 201 (.*)\n/.exec(readme)?.[1];
    expect(create).toContain('"status":"COMPLETED"');
  });
});
