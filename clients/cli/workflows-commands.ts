// The `scheduler workflows` commands: create, list, read, update (a new version), start, pause, resume and delete; their runs and notifications.
import type { Command } from 'commander';
import type { WorkflowSpecInput } from '../types.js';
import type { CliContext } from './context.js';
import { notificationsText } from './runs-commands.js';
import { integer, workflowOrder } from './context.js';
import { WORKFLOW_COLUMNS, WORKFLOW_RUN_COLUMNS, table, workflowRunText, workflowText } from './output.js';

export function addWorkflowCommands(program: Command, ctx: CliContext): void {
  // workflows
  const workflows = program
    .command('workflows')
    .description('workflows: create, list, read, update (a new version), start, pause, resume and delete; their runs');
  workflows
    .command('create')
    .description('create a workflow from a JSON or YAML file of its definition (docs/api.md#workflows)')
    .requiredOption('-f, --file <path>', 'the definition, as JSON or YAML (- for standard input)')
    .action(async (options: { file: string }, command: Command) => {
      const workflow = await ctx.clientOf(command).workflows.create((await ctx.readDocument(options.file)) as WorkflowSpecInput);
      if (ctx.json) return ctx.printJson(workflow);
      ctx.print(
        `created workflow ${workflow.workflowId} (${workflow.name}), version ${workflow.version}, next run ${workflow.scheduleState?.nextRunAt ?? '-'}`,
      );
    });
  workflows
    .command('update <workflowId>')
    .description('a new version of a workflow from a JSON or YAML file of its whole definition (the same name); runs already started keep theirs')
    .requiredOption('-f, --file <path>', 'the whole definition, as JSON or YAML (- for standard input)')
    .option('--if-match <version>', 'only if the newest version is still this one (else exit 3)', integer('--if-match', 1, Number.MAX_SAFE_INTEGER))
    .action(async (workflowId: string, options: { file: string; ifMatch?: number }, command: Command) => {
      const spec = (await ctx.readDocument(options.file)) as WorkflowSpecInput;
      const workflow = await ctx.clientOf(command).workflows.update(workflowId, spec, options.ifMatch === undefined ? {} : { ifMatch: options.ifMatch });
      if (ctx.json) return ctx.printJson(workflow);
      ctx.print(
        `updated workflow ${workflow.workflowId} (${workflow.name}) to version ${workflow.version}, next run ${workflow.scheduleState?.nextRunAt ?? '-'}`,
      );
    });
  ctx
    .pageOptions(
      workflows
        .command('list')
        .description('list workflows, newest first (or by name)')
        .option('--order <order>', 'newest or name', workflowOrder)
        .option('--name-prefix <prefix>', 'only workflows whose name starts with this, in name order'),
    )
    .action(async (options: { order?: 'newest' | 'name'; namePrefix?: string; limit?: number; cursor?: string; all?: boolean }, command: Command) => {
      const client = ctx.clientOf(command);
      const page = await ctx.listed(options, (cursor) =>
        client.workflows.list({ order: options.order, namePrefix: options.namePrefix, limit: options.limit, cursor }),
      );
      ctx.showPage(page, (items) => table(items, WORKFLOW_COLUMNS, '(no workflows)'));
    });
  workflows
    .command('get <workflowId>')
    .description("a workflow's definition, its schedule and its latest occurrences")
    .option('--version <n>', 'this version of the definition', integer('--version', 1, 1_000_000))
    .action(async (workflowId: string, options: { version?: number }, command: Command) => {
      const workflow = await ctx.clientOf(command).workflows.get(workflowId, options.version);
      if (ctx.json) return ctx.printJson(workflow);
      ctx.print(workflowText(workflow));
    });
  for (const action of ['pause', 'resume'] as const) {
    workflows
      .command(`${action} <workflowId>`)
      .description(action === 'pause' ? "pause a workflow's schedule" : "resume a workflow's schedule (its misfire policy picks the next occurrence)")
      .action(async (workflowId: string, _options: unknown, command: Command) => {
        const workflow = await ctx.clientOf(command).workflows[action](workflowId);
        if (ctx.json) return ctx.printJson(workflow);
        ctx.print(`workflow ${workflow.workflowId}: schedule ${workflow.scheduleState?.status ?? '-'}, next run ${workflow.scheduleState?.nextRunAt ?? '-'}`);
      });
  }
  workflows
    .command('delete <workflowId>')
    .description('delete a workflow: its schedule and running workflow runs are cancelled, its name freed; its runs stay readable')
    .action(async (workflowId: string, _options: unknown, command: Command) => {
      const workflow = await ctx.clientOf(command).workflows.delete(workflowId);
      if (ctx.json) return ctx.printJson(workflow);
      ctx.print(`deleted workflow ${workflow.workflowId} (${workflow.name}) at ${workflow.deletedAt ?? '-'}`);
    });
  workflows
    .command('start <workflowId>')
    .description('start a run of the newest version now')
    .action(async (workflowId: string, _options: unknown, command: Command) => {
      const run = await ctx.clientOf(command).workflows.start(workflowId);
      if (ctx.json) return ctx.printJson(run);
      ctx.print(`started workflow run ${run.workflowRunId}: ${run.status}`);
    });
  ctx
    .pageOptions(workflows.command('runs <workflowId>').description("a workflow's runs, newest first"))
    .action(async (workflowId: string, options: { limit?: number; cursor?: string; all?: boolean }, command: Command) => {
      const client = ctx.clientOf(command);
      const page = await ctx.listed(options, (cursor) => client.workflows.runs(workflowId, { limit: options.limit, cursor }));
      ctx.showPage(page, (items) => table(items, WORKFLOW_RUN_COLUMNS, '(no workflow runs)'));
    });
  workflows
    .command('run <workflowId> <workflowRunId>')
    .description('a workflow run and its steps')
    .action(async (workflowId: string, workflowRunId: string, _options: unknown, command: Command) => {
      const run = await ctx.clientOf(command).workflows.run(workflowId, workflowRunId);
      if (ctx.json) return ctx.printJson(run);
      ctx.print(workflowRunText(run));
    });
  for (const action of ['cancel', 'retry'] as const) {
    workflows
      .command(`${action} <workflowId> <workflowRunId>`)
      .description(action === 'cancel' ? 'cancel a running workflow run' : 'retry a failed or cancelled workflow run from its failed steps')
      .action(async (workflowId: string, workflowRunId: string, _options: unknown, command: Command) => {
        const run = await ctx.clientOf(command).workflows[action](workflowId, workflowRunId);
        if (ctx.json) return ctx.printJson(run);
        ctx.print(`${action === 'cancel' ? 'cancelled' : 'retried'} workflow run ${run.workflowRunId}: ${run.status}`);
      });
  }

  workflows
    .command('notifications <workflowId> <workflowRunId>')
    .description("a workflow run's outcome notifications, the latest end's first: end, event, status, tries and last error")
    .action(async (workflowId: string, workflowRunId: string, _options: unknown, command: Command) => {
      const notifications = await ctx.clientOf(command).workflows.notifications(workflowId, workflowRunId);
      if (ctx.json) return ctx.printJson(notifications);
      ctx.print(notificationsText(notifications));
    });
  workflows
    .command('resend-notification <workflowId> <workflowRunId> <event>')
    .description("send the DEAD notification (succeeded, failed or cancelled) of the workflow run's latest end again, on a fresh budget")
    .action(async (workflowId: string, workflowRunId: string, event: string, _options: unknown, command: Command) => {
      const notification = await ctx.clientOf(command).workflows.resendNotification(workflowId, workflowRunId, event as 'succeeded' | 'failed' | 'cancelled');
      if (ctx.json) return ctx.printJson(notification);
      ctx.print(`notification ${notification.event} of workflow run ${workflowRunId} (retry ${notification.retry}): ${notification.status}`);
    });
}
