// The scheduler's CloudWatch dashboard, read top to bottom: are runs late, how many succeed, what
// fails, then the queues, functions, tables and ticker underneath (docs/operations.md#dashboard;
// its layout drawn in docs/dashboard.svg by npm run docs:dashboard).
import { Duration, Stack } from 'aws-cdk-lib';
import * as cw from 'aws-cdk-lib/aws-cloudwatch';
import { Operation } from 'aws-cdk-lib/aws-dynamodb';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { Metric } from '../lambdas/core/metrics';
import type { MetricName } from '../lambdas/core/metrics';
import type { SchedulerAlarms } from './alarms';
import type { AlarmThresholds } from './config';
import type { ObservedResources } from './observability-metrics';
import { byJobType, functionsOf, ONE_MINUTE, queuesOf, serviceMetric, tablesOf } from './observability-metrics';

export interface DashboardOptions {
  readonly thresholds: AlarmThresholds;
  /** Default: `<stack name>-scheduler`. */
  readonly dashboardName?: string;
}

export function createDashboard(
  scope: Construct,
  resources: ObservedResources,
  { alarms, poolAlarms }: SchedulerAlarms,
  options: DashboardOptions,
): cw.Dashboard {
  const { thresholds } = options;
  const functionList = functionsOf(resources);
  const queueList = queuesOf(resources);
  const tableList = tablesOf(resources);
  const allAlarms = [...Object.values(alarms), ...Object.values(poolAlarms)];
  const graph = (widget: cw.GraphWidgetProps): cw.GraphWidget => new cw.GraphWidget({ height: 6, period: ONE_MINUTE, ...widget });
  const header = (markdown: string, height = 2): cw.TextWidget =>
    new cw.TextWidget({ markdown, width: 24, height, background: cw.TextWidgetBackground.TRANSPARENT });
  const sum = (name: MetricName) => serviceMetric(name, 'Sum');
  const ms: cw.YAxisProps = { label: 'ms', showUnits: false, min: 0 };
  const count: cw.YAxisProps = { label: 'count / min', showUnits: false, min: 0 };
  const objective = `${thresholds.startLagP99Ms / 1000} s objective`;

  // Success rate: no value, rather than a division by zero, in minutes when no run ended.
  const ended = new cw.MathExpression({
    // As GET /v1/health counts it: a permanent failure ends its attempt DEAD, not FAILED.
    expression: 'FILL(succeeded, 0) + FILL(failed, 0) + FILL(timedOut, 0) + FILL(dead, 0)',
    usingMetrics: { succeeded: sum(Metric.RunsSucceeded), failed: sum(Metric.RunsFailed), timedOut: sum(Metric.RunsTimedOut), dead: sum(Metric.RunsDead) },
    label: 'runs ended',
    period: ONE_MINUTE,
  });
  const successRate = new cw.MathExpression({
    expression: 'IF(ended > 0, 100 * FILL(succeeded, 0) / ended)',
    usingMetrics: { ended, succeeded: sum(Metric.RunsSucceeded) },
    label: 'succeeded / (succeeded + failed + timed out + dead), %',
    period: ONE_MINUTE,
  });

  // ThrottledRequests has one series per operation and none while nothing is throttled; FILL keeps
  // a throttled operation from vanishing in a sum with the silent ones.
  const throttledRequests = (name: string, table: ITableV2) => {
    const operations = Object.values(Operation);
    const usingMetrics = Object.fromEntries(
      operations.map((operation) => [
        `${name}${operation}`,
        table.metric('ThrottledRequests', {
          dimensionsMap: { TableName: table.tableName, Operation: operation },
          period: ONE_MINUTE,
          statistic: 'Sum',
        }),
      ]),
    );
    return new cw.MathExpression({
      expression: Object.keys(usingMetrics)
        .map((key) => `FILL(${key}, 0)`)
        .join(' + '),
      usingMetrics,
      label: `${name} table`,
      period: ONE_MINUTE,
    });
  };

  const dashboard = new cw.Dashboard(scope, 'Dashboard', {
    dashboardName: options.dashboardName ?? `${Stack.of(scope).stackName}-scheduler`,
    defaultInterval: Duration.hours(3),
  });
  dashboard.addWidgets(
    new cw.TextWidget({
      markdown: [
        '# Job scheduler',
        'Runs are created by the API, released by the ticker (every minute) or sent at once to the dispatch queue, and leased and executed by workers.',
        `Read top to bottom: are runs late, how many succeed, what fails, then the queues, functions, tables and ticker underneath. Alarms: docs/operations.md#alarms.`,
      ].join('\n\n'),
      width: 12,
      height: 5,
    }),
    new cw.AlarmStatusWidget({
      title: 'Alarms',
      alarms: allAlarms,
      width: 12,
      height: 5,
    }),
  );

  dashboard.addWidgets(
    header(
      `## 1. Is it late?\nStart lag is when a run was leased minus when it was due: what a user sees. The objective is p99 under ${thresholds.startLagP99Ms} ms. External runs wait for their pollers apart (ClaimWait), outside the objective.`,
    ),
  );
  dashboard.addWidgets(
    graph({
      title: 'Start lag (p50, p95, p99)',
      width: 8,
      left: ['p50', 'p95', 'p99'].map((p) => serviceMetric(Metric.StartLag, p, `StartLag ${p}`)),
      leftAnnotations: [{ value: thresholds.startLagP99Ms, label: objective, color: cw.Color.RED }],
      leftYAxis: ms,
    }),
    graph({
      title: 'Where the lag comes from (p99, ticker max)',
      width: 8,
      left: [
        serviceMetric(Metric.SchedulingLag, 'p99', 'SchedulingLag p99 (message reached a worker minus due)'),
        serviceMetric(Metric.StartLag, 'p99', 'StartLag p99 (leased minus due)'),
        serviceMetric(Metric.TickerLag, 'Maximum', 'TickerLag max (tick ran minus scheduled)'),
      ],
      leftYAxis: ms,
    }),
    // Apart from start lag: how long external runs wait for a poller is the pollers' doing.
    graph({
      title: 'External runs: wait for a claim (p50, p99)',
      width: 8,
      left: ['p50', 'p99'].map((p) => serviceMetric(Metric.ClaimWait, p, `ClaimWait ${p} (claimed minus due)`)),
      leftYAxis: ms,
    }),
  );

  dashboard.addWidgets(header('## 2. Throughput and success\nRuns per minute through each step; the share of ended runs that succeeded; how long runs take.'));
  dashboard.addWidgets(
    graph({
      title: 'Runs per minute',
      width: 8,
      left: [Metric.RunsCreated, Metric.RunsQueued, Metric.RunsStarted, Metric.RunsSucceeded].map(sum),
      leftYAxis: count,
    }),
    graph({
      title: 'Success rate (% of ended runs)',
      width: 8,
      left: [successRate],
      // A reference line, not an alarm: failures are often the targets', not the scheduler's.
      leftAnnotations: [{ value: 99, label: '99 %', color: cw.Color.GREY }],
      leftYAxis: { label: '%', showUnits: false, min: 0, max: 100 },
    }),
    graph({
      title: 'Run duration (p50, p99)',
      width: 8,
      left: ['p50', 'p99'].map((p) => serviceMetric(Metric.RunDuration, p, `RunDuration ${p}`)),
      leftYAxis: ms,
    }),
  );

  dashboard.addWidgets(
    header(
      '## 3. What fails\nOne line per job type. Retried runs are attempts that will run again; dead runs will not. Lease expirations and lost workers point at crashed or stuck workers. A dead outcome notification waits for a resend.',
    ),
  );
  dashboard.addWidgets(
    graph({ title: 'Failed runs by job type', width: 8, left: [byJobType(Metric.RunsFailed)], leftYAxis: count }),
    graph({ title: 'Timed-out runs by job type', width: 8, left: [byJobType(Metric.RunsTimedOut)], leftYAxis: count }),
    graph({ title: 'Dead runs by job type', width: 8, left: [byJobType(Metric.RunsDead)], leftYAxis: count }),
  );
  dashboard.addWidgets(
    graph({
      title: 'Retried, skipped, cancelled and deferred runs',
      width: 8,
      // Deferred: waits for an in-flight slot of a tenant at its limit (one per wait).
      left: [Metric.RunsRetried, Metric.RunsSkipped, Metric.RunsCancelled, Metric.RunsDeferred].map(sum),
      leftYAxis: count,
    }),
    graph({
      title: 'Lease expirations and lost workers',
      width: 8,
      left: [Metric.LeaseExpirations, Metric.WorkerLost].map(sum),
      leftYAxis: count,
    }),
    graph({
      title: 'Outcome notifications: sent, failed tries, dead',
      width: 8,
      // A failed try is tried again on the notification's budget; a dead one waits for a resend (NotificationsDead alarm).
      left: [Metric.NotificationsSent, Metric.NotificationsFailed, Metric.NotificationsDead].map(sum),
      leftYAxis: count,
    }),
  );

  dashboard.addWidgets(
    header(
      "## 4. Queues\nEach worker pool has a lane per priority (high; standard, for normal runs; low) and a DLQ; `dispatch` is the default pool. Lanes feed their pool's workers; messages that fail 5 receives move to the pool's DLQ (it should stay empty).",
    ),
  );
  dashboard.addWidgets(
    graph({
      title: 'Messages visible (waiting)',
      width: 8,
      left: queueList.map(([name, q]) => q.metricApproximateNumberOfMessagesVisible({ period: ONE_MINUTE, statistic: 'Maximum', label: name })),
      leftYAxis: { label: 'messages', showUnits: false, min: 0 },
    }),
    graph({
      title: 'Messages in flight (received, not deleted)',
      width: 8,
      left: queueList.map(([name, q]) => q.metricApproximateNumberOfMessagesNotVisible({ period: ONE_MINUTE, statistic: 'Maximum', label: name })),
      leftYAxis: { label: 'messages', showUnits: false, min: 0 },
    }),
    graph({
      title: 'Age of oldest message',
      width: 8,
      left: queueList.map(([name, q]) => q.metricApproximateAgeOfOldestMessage({ period: ONE_MINUTE, statistic: 'Maximum', label: name })),
      leftAnnotations: [alarms.OldestMessageTooOld.toAnnotation()],
      leftYAxis: { label: 's', showUnits: false, min: 0 },
    }),
  );

  dashboard.addWidgets(header('## 5. Lambda\nThe API, worker, ticker, authorizer and console functions.'));
  dashboard.addWidgets(
    graph({
      title: 'Lambda concurrent executions (max)',
      width: 6,
      left: functionList.map(([name, fn]) => fn.metric('ConcurrentExecutions', { period: ONE_MINUTE, statistic: 'Maximum', label: name })),
      leftYAxis: { min: 0, showUnits: false },
    }),
    graph({
      title: 'Lambda errors',
      width: 6,
      left: functionList.map(([name, fn]) => fn.metricErrors({ period: ONE_MINUTE, statistic: 'Sum', label: name })),
      leftYAxis: count,
    }),
    graph({
      title: 'Lambda throttles',
      width: 6,
      left: functionList.map(([name, fn]) => fn.metricThrottles({ period: ONE_MINUTE, statistic: 'Sum', label: name })),
      leftYAxis: count,
    }),
    graph({
      title: 'Lambda duration (p50, p99)',
      width: 6,
      left: functionList.flatMap(([name, fn]) => ['p50', 'p99'].map((p) => fn.metricDuration({ period: ONE_MINUTE, statistic: p, label: `${name} ${p}` }))),
      leftYAxis: ms,
    }),
  );

  dashboard.addWidgets(header('## 6. DynamoDB\nThe jobs and runs tables (on demand). Throttled requests are summed over operations.'));
  dashboard.addWidgets(
    graph({
      title: 'DynamoDB throttled requests',
      width: 8,
      left: tableList.map(([name, table]) => throttledRequests(name, table)),
      leftYAxis: count,
    }),
    graph({
      title: 'Consumed read capacity units',
      width: 8,
      left: tableList.map(([name, table]) => table.metricConsumedReadCapacityUnits({ period: ONE_MINUTE, statistic: 'Sum', label: `${name} table` })),
      leftYAxis: { label: 'RCU / min', showUnits: false, min: 0 },
    }),
    graph({
      title: 'Consumed write capacity units',
      width: 8,
      left: tableList.map(([name, table]) => table.metricConsumedWriteCapacityUnits({ period: ONE_MINUTE, statistic: 'Sum', label: `${name} table` })),
      leftYAxis: { label: 'WCU / min', showUnits: false, min: 0 },
    }),
  );

  dashboard.addWidgets(header('## 7. Ticker\nOnce a minute the ticker releases runs due within its horizon, redelivers lost messages and repairs job chains.'));
  dashboard.addWidgets(
    graph({
      title: 'Ticks, tick errors, ticks out of budget, unreadable partitions',
      width: 8,
      left: [sum(Metric.TickerRuns), sum(Metric.TickerErrors), sum(Metric.TickerBehind), sum(Metric.TickerUnreadable)],
      leftYAxis: count,
    }),
    graph({
      title: 'Runs released, messages redelivered, chains repaired',
      width: 8,
      left: [Metric.TickerReleased, Metric.TickerRedelivered, Metric.TickerRepairedJobs].map(sum),
      leftYAxis: count,
    }),
    graph({
      title: 'Tick duration (max)',
      width: 8,
      left: [serviceMetric(Metric.TickerDuration, 'Maximum', 'TickerDuration max')],
      leftYAxis: ms,
    }),
  );

  dashboard.addWidgets(
    header(
      "## 8. Workflows\nWorkflow runs as a whole (their steps are runs, counted above under the workflow's job type); per workflow, one line each (`workflow:<name>`). A step failure is a step that ended DEAD, CANCELLED or SKIPPED.",
    ),
  );
  dashboard.addWidgets(
    graph({
      title: 'Workflow runs per minute',
      width: 6,
      left: [Metric.WorkflowRunsStarted, Metric.WorkflowRunsSucceeded, Metric.WorkflowRunsFailed, Metric.WorkflowRunsCancelled].map(sum),
      leftYAxis: count,
    }),
    graph({ title: 'Failed workflow runs by workflow', width: 6, left: [byJobType(Metric.WorkflowRunsFailed)], leftYAxis: count }),
    graph({ title: 'Workflow step failures by workflow', width: 6, left: [byJobType(Metric.WorkflowStepFailures)], leftYAxis: count }),
    graph({
      title: 'Workflow run duration (p50, p99)',
      width: 6,
      left: ['p50', 'p99'].map((p) => serviceMetric(Metric.WorkflowRunDuration, p, `WorkflowRunDuration ${p}`)),
      leftYAxis: ms,
    }),
  );
  return dashboard;
}
