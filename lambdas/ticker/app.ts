// The ticker function, invoked every minute by EventBridge Scheduler (and by a timer locally).
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import type { SchedulerDeps } from '../app/deps';
import type { TickReport } from '../app/tick';
import { tick } from '../app/tick';

/** What EventBridge Scheduler sends: the schedule's own time, when the target input asks for it. */
export interface TickEvent {
  readonly scheduledTime?: string;
}

export function createTickerHandler(deps: SchedulerDeps) {
  return middy<TickEvent, TickReport, Error, Context>().handler((event) => {
    const scheduledAt = event?.scheduledTime ? Date.parse(event.scheduledTime) : undefined;
    return tick(deps, Number.isNaN(scheduledAt) ? undefined : scheduledAt);
  });
}
