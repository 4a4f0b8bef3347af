// Configuration from the environment, read once when a process starts. A missing required value
// fails at start, not on the first request.
import { z } from 'zod';

const seconds = (fallback: number) => z.coerce.number().int().min(0).default(fallback);

const envSchema = z.object({
  JOBS_TABLE: z.string().min(1),
  RUNS_TABLE: z.string().min(1),
  DISPATCH_QUEUE_URL: z.string().min(1),
  DISPATCH_DLQ_URL: z.string().min(1),
  /** `local` allows plain-http targets; `aws` requires https. */
  SCHEDULER_MODE: z.enum(['aws', 'local']).default('aws'),
  /** Runs due within this many seconds go straight to SQS with a delay; later ones wait in the time index. */
  NEAR_HORIZON_SECONDS: seconds(840).pipe(z.number().max(900)),
  /** How far ahead of now the ticker releases runs from the time index. */
  TICKER_HORIZON_SECONDS: seconds(180),
  /** How long past its due time a queued run may stay unleased before the ticker sends it again. */
  REDELIVERY_GRACE_SECONDS: seconds(300),
  /** Added to a run's timeout to make its lease. */
  LEASE_MARGIN_SECONDS: seconds(30),
  /** Shards per minute of the time index. */
  TIME_INDEX_SHARDS: z.coerce.number().int().min(1).max(1000).default(8),
});

export interface SchedulerConfig {
  readonly jobsTable: string;
  readonly runsTable: string;
  readonly dispatchQueueUrl: string;
  readonly dispatchDlqUrl: string;
  readonly localMode: boolean;
  readonly nearHorizonSeconds: number;
  readonly tickerHorizonSeconds: number;
  readonly redeliveryGraceSeconds: number;
  readonly leaseMarginSeconds: number;
  readonly timeIndexShards: number;
}

export function readConfig(env: NodeJS.ProcessEnv = process.env): SchedulerConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
    throw new Error(`Invalid scheduler configuration: ${problems}`);
  }
  const e = parsed.data;
  return {
    jobsTable: e.JOBS_TABLE,
    runsTable: e.RUNS_TABLE,
    dispatchQueueUrl: e.DISPATCH_QUEUE_URL,
    dispatchDlqUrl: e.DISPATCH_DLQ_URL,
    localMode: e.SCHEDULER_MODE === 'local',
    nearHorizonSeconds: e.NEAR_HORIZON_SECONDS,
    tickerHorizonSeconds: e.TICKER_HORIZON_SECONDS,
    redeliveryGraceSeconds: e.REDELIVERY_GRACE_SECONDS,
    leaseMarginSeconds: e.LEASE_MARGIN_SECONDS,
    timeIndexShards: e.TIME_INDEX_SHARDS,
  };
}

/** The environment a function needs for `config`: what the CDK stack and the local runtime set. */
export function configToEnv(config: SchedulerConfig): Record<string, string> {
  return {
    JOBS_TABLE: config.jobsTable,
    RUNS_TABLE: config.runsTable,
    DISPATCH_QUEUE_URL: config.dispatchQueueUrl,
    DISPATCH_DLQ_URL: config.dispatchDlqUrl,
    SCHEDULER_MODE: config.localMode ? 'local' : 'aws',
    NEAR_HORIZON_SECONDS: String(config.nearHorizonSeconds),
    TICKER_HORIZON_SECONDS: String(config.tickerHorizonSeconds),
    REDELIVERY_GRACE_SECONDS: String(config.redeliveryGraceSeconds),
    LEASE_MARGIN_SECONDS: String(config.leaseMarginSeconds),
    TIME_INDEX_SHARDS: String(config.timeIndexShards),
  };
}
