// `scheduler preview`, `scheduler health` and `scheduler watch`.
import type { Command } from 'commander';
import type { JobDetail, PreviewRequest, Run, ScheduleInput } from '../types.js';
import type { CliContext } from './context.js';
import { instant, integer } from './context.js';
import { UsageError } from './exit-codes.js';
import { FINISHED_RUN_STATUSES, healthText, occurrenceText } from './output.js';

export function addOtherCommands(program: Command, ctx: CliContext): void {
  // preview
  program
    .command('preview')
    .description("the next occurrences of a schedule, or of a job's (--job: with its skips and jitter)")
    .option('--cron <expression>', 'a cron expression (5 or 6 fields)')
    .option('--timezone <zone>', 'the cron expression’s IANA time zone (default UTC)')
    .option('--every <duration>', 'an interval, an ISO 8601 duration such as PT15M (from now, or --anchor)')
    .option('--anchor <time>', "the interval's anchor (an ISO 8601 instant)", instant)
    .option('--at <time>', 'a one-off ISO 8601 instant', instant)
    .option('--delay <seconds>', 'a one-off delay', integer('--delay', 0, Number.MAX_SAFE_INTEGER))
    .option('-f, --file <path>', "a schedule, or a job file's schedule, as JSON or YAML")
    .option('--job <jobId>', "a job's own schedule, its skipped occurrences and its jitter (or, with a schedule, that job's jitter)")
    .option('--from <time>', 'from this ISO 8601 instant (default now)', instant)
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
          const document = await ctx.readDocument(options.file);
          schedule = ('schedule' in document ? document.schedule : document) as ScheduleInput;
        }
        const request: PreviewRequest = {
          ...(schedule ? { schedule } : {}),
          ...(options.job ? { jobId: options.job } : {}),
          ...(options.from ? { from: options.from } : {}),
          ...(options.count ? { count: options.count } : {}),
        };
        const preview = await ctx.clientOf(command).preview(request);
        if (ctx.json) return ctx.printJson(preview);
        ctx.print(preview.occurrences.length > 0 ? preview.occurrences.map(occurrenceText).join('\n') : '(no fire times)');
      },
    );

  // health
  program
    .command('health')
    .description('is the scheduler keeping up: queues, ticker, runs, in-flight work')
    .option('--minutes <n>', 'the window of the run figures (1-60, default 15)', integer('--minutes', 1, 60))
    .action(async (options: { minutes?: number }, command: Command) => {
      const report = await ctx.clientOf(command).health(options.minutes ? { minutes: options.minutes } : {});
      if (ctx.json) return ctx.printJson(report);
      ctx.print(healthText(report));
    });

  // watch
  program
    .command('watch <jobId>')
    .description("follow a job's runs as they change (polling); a line per new run or change of status")
    .option('--interval <seconds>', 'seconds between polls', integer('--interval', 1, 3600), 2)
    .option('--until-done', 'stop once the job has ended (COMPLETED or CANCELLED) and none of its runs is waiting or running')
    .option(
      '--timeout <seconds>',
      'stop after this many seconds (with --until-done: give up, exit 7, unless the job was done by then)',
      integer('--timeout', 1, 7 * 24 * 3600),
    )
    .action(async (jobId: string, options: { interval: number; untilDone?: boolean; timeout?: number }, command: Command) => {
      const client = ctx.clientOf(command);
      const seen = new Map<string, string>();
      const deadline = options.timeout === undefined ? Infinity : Date.now() + options.timeout * 1000;
      let jobStatus: string | undefined;
      for (;;) {
        const job: JobDetail = await client.jobs.get(jobId);
        if (job.status !== jobStatus) {
          if (ctx.json) ctx.print(JSON.stringify({ at: new Date().toISOString(), jobId, jobStatus: job.status }));
          else ctx.print(`${new Date().toISOString()}  job ${jobId} ${jobStatus ? `${jobStatus} -> ` : ''}${job.status}`);
          jobStatus = job.status;
        }
        // recentRuns are newest first: report the oldest change first.
        for (const run of [...job.recentRuns].reverse()) {
          const state = `${run.status}`;
          const before = seen.get(run.runId);
          if (before === state) continue;
          seen.set(run.runId, state);
          if (ctx.json) ctx.print(JSON.stringify({ at: new Date().toISOString(), run }));
          else
            ctx.print(
              `${new Date().toISOString()}  run ${run.runId} attempt ${run.attempt} (${run.trigger}) ${before ? `${before} -> ` : ''}${run.status}${runNote(run)}`,
            );
        }
        const settled = (job.status === 'COMPLETED' || job.status === 'CANCELLED') && job.recentRuns.every((run) => FINISHED_RUN_STATUSES.has(run.status));
        if (options.untilDone && settled) return;
        // The last poll is at the deadline itself: a job done by then is reported done.
        const left = deadline - Date.now();
        // Without --until-done the timeout is how long to follow, not a wait that failed.
        if (left <= 0) {
          if (options.untilDone) throw new WatchTimeout();
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(options.interval * 1000, left)));
      }
    });
}

/** `watch --timeout` ran out before the job was done (exit 7). */
export class WatchTimeout extends Error {}

function runNote(run: Run): string {
  if (run.error) return ` (${run.error.code}: ${run.error.message})`;
  return run.reason ? ` (${run.reason})` : '';
}
