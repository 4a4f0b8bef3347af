// Every setting of the functions, in one table: its environment variable, its schema (with its
// default), how it is written into the environment, and what it means. readConfig reads the table,
// toEnvironment writes it (lambdas/config/config.ts); adding a tunable is one entry here.
import { z } from 'zod';
import { DEFAULT_TENANT_LIMITS, tenantLimitsSchema } from '../domain/tenant';
import { NO_TARGETS_ALLOWED, targetAllowlistSchema } from '../domain/target-allowlist';
import { poolRouteSchema } from '../store/pools';
import { secretArnSchema } from '../domain/job';

/** How a value is written into a variable and read back from it. */
export interface EnvFormat {
  readonly kind: 'text' | 'integer' | 'flag' | 'json' | 'mode';
  readonly encode: (value: unknown) => string;
  /** The value before its schema checks it; throws when the text cannot be one. */
  readonly decode: (raw: string) => unknown;
}

const text: EnvFormat = { kind: 'text', encode: String, decode: (raw) => raw };
const integer: EnvFormat = {
  kind: 'integer',
  encode: String,
  decode: (raw) => {
    const value = Number(raw);
    if (!Number.isInteger(value)) throw new Error('must be a whole number');
    return value;
  },
};
const flag: EnvFormat = {
  kind: 'flag',
  encode: String,
  decode: (raw) => {
    if (raw !== 'true' && raw !== 'false') throw new Error('must be true or false');
    return raw === 'true';
  },
};
/** JSON in a variable: the one parser of the pools, the tenant defaults and the target allowlist. */
const json: EnvFormat = { kind: 'json', encode: (value) => JSON.stringify(value), decode: (raw) => JSON.parse(raw) as unknown };
/** SCHEDULER_MODE: `local` or `aws`, read as `localMode`. */
const mode: EnvFormat = {
  kind: 'mode',
  encode: (value) => (value ? 'local' : 'aws'),
  decode: (raw) => {
    if (raw !== 'local' && raw !== 'aws') throw new Error('must be aws or local');
    return raw === 'local';
  },
};

export interface Setting<S extends z.ZodType = z.ZodType> {
  readonly env: string;
  readonly format: EnvFormat;
  /** The value's schema; `.default()` gives its default, `.optional()` lets it be absent. */
  readonly schema: S;
  /** What it means; a malformed value is reported as "<env>: must be <expected>" when given. */
  readonly doc: string;
  readonly expected?: string;
}

const setting = <S extends z.ZodType>(env: string, format: EnvFormat, schema: S, doc: string, expected?: string): Setting<S> => ({
  env,
  format,
  schema,
  doc,
  ...(expected ? { expected } : {}),
});
const name = z.string().min(1);
const wholeSeconds = (fallback: number, max?: number) => (max === undefined ? z.number().int().min(0) : z.number().int().min(0).max(max)).default(fallback);

