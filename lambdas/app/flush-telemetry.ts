// Middy middleware: writes what an invocation recorded (metric lines, health roll-ups) before the
// function returns, whether it succeeded or failed. Lambda may freeze the container right after.
import type middy from '@middy/core';
import type { SchedulerDeps } from './deps';

export function flushTelemetry<TEvent, TResult>(deps: SchedulerDeps): middy.MiddlewareObj<TEvent, TResult> {
  const flush = (): Promise<void> => deps.telemetry.flush();
  return { after: flush, onError: flush };
}
