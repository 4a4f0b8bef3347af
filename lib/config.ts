// Typed settings of a deployment, given to the stack by bin/ (or a test).
import type { WarmThroughput } from 'aws-cdk-lib/aws-dynamodb';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Tuning } from '../lambdas/config/config';
import { SETTINGS, TUNING_SETTINGS } from '../lambdas/config/settings';
import type { TenantLimits } from '../lambdas/domain/tenant';
import { DEFAULT_TENANT_LIMITS } from '../lambdas/domain/tenant';
import { DEFAULT_TUNING } from '../lambdas/config/config';
import type { PoolDefinition } from '../lambdas/store/pools';
import type { DeploymentTargets } from '../lambdas/domain/target-allowlist';

export interface SchedulerStackConfig {
  /** Lambda log retention in days. */
  readonly logRetentionDays: number;
  /**
   * Concurrency cap of each of the default pool's event source mappings (its standard and high
   * lanes; 2 to 1000); undefined leaves them open.
   */
  readonly workerMaxConcurrency?: number;
  /**
   * Concurrency cap of the default pool's low lane (2 to 1000); default a quarter of
   * workerMaxConcurrency (at least 2), or 50 when that is unset (decision 0051).
   */
  readonly workerLowMaxConcurrency?: number;
  /**
   * Worker pools by job type: each has its own queues (high, standard and low lanes, DLQ), its own
   * worker function with `timeoutSeconds`, and event source mappings capped at `maxConcurrency` for
   * the high and standard lanes each and `lowMaxConcurrency` for the low lane.
   * Job types no pool lists run in the implicit `default` pool. See docs/operations.md#pools-and-priorities.
   */
  readonly pools: readonly PoolDefinition[];
  /**
   * Keeps the table indexes releases replaced or dropped (`true`: all of them, which re-creates any
   * a stack has dropped already; a list: those named), for the deploys of an upgrade of a stack
   * deployed before them, as DynamoDB adds or drops one index per table update. Which to give in
   * which deploy depends on the stack's age: see
   * docs/operations.md#upgrading-a-stack-to-the-keys-only-jobs-index-and-the-status-less-time-index.
   * A new stack needs none.
   */
  readonly keepReplacedIndexes?: boolean | readonly string[];
  /**
   * Whether the functions guard job names the way before decision 0192 too, and find them through
   * `byTenantName` (LEGACY_NAME_GUARDS). Default: while the stack keeps that index. `false` with the
   * index kept is the upgrade's middle deploy, which moves the functions off it before it is dropped
   * (docs/operations.md#upgrading-a-stack-to-the-names-entries); `true` without it is refused.
   */
  readonly legacyNameGuards?: boolean;
  /** Pre-warmed DynamoDB throughput for launch-day bursts; see docs/capacity.md. */
  readonly warmThroughput?: WarmThroughput;
  /** An SNS topic that alarms notify, if any. */
  readonly alarmTopicArn?: string;
  /** Alarm thresholds (lib/alarms.ts; what each alarm means: docs/operations.md#alarms). */
  readonly alarms: AlarmThresholds;
  /** Limits of tenants that have none of their own (the admin command sets a tenant's). */
  readonly tenantDefaults: TenantLimits;
  /**
   * Lets HTTP targets resolve to private addresses (RFC 1918, 100.64/10, fc00::/7) and loopback,
   * for targets inside the deployment's own network. Metadata and link-local stay refused.
   */
  readonly allowPrivateTargets?: boolean;
  /**
   * The AWS resources jobs may target: Lambda functions (unqualified ARNs; every version and alias
   * is allowed), SQS queues and EventBridge buses, and the customer-managed KMS keys (key ARNs) of
   * those queues and buses that are encrypted with one. The workers are granted exactly these and the
   * API refuses a job naming anything else (400). Empty by default: only http targets.
   */
  readonly targets?: Partial<DeploymentTargets>;
  /**
   * The Secrets Manager secrets (full ARNs, with the 6-character suffix) whose values HTTP target
   * headers may send (`{"secretArn": …}`): the workers are granted secretsmanager:GetSecretValue on
   * exactly these, and the API refuses a job naming any other (400). Empty by default.
   */
  readonly headerSecretArns?: readonly string[];
  /** Time gate and lease tunables (lambdas/config/settings.ts says what each means). */
  readonly tuning: Tuning;
  /**
   * How long a finished run is kept, in days (RUN_RETENTION_DAYS; 0 to 3650, default 90; 0 keeps
   * runs forever): it leaves through the runs table's TTL (decision 0156).
   */
  readonly runRetentionDays?: number;
  /** How long audit trail entries are kept, in days (AUDIT_RETENTION_DAYS; 1 to 3650, default 365). */
  readonly auditRetentionDays?: number;
}

export interface AlarmThresholds {
  /** DeadRunsRising fires when more runs than this end DEAD in 5 minutes (0: any dead run). */
  readonly deadRunsThreshold: number;
  /** StartLagP99High fires when start lag p99 is over this many ms in 3 of 5 minutes; also the
   * objective line on the dashboard. */
  readonly startLagP99Ms: number;
  /** OldestMessageTooOld fires when the dispatch queue's oldest message is older than this for 3
   * minutes in a row. */
  readonly oldestMessageAgeSeconds: number;
  /** The same for every low lane: low runs are meant to wait while the pool is busy, not this long. */
  readonly oldestLowMessageAgeSeconds: number;
  /** TickerNotRunning fires when fewer ticks than this ran in 5 minutes (the ticker runs 5). */
  readonly minTicksPerFiveMinutes: number;
}

