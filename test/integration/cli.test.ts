// The `scheduler` CLI as a user runs it: a child process (bin/scheduler-cli.js, what `npx scheduler`
// runs) against the local runtime, for each command group: its table or JSON output and the exit
// code that says what happened.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scheduler, TargetServer } from './harness';
import { eventually, startScheduler, startTarget } from './harness';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SHIM = join(ROOT, 'bin', 'scheduler-cli.js');

interface Outcome {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function run(
  args: readonly string[],
  env: Record<string, string | undefined>,
  stdin?: string,
  command: readonly string[] = [process.execPath, SHIM],
): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const [file, ...rest] = command;
    const child = spawn(file!, [...rest, ...args], {
      cwd: ROOT,
      env: { ...process.env, SCHEDULER_URL: undefined, SCHEDULER_API_KEY: undefined, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
}

// Each command is a process of its own (a second or more on two busy cores): minutes, not the default 60 s.
describe('the scheduler CLI', { timeout: 240_000 }, () => {
  let scheduler: Scheduler;
  let target: TargetServer;
  let dir: string;
  let env: Record<string, string>;
  const cli = (...args: string[]) => run(args, env);
  const json = async (...args: string[]): Promise<any> => {
    const outcome = await cli('--json', ...args);
    expect(outcome.code, outcome.stderr).toBe(0);
    return JSON.parse(outcome.stdout);
  };
  const file = async (name: string, text: string): Promise<string> => {
    const path = join(dir, name);
    await writeFile(path, text);
    return path;
  };

  beforeAll(async () => {
    scheduler = await startScheduler();
    target = await startTarget((call) => (call.body.includes('"fail":true') ? { status: 400 } : { status: 200 }));
    dir = await mkdtemp(join(tmpdir(), 'scheduler-cli-'));
    env = { SCHEDULER_URL: scheduler.runtime.url, SCHEDULER_API_KEY: scheduler.apiKey };
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await target?.stop();
    await scheduler?.stop();
  });

  const yamlJob = (name: string, extra = '') => `# a job as a user writes it
name: ${name}
type: cli
schedule:
  kind: delay
  seconds: 3600
target:
  kind: http
  url: ${target.url}
payload:
  hello: world
${extra}`;

  it('jobs: create from YAML or JSON, list as a table or JSON, get, update, pause, resume, trigger, delete', async () => {
    const created = await cli('jobs', 'create', '-f', await file('job.yaml', yamlJob('cli-yaml')));
    expect(created.code, created.stderr).toBe(0);
    const jobId = /created job (\S+) \(cli-yaml\), ACTIVE, next run \S+/.exec(created.stdout)?.[1];
    expect(jobId).toBeDefined();

    // JSON from standard input, answered as JSON.
    const fromStdin = await run(
      ['--json', 'jobs', 'create', '-f', '-'],
      env,
      JSON.stringify({ name: 'cli-json', type: 'cli', schedule: { kind: 'delay', seconds: 3600 }, target: { kind: 'http', url: target.url } }),
    );
    expect(fromStdin.code, fromStdin.stderr).toBe(0);
    expect(JSON.parse(fromStdin.stdout)).toMatchObject({ replayed: false, job: { name: 'cli-json', status: 'ACTIVE' } });

    const listed = await cli('jobs', 'list', '--type', 'cli');
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^JOB ID\s+NAME\s+TYPE\s+STATUS\s+SCHEDULE\s+NEXT RUN$/);
    expect(
      lines
        .slice(1)
        .map((line) => line.split(/\s+/)[1])
        .sort(),
    ).toEqual(['cli-json', 'cli-yaml']);
    const paged = await cli('jobs', 'list', '--type', 'cli', '--limit', '1');
    expect(paged.stderr).toMatch(/^more: --cursor \S+ \(or --all\)/);
    expect((await json('jobs', 'list', '--type', 'cli', '--limit', '1', '--all')).items).toHaveLength(2);

    const got = await cli('jobs', 'get', jobId!);
    expect(got.stdout).toMatch(new RegExp(`^Job:\\s+${jobId} \\(cli-yaml\\)\\nType:\\s+cli\\nStatus:\\s+ACTIVE\\n`));
    expect(got.stdout).toMatch(/Recent runs:\nRUN ID\s+STATUS/);

    const patch = await file('patch.yaml', 'priority: high\n');
    const updated = await cli('jobs', 'update', jobId!, '-f', patch, '--if-match', '1');
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stdout).toContain('to version 2');
    const stale = await cli('jobs', 'update', jobId!, '-f', patch, '--if-match', '1');
    expect(stale.code).toBe(3);
    expect(stale.stderr).toContain('error: 412 Precondition failed: The job is at version 2, not 1');

    expect((await cli('jobs', 'pause', jobId!)).stdout).toContain(`paused job ${jobId} (cli-yaml): PAUSED`);
    // Pausing a paused job changes its note and end.
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const again = await cli('jobs', 'pause', jobId!, '--note', 'supplier down', '--until', until);
    expect(again.stdout).toContain(`paused job ${jobId} (cli-yaml): PAUSED, resumes at ${until}`);
    expect((await cli('jobs', 'get', jobId!)).stdout).toMatch(new RegExp(`Paused:\\s+supplier down, until ${until}`));
    // A delay job has one occurrence: nothing to skip.
    expect((await cli('jobs', 'skip', jobId!, '--next', '1')).code).toBe(3);
    expect((await cli('jobs', 'resume', jobId!)).stdout).toContain(': ACTIVE, next run');
    const triggered = await json('jobs', 'trigger', jobId!, '--payload', '{"manual": true}');
    expect(triggered).toMatchObject({ jobId, trigger: 'manual' });
    await eventually(
      () => scheduler.api('GET', `/v1/runs/${triggered.runId}`),
      (answer) => answer.body.status === 'SUCCEEDED',
    );
    expect(target.calls.some((call) => call.body.includes('"manual":true'))).toBe(true);
    expect((await json('jobs', 'delete', jobId!)).status).toBe('CANCELLED');
  });

  it('jobs: a bad file is a usage error, an invalid job names its fields, an unknown one is not found', async () => {
    const missing = await cli('jobs', 'create', '-f', join(dir, 'nope.yaml'));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('cannot read');
    const broken = await cli('jobs', 'create', '-f', await file('broken.yaml', 'name: [unclosed\n'));
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain('is neither JSON nor YAML');

    const invalid = await cli('jobs', 'create', '-f', await file('invalid.yaml', yamlJob('cli-invalid').replace('seconds: 3600', 'seconds: -1')));
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/^error: 400 Invalid request: Invalid request\n {2}schedule\.seconds: /);
    const asProblem = await cli('--json', 'jobs', 'create', '-f', join(dir, 'invalid.yaml'));
    expect(JSON.parse(asProblem.stderr)).toMatchObject({ type: 'urn:job-scheduler:problem:invalid-request', status: 400 });

    const unknown = await cli('jobs', 'get', 'job_nope');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe('error: 404 Not found: No job job_nope\n');
    const usage = await cli('jobs', 'list', '--limit', 'many');
    expect(usage.code).toBe(1);
    expect(usage.stderr).toContain('--limit must be a whole number from 1 to 100');
  });

  it('jobs list: by exact name, by name prefix (in name order) and by labels (repeated: all must match)', async () => {
    const labelled = (name: string, labels: string) => yamlJob(name, `labels:\n${labels}`);
    const ids: Record<string, string> = {};
    for (const [name, labels] of [
      ['cli-find-b', '  team: billing\n  env: prod\n'],
      ['cli-find-a', '  team: billing\n  env: dev\n'],
      ['cli-find-c', '  team: search\n  env: prod\n'],
    ] as const) {
      ids[name] = (await json('jobs', 'create', '-f', await file(`${name}.yaml`, labelled(name, labels)))).job.jobId;
    }
    const names = (page: { items: { name: string }[] }): string[] => page.items.map((job) => job.name);
    expect(names(await json('jobs', 'list', '--name', 'cli-find-a'))).toEqual(['cli-find-a']);
    expect(names(await json('jobs', 'list', '--name-prefix', 'cli-find-'))).toEqual(['cli-find-a', 'cli-find-b', 'cli-find-c']);
    expect(names(await json('jobs', 'list', '--label', 'team=billing')).sort()).toEqual(['cli-find-a', 'cli-find-b']);
    expect(names(await json('jobs', 'list', '--label', 'team=billing', '--label', 'env=prod'))).toEqual(['cli-find-b']);
    // Filters combine (the label picks the index, so not in name order).
    expect(names(await json('jobs', 'list', '--name-prefix', 'cli-find-', '--label', 'env=prod')).sort()).toEqual(['cli-find-b', 'cli-find-c']);
    const table = await cli('jobs', 'list', '--name', 'cli-find-c');
    expect(table.stdout).toMatch(new RegExp(`^JOB ID\\s+NAME.*\\n${ids['cli-find-c']}\\s+cli-find-c\\s+cli\\s+ACTIVE`));

    const both = await cli('jobs', 'list', '--name', 'cli-find-a', '--name-prefix', 'cli-find-');
    expect(both.code).toBe(1);
    expect(both.stderr).toContain('give --name or --name-prefix, not both');
    const notAPair = await cli('jobs', 'list', '--label', 'team');
    expect(notAPair.code).toBe(1);
    expect(notAPair.stderr).toContain("option '--label <key=value>' argument 'team' is invalid. must be key=value");
    // A key the API refuses is its 400, naming the field.
    const badKey = await cli('jobs', 'list', '--label', '-team=billing');
    expect(badKey.code).toBe(1);
    expect(badKey.stderr).toMatch(/^error: 400 .*\n {2}label/);
  });

  it('checks every time option locally, as runs list did: the same message, before any request', async () => {
    const { job } = await json('jobs', 'create', '-f', await file('times.yaml', yamlJob('cli-times')));
    for (const args of [
      ['jobs', 'backfill', job.jobId, '--from', '2026-01-01T00:00Z', '--to', '2026-01-02T00:00:00Z'],
      ['jobs', 'pause', job.jobId, '--until', 'tomorrow'],
      ['dead', 'list', '--from', '2026-01-01'],
      ['dead', 'replay', '--to', '2026-01-01 00:00:00Z'],
      ['preview', '--every', 'PT15M', '--anchor', '2026-01-01T09:07'],
      ['preview', '--cron', '0 9 * * *', '--from', 'now'],
      ['runs', 'list', '--from', 'yesterday'],
    ]) {
      const outcome = await cli(...args);
      expect(outcome.code, args.join(' ')).toBe(1);
      expect(outcome.stderr, args.join(' ')).toMatch(
        /^error: option '--\w+ <\w+(\.\.\.)?>' argument '[^']+' is invalid\. must be an ISO 8601 instant with seconds and an offset, such as 2026-01-31T09:00:00Z/,
      );
    }
    // Nothing reached the API: the job is still ACTIVE, with no backfill.
    expect((await json('jobs', 'get', job.jobId)).status).toBe('ACTIVE');
    // What the API takes, the CLI takes: an offset other than Z, a fraction.
    const paused = await cli('jobs', 'pause', job.jobId, '--until', new Date(Date.now() + 3_600_000).toISOString().replace('Z', '+00:00'));
    expect(paused.code, paused.stderr).toBe(0);
  });

