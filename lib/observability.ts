// The dashboard and the alarms of the scheduler. Custom metrics come from lambdas/core/metrics.ts
// (namespace, names and the two dimension sets); the rest are the AWS metrics of the functions,
// queues and tables. What each alarm means and what to do: docs/operations.md#alarms.
import { Duration, Stack } from 'aws-cdk-lib';
import * as cw from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { Operation } from 'aws-cdk-lib/aws-dynamodb';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { METRICS_NAMESPACE, Metric, SERVICE_NAME } from '../lambdas/core/metrics';
import type { MetricName } from '../lambdas/core/metrics';
import { dispatchQueue as dispatchQueueDefinition } from '../lambdas/store/schema';
import type { AlarmThresholds } from './config';
import { defaultAlarmThresholds } from './config';

/** The dimension names of the two dimension sets lambdas/core/metrics.ts writes. */
const SERVICE_DIMENSION = 'Service';
const JOB_TYPE_DIMENSION = 'JobType';

const ONE_MINUTE = Duration.minutes(1);
const FIVE_MINUTES = Duration.minutes(5);
const RUNBOOK = 'See docs/operations.md#alarms';

export type SchedulerAlarmName =
  | 'DispatchDlqNotEmpty'
  | 'DeadRunsRising'
  | 'StartLagP99High'
  | 'OldestMessageTooOld'
  | 'TickerErrors'
  | 'TickerNotRunning'
  | 'LambdaThrottles';

export interface SchedulerObservabilityProps {
  readonly functions: { readonly api: IFunction; readonly worker: IFunction; readonly ticker: IFunction; readonly authorizer: IFunction };
  readonly dispatchQueue: IQueue;
  readonly dispatchDlq: IQueue;
  /**
   * Every worker pool (the default one included, first), with its lanes, DLQ and worker. Each
   * queue gets a line on the queue graphs; each lane an oldest-message alarm and each DLQ a
   * not-empty alarm (the default pool's standard lane and DLQ keep OldestMessageTooOld and
   * DispatchDlqNotEmpty).
   */
  readonly pools?: readonly PoolObservability[];
  readonly tables: { readonly jobs: ITableV2; readonly runs: ITableV2 };
  /** Thresholds; the missing ones come from `defaultAlarmThresholds`. */
  readonly thresholds?: Partial<AlarmThresholds>;
  /** An SNS topic every alarm notifies, if any. */
  readonly alarmTopicArn?: string;
  /** Default: `<stack name>-scheduler`. */
  readonly dashboardName?: string;
}

export interface PoolObservability {
  readonly name: string;
  readonly standard: IQueue;
  readonly high: IQueue;
  readonly low: IQueue;
  readonly dlq: IQueue;
  readonly worker: IFunction;
}

/** A scheduler metric under the [Service] dimension set: the whole deployment. */
function serviceMetric(name: MetricName, statistic: string, label?: string, period: Duration = ONE_MINUTE): cw.Metric {
  return new cw.Metric({
    namespace: METRICS_NAMESPACE,
    metricName: name,
    dimensionsMap: { [SERVICE_DIMENSION]: SERVICE_NAME },
    statistic,
    period,
    label: label ?? name,
  });
}

/** The same metric without a label (or any other rendering property): what an alarm reads. */
function unlabelled(metric: cw.Metric): cw.Metric {
  return new cw.Metric({
    namespace: metric.namespace,
    metricName: metric.metricName,
    dimensionsMap: metric.dimensions,
    statistic: metric.statistic,
    period: metric.period,
    unit: metric.unit,
    account: metric.account,
    region: metric.region,
  });
}

/** One line per job type: a SEARCH over the [Service, JobType] dimension set. */
function byJobType(name: MetricName, statistic = 'Sum'): cw.MathExpression {
  const schema = `{${METRICS_NAMESPACE},${SERVICE_DIMENSION},${JOB_TYPE_DIMENSION}}`;
  return new cw.MathExpression({
    expression: `SEARCH('${schema} MetricName="${name}" ${SERVICE_DIMENSION}="${SERVICE_NAME}"', '${statistic}', ${ONE_MINUTE.toSeconds()})`,
    label: `\${PROP('Dim.${JOB_TYPE_DIMENSION}')}`,
    period: ONE_MINUTE,
  });
}

