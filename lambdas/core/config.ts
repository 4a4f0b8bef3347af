// Configuration from the environment, read once when a process starts. A missing required value
// fails at start, not on the first request.
import { z } from 'zod';
import type { TenantLimits } from '../domain/tenant';
import { DEFAULT_TENANT_LIMITS, tenantLimitsSchema } from '../domain/tenant';
import { jobTypeSchema } from '../domain/job';
import type { PoolRoute } from '../store/dispatch-queue';
import type { TargetAllowlist } from '../domain/target-allowlist';
import { NO_TARGETS_ALLOWED, targetAllowlistSchema } from '../domain/target-allowlist';

/** A worker pool as DISPATCH_POOLS carries it (the default pool is DISPATCH_QUEUE_URL and friends). */
export const poolRouteSchema = z.strictObject({
  name: z.string().regex(/^[a-z][a-z0-9-]{0,31}$/),
  jobTypes: z.array(jobTypeSchema).max(100),
  queueUrl: z.string().min(1),
  highQueueUrl: z.string().min(1).optional(),
  lowQueueUrl: z.string().min(1).optional(),
  dlqUrl: z.string().min(1),
  maxConcurrency: z.number().int().min(1).max(1000).optional(),
  lowMaxConcurrency: z.number().int().min(1).max(1000).optional(),
  timeoutSeconds: z.number().int().min(1).max(900).optional(),
  batchSize: z.number().int().min(1).max(10).optional(),
});

/** Tunables of the time gate and leases; each can be overridden per deployment. */
export const DEFAULT_TUNING = {
  nearHorizonSeconds: 840,
  tickerHorizonSeconds: 180,
  redeliveryGraceSeconds: 300,
  leaseMarginSeconds: 30,
  timeIndexShards: 8,
  /** A dispatch message whose processing failed comes back after this many seconds. */
  failedMessageRetrySeconds: 10,
  /**
   * The job read and the visibility change of a worker batch's runs wait for each other to share
   * one request: until none has joined for the quiet time, and at most the cap (decisions 0031, 0033).
   */
  batchCoalesceQuietMs: 10,
  batchCoalesceCapMs: 40,
} as const;
export type Tuning = { -readonly [K in keyof typeof DEFAULT_TUNING]: number };

const seconds = (fallback: number) => z.coerce.number().int().min(0).default(fallback);

const envSchema = z.object({
  JOBS_TABLE: z.string().min(1),
  RUNS_TABLE: z.string().min(1),
  DISPATCH_QUEUE_URL: z.string().min(1),
  DISPATCH_DLQ_URL: z.string().min(1),
  /** The default pool's high lane; without it, high runs of the default pool share its queue. */
  DISPATCH_HIGH_QUEUE_URL: z.string().min(1).optional(),
  /** The default pool's low lane; without it, low runs of the default pool share its queue. */
  DISPATCH_LOW_QUEUE_URL: z.string().min(1).optional(),
  /** The other worker pools, as JSON: [{ name, jobTypes, queueUrl, highQueueUrl, lowQueueUrl, dlqUrl }]. */
  DISPATCH_POOLS: z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (!raw) return [];
      try {
        const parsed = z.array(poolRouteSchema).max(20).safeParse(JSON.parse(raw));
        if (parsed.success) return parsed.data;
      } catch {
        // reported below
      }
      ctx.addIssue({ code: 'custom', message: 'must be a JSON array of worker pools' });
      return z.NEVER;
    }),
  /** The KMS key that encrypts the tenants' webhook signing secrets (an id, ARN or alias). */
  SIGNING_KEY_ID: z.string().min(1).optional(),
  /** `local` allows plain-http targets; `aws` requires https. */
  SCHEDULER_MODE: z.enum(['aws', 'local']).default('aws'),
  /** The AWS resources jobs may target, as JSON {lambdaFunctionArns, sqsQueueArns, eventBusArns}; local mode allows any. */
  ALLOWED_TARGETS: z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (!raw) return NO_TARGETS_ALLOWED;
      try {
        const parsed = targetAllowlistSchema.safeParse(JSON.parse(raw));
        if (parsed.success) return parsed.data;
      } catch {
        // reported below
      }
      ctx.addIssue({ code: 'custom', message: 'must be a JSON object of target ARNs' });
      return z.NEVER;
    }),
  /** `true` lets targets resolve to private addresses (RFC 1918, 100.64/10, fc00::/7) and loopback. */
  ALLOW_PRIVATE_TARGETS: z.enum(['true', 'false']).default('false'),
  /** Runs due within this many seconds go straight to SQS with a delay; later ones wait in the time index. */
  NEAR_HORIZON_SECONDS: seconds(DEFAULT_TUNING.nearHorizonSeconds).pipe(z.number().max(900)),
  /** How far ahead of now the ticker releases runs from the time index. */
  TICKER_HORIZON_SECONDS: seconds(DEFAULT_TUNING.tickerHorizonSeconds),
  /** How long past its due time a queued run may stay unleased before the ticker sends it again. */
  REDELIVERY_GRACE_SECONDS: seconds(DEFAULT_TUNING.redeliveryGraceSeconds),
  /** Added to a run's timeout to make its lease. */
  LEASE_MARGIN_SECONDS: seconds(DEFAULT_TUNING.leaseMarginSeconds),
  /** Shards per minute of the time index. */
  TIME_INDEX_SHARDS: z.coerce.number().int().min(1).max(1000).default(DEFAULT_TUNING.timeIndexShards),
  FAILED_MESSAGE_RETRY_SECONDS: seconds(DEFAULT_TUNING.failedMessageRetrySeconds),
  BATCH_COALESCE_QUIET_MS: seconds(DEFAULT_TUNING.batchCoalesceQuietMs).pipe(z.number().max(10_000)),
  BATCH_COALESCE_CAP_MS: seconds(DEFAULT_TUNING.batchCoalesceCapMs).pipe(z.number().max(10_000)),
  /** Limits of tenants that have none of their own, as JSON: {"maxActiveJobs":…,"maxInFlightRuns":…,"createsPerSecond":…}. */
  TENANT_DEFAULT_LIMITS: z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (!raw) return DEFAULT_TENANT_LIMITS;
      try {
        const parsed = tenantLimitsSchema.partial().safeParse(JSON.parse(raw));
        if (parsed.success) return { ...DEFAULT_TENANT_LIMITS, ...parsed.data };
      } catch {
        // reported below
      }
      ctx.addIssue({ code: 'custom', message: 'must be a JSON object of tenant limits' });
      return z.NEVER;
    }),
});