  it('runs: list, get, cancel and replay', async () => {
    const { job } = await json('jobs', 'create', '-f', await file('runs.yaml', yamlJob('cli-runs')));
    const listed = await cli('runs', 'list', job.jobId);
    expect(listed.stdout).toMatch(
      new RegExp(
        `^RUN ID\\s+STATUS\\s+ATTEMPT\\s+TRIGGER\\s+SCHEDULED FOR\\s+FINISHED\\s+ERROR\\n${job.nextRunId.replace(/\./g, '\\.')}\\s+SCHEDULED\\s+1\\s+schedule`,
      ),
    );
    expect((await cli('runs', 'get', job.nextRunId)).stdout).toMatch(/Status:\s+SCHEDULED/);
    expect((await cli('runs', 'cancel', job.nextRunId)).stdout).toBe(`cancelled run ${job.nextRunId}: CANCELLED\n`);
    const replayed = await json('runs', 'replay', job.nextRunId);
    expect(replayed).toMatchObject({ trigger: 'replay', attempt: 2 });
    const again = await cli('runs', 'replay', job.nextRunId);
    expect(again.code).toBe(3);
    expect(again.stderr).toContain('409 Conflict: The run was replayed already');
    // Filters: status, occurrence time ([from, to)), and the tenant's runs without a job id.
    const ids = (page: { items: { runId: string }[] }): string[] => page.items.map((run) => run.runId);
    expect(ids(await json('runs', 'list', job.jobId, '--status', 'cancelled'))).toEqual([job.nextRunId]);
    expect(ids(await json('runs', 'list', job.jobId, '--status', 'SKIPPED'))).toEqual([]);
    expect(ids(await json('runs', 'list', job.jobId, '--from', job.nextRunAt, '--status', 'CANCELLED'))).toEqual([job.nextRunId]);
    expect(ids(await json('runs', 'list', job.jobId, '--to', job.nextRunAt, '--status', 'CANCELLED'))).toEqual([]);
    expect(ids(await json('runs', 'list', '--status', 'CANCELLED', '--from', job.nextRunAt, '--all'))).toContain(job.nextRunId);
    const badStatus = await cli('runs', 'list', job.jobId, '--status', 'done');
    expect(badStatus.code).toBe(1);
    expect(badStatus.stderr).toContain('must be one of SCHEDULED, QUEUED, RUNNING');
    const badInstant = await cli('runs', 'list', '--from', 'yesterday');
    expect(badInstant.code).toBe(1);
    expect(badInstant.stderr).toContain('must be an ISO 8601 instant');
    expect((await cli('runs', 'notifications', job.nextRunId)).stdout).toBe('(no notifications)\n');
    expect(await json('runs', 'notifications', job.nextRunId)).toEqual([]);
    const notResent = await cli('runs', 'resend-notification', job.nextRunId, 'dead');
    expect(notResent.code).toBe(2);
    expect((await cli('runs', 'get', 'job_nope.1.1')).code).toBe(2);
  });

