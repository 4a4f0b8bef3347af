// What the dashboard and the alarms read: the scheduler's own metrics (lambdas/core/metrics.ts:
// namespace, names and the two dimension sets), and the list of functions, queues and tables whose
// AWS metrics they show, each with its label.
import { Duration } from 'aws-cdk-lib';
import * as cw from 'aws-cdk-lib/aws-cloudwatch';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../lambdas/core/metrics';
import type { MetricName } from '../lambdas/core/metrics';
import { DEFAULT_POOL_NAME } from '../lambdas/store/pools';
import type { PoolLanes } from '../lambdas/store/pools';

/** The dimension names of the two dimension sets lambdas/core/metrics.ts writes. */
const SERVICE_DIMENSION = 'Service';
const JOB_TYPE_DIMENSION = 'JobType';

export const ONE_MINUTE = Duration.minutes(1);
export const FIVE_MINUTES = Duration.minutes(5);

/** A scheduler metric under the [Service] dimension set: the whole deployment. */
export function serviceMetric(name: MetricName, statistic: string, label?: string, period: Duration = ONE_MINUTE): cw.Metric {
  return new cw.Metric({
    namespace: METRICS_NAMESPACE,
    metricName: name,
    dimensionsMap: { [SERVICE_DIMENSION]: SERVICE_NAME },
    statistic,
    period,
    label: label ?? name,
  });
}

/** One line per job type: a SEARCH over the [Service, JobType] dimension set. */
export function byJobType(name: MetricName, statistic = 'Sum'): cw.MathExpression {
  const schema = `{${METRICS_NAMESPACE},${SERVICE_DIMENSION},${JOB_TYPE_DIMENSION}}`;
  return new cw.MathExpression({
    expression: `SEARCH('${schema} MetricName="${name}" ${SERVICE_DIMENSION}="${SERVICE_NAME}"', '${statistic}', ${ONE_MINUTE.toSeconds()})`,
    label: `\${PROP('Dim.${JOB_TYPE_DIMENSION}')}`,
    period: ONE_MINUTE,
  });
}

/** A worker pool as observed: its lanes, its DLQ and its worker. */
export interface PoolObservability extends PoolLanes<IQueue> {
  readonly name: string;
  readonly worker: IFunction;
}

export interface ObservedResources {
  /** The functions besides the pools' workers. */
  readonly functions: { readonly api: IFunction; readonly ticker: IFunction; readonly authorizer: IFunction; readonly console: IFunction };
  /** Every worker pool, the default one included (first). */
  readonly pools: readonly PoolObservability[];
  readonly tables: { readonly jobs: ITableV2; readonly runs: ITableV2 };
}

/** A pool's name as a metric id (letters, digits, underscores). */
const metricIdOf = (name: string) => name.replace(/-/g, '_');

/** Every function, by the name its lines carry: `worker` is the default pool's worker, `worker_<pool>` another pool's. */
export function functionsOf({ functions, pools }: ObservedResources): (readonly [string, IFunction])[] {
  return [
    ['api', functions.api],
    ...pools.map((pool) => [pool.name === DEFAULT_POOL_NAME ? 'worker' : `worker_${metricIdOf(pool.name)}`, pool.worker] as const),
    ['ticker', functions.ticker],
    ['authorizer', functions.authorizer],
    ['console', functions.console],
  ];
}

/** Every queue, by the name its lines carry: the default pool's `dispatch`, `dispatch high`, `dispatch low` and `DLQ`, another's `<pool>`, `<pool> high`, …. */
export function queuesOf({ pools }: ObservedResources): (readonly [string, IQueue])[] {
  return pools.flatMap((pool) => {
    const [lane, dlq] = pool.name === DEFAULT_POOL_NAME ? ['dispatch', 'DLQ'] : [pool.name, `${pool.name} DLQ`];
    return [[lane, pool.standard] as const, [`${lane} high`, pool.high] as const, [`${lane} low`, pool.low] as const, [dlq, pool.dlq] as const];
  });
}

export function tablesOf({ tables }: ObservedResources): (readonly [string, ITableV2])[] {
  return [
    ['jobs', tables.jobs],
    ['runs', tables.runs],
  ];
}

/** The default pool (the routing's fallback: its queues carry the pre-pool alarm names). */
export function defaultPoolOf({ pools }: ObservedResources): PoolObservability {
  const found = pools.find((pool) => pool.name === DEFAULT_POOL_NAME);
  if (!found) throw new Error('the pools have no default pool');
  return found;
}
