// The `scheduler runs` and `scheduler dead` commands: a job's runs, their notifications, and dead runs' replay.
import type { Command } from 'commander';
import type { RunNotification, RunStatus } from '../types.js';
import type { CliContext } from './context.js';
import { RUN_STATUSES, instant, integer, runStatus } from './context.js';
import { UsageError } from './exit-codes.js';
import { RUN_COLUMNS, deadRunsTable, runText, table } from './output.js';

export function addRunCommands(program: Command, ctx: CliContext): void {
  // runs
  const runs = program.command('runs').description("runs: list (a job's or the tenant's), read, cancel, replay; their notifications");
  ctx
    .pageOptions(
      runs
        .command('list [jobId]')
        .description("a job's runs, or (without a job id) all the tenant's, newest occurrence first")
        .option('--status <status>', `only runs in this status (${RUN_STATUSES.join(', ')})`, runStatus)
        .option('--from <instant>', 'runs of occurrences scheduled at or after this ISO 8601 instant', instant)
        .option('--to <instant>', 'runs of occurrences scheduled before this ISO 8601 instant', instant),
    )
    .action(
      async (
        jobId: string | undefined,
        options: { status?: RunStatus; from?: string; to?: string; limit?: number; cursor?: string; all?: boolean },
        command: Command,
      ) => {
        const client = ctx.clientOf(command);
        const query = { status: options.status, from: options.from, to: options.to, limit: options.limit };
        const page = await ctx.listed(options, (cursor) =>
          jobId === undefined ? client.runs.listAll({ ...query, cursor }) : client.runs.list(jobId, { ...query, cursor }),
        );
        ctx.showPage(page, (items) => table(items, RUN_COLUMNS, '(no runs)'));
      },
    );
  runs
    .command('get <runId>')
    .description('a run')
    .action(async (runId: string, _options: unknown, command: Command) => {
      const run = await ctx.clientOf(command).runs.get(runId);
      if (ctx.json) return ctx.printJson(run);
      ctx.print(runText(run));
    });
  runs
    .command('cancel <runId>')
    .description('cancel a run that has not finished (a running one stops at its next heartbeat)')
    .action(async (runId: string, _options: unknown, command: Command) => {
      const run = await ctx.clientOf(command).runs.cancel(runId);
      if (ctx.json) return ctx.printJson(run);
      ctx.print(`cancelled run ${run.runId}: ${run.status}`);
    });
  runs
    .command('replay <runId>')
    .description('run a finished run again, with a fresh retry budget')
    .action(async (runId: string, _options: unknown, command: Command) => {
      const run = await ctx.clientOf(command).runs.replay(runId);
      if (ctx.json) return ctx.printJson(run);
      ctx.print(`replayed as run ${run.runId}: ${run.status}`);
    });
  runs
    .command('notifications <runId>')
    .description("a run's outcome notifications: event, status, tries and last error")
    .action(async (runId: string, _options: unknown, command: Command) => {
      const notifications = await ctx.clientOf(command).runs.notifications(runId);
      if (ctx.json) return ctx.printJson(notifications);
      ctx.print(notificationsText(notifications));
    });
  runs
    .command('resend-notification <runId> <event>')
    .description('send a DEAD notification of the run again, on a fresh budget')
    .action(async (runId: string, event: string, _options: unknown, command: Command) => {
      const notification = await ctx.clientOf(command).runs.resendNotification(runId, event as RunNotification['event']);
      if (ctx.json) return ctx.printJson(notification);
      ctx.print(`notification ${notification.event} of run ${runId}: ${notification.status}`);
    });

  // dead runs
  const dead = program.command('dead').description('dead runs: list and replay');
  ctx
    .pageOptions(
      dead
        .command('list')
        .description('dead runs waiting for a replay, newest first')
        .option('--job <jobId>', "only this job's")
        .option('--from <time>', 'ended at or after this ISO 8601 instant', instant)
        .option('--to <time>', 'ended at or before this ISO 8601 instant', instant),
    )
    .action(async (options: { job?: string; from?: string; to?: string; limit?: number; cursor?: string; all?: boolean }, command: Command) => {
      const client = ctx.clientOf(command);
      const page = await ctx.listed(options, (cursor) =>
        client.deadRuns.list({ jobId: options.job, from: options.from, to: options.to, limit: options.limit, cursor }),
      );
      ctx.showPage(page, (items) => deadRunsTable(items));
    });
  dead
    .command('replay [runId]')
    .description('replay one dead run, or (with --job, --from/--to or --all) up to --limit of them')
    .option('--job <jobId>', "the job's dead runs")
    .option('--from <time>', 'dead runs that ended at or after this ISO 8601 instant', instant)
    .option('--to <time>', 'dead runs that ended at or before this ISO 8601 instant', instant)
    .option('--all', 'every dead run (up to --limit)')
    .option('--limit <n>', 'at most this many (1-100, default 100)', integer('--limit', 1, 100))
    .action(async (runId: string | undefined, options: { job?: string; from?: string; to?: string; all?: boolean; limit?: number }, command: Command) => {
      const filtered = options.job !== undefined || options.from !== undefined || options.to !== undefined || options.all === true;
      if (runId !== undefined && (filtered || options.limit !== undefined))
        throw new UsageError('give a run id, or filters (--job, --from, --to, --all), not both');
      if (runId === undefined && !filtered) throw new UsageError('give a run id, or choose dead runs with --job, --from/--to or --all');
      const client = ctx.clientOf(command);
      if (runId !== undefined) {
        const run = await client.deadRuns.replay(runId);
        if (ctx.json) return ctx.printJson(run);
        return ctx.print(`replayed as run ${run.runId}: ${run.status}`);
      }
      const result = await client.deadRuns.replayAll({ jobId: options.job, from: options.from, to: options.to, limit: options.limit });
      if (ctx.json) return ctx.printJson(result);
      // The same choice again, bounded by what this call took: `--to` alone would replay every job's.
      const again = [
        'npx scheduler dead replay',
        ...(options.job !== undefined ? ['--job', options.job] : []),
        ...(options.from !== undefined ? ['--from', options.from] : []),
        ...(options.job === undefined && options.from === undefined ? ['--all'] : []),
        '--to',
        result.until,
        ...(options.limit !== undefined ? ['--limit', String(options.limit)] : []),
      ].join(' ');
      ctx.print(`replayed ${result.replayed.length} dead run(s)${result.remaining ? `; more remain (run again: ${again})` : ''}`);
      if (result.replayed.length > 0) ctx.print(table(result.replayed, RUN_COLUMNS));
    });
}

/** A line per notification: (a workflow run's end,) event, status, tries and last error. */
export function notificationsText(notifications: readonly (RunNotification & { readonly retry?: number })[]): string {
  if (notifications.length === 0) return '(no notifications)';
  return notifications
    .map((n) =>
      [...(n.retry === undefined ? [] : [`retry ${n.retry}`]), n.event, n.status, `tries ${n.tries}`, ...(n.lastError ? [n.lastError] : [])].join('\t'),
    )
    .join('\n');
}
