// The `scheduler` command line: commander's commands over the typed client. `runCli` takes its
// streams and environment as arguments and returns the exit code (exit-codes.ts), so that main.ts
// is the only part that touches the process.
import { readFile } from 'node:fs/promises';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { parse as parseYaml } from 'yaml';
import { SchedulerApiError, SchedulerConnectionError } from '../errors.js';
import { SchedulerClient } from '../scheduler-client.js';
import type { RetryOptions } from '../transport.js';
import type { JobDetail, JobPatch, JobSpecInput, JobStatus, Page, PreviewRequest, Run, RunNotification, ScheduleInput, WorkflowSpecInput } from '../types.js';
import { EXIT, UsageError, exitCodeOf } from './exit-codes.js';
import {
  FINISHED_RUN_STATUSES,
  JOB_COLUMNS,
  RUN_COLUMNS,
  WORKFLOW_COLUMNS,
  WORKFLOW_RUN_COLUMNS,
  deadRunsTable,
  healthText,
  jobText,
  occurrenceText,
  runText,
  table,
  workflowRunText,
  workflowText,
} from './output.js';

export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Reads standard input whole (for `-f -`). */
  readonly readStdin: () => Promise<string>;
  /** For tests: the client's fetch and retry budget. */
  readonly fetch?: typeof fetch;
  readonly retry?: RetryOptions;
}

interface GlobalOptions {
  readonly url?: string;
  readonly apiKey?: string;
  readonly json?: boolean;
}

const JOB_STATUSES: readonly JobStatus[] = ['ACTIVE', 'PAUSED', 'COMPLETED', 'CANCELLED'];

function integer(name: string, min: number, max: number) {
  return (raw: string): number => {
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}`);
    return Number(raw);
  };
}

function workflowOrder(raw: string): 'newest' | 'name' {
  if (raw !== 'newest' && raw !== 'name') throw new InvalidArgumentError('must be newest or name');
  return raw;
}

function jobStatus(raw: string): JobStatus {
  const status = raw.toUpperCase() as JobStatus;
  if (!JOB_STATUSES.includes(status)) throw new InvalidArgumentError(`must be one of ${JOB_STATUSES.join(', ')}`);
  return status;
}

/** The document in a JSON or YAML file (`-` for standard input), which must be an object. */
async function readDocument(io: CliIo, path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = path === '-' ? await io.readStdin() : await readFile(path, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  let value: unknown;
  try {
    // YAML 1.2 reads JSON as well.
    value = parseYaml(text) as unknown;
  } catch (error) {
    throw new UsageError(`${path} is neither JSON nor YAML: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new UsageError(`${path} must hold an object (a job's fields)`);
  return value as Record<string, unknown>;
}

function parseValue(text: string, what: string): unknown {
  try {
    return parseYaml(text) as unknown;
  } catch (error) {
    throw new UsageError(`${what} is neither JSON nor YAML: ${error instanceof Error ? error.message : String(error)}`);
  }
}

