// The `scheduler jobs` commands: create, list, read, change, pause, skip, trigger, backfill and delete.
import type { Command } from 'commander';
import type { JobPatch, JobStatus, JobSpecInput } from '../types.js';
import type { CliContext } from './context.js';
import { JOB_STATUSES, instant, instants, integer, jobStatus, labelFilter, parseValue } from './context.js';
import { UsageError } from './exit-codes.js';
import { JOB_COLUMNS, jobText, table } from './output.js';

export function addJobCommands(program: Command, ctx: CliContext): void {
  // jobs
  const jobs = program.command('jobs').description('create, list, read, change and delete jobs');
  jobs
    .command('create')
    .description('create a job from a JSON or YAML file of its fields (docs/api.md)')
    .requiredOption('-f, --file <path>', 'the job, as JSON or YAML (- for standard input)')
    .option('--idempotency-key <key>', 'the Idempotency-Key (default: a random one, reused by retries)')
    .action(async (options: { file: string; idempotencyKey?: string }, command: Command) => {
      const spec = (await ctx.readDocument(options.file)) as JobSpecInput;
      const created = await ctx.clientOf(command).jobs.create(spec, options.idempotencyKey ? { idempotencyKey: options.idempotencyKey } : {});
      if (ctx.json) return ctx.printJson(created);
      ctx.print(
        `${created.replayed ? 'already created' : 'created'} job ${created.job.jobId} (${created.job.name}), ${created.job.status}, next run ${created.nextRunAt ?? '-'}`,
      );
    });
  ctx
    .pageOptions(
      jobs
        .command('list')
        .description('list jobs, newest first')
        .option('--status <status>', `only jobs in this status (${JOB_STATUSES.join(', ')})`, jobStatus)
        .option('--type <type>', 'only jobs of this type')
        .option('--name <name>', 'only the job of this exact name (and deleted ones that had it)')
        .option('--name-prefix <prefix>', 'only jobs whose name starts with this, in name order')
        .option('--label <key=value>', 'only jobs carrying this label (repeat for several: all must match)', labelFilter),
    )
    .action(
      async (
        options: { status?: JobStatus; type?: string; name?: string; namePrefix?: string; label?: string[]; limit?: number; cursor?: string; all?: boolean },
        command: Command,
      ) => {
        if (options.name !== undefined && options.namePrefix !== undefined) throw new UsageError('give --name or --name-prefix, not both');
        const client = ctx.clientOf(command);
        const query = { status: options.status, type: options.type, name: options.name, namePrefix: options.namePrefix, label: options.label };
        const page = await ctx.listed(options, (cursor) => client.jobs.list({ ...query, limit: options.limit, cursor }));
        ctx.showPage(page, (items) => table(items, JOB_COLUMNS, '(no jobs)'));
      },
    );
  jobs
    .command('get <jobId>')
    .description('a job, its next fire times and its recent runs')
    .action(async (jobId: string, _options: unknown, command: Command) => {
      const job = await ctx.clientOf(command).jobs.get(jobId);
      if (ctx.json) return ctx.printJson(job);
      ctx.print(jobText(job));
    });
  jobs
    .command('update <jobId>')
    .description('replace fields of a job with those of a JSON or YAML file')
    .requiredOption('-f, --file <path>', 'the fields to replace, as JSON or YAML (- for standard input)')
    .option('--if-match <version>', 'only if the job is still at this version (else exit 3)', integer('--if-match', 1, Number.MAX_SAFE_INTEGER))
    .action(async (jobId: string, options: { file: string; ifMatch?: number }, command: Command) => {
      const patch = (await ctx.readDocument(options.file)) as JobPatch;
      const job = await ctx.clientOf(command).jobs.update(jobId, patch, options.ifMatch === undefined ? {} : { ifMatch: options.ifMatch });
      if (ctx.json) return ctx.printJson(job);
      ctx.print(`updated job ${job.jobId} (${job.name}) to version ${job.version}, ${job.status}, next run ${job.nextRunAt ?? '-'}`);
    });
  jobs
    .command('pause <jobId>')
    .description('pause a job: its pending run is skipped until resume (pausing a paused job changes its note and end)')
    .option('--note <text>', 'why: shown on the job until it resumes')
    .option('--until <instant>', 'resume by itself at this ISO 8601 instant (within a minute)', instant)
    .action(async (jobId: string, options: { note?: string; until?: string }, command: Command) => {
      const job = await ctx.clientOf(command).jobs.pause(jobId, {
        ...(options.note === undefined ? {} : { note: options.note }),
        ...(options.until === undefined ? {} : { until: options.until }),
      });
      if (ctx.json) return ctx.printJson(job);
      ctx.print(`paused job ${job.jobId} (${job.name}): ${job.status}${job.pausedUntil ? `, resumes at ${job.pausedUntil}` : ''}`);
    });
  jobs
    .command('skip <jobId>')
    .description('skip occurrences of a recurring job: the next N, or fire times named; each is recorded as a SKIPPED run')
    .option('--next <count>', 'the next N occurrences that would fire', integer('--next', 1, 100))
    .option('--at <instant...>', 'these fire times (ISO 8601 instants)', instants)
    .action(async (jobId: string, options: { next?: number; at?: string[] }, command: Command) => {
      if ((options.next === undefined) === (options.at === undefined)) throw new UsageError('give --next or --at, one of the two');
      const job = await ctx.clientOf(command).jobs.skip(jobId, options.next !== undefined ? { next: options.next } : { occurrences: options.at ?? [] });
      if (ctx.json) return ctx.printJson(job);
      ctx.print(`job ${job.jobId} (${job.name}): skipping ${(job.skippedOccurrences ?? []).join(', ') || 'nothing ahead'}; next run ${job.nextRunAt ?? '-'}`);
    });
  for (const [name, description, verb] of [
    ['resume', 'resume a paused job', 'resumed'],
    ['delete', 'delete a job: it is CANCELLED with its runs that have not started', 'deleted'],
  ] as const) {
    jobs
      .command(`${name} <jobId>`)
      .description(description)
      .action(async (jobId: string, _options: unknown, command: Command) => {
        const job = await ctx.clientOf(command).jobs[name](jobId);
        if (ctx.json) return ctx.printJson(job);
        ctx.print(`${verb} job ${job.jobId} (${job.name}): ${job.status}${job.nextRunAt ? `, next run ${job.nextRunAt}` : ''}`);
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
          ? await ctx.readValue(options.payloadFile)
          : options.payload !== undefined
            ? parseValue(options.payload, '--payload')
            : undefined;
      const run = await ctx.clientOf(command).jobs.trigger(jobId, {
        ...(payload === undefined ? {} : { payload: payload as never }),
        ...(options.debounce === undefined ? {} : { debounceSeconds: options.debounce }),
      });
      if (ctx.json) return ctx.printJson(run);
      ctx.print(`triggered run ${run.runId}: ${run.status}${options.debounce === undefined ? '' : `, due ${run.availableAt}`}`);
    });
  jobs
    .command('backfill <jobId>')
    .description('one run per fire time in [--from, --to) that has none yet, released oldest first at a bounded rate')
    .requiredOption('--from <instant>', 'the first fire time included (an ISO 8601 instant)', instant)
    .requiredOption('--to <instant>', 'the end of the range, excluded (an ISO 8601 instant)', instant)
    .action(async (jobId: string, options: { from: string; to: string }, command: Command) => {
      const backfill = await ctx.clientOf(command).jobs.backfill(jobId, { from: options.from, to: options.to });
      if (ctx.json) return ctx.printJson(backfill);
      ctx.print(`backfill ${backfill.backfillId}: ${backfill.released} of ${backfill.total} fire times released, ${backfill.status}`);
    });
  jobs
    .command('backfill-status <jobId> <backfillId>')
    .description("a backfill's progress")
    .action(async (jobId: string, backfillId: string, _options: unknown, command: Command) => {
      const backfill = await ctx.clientOf(command).jobs.getBackfill(jobId, backfillId);
      if (ctx.json) return ctx.printJson(backfill);
      ctx.print(`backfill ${backfill.backfillId}: ${backfill.released} of ${backfill.total} fire times released, ${backfill.status}`);
    });
}