  it('dead: list, replay one, replay in bulk', async () => {
    const jobIds: string[] = [];
    for (const name of ['cli-dead-a', 'cli-dead-b']) {
      const spec = yamlJob(name, 'retryPolicy:\n  maxAttempts: 1\n').replace('hello: world', 'fail: true').replace('kind: delay\n  seconds: 3600', 'kind: now');
      jobIds.push((await json('jobs', 'create', '-f', await file(`${name}.yaml`, spec))).job.jobId);
    }
    const dead = await eventually(
      () => json('dead', 'list'),
      (page) => jobIds.every((jobId) => page.items.some((run: any) => run.jobId === jobId)),
      30_000,
    );
    const [first] = dead.items.filter((run: any) => run.jobId === jobIds[0]);
    const table = await cli('dead', 'list', '--job', jobIds[0]!);
    expect(table.stdout).toMatch(/^RUN ID\s+JOB ID\s+ATTEMPT\s+SCHEDULED FOR\s+ERROR\n/);
    expect(table.stdout).toContain('HTTP_400');

    expect((await cli('dead', 'replay', first.runId)).stdout).toMatch(/^replayed as run \S+: QUEUED\n$/);
    const bulk = await cli('dead', 'replay', '--job', jobIds[1]!);
    expect(bulk.code, bulk.stderr).toBe(0);
    expect(bulk.stdout).toMatch(/^replayed 1 dead run\(s\)\n/);
    const neither = await cli('dead', 'replay');
    expect(neither.code).toBe(1);
    expect(neither.stderr).toContain('give a run id, or choose dead runs with --job, --from/--to or --all');
  });

