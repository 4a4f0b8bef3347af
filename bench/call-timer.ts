// How long each AWS call takes as the caller sees it (serialise, sign, send, wait, parse), by
// `service.Operation`: where the scheduler's time goes while it waits on the emulator.
import type { AwsClients } from '../lambdas/store/aws';

type Handler = (args: { input: Record<string, unknown> }) => Promise<{ output: Record<string, unknown> }>;
interface Stack {
  add(middleware: (next: Handler, context: { commandName?: string }) => Handler, options: { step: 'initialize'; name: string }): void;
}

export interface CallTimes {
  readonly count: number;
  readonly totalMs: number;
  readonly meanMs: number;
}

export class CallTimer {
  private times = new Map<string, { count: number; totalMs: number }>();

  attach(clients: AwsClients): void {
    this.attachTo(clients.dynamo.middlewareStack as unknown as Stack, 'dynamodb');
    this.attachTo(clients.sqs.middlewareStack as unknown as Stack, 'sqs');
  }

  reset(): void {
    this.times = new Map();
  }

  /** By operation, the heaviest (count x mean) first. */
  report(): [string, CallTimes][] {
    return [...this.times]
      .map(([name, { count, totalMs }]): [string, CallTimes] => [name, { count, totalMs, meanMs: totalMs / Math.max(1, count) }])
      .sort((a, b) => b[1].totalMs - a[1].totalMs);
  }

  private attachTo(stack: Stack, service: string): void {
    stack.add(
      (next, context) => async (args) => {
        const started = performance.now();
        try {
          return await next(args);
        } finally {
          const name = `${service}.${(context.commandName ?? 'Unknown').replace(/Command$/, '')}`;
          const entry = this.times.get(name) ?? { count: 0, totalMs: 0 };
          entry.count++;
          entry.totalMs += performance.now() - started;
          this.times.set(name, entry);
        }
      },
      { step: 'initialize', name: `callTimer-${service}` },
    );
  }
}
