// The scheduler's alarms: what each means and what to do is in docs/operations.md#alarms. Every
// alarm is made by one helper, so their shared settings (name, runbook link, comparison, missing
// data) are written once.
import { Stack } from 'aws-cdk-lib';
import * as cw from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { Metric } from '../lambdas/core/metrics';
import { DEFAULT_POOL_NAME, poolResourceNames } from '../lambdas/store/pools';
import { dispatchQueue as dispatchQueueDefinition } from '../lambdas/store/schema';
import type { AlarmThresholds } from './config';
import type { ObservedResources } from './observability-metrics';
import { defaultPoolOf, FIVE_MINUTES, functionsOf, ONE_MINUTE, serviceMetric } from './observability-metrics';

export const RUNBOOK = 'See docs/operations.md#alarms';

export type SchedulerAlarmName =
  | 'DispatchDlqNotEmpty'
  | 'DeadRunsRising'
  | 'NotificationsDead'
  | 'StartLagP99High'
  | 'OldestMessageTooOld'
  | 'TickerErrors'
  | 'TickerNotRunning'
  | 'LambdaThrottles';

/** What differs between alarms; everything else is the same for all. */
interface AlarmSpec {
  readonly description: string;
  readonly metric: cw.IMetric;
  readonly threshold: number;
  /** Fires below the threshold; default above it. */
  readonly below?: boolean;
  /** Fires when this many of the last `of` periods breach; default the last period alone. */
  readonly breaching?: { readonly periods: number; readonly of: number };
  /** Missing data breaches (the metric's absence is the failure); default it does not. */
  readonly missingBreaches?: boolean;
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

/**
 * An alarm named `<stack>-<id>`. An alarm on one metric reads it without a label: CDK writes a
 * label as a `Metrics` array (the math form), which some CloudFormation implementations and tools
 * refuse. Only the alarms that truly are math (TickerErrors, LambdaThrottles) keep that form.
 */
function alarm(scope: Construct, id: string, spec: AlarmSpec): cw.Alarm {
  return new cw.Alarm(scope, id, {
    alarmName: `${Stack.of(scope).stackName}-${id}`,
    alarmDescription: spec.description,
    metric: spec.metric instanceof cw.Metric ? unlabelled(spec.metric) : spec.metric,
    threshold: spec.threshold,
    comparisonOperator: spec.below ? cw.ComparisonOperator.LESS_THAN_THRESHOLD : cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: spec.breaching?.of ?? 1,
    ...(spec.breaching ? { datapointsToAlarm: spec.breaching.periods } : {}),
    treatMissingData: spec.missingBreaches ? cw.TreatMissingData.BREACHING : cw.TreatMissingData.NOT_BREACHING,
  });
}

/** A lane whose oldest message is older than `seconds` for 3 minutes in a row. SQS stops reporting on a queue idle for hours; an idle queue has no old message. */
function oldestMessageAlarm(scope: Construct, id: string, queue: IQueue, seconds: number, description: string, label?: string): cw.Alarm {
  return alarm(scope, id, {
    description,
    metric: queue.metricApproximateAgeOfOldestMessage({ period: ONE_MINUTE, statistic: 'Maximum', ...(label ? { label } : {}) }),
    threshold: seconds,
    breaching: { periods: 3, of: 3 },
  });
}

/** A DLQ that holds messages. An empty queue that SQS stops reporting on is still empty. */
function dlqAlarm(scope: Construct, id: string, queue: IQueue, description: string): cw.Alarm {
  return alarm(scope, id, { description, metric: queue.metricApproximateNumberOfMessagesVisible({ period: ONE_MINUTE, statistic: 'Maximum' }), threshold: 0 });
}

export interface SchedulerAlarms {
  readonly alarms: Record<SchedulerAlarmName, cw.Alarm>;
  /** The per-pool queue alarms, by alarm name suffix (e.g. PoolSlowDlqNotEmpty, OldestHighMessageTooOld). */
  readonly poolAlarms: Record<string, cw.Alarm>;
}

export function createAlarms(scope: Construct, resources: ObservedResources, thresholds: AlarmThresholds, alarmTopicArn?: string): SchedulerAlarms {
  const fallback = defaultPoolOf(resources);
  /** The API, the default pool's worker, the ticker, the authorizer and the console. */
  const coreFunctions = functionsOf({ ...resources, pools: [fallback] });
  const maxReceives = dispatchQueueDefinition.maxReceiveCount;
  const alarms: Record<SchedulerAlarmName, cw.Alarm> = {
    DispatchDlqNotEmpty: dlqAlarm(
      scope,
      'DispatchDlqNotEmpty',
      fallback.dlq,
      `The dispatch DLQ holds messages: dispatch messages failed ${maxReceives} receives before ` +
        `any outcome could be recorded. ${RUNBOOK} and "Messages in the dispatch DLQ" there.`,
    ),
    DeadRunsRising: alarm(scope, 'DeadRunsRising', {
      description:
        `More than ${thresholds.deadRunsThreshold} runs ended DEAD in 5 minutes: a job's retries are spent or its target ` +
        `refused a call for good. The dashboard's "Dead runs by job type" names the job type. ${RUNBOOK}.`,
      // No data is written while no run dies.
      metric: serviceMetric(Metric.RunsDead, 'Sum', undefined, FIVE_MINUTES),
      threshold: thresholds.deadRunsThreshold,
    }),
    NotificationsDead: alarm(scope, 'NotificationsDead', {
      description:
        `An outcome notification ended DEAD in the last 5 minutes: its destination refused it for good or its six tries ` +
        `failed, and it is not tried again. The worker's "notification dead" log line names the run and the error. ${RUNBOOK}.`,
      // No data is written while every notification is delivered.
      metric: serviceMetric(Metric.NotificationsDead, 'Sum', undefined, FIVE_MINUTES),
      threshold: 0,
    }),
    StartLagP99High: alarm(scope, 'StartLagP99High', {
      description:
        `Start lag p99 (lease time minus due time) is over ${thresholds.startLagP99Ms} ms in 3 of 5 minutes: runs start late. ` +
        `Compare SchedulingLag and StartLag on the dashboard. ${RUNBOOK}.`,
      // Minutes in which no run started say nothing about lag.
      metric: serviceMetric(Metric.StartLag, 'p99', 'StartLag p99'),
      threshold: thresholds.startLagP99Ms,
      breaching: { periods: 3, of: 5 },
    }),
    OldestMessageTooOld: oldestMessageAlarm(
      scope,
      'OldestMessageTooOld',
      fallback.standard,
      thresholds.oldestMessageAgeSeconds,
      `The dispatch queue's oldest message is older than ${thresholds.oldestMessageAgeSeconds} s for 3 minutes in a row: ` +
        `workers do not keep up, or do not consume at all. ${RUNBOOK}.`,
      'dispatch',
    ),
    // One alarm for both ways a tick fails: the handler caught an error (TickerErrors, counted
    // before it rethrows) or the invocation failed outside it (Lambda Errors: a timeout, a crash,
    // an init error). A caught error shows in both; the threshold is 0, so counting it twice is
    // harmless. Neither metric is written while ticks succeed.
    TickerErrors: alarm(scope, 'TickerErrors', {
      description:
        `A tick failed in the last 5 minutes (TickerErrors or the ticker function's Errors): far runs may not be released ` +
        `and lost messages not repaired until a tick succeeds. ${RUNBOOK}.`,
      metric: new cw.MathExpression({
        expression: 'FILL(tickerErrors, 0) + FILL(lambdaErrors, 0)',
        usingMetrics: {
          tickerErrors: serviceMetric(Metric.TickerErrors, 'Sum', undefined, FIVE_MINUTES),
          lambdaErrors: resources.functions.ticker.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' }),
        },
        label: 'ticker errors',
        period: FIVE_MINUTES,
      }),
      threshold: 0,
    }),
    TickerNotRunning: alarm(scope, 'TickerNotRunning', {
      description:
        `Fewer than ${thresholds.minTicksPerFiveMinutes} tick(s) ran in 5 minutes: the EventBridge Scheduler schedule is ` +
        `disabled, deleted or cannot invoke the ticker, so far runs are not released. ${RUNBOOK}.`,
      metric: serviceMetric(Metric.TickerRuns, 'Sum', undefined, FIVE_MINUTES),
      threshold: thresholds.minTicksPerFiveMinutes,
      below: true,
      // No ticks means no TickerRuns data at all: missing data is the failure this alarm is for.
      missingBreaches: true,
    }),
    // One alarm over the sum: a throttle of any function means the same thing (concurrency is
    // exhausted), and the dashboard's Lambda row says which function. Lambda writes no Throttles
    // data while nothing is throttled. The other pools' workers have one each (below): a metric
    // math alarm takes at most 10 metrics, too few for every worker beside these four functions
    // once there are more than 5 other pools. The description and the label name the functions
    // summed, from the same list.
    LambdaThrottles: alarm(scope, 'LambdaThrottles', {
      description:
        `A scheduler function (${coreFunctions.map(([name]) => (name === 'worker' ? "the default pool's worker" : name)).join(', ')}) ` +
        `was throttled in the last 5 minutes: account or reserved concurrency is exhausted. The dashboard's "Lambda throttles" ` +
        `names the function; another pool's worker has its own alarm (Pool<Name>WorkerThrottled). ${RUNBOOK}.`,
      metric: new cw.MathExpression({
        expression: coreFunctions.map(([name]) => `FILL(${name}, 0)`).join(' + '),
        usingMetrics: Object.fromEntries(coreFunctions.map(([name, fn]) => [name, fn.metricThrottles({ period: FIVE_MINUTES, statistic: 'Sum' })])),
        label: `throttles (${coreFunctions.map(([name]) => name).join(' + ')})`,
        period: FIVE_MINUTES,
      }),
      threshold: 0,
    }),
  };

  // The same two queue alarms for every other lane and DLQ: a pool that stops consuming, or whose
  // messages fail, is seen on its own. The default pool's standard lane and DLQ have theirs above.
  const poolAlarms: Record<string, cw.Alarm> = {};
  const laneAlarm = (id: string, queue: IQueue, what: string, seconds: number) => {
    poolAlarms[id] = oldestMessageAlarm(
      scope,
      id,
      queue,
      seconds,
      `${what}'s oldest message is older than ${seconds} s for 3 minutes in a row: ` +
        `its workers do not keep up, or do not consume at all. ${RUNBOOK} and "Pools and priorities" there.`,
      what,
    );
  };
  for (const pool of resources.pools) {
    const id = poolResourceNames(pool.name).id;
    const what = pool.name === DEFAULT_POOL_NAME ? "The default pool's" : `Pool ${pool.name}'s`;
    if (pool.name !== DEFAULT_POOL_NAME) {
      poolAlarms[`${id}DlqNotEmpty`] = dlqAlarm(
        scope,
        `${id}DlqNotEmpty`,
        pool.dlq,
        `The DLQ of pool ${pool.name} holds messages: dispatch messages failed ${maxReceives} receives before ` +
          `any outcome could be recorded. ${RUNBOOK} and "Messages in the dispatch DLQ" there.`,
      );
      laneAlarm(`${id}OldestMessageTooOld`, pool.standard, `${what} standard lane`, thresholds.oldestMessageAgeSeconds);
      poolAlarms[`${id}WorkerThrottled`] = alarm(scope, `${id}WorkerThrottled`, {
        description:
          `The worker of pool ${pool.name} was throttled in the last 5 minutes: account or reserved concurrency is ` +
          `exhausted. ${RUNBOOK}, "LambdaThrottles".`,
        metric: pool.worker.metricThrottles({ period: FIVE_MINUTES, statistic: 'Sum' }),
        threshold: 0,
      });
    }
    laneAlarm(`${id}OldestHighMessageTooOld`, pool.high, `${what} high lane`, thresholds.oldestMessageAgeSeconds);
    laneAlarm(`${id}OldestLowMessageTooOld`, pool.low, `${what} low lane`, thresholds.oldestLowMessageAgeSeconds);
  }

  if (alarmTopicArn) {
    const action = new SnsAction(Topic.fromTopicArn(scope, 'AlarmTopic', alarmTopicArn));
    for (const each of [...Object.values(alarms), ...Object.values(poolAlarms)]) each.addAlarmAction(action);
  }
  return { alarms, poolAlarms };
}
