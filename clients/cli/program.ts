// The `scheduler` command line: commander's commands over the typed client. `runCli` takes its
// streams and environment as arguments and returns the exit code (exit-codes.ts), so that main.ts
// is the only part that touches the process. The commands are in one file per group.
import { Command, CommanderError } from 'commander';
import { SchedulerApiError, SchedulerConnectionError } from '../errors.js';
import type { CliIo, GlobalOptions } from './context.js';
import { createContext } from './context.js';
import { EXIT, exitCodeOf } from './exit-codes.js';
import { addJobCommands } from './jobs-commands.js';
import { WatchTimeout, addOtherCommands } from './other-commands.js';
import { addRunCommands } from './runs-commands.js';
import { addWorkflowCommands } from './workflows-commands.js';

export type { CliIo } from './context.js';

export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const ctx = createContext(io);
  const program = new Command('scheduler')
    .description('The job scheduler from the command line: jobs, runs, dead runs, workflows, previews and health.')
    .option('--url <url>', "the API's base URL, such as http://localhost:3000, with or without /v1 (default: $SCHEDULER_URL)")
    .option('--api-key <key>', 'the API key (default: $SCHEDULER_API_KEY)')
    .option('--json', 'print the API answers as JSON (errors as problem+json on stderr)')
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .addHelpText(
      'after',
      `
Environment: SCHEDULER_URL, the API's base URL (such as http://localhost:3000, with or without
/v1); SCHEDULER_API_KEY, the API key. --url and --api-key take their place.

Times (--from, --to, --until, --at, --anchor) are ISO 8601 instants with seconds and an offset,
such as 2026-01-31T09:00:00Z or 2026-01-31T10:00:00+01:00.

Exit codes: 0 ok, 1 usage or invalid request, 2 not found, 3 conflict (state or version),
4 authentication (no API key, or a key refused), 5 server error or no answer, 6 rate limited,
7 watch timed out.`,
    );
  program.hook('preAction', (_program, action) => {
    ctx.json = (action.optsWithGlobals<GlobalOptions>().json ?? false) === true;
  });

  addJobCommands(program, ctx);
  addRunCommands(program, ctx);
  addWorkflowCommands(program, ctx);
  addOtherCommands(program, ctx);

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
    reportError(io, error, ctx.json);
    return exitCodeOf(error);
  }
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
