// Typed settings of a deployment, given to the stack by bin/ (or a test).
import type { WarmThroughput } from 'aws-cdk-lib/aws-dynamodb';

export interface SchedulerStackConfig {
  /** Lambda log retention in days. */
  readonly logRetentionDays: number;
  /** Concurrency cap of the worker's event source mapping (2 to 1000); undefined leaves it open. */
  readonly workerMaxConcurrency?: number;
  /** Pre-warmed DynamoDB throughput for launch-day bursts; see docs/capacity.md. */
  readonly warmThroughput?: WarmThroughput;
  /** Shards per minute of the runs time index. */
  readonly timeIndexShards: number;
  /** Runs due within this many seconds go straight to SQS with a per-message delay (at most 900). */
  readonly nearHorizonSeconds: number;
  /** How far ahead the ticker releases runs from the time index. */
  readonly tickerHorizonSeconds: number;
}

export const defaultConfig: SchedulerStackConfig = {
  logRetentionDays: 30,
  timeIndexShards: 8,
  nearHorizonSeconds: 840,
  tickerHorizonSeconds: 180,
};
