// Typed settings of a deployment, given to the stack by bin/ (or a test).
import type { WarmThroughput } from 'aws-cdk-lib/aws-dynamodb';
import type { Tuning } from '../lambdas/core/config';
import { DEFAULT_TUNING } from '../lambdas/core/config';

export interface SchedulerStackConfig {
  /** Lambda log retention in days. */
  readonly logRetentionDays: number;
  /** Concurrency cap of the worker's event source mapping (2 to 1000); undefined leaves it open. */
  readonly workerMaxConcurrency?: number;
  /** Pre-warmed DynamoDB throughput for launch-day bursts; see docs/capacity.md. */
  readonly warmThroughput?: WarmThroughput;
  /** An SNS topic that alarms notify, if any. */
  readonly alarmTopicArn?: string;
  /**
   * Lets HTTP targets resolve to private addresses (RFC 1918, 100.64/10, fc00::/7) and loopback,
   * for targets inside the deployment's own network. Metadata and link-local stay refused.
   */
  readonly allowPrivateTargets?: boolean;
  /** Time gate and lease tunables (see lambdas/core/config.ts). */
  readonly tuning: Tuning;
}

export const defaultConfig: SchedulerStackConfig = {
  logRetentionDays: 30,
  tuning: { ...DEFAULT_TUNING },
};
