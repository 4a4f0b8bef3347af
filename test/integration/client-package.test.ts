// The client as a user's project gets it: clients/ built (clients/build.ts) and packed as npm packs
// it, unpacked into a project of its own, type-checked there under NodeNext and Bundler resolution,
// imported by plain Node and run against the local runtime, with the CLI from its `bin`.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile, copyFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scheduler } from './harness';
import { startScheduler } from './harness';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

const CONSUMER = `import { SchedulerApiError, SchedulerClient } from '@job-scheduler/client';
import type { JobSpecInput, JobView, Run } from '@job-scheduler/client';

const client = new SchedulerClient({ baseUrl: 'http://127.0.0.1:3000', apiKey: 'key' });
const spec: JobSpecInput = { name: 'from-a-package', type: 'pkg', schedule: { kind: 'delay', seconds: 3600 }, target: { kind: 'external' } };

export async function main(): Promise<string[]> {
  const { job } = await client.jobs.create(spec);
  const view: JobView = job;
  const runs: Run[] = [];
  for await (const run of client.runs.iterate(view.jobId)) runs.push(run);
  try {
    await client.jobs.get('job_missing');
  } catch (error) {
    if (error instanceof SchedulerApiError) return [view.status, runs[0]?.status ?? '-', error.problem.type];
  }
  // @ts-expect-error there is no such schedule kind
  await client.preview({ schedule: { kind: 'weekly' } });
  return [];
}
`;

describe('the client package', { timeout: 240_000 }, () => {
  let scheduler: Scheduler;
  let dir: string;
  let installed: string;

  beforeAll(async () => {
    scheduler = await startScheduler({ workerConcurrency: 0 });
    dir = await mkdtemp(join(tmpdir(), 'client-package-'));
    // Built and packed outside the work tree: the package's files as npm would publish them.
    const staged = join(dir, 'staged');
    await mkdir(staged);
    await copyFile(join(ROOT, 'clients', 'package.json'), join(staged, 'package.json'));
    await run(process.execPath, [join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), join(ROOT, 'clients', 'build.ts'), join(staged, 'dist')], { cwd: ROOT });
    const { stdout } = await run(NPM, ['pack', '--ignore-scripts', '--pack-destination', dir], { cwd: staged });
    const tarball = join(dir, stdout.trim().split('\n').at(-1)!);

    // A user's project with the package unpacked into its node_modules and its dependencies beside it.
    const project = join(dir, 'project');
    installed = join(project, 'node_modules', '@job-scheduler', 'client');
    await mkdir(installed, { recursive: true });
    await run('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1']);
    const manifest = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    for (const dependency of Object.keys(manifest.dependencies))
      await symlink(join(ROOT, 'node_modules', dependency), join(project, 'node_modules', dependency));
    await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    await writeFile(join(project, 'consumer.ts'), CONSUMER);
    // tsc builds the package: tens of seconds on two busy cores.
  }, 240_000);
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
    await scheduler?.stop();
  });

  it('depends on what the repository pins, and ships only its build', async () => {
    const manifest = JSON.parse(await readFile(join(ROOT, 'clients', 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const root = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    for (const [name, range] of Object.entries(manifest.dependencies)) expect(range, name).toBe(root.dependencies[name]);
    expect((await readdir(installed)).sort()).toEqual(['dist', 'package.json']);
    // The client's JavaScript loads nothing of the backend (its types only come from lambdas/domain).
    const sources = await readdir(join(installed, 'dist', 'clients'), { recursive: true });
    for (const source of sources.filter((name) => name.endsWith('.js'))) {
      expect(await readFile(join(installed, 'dist', 'clients', source), 'utf8'), source).not.toMatch(/from '\.\.\/(\.\.\/)?lambdas/);
    }
  });

  it.each(['NodeNext', 'Bundler'])('type-checks a project that uses it, under %s resolution', async (resolution) => {
    const project = join(dir, 'project');
    const tsconfig = {
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'ES2022',
        lib: ['ES2023', 'DOM'],
        types: [],
        skipLibCheck: false,
        module: resolution === 'NodeNext' ? 'NodeNext' : 'ESNext',
        moduleResolution: resolution,
      },
      files: ['consumer.ts'],
    };
    await writeFile(join(project, `tsconfig.${resolution}.json`), JSON.stringify(tsconfig));
    const checked = await run(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', `tsconfig.${resolution}.json`], {
      cwd: project,
    }).catch((error: { stdout: string }) => error);
    expect(checked.stdout).toBe('');
  });

  it('runs from plain Node against the API, and its CLI from its bin', async () => {
    const project = join(dir, 'project');
    const env = { ...process.env, SCHEDULER_URL: scheduler.runtime.url, SCHEDULER_API_KEY: scheduler.apiKey };
    const script = `import { SchedulerClient } from '@job-scheduler/client';
const client = new SchedulerClient({ baseUrl: process.env.SCHEDULER_URL, apiKey: process.env.SCHEDULER_API_KEY });
const { job } = await client.jobs.create({ name: 'plain-node', type: 'pkg', schedule: { kind: 'delay', seconds: 3600 }, target: { kind: 'external' } });
const fetched = await client.jobs.get(job.jobId);
console.log(JSON.stringify({ status: fetched.status, runs: fetched.recentRuns.length }));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: project, env });
    expect(JSON.parse(stdout)).toEqual({ status: 'ACTIVE', runs: 1 });

    const manifest = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    const cli = await run(process.execPath, [join(installed, manifest.bin.scheduler!), '--json', 'jobs', 'list', '--type', 'pkg'], { cwd: project, env });
    expect((JSON.parse(cli.stdout) as { items: { name: string }[] }).items.map((job) => job.name)).toEqual(['plain-node']);
  });
});