export interface SchedulerConfig extends Readonly<Tuning> {
  readonly jobsTable: string;
  readonly runsTable: string;
  readonly dispatchQueueUrl: string;
  readonly dispatchDlqUrl: string;
  /** The default pool's high lane, if it has one. */
  readonly dispatchHighQueueUrl?: string;
  /** The default pool's low lane, if it has one. */
  readonly dispatchLowQueueUrl?: string;
  /** Worker pools besides the default one (job type → own queues); see docs/operations.md#pools-and-priorities. */
  readonly pools?: readonly PoolRoute[];
  readonly localMode: boolean;
  /** Each limit of a tenant that did not set it for itself, resolved when the limit is used. */
  readonly tenantDefaults: TenantLimits;
  /** Targets may be private addresses (see lambdas/targets/address-policy.ts). */
  readonly allowPrivateTargets: boolean;
  /** The Lambda functions, SQS queues and event buses jobs may target (ignored in local mode: any). */
  readonly allowedTargets?: TargetAllowlist;
  /** The KMS key of the webhook signing secrets; without it, no secret can be issued (and nothing is signed). */
  readonly signingKeyId?: string;
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
    ...(e.DISPATCH_HIGH_QUEUE_URL ? { dispatchHighQueueUrl: e.DISPATCH_HIGH_QUEUE_URL } : {}),
    ...(e.DISPATCH_LOW_QUEUE_URL ? { dispatchLowQueueUrl: e.DISPATCH_LOW_QUEUE_URL } : {}),
    pools: e.DISPATCH_POOLS,
    localMode: e.SCHEDULER_MODE === 'local',
    tenantDefaults: e.TENANT_DEFAULT_LIMITS,
    allowPrivateTargets: e.ALLOW_PRIVATE_TARGETS === 'true',
    allowedTargets: e.ALLOWED_TARGETS,
    ...(e.SIGNING_KEY_ID ? { signingKeyId: e.SIGNING_KEY_ID } : {}),
    nearHorizonSeconds: e.NEAR_HORIZON_SECONDS,
    tickerHorizonSeconds: e.TICKER_HORIZON_SECONDS,
    redeliveryGraceSeconds: e.REDELIVERY_GRACE_SECONDS,
    leaseMarginSeconds: e.LEASE_MARGIN_SECONDS,
    timeIndexShards: e.TIME_INDEX_SHARDS,
    failedMessageRetrySeconds: e.FAILED_MESSAGE_RETRY_SECONDS,
    batchCoalesceQuietMs: e.BATCH_COALESCE_QUIET_MS,
    batchCoalesceCapMs: e.BATCH_COALESCE_CAP_MS,
  };
}

/** Tuning overrides from the environment (the same names the functions read), for the local runtime. */
export function tuningFromEnv(env: NodeJS.ProcessEnv = process.env): Partial<Tuning> {
  const names: Record<keyof Tuning, string> = {
    nearHorizonSeconds: 'NEAR_HORIZON_SECONDS',
    tickerHorizonSeconds: 'TICKER_HORIZON_SECONDS',
    redeliveryGraceSeconds: 'REDELIVERY_GRACE_SECONDS',
    leaseMarginSeconds: 'LEASE_MARGIN_SECONDS',
    timeIndexShards: 'TIME_INDEX_SHARDS',
    failedMessageRetrySeconds: 'FAILED_MESSAGE_RETRY_SECONDS',
    batchCoalesceQuietMs: 'BATCH_COALESCE_QUIET_MS',
    batchCoalesceCapMs: 'BATCH_COALESCE_CAP_MS',
  };
  const tuning: Partial<Tuning> = {};
  for (const [key, name] of Object.entries(names) as [keyof Tuning, string][]) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number, got "${raw}"`);
    tuning[key] = value;
  }
  return tuning;
}
