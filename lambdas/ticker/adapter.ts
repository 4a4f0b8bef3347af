// The ticker function, invoked every minute by EventBridge Scheduler (and by a timer locally).
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import type { SchedulerDeps } from '../app/deps';
import type { TickReport } from '../app/tick';
import { tick } from '../app/tick';
import { logger } from '../core/logger';
import { flushTelemetry } from '../app/flush-telemetry';
import { Metric } from '../core/metrics';

/** What EventBridge Scheduler sends: the schedule's own time, when the target input asks for it. */
export interface TickEvent {
  readonly scheduledTime?: string;
}

export function createTickerHandler(deps: SchedulerDeps) {
  return middy<TickEvent, TickReport, Error, Context>()
    .use(flushTelemetry(deps))
    .handler(async (event) => {
      const scheduledAt = event?.scheduledTime ? Date.parse(event.scheduledTime) : undefined;
      const startedAt = deps.clock();
      const { metrics } = deps.telemetry;
      metrics.count(Metric.TickerRuns);
      try {
        const report = await tick(deps, Number.isNaN(scheduledAt) ? undefined : scheduledAt);
        metrics.count(Metric.TickerReleased, undefined, report.released);
        metrics.count(Metric.TickerRedelivered, undefined, report.redelivered);
        metrics.count(Metric.TickerRepairedJobs, undefined, report.repairedJobs);
        metrics.add(Metric.TickerLag, Math.max(0, report.lagMs));
        if (!report.complete) metrics.count(Metric.TickerBehind);
        if (report.unreadable > 0) metrics.count(Metric.TickerUnreadable, undefined, report.unreadable);
        return report;
      } catch (error) {
        metrics.count(Metric.TickerErrors);
        logger.error('tick failed', { error: error instanceof Error ? error.message : String(error) });
        throw error;
      } finally {
        metrics.add(Metric.TickerDuration, deps.clock() - startedAt);
      }
    });
}