  it('jobs skip: the next N, or fire times named; a usage error for both or neither', async () => {
    const created = await json(
      'jobs',
      'create',
      '-f',
      await file('skip.yaml', yamlJob('cli-skip').replace('kind: delay\n  seconds: 3600', "kind: cron\n  expression: '0 * * * *'")),
    );
    const jobId = created.job.jobId as string;
    const first = created.job.nextRunAt as string;
    const skipped = await cli('jobs', 'skip', jobId, '--next', '2');
    expect(skipped.code, skipped.stderr).toBe(0);
    const second = new Date(Date.parse(first) + 3_600_000).toISOString();
    expect(skipped.stdout).toContain(`skipping ${first}, ${second}`);
    const third = new Date(Date.parse(first) + 3 * 3_600_000).toISOString();
    expect((await json('jobs', 'skip', jobId, '--at', third)).skippedOccurrences).toEqual([first, second, third]);
    expect((await cli('jobs', 'skip', jobId)).code).toBe(1);
    expect((await cli('jobs', 'skip', jobId, '--at', '2026-01-01T00:00:30Z')).code).toBe(1);
    const preview = await cli('preview', '--job', jobId, '--count', '2');
    expect(preview.stdout).toBe(`${first}  skipped (skipped on request)\n${second}  skipped (skipped on request)\n`);
  });

