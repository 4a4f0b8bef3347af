// The dashboard and the alarms of the scheduler: the alarms in lib/alarms.ts, the dashboard in
// lib/dashboard.ts, what both read in lib/observability-metrics.ts. Custom metrics come from
// lambdas/core/metrics.ts; the rest are the AWS metrics of the functions, queues and tables. What
// each alarm means and what to do: docs/operations.md#alarms.
import { Stack } from 'aws-cdk-lib';
import type * as cw from 'aws-cdk-lib/aws-cloudwatch';
import { Construct } from 'constructs';
import type { SchedulerAlarmName } from './alarms';
import { createAlarms } from './alarms';
import type { AlarmThresholds } from './config';
import { defaultAlarmThresholds } from './config';
import { createDashboard } from './dashboard';
import type { ObservedResources } from './observability-metrics';

export type { SchedulerAlarmName } from './alarms';
export type { PoolObservability } from './observability-metrics';

export interface SchedulerObservabilityProps extends ObservedResources {
  /** Thresholds; the missing ones come from `defaultAlarmThresholds`. */
  readonly thresholds?: Partial<AlarmThresholds>;
  /** An SNS topic every alarm notifies, if any. */
  readonly alarmTopicArn?: string;
  /** Default: `<stack name>-scheduler`. */
  readonly dashboardName?: string;
}

export class SchedulerObservability extends Construct {
  readonly dashboard: cw.Dashboard;
  readonly alarms: Record<SchedulerAlarmName, cw.Alarm>;
  /** The per-pool queue alarms, by alarm name suffix (e.g. PoolSlowDlqNotEmpty, OldestHighMessageTooOld). */
  readonly poolAlarms: Record<string, cw.Alarm>;
  readonly thresholds: AlarmThresholds;

  constructor(scope: Construct, id: string, props: SchedulerObservabilityProps) {
    super(scope, id);
    this.thresholds = { ...defaultAlarmThresholds, ...props.thresholds };
    const alarms = createAlarms(this, props, this.thresholds, props.alarmTopicArn);
    this.alarms = alarms.alarms;
    this.poolAlarms = alarms.poolAlarms;
    this.dashboard = createDashboard(this, props, alarms, { thresholds: this.thresholds, dashboardName: props.dashboardName });
  }

  /** The console address of the dashboard. */
  get dashboardUrl(): string {
    const region = Stack.of(this).region;
    return `https://${region}.console.aws.amazon.com/cloudwatch/home?region=${region}#dashboards:name=${this.dashboard.dashboardName}`;
  }
}