export const SETTINGS = {
  jobsTable: setting('JOBS_TABLE', text, name, 'The jobs table.'),
  runsTable: setting('RUNS_TABLE', text, name, 'The runs table.'),
  dispatchQueueUrl: setting('DISPATCH_QUEUE_URL', text, name, "The default pool's standard lane (normal runs)."),
  dispatchDlqUrl: setting('DISPATCH_DLQ_URL', text, name, "The default pool's DLQ."),
  dispatchHighQueueUrl: setting(
    'DISPATCH_HIGH_QUEUE_URL',
    text,
    name.optional(),
    "The default pool's high lane; without it, high runs of the default pool share its standard lane.",
  ),
  dispatchLowQueueUrl: setting(
    'DISPATCH_LOW_QUEUE_URL',
    text,
    name.optional(),
    "The default pool's low lane; without it, low runs of the default pool share its standard lane.",
  ),
  pools: setting(
    'DISPATCH_POOLS',
    json,
    z.array(poolRouteSchema).max(20).default([]),
    'The worker pools besides the default one: [{ name, jobTypes, queueUrl, highQueueUrl, lowQueueUrl, dlqUrl, timeoutSeconds, … }] (docs/operations.md#pools-and-priorities).',
    'a JSON array of worker pools',
  ),
  signingKeyId: setting(
    'SIGNING_KEY_ID',
    text,
    name.optional(),
    "The KMS key (id, ARN or alias) that encrypts the tenants' webhook signing secrets; without it no secret can be issued and nothing is signed (docs/delivery.md#signed-deliveries).",
  ),
  payloadBucket: setting(
    'PAYLOAD_BUCKET',
    text,
    name.optional(),
    'The S3 bucket where payloads over 4 KiB are stored (decision 0162); without it payloads are kept in their items and limited to 64 KiB.',
  ),
  auditRetentionDays: setting(
    'AUDIT_RETENTION_DAYS',
    integer,
    z.number().int().min(1).max(3650).default(365),
    "How long audit trail entries are kept (they leave through the jobs table's TTL).",
  ),
  runRetentionDays: setting(
    'RUN_RETENTION_DAYS',
    integer,
    z.number().int().min(0).max(3650).default(90),
    "How long a finished run is kept: it leaves through the runs table's TTL this many days after it finished or after its occurrence, whichever is later (0 keeps runs forever; a workflow step's runs are kept as long as their workflow run).",
  ),
  localMode: setting(
    'SCHEDULER_MODE',
    mode,
    z.boolean().default(false),
    '`local` allows plain-http targets and any AWS target; `aws` requires https and the allowlist.',
  ),
  tenantDefaults: setting(
    'TENANT_DEFAULT_LIMITS',
    json,
    tenantLimitsSchema
      .partial()
      .transform((limits) => ({ ...DEFAULT_TENANT_LIMITS, ...limits }))
      .default(DEFAULT_TENANT_LIMITS),
    'Limits of tenants that have none of their own: {"maxActiveJobs":…,"maxInFlightRuns":…,"createsPerSecond":…,"maxActiveBackfills":…}; each absent one keeps its default.',
    'a JSON object of tenant limits',
  ),
  legacyNameGuards: setting(
    'LEGACY_NAME_GUARDS',
    flag,
    z.boolean().default(false),
    "`true` during an upgrade from a stack before decision 0192: a job's name is guarded by its old `JOBNAME#` item too, and `?name=` reads the `byTenantName` index. The stack sets it while it keeps that index (docs/operations.md).",
  ),
  allowPrivateTargets: setting(
    'ALLOW_PRIVATE_TARGETS',
    flag,
    z.boolean().default(false),
    '`true` lets targets resolve to private addresses (RFC 1918, 100.64/10, fc00::/7) and loopback (lambdas/targets/address-policy.ts).',
  ),
  allowedTargets: setting(
    'ALLOWED_TARGETS',
    json,
    targetAllowlistSchema.default(NO_TARGETS_ALLOWED),
    "The Lambda functions, SQS queues and event buses jobs may target, and the SNS topics their notifications may publish to: {lambdaFunctionArns, sqsQueueArns, eventBusArns, snsTopicArns}; ignored in local mode (any). One list for every tenant: a tenant's grants narrow it (decision 0194).",
    'a JSON object of target ARNs',
  ),
  headerSecretArns: setting(
    'HEADER_SECRET_ARNS',
    json,
    z.array(secretArnSchema).max(100).default([]),
    'The Secrets Manager secrets (full ARNs) HTTP target headers may name as {"secretArn": …}: the API refuses any other (and any a tenant\'s grants leave out, decision 0194), and the stack grants the workers secretsmanager:GetSecretValue on exactly these, in both modes (docs/delivery.md#header-values-from-secrets-manager).',
    'a JSON array of secret ARNs',
  ),
  headerSecretCacheSeconds: setting(
    'HEADER_SECRET_CACHE_SECONDS',
    integer,
    wholeSeconds(60, 3600),
    "How long a worker keeps a header's secret value before reading it again (0: every call).",
  ),
  nearHorizonSeconds: setting(
    'NEAR_HORIZON_SECONDS',
    integer,
    wholeSeconds(840, 900),
    'Runs due within this many seconds go straight to SQS with a delay; later ones wait in the time index.',
  ),
  tickerHorizonSeconds: setting(
    'TICKER_HORIZON_SECONDS',
    integer,
    wholeSeconds(180, 900),
    "How far ahead of now the ticker releases runs from the time index (at most SQS's longest delay, 900 s; a deployment takes 120 at least: the ticker runs once a minute).",
  ),
  redeliveryGraceSeconds: setting(
    'REDELIVERY_GRACE_SECONDS',
    integer,
    wholeSeconds(300, 3600),
    'How long past its due time a queued run may stay unleased before the ticker sends it again.',
  ),
  leaseMarginSeconds: setting('LEASE_MARGIN_SECONDS', integer, wholeSeconds(30, 900), "Added to a run's timeout to make its lease."),
  backfillReleasePerTick: setting(
    'BACKFILL_RELEASE_PER_TICK',
    integer,
    z.number().int().min(1).max(10_000).default(1200),
    'Fire times of backfills one tick releases, split evenly among the active backfills and spread over the minute (issue 19 item 6).',
  ),
  timeIndexShards: setting('TIME_INDEX_SHARDS', integer, z.number().int().min(1).max(1000).default(8), 'Shards per minute of the time index.'),
  failedMessageRetrySeconds: setting(
    'FAILED_MESSAGE_RETRY_SECONDS',
    integer,
    // SQS's longest visibility timeout: 12 hours.
    wholeSeconds(10, 43_200),
    'A dispatch message whose processing failed comes back after this many seconds.',
  ),
  batchCoalesceQuietMs: setting(
    'BATCH_COALESCE_QUIET_MS',
    integer,
    wholeSeconds(10, 10_000),
    "The job read and the visibility change of a worker batch's runs wait for each other to share one request until none has joined for this many ms (decisions 0031, 0033).",
  ),
  batchCoalesceCapMs: setting('BATCH_COALESCE_CAP_MS', integer, wholeSeconds(40, 60_000), '… and at most this many ms after the first.'),
} as const satisfies Record<string, Setting>;

export type SettingName = keyof typeof SETTINGS;

/** The tunables of the time gate, leases and batching: each can be overridden per deployment. */
export const TUNING_SETTINGS = [
  'nearHorizonSeconds',
  'tickerHorizonSeconds',
  'redeliveryGraceSeconds',
  'leaseMarginSeconds',
  'timeIndexShards',
  'backfillReleasePerTick',
  'failedMessageRetrySeconds',
  'batchCoalesceQuietMs',
  'batchCoalesceCapMs',
] as const satisfies readonly SettingName[];