export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let json = false;
  const print = (text: string): void => io.stdout(text.endsWith('\n') ? text : `${text}\n`);
  const printJson = (value: unknown): void => io.stdout(`${JSON.stringify(value, null, 2)}\n`);

  const program = new Command('scheduler')
    .description('The job scheduler from the command line: jobs, runs, dead runs, workflows, previews and health.')
    .option('--url <url>', 'the API base URL (default: $SCHEDULER_URL)')
    .option('--api-key <key>', 'the API key (default: $SCHEDULER_API_KEY)')
    .option('--json', 'print the API answers as JSON (errors as problem+json on stderr)')
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .addHelpText(
      'after',
      `
Exit codes: 0 ok, 1 usage or invalid request, 2 not found, 3 conflict (state or version),
4 authentication, 5 server error or no answer, 6 rate limited, 7 watch timed out.`,
    );
  program.hook('preAction', (_program, action) => {
    json = (action.optsWithGlobals<GlobalOptions>().json ?? false) === true;
  });

  const clientOf = (command: Command): SchedulerClient => {
    const options = command.optsWithGlobals<GlobalOptions>();
    const url = options.url ?? io.env.SCHEDULER_URL;
    const apiKey = options.apiKey ?? io.env.SCHEDULER_API_KEY;
    if (!url) throw new UsageError('no API URL: set SCHEDULER_URL or pass --url');
    if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) throw new UsageError(`--url ${url} is not an http(s) URL`);
    if (!apiKey) throw new UsageError('no API key: set SCHEDULER_API_KEY or pass --api-key');
    return new SchedulerClient({ baseUrl: url, apiKey, ...(io.fetch ? { fetch: io.fetch } : {}), ...(io.retry ? { retry: io.retry } : {}) });
  };

  /** One page, or every page with --all (printed as one page whose nextCursor is null). */
  const listed = async <T>(
    options: { all?: boolean; limit?: number; cursor?: string },
    pageOf: (cursor: string | undefined) => Promise<Page<T>>,
  ): Promise<Page<T>> => {
    if (!options.all) return pageOf(options.cursor);
    const items: T[] = [];
    let cursor = options.cursor;
    do {
      const page = await pageOf(cursor);
      items.push(...page.items);
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    return { items, nextCursor: null };
  };
  const showPage = <T>(page: Page<T>, render: (items: T[]) => string): void => {
    if (json) return printJson(page);
    print(render(page.items));
    if (page.nextCursor) io.stderr(`more: --cursor ${page.nextCursor} (or --all)\n`);
  };
  const pageOptions = (command: Command): Command =>
    command
      .option('--limit <n>', 'page size (1-100)', integer('--limit', 1, 100))
      .option('--cursor <cursor>', 'the page after this cursor (printed under a page that has more)')
      .option('--all', 'every page');

  // jobs
  const jobs = program.command('jobs').description('create, list, read, change and delete jobs');
  jobs
    .command('create')
    .description('create a job from a JSON or YAML file of its fields (docs/api.md)')
    .requiredOption('-f, --file <path>', 'the job, as JSON or YAML (- for standard input)')
    .option('--idempotency-key <key>', 'the Idempotency-Key (default: a random one, reused by retries)')
    .action(async (options: { file: string; idempotencyKey?: string }, command: Command) => {
      const spec = (await readDocument(io, options.file)) as JobSpecInput;
      const created = await clientOf(command).jobs.create(spec, options.idempotencyKey ? { idempotencyKey: options.idempotencyKey } : {});
      if (json) return printJson(created);
      print(
        `${created.replayed ? 'already created' : 'created'} job ${created.job.jobId} (${created.job.name}), ${created.job.status}, next run ${created.nextRunAt ?? '-'}`,
      );
    });
  pageOptions(
    jobs
      .command('list')
      .description('list jobs, newest first')
      .option('--status <status>', `only jobs in this status (${JOB_STATUSES.join(', ')})`, jobStatus)
      .option('--type <type>', 'only jobs of this type'),
  ).action(async (options: { status?: JobStatus; type?: string; limit?: number; cursor?: string; all?: boolean }, command: Command) => {
    const client = clientOf(command);
    const page = await listed(options, (cursor) => client.jobs.list({ status: options.status, type: options.type, limit: options.limit, cursor }));
    showPage(page, (items) => table(items, JOB_COLUMNS, '(no jobs)'));
  });
  jobs
    .command('get <jobId>')
    .description('a job, its next fire times and its recent runs')
    .action(async (jobId: string, _options: unknown, command: Command) => {
      const job = await clientOf(command).jobs.get(jobId);
      if (json) return printJson(job);
      print(jobText(job));
    });
  jobs
    .command('update <jobId>')
    .description('replace fields of a job with those of a JSON or YAML file')
    .requiredOption('-f, --file <path>', 'the fields to replace, as JSON or YAML (- for standard input)')
    .option('--if-match <version>', 'only if the job is still at this version (else exit 3)', integer('--if-match', 1, Number.MAX_SAFE_INTEGER))
    .action(async (jobId: string, options: { file: string; ifMatch?: number }, command: Command) => {
      const patch = (await readDocument(io, options.file)) as JobPatch;
      const job = await clientOf(command).jobs.update(jobId, patch, options.ifMatch === undefined ? {} : { ifMatch: options.ifMatch });
      if (json) return printJson(job);
      print(`updated job ${job.jobId} (${job.name}) to version ${job.version}, ${job.status}, next run ${job.nextRunAt ?? '-'}`);
    });
  jobs
    .command('pause <jobId>')
    .description('pause a job: its pending run is skipped until resume (pausing a paused job changes its note and end)')
    .option('--note <text>', 'why: shown on the job until it resumes')
    .option('--until <instant>', 'resume by itself at this time (ISO 8601; within a minute)')
    .action(async (jobId: string, options: { note?: string; until?: string }, command: Command) => {
      const job = await clientOf(command).jobs.pause(jobId, {
        ...(options.note === undefined ? {} : { note: options.note }),
        ...(options.until === undefined ? {} : { until: options.until }),
      });
      if (json) return printJson(job);
      print(`paused job ${job.jobId} (${job.name}): ${job.status}${job.pausedUntil ? `, resumes at ${job.pausedUntil}` : ''}`);
    });
  jobs
    .command('skip <jobId>')
    .description('skip occurrences of a recurring job: the next N, or fire times named; each is recorded as a SKIPPED run')
    .option('--next <count>', 'the next N occurrences that would fire', integer('--next', 1, 100))
    .option('--at <instant...>', 'these fire times (ISO 8601)')
    .action(async (jobId: string, options: { next?: number; at?: string[] }, command: Command) => {
      if ((options.next === undefined) === (options.at === undefined)) throw new UsageError('give --next or --at, one of the two');
      const job = await clientOf(command).jobs.skip(jobId, options.next !== undefined ? { next: options.next } : { occurrences: options.at ?? [] });
      if (json) return printJson(job);
      print(`job ${job.jobId} (${job.name}): skipping ${(job.skippedOccurrences ?? []).join(', ') || 'nothing ahead'}; next run ${job.nextRunAt ?? '-'}`);
    });
  for (const [name, description, verb] of [
    ['resume', 'resume a paused job', 'resumed'],
    ['delete', 'delete a job: it is CANCELLED with its runs that have not started', 'deleted'],
  ] as const) {
    jobs
      .command(`${name} <jobId>`)
      .description(description)
      .action(async (jobId: string, _options: unknown, command: Command) => {
        const job = await clientOf(command).jobs[name](jobId);
        if (json) return printJson(job);
        print(`${verb} job ${job.jobId} (${job.name}): ${job.status}${job.nextRunAt ? `, next run ${job.nextRunAt}` : ''}`);
      });
  }
  jobs
    .command('trigger <jobId>')
    .description('run a job now, outside its schedule')
    .option('--payload <json>', "this run's payload instead of the job's (JSON or YAML)")
    .option('--payload-file <path>', "this run's payload from a JSON or YAML file")
    .option(
      '--debounce <seconds>',
      'coalesce the triggers of this many seconds, from the first, into one run carrying the last payload',
      integer('--debounce', 1, 3600),
    )
    .action(async (jobId: string, options: { payload?: string; payloadFile?: string; debounce?: number }, command: Command) => {
      if (options.payload !== undefined && options.payloadFile !== undefined) throw new UsageError('give --payload or --payload-file, not both');
      const payload =
        options.payloadFile !== undefined
          ? await readDocument(io, options.payloadFile)
          : options.payload !== undefined
            ? parseValue(options.payload, '--payload')
            : undefined;
      const run = await clientOf(command).jobs.trigger(jobId, {
        ...(payload === undefined ? {} : { payload: payload as never }),
        ...(options.debounce === undefined ? {} : { debounceSeconds: options.debounce }),
      });
      if (json) return printJson(run);
      print(`triggered run ${run.runId}: ${run.status}${options.debounce === undefined ? '' : `, due ${run.availableAt}`}`);
    });
  jobs
    .command('backfill <jobId>')
    .description('one run per fire time in [--from, --to) that has none yet, released oldest first at a bounded rate')
    .requiredOption('--from <instant>', 'the first fire time included (ISO 8601)')
    .requiredOption('--to <instant>', 'the end of the range, excluded (ISO 8601)')
    .action(async (jobId: string, options: { from: string; to: string }, command: Command) => {
      const backfill = await clientOf(command).jobs.backfill(jobId, { from: options.from, to: options.to });
      if (json) return printJson(backfill);
      print(`backfill ${backfill.backfillId}: ${backfill.released} of ${backfill.total} fire times released, ${backfill.status}`);
    });
  jobs
    .command('backfill-status <jobId> <backfillId>')
    .description("a backfill's progress")
    .action(async (jobId: string, backfillId: string, _options: unknown, command: Command) => {
      const backfill = await clientOf(command).jobs.getBackfill(jobId, backfillId);
      if (json) return printJson(backfill);
      print(`backfill ${backfill.backfillId}: ${backfill.released} of ${backfill.total} fire times released, ${backfill.status}`);
    });

  // runs
  const runs = program.command('runs').description("a job's runs: list, read, cancel, replay; their notifications");
  pageOptions(runs.command('list <jobId>').description("a job's runs, newest first")).action(
    async (jobId: string, options: { limit?: number; cursor?: string; all?: boolean }, command: Command) => {
      const client = clientOf(command);
      const page = await listed(options, (cursor) => client.runs.list(jobId, { limit: options.limit, cursor }));
      showPage(page, (items) => table(items, RUN_COLUMNS, '(no runs)'));
    },
  );
  runs
    .command('get <runId>')
    .description('a run')
    .action(async (runId: string, _options: unknown, command: Command) => {
      const run = await clientOf(command).runs.get(runId);
      if (json) return printJson(run);
      print(runText(run));
    });
  runs
    .command('cancel <runId>')
    .description('cancel a run that has not finished (a running one stops at its next heartbeat)')
    .action(async (runId: string, _options: unknown, command: Command) => {
      const run = await clientOf(command).runs.cancel(runId);
      if (json) return printJson(run);
      print(`cancelled run ${run.runId}: ${run.status}`);
    });
  runs
    .command('replay <runId>')
    .description('run a finished run again, with a fresh retry budget')
    .action(async (runId: string, _options: unknown, command: Command) => {
      const run = await clientOf(command).runs.replay(runId);
      if (json) return printJson(run);
      print(`replayed as run ${run.runId}: ${run.status}`);
    });
  runs
    .command('notifications <runId>')
    .description("a run's outcome notifications: event, status, tries and last error")
    .action(async (runId: string, _options: unknown, command: Command) => {
      const notifications = await clientOf(command).runs.notifications(runId);
      if (json) return printJson(notifications);
      print(notificationsText(notifications));
    });
  runs
    .command('resend-notification <runId> <event>')
    .description('send a DEAD notification of the run again, on a fresh budget')
    .action(async (runId: string, event: string, _options: unknown, command: Command) => {
      const notification = await clientOf(command).runs.resendNotification(runId, event as RunNotification['event']);
      if (json) return printJson(notification);
      print(`notification ${notification.event} of run ${runId}: ${notification.status}`);
    });

  // workflows
  const workflows = program.command('workflows').description('workflows: create, list, read, start, pause, resume and delete; their runs');
  workflows
    .command('create')
    .description('create a workflow from a JSON or YAML file of its definition (docs/api.md#workflows)')
    .requiredOption('-f, --file <path>', 'the definition, as JSON or YAML (- for standard input)')
    .action(async (options: { file: string }, command: Command) => {
      const workflow = await clientOf(command).workflows.create((await readDocument(io, options.file)) as WorkflowSpecInput);
      if (json) return printJson(workflow);
      print(`created workflow ${workflow.workflowId} (${workflow.name}), version ${workflow.version}, next run ${workflow.scheduleState?.nextRunAt ?? '-'}`);
    });
  pageOptions(
    workflows
      .command('list')
      .description('list workflows, newest first (or by name)')
      .option('--order <order>', 'newest or name', workflowOrder)
      .option('--name-prefix <prefix>', 'only workflows whose name starts with this, in name order'),
  ).action(async (options: { order?: 'newest' | 'name'; namePrefix?: string; limit?: number; cursor?: string; all?: boolean }, command: Command) => {
    const client = clientOf(command);
    const page = await listed(options, (cursor) =>
      client.workflows.list({ order: options.order, namePrefix: options.namePrefix, limit: options.limit, cursor }),
    );
    showPage(page, (items) => table(items, WORKFLOW_COLUMNS, '(no workflows)'));
  });
  workflows
    .command('get <workflowId>')
    .description("a workflow's definition, its schedule and its latest occurrences")
    .option('--version <n>', 'this version of the definition', integer('--version', 1, 1_000_000))
    .action(async (workflowId: string, options: { version?: number }, command: Command) => {
      const workflow = await clientOf(command).workflows.get(workflowId, options.version);
      if (json) return printJson(workflow);
      print(workflowText(workflow));
    });
  for (const action of ['pause', 'resume'] as const) {
    workflows
      .command(`${action} <workflowId>`)
      .description(action === 'pause' ? "pause a workflow's schedule" : "resume a workflow's schedule (its misfire policy picks the next occurrence)")
      .action(async (workflowId: string, _options: unknown, command: Command) => {
        const workflow = await clientOf(command).workflows[action](workflowId);
        if (json) return printJson(workflow);
        print(`workflow ${workflow.workflowId}: schedule ${workflow.scheduleState?.status ?? '-'}, next run ${workflow.scheduleState?.nextRunAt ?? '-'}`);
      });
  }
  workflows
    .command('delete <workflowId>')
    .description('delete a workflow: its schedule and running workflow runs are cancelled, its name freed; its runs stay readable')
    .action(async (workflowId: string, _options: unknown, command: Command) => {
      const workflow = await clientOf(command).workflows.delete(workflowId);
      if (json) return printJson(workflow);
      print(`deleted workflow ${workflow.workflowId} (${workflow.name}) at ${workflow.deletedAt ?? '-'}`);
    });
  workflows
    .command('start <workflowId>')
    .description('start a run of the newest version now')
    .action(async (workflowId: string, _options: unknown, command: Command) => {
      const run = await clientOf(command).workflows.start(workflowId);
      if (json) return printJson(run);
      print(`started workflow run ${run.workflowRunId}: ${run.status}`);
    });
  pageOptions(workflows.command('runs <workflowId>').description("a workflow's runs, newest first")).action(
    async (workflowId: string, options: { limit?: number; cursor?: string; all?: boolean }, command: Command) => {
      const client = clientOf(command);
      const page = await listed(options, (cursor) => client.workflows.runs(workflowId, { limit: options.limit, cursor }));
      showPage(page, (items) => table(items, WORKFLOW_RUN_COLUMNS, '(no workflow runs)'));
    },
  );
  workflows
    .command('run <workflowId> <workflowRunId>')
    .description('a workflow run and its steps')
    .action(async (workflowId: string, workflowRunId: string, _options: unknown, command: Command) => {
      const run = await clientOf(command).workflows.run(workflowId, workflowRunId);
      if (json) return printJson(run);
      print(workflowRunText(run));
    });
  for (const action of ['cancel', 'retry'] as const) {
    workflows
      .command(`${action} <workflowId> <workflowRunId>`)
      .description(action === 'cancel' ? 'cancel a running workflow run' : 'retry a failed or cancelled workflow run from its failed steps')
      .action(async (workflowId: string, workflowRunId: string, _options: unknown, command: Command) => {
        const run = await clientOf(command).workflows[action](workflowId, workflowRunId);
        if (json) return printJson(run);
        print(`${action === 'cancel' ? 'cancelled' : 'retried'} workflow run ${run.workflowRunId}: ${run.status}`);
      });
  }

  workflows
    .command('notifications <workflowId> <workflowRunId>')
    .description("a workflow run's outcome notifications, the latest end's first: end, event, status, tries and last error")
    .action(async (workflowId: string, workflowRunId: string, _options: unknown, command: Command) => {
      const notifications = await clientOf(command).workflows.notifications(workflowId, workflowRunId);
      if (json) return printJson(notifications);
      print(notificationsText(notifications));
    });
  workflows
    .command('resend-notification <workflowId> <workflowRunId> <event>')
    .description("send the DEAD notification (succeeded, failed or cancelled) of the workflow run's latest end again, on a fresh budget")
    .action(async (workflowId: string, workflowRunId: string, event: string, _options: unknown, command: Command) => {
      const notification = await clientOf(command).workflows.resendNotification(workflowId, workflowRunId, event as 'succeeded' | 'failed' | 'cancelled');
      if (json) return printJson(notification);
      print(`notification ${notification.event} of workflow run ${workflowRunId} (retry ${notification.retry}): ${notification.status}`);
    });

  // dead runs
  const dead = program.command('dead').description('dead runs: list and replay');
  pageOptions(
    dead
      .command('list')
      .description('dead runs waiting for a replay, newest first')
      .option('--job <jobId>', "only this job's")
      .option('--from <time>', 'scheduled at or after this ISO 8601 time')
      .option('--to <time>', 'scheduled at or before this ISO 8601 time'),
  ).action(async (options: { job?: string; from?: string; to?: string; limit?: number; cursor?: string; all?: boolean }, command: Command) => {
    const client = clientOf(command);
    const page = await listed(options, (cursor) =>
      client.deadRuns.list({ jobId: options.job, from: options.from, to: options.to, limit: options.limit, cursor }),
    );
    showPage(page, (items) => deadRunsTable(items));
  });
  dead
    .command('replay [runId]')
    .description('replay one dead run, or (with --job, --from/--to or --all) up to --limit of them')
    .option('--job <jobId>', "the job's dead runs")
    .option('--from <time>', 'dead runs scheduled at or after this ISO 8601 time')
    .option('--to <time>', 'dead runs scheduled at or before this ISO 8601 time')
    .option('--all', 'every dead run (up to --limit)')
    .option('--limit <n>', 'at most this many (1-100, default 100)', integer('--limit', 1, 100))
    .action(async (runId: string | undefined, options: { job?: string; from?: string; to?: string; all?: boolean; limit?: number }, command: Command) => {
      const filtered = options.job !== undefined || options.from !== undefined || options.to !== undefined || options.all === true;
      if (runId !== undefined && (filtered || options.limit !== undefined))
        throw new UsageError('give a run id, or filters (--job, --from, --to, --all), not both');
      if (runId === undefined && !filtered) throw new UsageError('give a run id, or choose dead runs with --job, --from/--to or --all');
      const client = clientOf(command);
      if (runId !== undefined) {
        const run = await client.deadRuns.replay(runId);
        if (json) return printJson(run);
        return print(`replayed as run ${run.runId}: ${run.status}`);
      }
      const result = await client.deadRuns.replayAll({ jobId: options.job, from: options.from, to: options.to, limit: options.limit });
      if (json) return printJson(result);
      print(`replayed ${result.replayed.length} dead run(s)${result.remaining ? '; more remain (run again)' : ''}`);
      if (result.replayed.length > 0) print(table(result.replayed, RUN_COLUMNS));
    });

  // preview
  program
    .command('preview')
    .description("the next occurrences of a schedule, or of a job's (--job: with its skips and jitter)")
    .option('--cron <expression>', 'a cron expression (5 or 6 fields)')
    .option('--timezone <zone>', 'the cron expression’s IANA time zone (default UTC)')
    .option('--every <duration>', 'an interval, an ISO 8601 duration such as PT15M (from now, or --anchor)')
    .option('--anchor <time>', "the interval's anchor (ISO 8601)")
    .option('--at <time>', 'a one-off ISO 8601 time')
    .option('--delay <seconds>', 'a one-off delay', integer('--delay', 0, Number.MAX_SAFE_INTEGER))
    .option('-f, --file <path>', "a schedule, or a job file's schedule, as JSON or YAML")
    .option('--job <jobId>', "a job's own schedule, its skipped occurrences and its jitter (or, with a schedule, that job's jitter)")
    .option('--from <time>', 'from this ISO 8601 time (default now)')
    .option('--count <n>', 'how many occurrences (1-100, default 5)', integer('--count', 1, 100))
    .action(
      async (
        options: {
          cron?: string;
          timezone?: string;
          every?: string;
          anchor?: string;
          at?: string;
          delay?: number;
          file?: string;
          job?: string;
          from?: string;
          count?: number;
        },
        command: Command,
      ) => {
        const sources = [options.cron, options.every, options.at, options.delay, options.file].filter((source) => source !== undefined);
        if (sources.length > 1 || (sources.length === 0 && options.job === undefined)) {
          throw new UsageError('give one schedule (--cron, --every, --at, --delay or -f), a --job, or both');
        }
        if (options.timezone !== undefined && options.cron === undefined && options.every === undefined)
          throw new UsageError('--timezone goes with --cron or --every');
        if (options.anchor !== undefined && options.every === undefined) throw new UsageError('--anchor goes with --every');
        let schedule: ScheduleInput | undefined;
        if (options.cron !== undefined) schedule = { kind: 'cron', expression: options.cron, ...(options.timezone ? { timezone: options.timezone } : {}) };
        else if (options.every !== undefined) {
          schedule = {
            kind: 'every',
            interval: options.every,
            ...(options.anchor ? { anchor: options.anchor } : {}),
            ...(options.timezone ? { timezone: options.timezone } : {}),
          };
        } else if (options.at !== undefined) schedule = { kind: 'at', at: options.at };
        else if (options.delay !== undefined) schedule = { kind: 'delay', seconds: options.delay };
        else if (options.file !== undefined) {
          const document = await readDocument(io, options.file);
          schedule = ('schedule' in document ? document.schedule : document) as ScheduleInput;
        }
        const request: PreviewRequest = {
          ...(schedule ? { schedule } : {}),
          ...(options.job ? { jobId: options.job } : {}),
          ...(options.from ? { from: options.from } : {}),
          ...(options.count ? { count: options.count } : {}),
        };
        const preview = await clientOf(command).preview(request);
        if (json) return printJson(preview);
        print(preview.occurrences.length > 0 ? preview.occurrences.map(occurrenceText).join('\n') : '(no fire times)');
      },
    );

  // health
  program
    .command('health')
    .description('is the scheduler keeping up: queues, ticker, runs, in-flight work')
    .option('--minutes <n>', 'the window of the run figures (1-60, default 15)', integer('--minutes', 1, 60))
    .action(async (options: { minutes?: number }, command: Command) => {
      const report = await clientOf(command).health(options.minutes ? { minutes: options.minutes } : {});
      if (json) return printJson(report);
      print(healthText(report));
    });

  // watch
  program
    .command('watch <jobId>')
    .description("follow a job's runs as they change (polling); a line per new run or change of status")
    .option('--interval <seconds>', 'seconds between polls (default 2)', integer('--interval', 1, 3600), 2)
    .option('--until-done', 'stop once the job has ended (COMPLETED or CANCELLED) and none of its runs is waiting or running')
    .option('--timeout <seconds>', 'give up after this many seconds (exit 7)', integer('--timeout', 1, 7 * 24 * 3600))
    .action(async (jobId: string, options: { interval: number; untilDone?: boolean; timeout?: number }, command: Command) => {
      const client = clientOf(command);
      const seen = new Map<string, string>();
      const deadline = options.timeout === undefined ? Infinity : Date.now() + options.timeout * 1000;
      let jobStatus: string | undefined;
      for (;;) {
        const job: JobDetail = await client.jobs.get(jobId);
        if (job.status !== jobStatus) {
          if (json) print(JSON.stringify({ at: new Date().toISOString(), jobId, jobStatus: job.status }));
          else print(`${new Date().toISOString()}  job ${jobId} ${jobStatus ? `${jobStatus} -> ` : ''}${job.status}`);
          jobStatus = job.status;
        }
        // recentRuns are newest first: report the oldest change first.
        for (const run of [...job.recentRuns].reverse()) {
          const state = `${run.status}`;
          const before = seen.get(run.runId);
          if (before === state) continue;
          seen.set(run.runId, state);
          if (json) print(JSON.stringify({ at: new Date().toISOString(), run }));
          else
            print(
              `${new Date().toISOString()}  run ${run.runId} attempt ${run.attempt} (${run.trigger}) ${before ? `${before} -> ` : ''}${run.status}${runNote(run)}`,
            );
        }
        const settled = (job.status === 'COMPLETED' || job.status === 'CANCELLED') && job.recentRuns.every((run) => FINISHED_RUN_STATUSES.has(run.status));
        if (options.untilDone && settled) return;
        if (Date.now() + options.interval * 1000 > deadline) throw new WatchTimeout();
        await new Promise((resolve) => setTimeout(resolve, options.interval * 1000));
      }
    });

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are exit 0; everything commander refuses is a usage error (1).
      return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (error instanceof WatchTimeout) {
      io.stderr('watch: timed out before the job was done\n');
      return EXIT.watchTimeout;
    }
    reportError(io, error, json);
    return exitCodeOf(error);
  }
}