  it('workflows: create from YAML, list as a table or JSON, get, start, runs, a run, pause and resume', async () => {
    const yaml = `name: cli-workflow
schedule: { kind: delay, seconds: 3600 }
notify: { events: [succeeded], destination: { kind: http, url: "${target.url}/hook" } }
steps:
  - { id: first, target: { kind: http, url: "${target.url}/first" } }
  - { id: second, target: { kind: http, url: "${target.url}/second" }, dependsOn: [first] }
`;
    const created = await cli('workflows', 'create', '-f', await file('workflow.yaml', yaml));
    expect(created.code, created.stderr).toBe(0);
    const workflowId = /created workflow (\S+) \(cli-workflow\), version 1, next run \S+/.exec(created.stdout)?.[1];
    expect(workflowId).toBeDefined();
    const listed = await cli('workflows', 'list', '--order', 'name');
    expect(listed.code, listed.stderr).toBe(0);
    const lines = listed.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^WORKFLOW ID\s+NAME\s+VERSION\s+STEPS\s+SCHEDULE\s+NEXT RUN\s+UPDATED$/);
    expect(lines.find((line) => line.startsWith(workflowId!))).toMatch(/cli-workflow\s+1\s+2\s+ACTIVE\s+\S+/);
    expect((await json('workflows', 'list', '--name-prefix', 'cli-')).items.map((workflow: { workflowId: string }) => workflow.workflowId)).toEqual([
      workflowId,
    ]);
    expect((await cli('workflows', 'get', workflowId!)).stdout).toMatch(/Steps:\s+first; second <- first/);
    const started = await json('workflows', 'start', workflowId!);
    await eventually(
      () => json('workflows', 'run', workflowId!, started.workflowRunId),
      (run) => run.status === 'SUCCEEDED',
      60_000,
    );
    expect((await cli('workflows', 'runs', workflowId!)).stdout).toMatch(new RegExp(`${started.workflowRunId}\\s+SUCCEEDED`));
    // Its end's notification: sent, so not sent again (a conflict, exit 3); an event it did not raise is not found (exit 2).
    const notifications = await eventually(
      () => json('workflows', 'notifications', workflowId!, started.workflowRunId),
      (items) => items[0]?.status === 'SENT',
      60_000,
    );
    expect(notifications).toEqual([expect.objectContaining({ retry: 0, event: 'succeeded', status: 'SENT' })]);
    expect((await cli('workflows', 'notifications', workflowId!, started.workflowRunId)).stdout).toBe('retry 0\tsucceeded\tSENT\ttries 1\n');
    expect((await cli('workflows', 'resend-notification', workflowId!, started.workflowRunId, 'succeeded')).code).toBe(3);
    expect((await cli('workflows', 'resend-notification', workflowId!, started.workflowRunId, 'cancelled')).code).toBe(2);
    expect((await cli('workflows', 'pause', workflowId!)).stdout).toMatch(/schedule PAUSED/);
    expect((await cli('workflows', 'resume', workflowId!)).stdout).toMatch(/schedule ACTIVE/);
    expect((await cli('workflows', 'delete', workflowId!)).stdout).toMatch(new RegExp(`deleted workflow ${workflowId} \\(cli-[^)]+\\) at \\d{4}-`));
    expect((await json('workflows', 'get', workflowId!)).deletedAt).toEqual(expect.any(String));
    expect((await cli('workflows', 'get', 'wf_none')).code).toBe(2);
  });

  it('workflows update: a new version from a file, with --if-match; a stale version is a conflict', async () => {
    const definition = (steps: string) => `name: cli-workflow-versions
steps:
  - { id: first, target: { kind: http, url: "${target.url}/first" } }
${steps}`;
    const created = await json('workflows', 'create', '-f', await file('versions-1.yaml', definition('')));
    const workflowId = created.workflowId as string;
    const second = await file('versions-2.yaml', definition(`  - { id: second, target: { kind: http, url: "${target.url}/second" }, dependsOn: [first] }\n`));
    const updated = await cli('workflows', 'update', workflowId, '-f', second, '--if-match', '1');
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stdout).toBe(`updated workflow ${workflowId} (cli-workflow-versions) to version 2, next run -\n`);
    const got = await cli('workflows', 'get', workflowId);
    expect(got.stdout).toMatch(/Version:\s+2\n/);
    expect(got.stdout).toMatch(/Steps:\s+first; second <- first/);
    expect((await json('workflows', 'get', workflowId, '--version', '1')).definition.steps).toHaveLength(1);

    const stale = await cli('workflows', 'update', workflowId, '-f', second, '--if-match', '1');
    expect(stale.code).toBe(3);
    expect(stale.stderr).toMatch(/^error: 412 /);
    // Without --if-match, written after any version: 3. From standard input, as JSON.
    const fromStdin = await run(
      ['--json', 'workflows', 'update', workflowId, '-f', '-'],
      env,
      JSON.stringify({ name: 'cli-workflow-versions', steps: [{ id: 'only', target: { kind: 'http', url: `${target.url}/only` } }] }),
    );
    expect(fromStdin.code, fromStdin.stderr).toBe(0);
    expect(JSON.parse(fromStdin.stdout)).toMatchObject({ workflowId, version: 3 });
    const renamed = await cli(
      'workflows',
      'update',
      workflowId,
      '-f',
      await file('versions-renamed.yaml', definition('').replace('cli-workflow-versions', 'cli-other')),
    );
    expect(renamed.code).toBe(1);
    expect((await cli('workflows', 'update', 'wf_none', '-f', second)).code).toBe(2);
  });

  it('preview and health', async () => {
    const preview = await cli('preview', '--cron', '0 9 * * 1', '--timezone', 'Europe/Paris', '--from', '2026-01-01T00:00:00Z', '--count', '2');
    expect(preview.code, preview.stderr).toBe(0);
    expect(preview.stdout).toBe('2026-01-05T08:00:00.000Z\n2026-01-12T08:00:00.000Z\n');
    // A job file's schedule.
    const fromFile = await json(
      'preview',
      '-f',
      await file('preview.yaml', yamlJob('cli-preview').replace('kind: delay\n  seconds: 3600', "kind: cron\n  expression: '*/15 * * * *'")),
      '--from',
      '2026-01-01T00:00:00Z',
      '--count',
      '3',
    );
    expect(fromFile.fireTimes).toEqual(['2026-01-01T00:15:00.000Z', '2026-01-01T00:30:00.000Z', '2026-01-01T00:45:00.000Z']);
    const bad = await cli('preview', '--cron', 'not a cron');
    expect(bad.code).toBe(1);

    const health = await cli('health', '--minutes', '5');
    expect(health.code, health.stderr).toBe(0);
    expect(health.stdout).toMatch(/^Status:\s+(ok|degraded)\n/);
    expect(health.stdout).toMatch(/Queues:\nPOOL\s+WAITING\s+IN FLIGHT\s+DLQ\ndefault\s+\d+/);
    expect((await json('health')).runs.windowMinutes).toBe(15);
  });

  it("watch follows a job's runs until it is done", async () => {
    const spec = yamlJob('cli-watch').replace('kind: delay\n  seconds: 3600', 'kind: now');
    const { job } = await json('jobs', 'create', '-f', await file('watch.yaml', spec));
    const watched = await cli('watch', job.jobId, '--interval', '1', '--until-done', '--timeout', '60');
    expect(watched.code, watched.stderr).toBe(0);
    expect(watched.stdout).toMatch(new RegExp(`job ${job.jobId} COMPLETED\\n`));
    expect(watched.stdout).toMatch(new RegExp(`run ${job.nextRunId.replace(/\./g, '\\.')} attempt 1 \\(schedule\\) .*SUCCEEDED\\n$`));

    // As JSON lines, and a timeout when the job is not done in time.
    const { job: later } = await json('jobs', 'create', '-f', await file('watch-later.yaml', yamlJob('cli-watch-later')));
    const timedOut = await cli('--json', 'watch', later.jobId, '--interval', '1', '--until-done', '--timeout', '1');
    expect(timedOut.code).toBe(7);
    const events = timedOut.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(events[0]).toMatchObject({ jobId: later.jobId, jobStatus: 'ACTIVE' });
    expect(events[1]).toMatchObject({ run: { runId: later.nextRunId, status: 'SCHEDULED' } });
  });

  it('says what is missing or refused: no URL or key, a wrong key, no answer', async () => {
    const noUrl = await run(['jobs', 'list'], {});
    expect(noUrl.code).toBe(1);
    expect(noUrl.stderr).toContain('no API URL: set SCHEDULER_URL or pass --url');
    const noKey = await run(['jobs', 'list', '--url', scheduler.runtime.url], {});
    // Exit 4 is "no key, or a key the API does not accept" (before: 1).
    expect(noKey.code).toBe(4);
    expect(noKey.stderr).toBe('error: no API key: set SCHEDULER_API_KEY or pass --api-key\n');
    // A URL without its scheme: named as it came (SCHEDULER_URL here, not --url), with the fix.
    const host = new URL(scheduler.runtime.url).host;
    const noScheme = await run(['jobs', 'list'], { ...env, SCHEDULER_URL: host });
    expect(noScheme.code).toBe(1);
    expect(noScheme.stderr).toBe(`error: SCHEDULER_URL ${host} is not an http(s) URL: did you mean http://${host}?\n`);
    const noSchemeFlag = await run(['--url', host, 'jobs', 'list'], env);
    expect(noSchemeFlag.stderr).toBe(`error: --url ${host} is not an http(s) URL: did you mean http://${host}?\n`);
    // The API's URL as \`npm run dev\` prints it, with /v1: the base URL with or without it (before: /v1/v1/jobs, a 404, exit 2).
    for (const withV1 of [`${scheduler.runtime.url}/v1`, `${scheduler.runtime.url}/v1/`]) {
      const listed = await run(['--json', 'jobs', 'list', '--limit', '1'], { ...env, SCHEDULER_URL: withV1 });
      expect(listed.code, listed.stderr).toBe(0);
      expect(JSON.parse(listed.stdout)).toHaveProperty('items');
    }
    // Flags instead of the environment.
    const flags = await run(['--url', scheduler.runtime.url, '--api-key', scheduler.apiKey, 'jobs', 'list', '--limit', '1'], {});
    expect(flags.code, flags.stderr).toBe(0);

    const wrongKey = await run(['health'], { ...env, SCHEDULER_API_KEY: 'key_wrong' });
    expect(wrongKey.code).toBe(4);
    expect(wrongKey.stderr).toContain('401 Unauthorized');
    // A port nobody listens on (the target server's, stopped).
    const gone = await startTarget();
    await gone.stop();
    const noAnswer = await run(['jobs', 'list'], { ...env, SCHEDULER_URL: new URL(gone.url).origin });
    expect(noAnswer.code).toBe(5);
    expect(noAnswer.stderr).toContain('no answer from the scheduler API (GET /v1/jobs)');
    const help = await run(['--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes: 0 ok, 1 usage');
    expect((await run(['jobs', 'frobnicate'], env)).code).toBe(1);
  });

  it('runs as `npx scheduler` in this repository', async () => {
    const outcome = await run(['scheduler', '--json', 'preview', '--delay', '60', '--from', '2026-01-01T00:00:00Z'], env, undefined, ['npx', '--no-install']);
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(JSON.parse(outcome.stdout)).toEqual({
      fireTimes: ['2026-01-01T00:01:00.000Z'],
      occurrences: [{ at: '2026-01-01T00:01:00.000Z', startsAt: '2026-01-01T00:01:00.000Z', skipped: null }],
    });
  });
});