export const defaultAlarmThresholds: AlarmThresholds = {
  deadRunsThreshold: 0,
  startLagP99Ms: 2000,
  oldestMessageAgeSeconds: 1200,
  oldestLowMessageAgeSeconds: 3600,
  minTicksPerFiveMinutes: 1,
};

export const defaultConfig: SchedulerStackConfig = {
  logRetentionDays: 30,
  tuning: { ...DEFAULT_TUNING },
  alarms: { ...defaultAlarmThresholds },
  tenantDefaults: { ...DEFAULT_TENANT_LIMITS },
  pools: [],
};

/**
 * The deployed ticker runs once a minute: a horizon under two ticks would release a far run only
 * once it is due, or after (the functions take less, for tests that tick by hand).
 */
export const MIN_DEPLOYED_TICKER_HORIZON_SECONDS = 120;

/** Every field of a stack config (a config file's other keys are refused: a misspelled one would leave its default in place silently). */
const STACK_CONFIG_KEYS: readonly (keyof SchedulerStackConfig)[] = [
  'logRetentionDays',
  'workerMaxConcurrency',
  'workerLowMaxConcurrency',
  'pools',
  'keepReplacedIndexes',
  'legacyNameGuards',
  'warmThroughput',
  'alarmTopicArn',
  'alarms',
  'tenantDefaults',
  'allowPrivateTargets',
  'targets',
  'headerSecretArns',
  'tuning',
  'runRetentionDays',
  'auditRetentionDays',
];
/** The ticker runs once a minute: more ticks than this in 5 minutes never happen. */
const MAX_TICKS_PER_FIVE_MINUTES = 5;

/**
 * Refuses, at synth, a config the functions would refuse when they start (every function of a
 * deployed stack failing at once) or the stack cannot honour, naming each field.
 */
export function checkStackConfig(config: SchedulerStackConfig): void {
  const problems: string[] = [];
  for (const key of Object.keys(config)) {
    if (!(STACK_CONFIG_KEYS as readonly string[]).includes(key)) problems.push(`${key}: not a field of the stack config (${STACK_CONFIG_KEYS.join(', ')})`);
  }
  // Passed to the functions as text they read back as true or false only.
  for (const key of ['allowPrivateTargets', 'legacyNameGuards'] as const) {
    const value: unknown = config[key];
    if (value !== undefined && typeof value !== 'boolean') problems.push(`${key}: true or false`);
  }
  const issuesOf = (error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): string =>
    error.issues.map((issue) => `${issue.path.length > 0 ? `${issue.path.map(String).join('.')} ` : ''}${issue.message}`).join(', ');
  for (const [key, value] of Object.entries(config.tuning ?? {}) as [string, unknown][]) {
    const name = TUNING_SETTINGS.find((candidate) => candidate === key);
    if (name === undefined) {
      problems.push(`tuning.${key}: not a tunable (${TUNING_SETTINGS.join(', ')})`);
      continue;
    }
    const parsed = SETTINGS[name].schema.safeParse(value);
    if (!parsed.success) problems.push(`tuning.${key}: ${issuesOf(parsed.error)}`);
  }
  const horizon = config.tuning?.tickerHorizonSeconds;
  if (typeof horizon === 'number' && horizon < MIN_DEPLOYED_TICKER_HORIZON_SECONDS) {
    problems.push(`tuning.tickerHorizonSeconds: at least ${MIN_DEPLOYED_TICKER_HORIZON_SECONDS} in a deployment (the ticker runs once a minute)`);
  }
  const limits = SETTINGS.tenantDefaults.schema.safeParse(config.tenantDefaults);
  if (!limits.success) problems.push(`tenantDefaults: ${issuesOf(limits.error)}`);
  if (
    config.workerMaxConcurrency !== undefined &&
    config.workerLowMaxConcurrency !== undefined &&
    config.workerLowMaxConcurrency > config.workerMaxConcurrency
  ) {
    problems.push('workerLowMaxConcurrency: at most workerMaxConcurrency (the low lane is the smaller one, decision 0051)');
  }
  const retentions = Object.values(RetentionDays).filter((value): value is number => typeof value === 'number');
  if (!retentions.includes(config.logRetentionDays)) {
    problems.push(`logRetentionDays: one of CloudWatch Logs' periods (${retentions.filter((days) => days !== Number(RetentionDays.INFINITE)).join(', ')})`);
  }
  for (const [key, value] of Object.entries(config.alarms ?? {}) as [string, unknown][]) {
    if (!(key in defaultAlarmThresholds)) problems.push(`alarms.${key}: not a threshold (${Object.keys(defaultAlarmThresholds).join(', ')})`);
    else if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) problems.push(`alarms.${key}: a number, 0 or more`);
    else if (key === 'minTicksPerFiveMinutes' && value > MAX_TICKS_PER_FIVE_MINUTES)
      problems.push(`alarms.minTicksPerFiveMinutes: at most ${MAX_TICKS_PER_FIVE_MINUTES} (the ticker runs once a minute; more would keep the alarm firing)`);
  }
  if (problems.length > 0) throw new Error(`Invalid stack config: ${problems.join('; ')}`);
}