class WatchTimeout extends Error {}

function runNote(run: Run): string {
  if (run.error) return ` (${run.error.code}: ${run.error.message})`;
  return run.reason ? ` (${run.reason})` : '';
}

function reportError(io: CliIo, error: unknown, json: boolean): void {
  if (error instanceof SchedulerApiError) {
    if (json) {
      io.stderr(`${JSON.stringify(error.problem)}\n`);
      return;
    }
    const lines = [
      `error: ${error.status} ${error.title}${error.detail ? `: ${error.detail}` : ''}`,
      ...error.errors.map((field) => `  ${field.path}: ${field.message}`),
    ];
    if (error.retryAfterSeconds !== null) lines.push(`  (retry after ${error.retryAfterSeconds} s)`);
    io.stderr(`${lines.join('\n')}\n`);
    return;
  }
  if (error instanceof SchedulerConnectionError) {
    io.stderr(`error: ${error.message}\n`);
    return;
  }
  io.stderr(`error: ${error instanceof Error ? error.message : String(error)}\n`);
}

/** A line per notification: (a workflow run's end,) event, status, tries and last error. */
function notificationsText(notifications: readonly (RunNotification & { readonly retry?: number })[]): string {
  if (notifications.length === 0) return '(no notifications)';
  return notifications
    .map((n) =>
      [...(n.retry === undefined ? [] : [`retry ${n.retry}`]), n.event, n.status, `tries ${n.tries}`, ...(n.lastError ? [n.lastError] : [])].join('\t'),
    )
    .join('\n');
}