export class SchedulerObservability extends Construct {
  readonly dashboard: cw.Dashboard;
  readonly alarms: Record<SchedulerAlarmName, cw.Alarm>;
  /** The per-pool queue alarms, by alarm name suffix (e.g. PoolSlowDlqNotEmpty, OldestHighMessageTooOld). */
  readonly poolAlarms: Record<string, cw.Alarm>;
  readonly thresholds: AlarmThresholds;

  constructor(scope: Construct, id: string, props: SchedulerObservabilityProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const thresholds: AlarmThresholds = { ...defaultAlarmThresholds, ...props.thresholds };
    this.thresholds = thresholds;
    const { functions, dispatchQueue, dispatchDlq, tables } = props;
    const otherPools = (props.pools ?? []).filter((pool) => pool.name !== 'default');
    const defaultPool = (props.pools ?? []).find((pool) => pool.name === 'default');
    const defaultHigh = defaultPool?.high;
    const defaultLow = defaultPool?.low;
    /** A pool's name as a metric id (letters, digits, underscores) and as an alarm name part. */
    const metricIdOf = (name: string) => name.replace(/-/g, '_');
    const pascalOf = (name: string) => name.split('-').map((part) => part.charAt(0).toUpperCase() + part.slice(1)).join('');
    const functionList: (readonly [string, IFunction])[] = [
      ['api', functions.api],
      ['worker', functions.worker],
      ...otherPools.map((pool) => [`worker_${metricIdOf(pool.name)}`, pool.worker] as const),
      ['ticker', functions.ticker],
      ['authorizer', functions.authorizer],
    ];
    const tableList = [
      ['jobs', tables.jobs],
      ['runs', tables.runs],
    ] as const;
    const queueList: (readonly [string, IQueue])[] = [
      ['dispatch', dispatchQueue],
      ...(defaultHigh ? [['dispatch high', defaultHigh] as const] : []),
      ...(defaultLow ? [['dispatch low', defaultLow] as const] : []),
      ['DLQ', dispatchDlq],
      ...otherPools.flatMap((pool) => [
        [`${pool.name}`, pool.standard] as const,
        [`${pool.name} high`, pool.high] as const,
        [`${pool.name} low`, pool.low] as const,
        [`${pool.name} DLQ`, pool.dlq] as const,
      ]),
    ];

    // ---- Alarms ----
    // An alarm on one metric reads it without a label: CDK writes a label as a `Metrics` array (the
    // math form), which some CloudFormation implementations and tools refuse. Only the alarms that
    // truly are math (TickerErrors, LambdaThrottles) keep that form.
    const alarm = (name: SchedulerAlarmName, alarmProps: Omit<cw.AlarmProps, 'alarmName'>): cw.Alarm =>
      new cw.Alarm(this, name, {
        alarmName: `${stack.stackName}-${name}`,
        ...alarmProps,
        metric: alarmProps.metric instanceof cw.Metric ? unlabelled(alarmProps.metric) : alarmProps.metric,
      });

    const dlqVisibleMax = dispatchDlq.metricApproximateNumberOfMessagesVisible({ period: ONE_MINUTE, statistic: 'Maximum' });
    const oldestMessageMax = dispatchQueue.metricApproximateAgeOfOldestMessage({ period: ONE_MINUTE, statistic: 'Maximum', label: 'dispatch' });
    const startLagP99 = serviceMetric(Metric.StartLag, 'p99', 'StartLag p99');

    this.alarms = {
      DispatchDlqNotEmpty: alarm('DispatchDlqNotEmpty', {
        alarmDescription:
          `The dispatch DLQ holds messages: dispatch messages failed ${dispatchQueueDefinition.maxReceiveCount} receives before ` +
          `any outcome could be recorded. ${RUNBOOK} and "Messages in the dispatch DLQ" there.`,
        metric: dlqVisibleMax,
        threshold: 0,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        // An empty queue that SQS stops reporting on is still empty.
        treatMissingData: cw.TreatMissingData.NOT_BREACHING,
      }),
      DeadRunsRising: alarm('DeadRunsRising', {
        alarmDescription:
          `More than ${thresholds.deadRunsThreshold} runs ended DEAD in 5 minutes: a job's retries are spent or its target ` +
          `refused a call for good. The dashboard's "Dead runs by job type" names the job type. ${RUNBOOK}.`,
        metric: serviceMetric(Metric.RunsDead, 'Sum', undefined, FIVE_MINUTES),
        threshold: thresholds.deadRunsThreshold,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        // No data is written while no run dies.
        treatMissingData: cw.TreatMissingData.NOT_BREACHING,
      }),
      StartLagP99High: alarm('StartLagP99High', {
        alarmDescription:
          `Start lag p99 (lease time minus due time) is over ${thresholds.startLagP99Ms} ms in 3 of 5 minutes: runs start late. ` +
          `Compare SchedulingLag and StartLag on the dashboard. ${RUNBOOK}.`,
        metric: startLagP99,
        threshold: thresholds.startLagP99Ms,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 5,
        datapointsToAlarm: 3,
        // Minutes in which no run started say nothing about lag.
        treatMissingData: cw.TreatMissingData.NOT_BREACHING,
      }),
      OldestMessageTooOld: alarm('OldestMessageTooOld', {
        alarmDescription:
          `The dispatch queue's oldest message is older than ${thresholds.oldestMessageAgeSeconds} s for 3 minutes in a row: ` +
          `workers do not keep up, or do not consume at all. ${RUNBOOK}.`,
        metric: oldestMessageMax,
        threshold: thresholds.oldestMessageAgeSeconds,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 3,
        datapointsToAlarm: 3,
        // SQS stops reporting on a queue idle for hours; an idle queue has no old message.
        treatMissingData: cw.TreatMissingData.NOT_BREACHING,
      }),
      // One alarm for both ways a tick fails: the handler caught an error (TickerErrors, counted
      // before it rethrows) or the invocation failed outside it (Lambda Errors: a timeout, a crash,
      // an init error). A caught error shows in both; the threshold is 0, so counting it twice is harmless.
      TickerErrors: alarm('TickerErrors', {
        alarmDescription:
          `A tick failed in the last 5 minutes (TickerErrors or the ticker function's Errors): far runs may not be released ` +
          `and lost messages not repaired until a tick succeeds. ${RUNBOOK}.`,
        metric: new cw.MathExpression({
          expression: 'FILL(tickerErrors, 0) + FILL(lambdaErrors, 0)',
          usingMetrics: {
            tickerErrors: serviceMetric(Metric.TickerErrors, 'Sum', undefined, FIVE_MINUTES),
            lambdaErrors: functions.ticker.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' }),
          },
          label: 'ticker errors',
          period: FIVE_MINUTES,
        }),
        threshold: 0,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        // Neither metric is written while ticks succeed.
        treatMissingData: cw.TreatMissingData.NOT_BREACHING,
      }),
      TickerNotRunning: alarm('TickerNotRunning', {
        alarmDescription:
          `Fewer than ${thresholds.minTicksPerFiveMinutes} tick(s) ran in 5 minutes: the EventBridge Scheduler schedule is ` +
          `disabled, deleted or cannot invoke the ticker, so far runs are not released. ${RUNBOOK}.`,
        metric: serviceMetric(Metric.TickerRuns, 'Sum', undefined, FIVE_MINUTES),
        threshold: thresholds.minTicksPerFiveMinutes,
        comparisonOperator: cw.ComparisonOperator.LESS_THAN_THRESHOLD,
        evaluationPeriods: 1,
        // No ticks means no TickerRuns data at all: missing data is the failure this alarm is for.
        treatMissingData: cw.TreatMissingData.BREACHING,
      }),
      // One alarm over the sum: a throttle of any function means the same thing (concurrency is
      // exhausted), and the dashboard's Lambda row says which function.
      LambdaThrottles: alarm('LambdaThrottles', {
        alarmDescription:
          `A scheduler function (api, worker or ticker) was throttled in the last 5 minutes: account or reserved ` +
          `concurrency is exhausted. The dashboard's "Lambda throttles" names the function. ${RUNBOOK}.`,
        metric: new cw.MathExpression({
          expression: functionList.map(([name]) => `FILL(${name}, 0)`).join(' + '),
          usingMetrics: Object.fromEntries(
            functionList.map(([name, fn]) => [name, fn.metricThrottles({ period: FIVE_MINUTES, statistic: 'Sum' })]),
          ),
          label: 'throttles (api + workers + ticker)',
          period: FIVE_MINUTES,
        }),
        threshold: 0,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        // Lambda writes no Throttles data while nothing is throttled.
        treatMissingData: cw.TreatMissingData.NOT_BREACHING,
      }),
    };

    // The same two queue alarms for every other lane and DLQ: a pool that stops consuming, or whose
    // messages fail, is seen on its own.
    const oldestAlarm = (id: string, queue: IQueue, what: string, seconds = thresholds.oldestMessageAgeSeconds): cw.Alarm =>
      alarm(id as SchedulerAlarmName, {
        alarmDescription:
          `${what}'s oldest message is older than ${seconds} s for 3 minutes in a row: ` +
          `its workers do not keep up, or do not consume at all. ${RUNBOOK} and "Pools and priorities" there.`,
        metric: queue.metricApproximateAgeOfOldestMessage({ period: ONE_MINUTE, statistic: 'Maximum', label: what }),
        threshold: seconds,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 3,
        datapointsToAlarm: 3,
        treatMissingData: cw.TreatMissingData.NOT_BREACHING,
      });
    this.poolAlarms = {};
    if (defaultHigh) this.poolAlarms.OldestHighMessageTooOld = oldestAlarm('OldestHighMessageTooOld', defaultHigh, 'The default pool\'s high lane');
    if (defaultLow) this.poolAlarms.OldestLowMessageTooOld = oldestAlarm('OldestLowMessageTooOld', defaultLow, 'The default pool\'s low lane', thresholds.oldestLowMessageAgeSeconds);
    for (const pool of otherPools) {
      const id = `Pool${pascalOf(pool.name)}`;
      this.poolAlarms[`${id}DlqNotEmpty`] = alarm(`${id}DlqNotEmpty` as SchedulerAlarmName, {
        alarmDescription:
          `The DLQ of pool ${pool.name} holds messages: dispatch messages failed ${dispatchQueueDefinition.maxReceiveCount} receives before ` +
          `any outcome could be recorded. ${RUNBOOK} and "Messages in the dispatch DLQ" there.`,
        metric: pool.dlq.metricApproximateNumberOfMessagesVisible({ period: ONE_MINUTE, statistic: 'Maximum' }),
        threshold: 0,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cw.TreatMissingData.NOT_BREACHING,
      });
      this.poolAlarms[`${id}OldestMessageTooOld`] = oldestAlarm(`${id}OldestMessageTooOld`, pool.standard, `Pool ${pool.name}'s standard lane`);
      this.poolAlarms[`${id}OldestHighMessageTooOld`] = oldestAlarm(`${id}OldestHighMessageTooOld`, pool.high, `Pool ${pool.name}'s high lane`);
      this.poolAlarms[`${id}OldestLowMessageTooOld`] = oldestAlarm(`${id}OldestLowMessageTooOld`, pool.low, `Pool ${pool.name}'s low lane`, thresholds.oldestLowMessageAgeSeconds);
    }
    const allAlarms = [...Object.values(this.alarms), ...Object.values(this.poolAlarms)];

    if (props.alarmTopicArn) {
      const action = new SnsAction(Topic.fromTopicArn(this, 'AlarmTopic', props.alarmTopicArn));
      for (const a of allAlarms) a.addAlarmAction(action);
    }

    // ---- Dashboard ----
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

    this.dashboard = new cw.Dashboard(this, 'Dashboard', {
      dashboardName: props.dashboardName ?? `${stack.stackName}-scheduler`,
      defaultInterval: Duration.hours(3),
    });
    this.dashboard.addWidgets(
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

    this.dashboard.addWidgets(
      header(`## 1. Is it late?\nStart lag is when a run was leased minus when it was due: what a user sees. The objective is p99 under ${thresholds.startLagP99Ms} ms. External runs wait for their pollers apart (ClaimWait), outside the objective.`),
    );
    this.dashboard.addWidgets(
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

    this.dashboard.addWidgets(
      header('## 2. Throughput and success\nRuns per minute through each step; the share of ended runs that succeeded; how long runs take.'),
    );
    this.dashboard.addWidgets(
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

    this.dashboard.addWidgets(
      header('## 3. What fails\nOne line per job type. Retried runs are attempts that will run again; dead runs will not. Lease expirations and lost workers point at crashed or stuck workers.'),
    );
    this.dashboard.addWidgets(
      graph({ title: 'Failed runs by job type', width: 8, left: [byJobType(Metric.RunsFailed)], leftYAxis: count }),
      graph({ title: 'Timed-out runs by job type', width: 8, left: [byJobType(Metric.RunsTimedOut)], leftYAxis: count }),
      graph({ title: 'Dead runs by job type', width: 8, left: [byJobType(Metric.RunsDead)], leftYAxis: count }),
    );
    this.dashboard.addWidgets(
      graph({
        title: 'Retried, skipped, cancelled and deferred runs',
        width: 12,
        // Deferred: waits for an in-flight slot of a tenant at its limit (one per wait).
        left: [Metric.RunsRetried, Metric.RunsSkipped, Metric.RunsCancelled, Metric.RunsDeferred].map(sum),
        leftYAxis: count,
      }),
      graph({
        title: 'Lease expirations and lost workers',
        width: 12,
        left: [Metric.LeaseExpirations, Metric.WorkerLost].map(sum),
        leftYAxis: count,
      }),
    );

    this.dashboard.addWidgets(
      header('## 4. Queues\nEach worker pool has a lane per priority (high; standard, for normal runs; low) and a DLQ; `dispatch` is the default pool. Lanes feed their pool\'s workers; messages that fail 5 receives move to the pool\'s DLQ (it should stay empty).'),
    );
    this.dashboard.addWidgets(
      graph({
        title: 'Messages visible (waiting)',
        width: 8,
        left: queueList.map(([name, q]) => q.metricApproximateNumberOfMessagesVisible({ period: ONE_MINUTE, statistic: 'Maximum', label: name })),
        leftYAxis: { label: 'messages', showUnits: false, min: 0 },
      }),
      graph({
        title: 'Messages in flight (received, not deleted)',
        width: 8,
        left: queueList.map(([name, q]) =>
          q.metricApproximateNumberOfMessagesNotVisible({ period: ONE_MINUTE, statistic: 'Maximum', label: name }),
        ),
        leftYAxis: { label: 'messages', showUnits: false, min: 0 },
      }),
      graph({
        title: 'Age of oldest message',
        width: 8,
        left: queueList.map(([name, q]) => q.metricApproximateAgeOfOldestMessage({ period: ONE_MINUTE, statistic: 'Maximum', label: name })),
        leftAnnotations: [this.alarms.OldestMessageTooOld.toAnnotation()],
        leftYAxis: { label: 's', showUnits: false, min: 0 },
      }),
    );

    this.dashboard.addWidgets(header('## 5. Lambda\nThe API, worker, ticker and authorizer functions.'));
    this.dashboard.addWidgets(
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
        left: functionList.flatMap(([name, fn]) =>
          ['p50', 'p99'].map((p) => fn.metricDuration({ period: ONE_MINUTE, statistic: p, label: `${name} ${p}` })),
        ),
        leftYAxis: ms,
      }),
    );

    this.dashboard.addWidgets(header('## 6. DynamoDB\nThe jobs and runs tables (on demand). Throttled requests are summed over operations.'));
    this.dashboard.addWidgets(
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

    this.dashboard.addWidgets(
      header('## 7. Ticker\nOnce a minute the ticker releases runs due within its horizon, redelivers lost messages and repairs job chains.'),
    );
    this.dashboard.addWidgets(
      graph({
        title: 'Ticks, tick errors, ticks out of budget',
        width: 8,
        left: [sum(Metric.TickerRuns), sum(Metric.TickerErrors), sum(Metric.TickerBehind)],
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
  }

  /** The console address of the dashboard. */
  get dashboardUrl(): string {
    const region = Stack.of(this).region;
    return `https://${region}.console.aws.amazon.com/cloudwatch/home?region=${region}#dashboards:name=${this.dashboard.dashboardName}`;
  }
}
