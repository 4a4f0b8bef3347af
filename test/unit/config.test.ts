// The settings table both ways: a configuration written into the environment and read back is the
// same configuration, and what the functions read is what the stack and the local runtime write.
import { describe, expect, it } from 'vitest';
import type { SchedulerConfig } from '../../lambdas/config/config';
import { DEFAULT_TUNING, poolRoutesOf, readConfig, routingSettings, toEnvironment, tuningFromEnv } from '../../lambdas/config/config';
import { defaultPool, poolQueues } from '../../lambdas/store/pools';
import { SETTINGS } from '../../lambdas/config/settings';
import { DEFAULT_TENANT_LIMITS } from '../../lambdas/domain/tenant';

const full: SchedulerConfig = {
  jobsTable: 'jobs',
  runsTable: 'runs',
  auditRetentionDays: 90,
  runRetentionDays: 30,
  signingKeyId: 'arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555',
  payloadBucket: 'payloads-bucket',
  dispatchQueueUrl: 'https://sqs.example/d',
  dispatchDlqUrl: 'https://sqs.example/d-dlq',
  dispatchHighQueueUrl: 'https://sqs.example/d-high',
  dispatchLowQueueUrl: 'https://sqs.example/d-low',
  pools: [
    { name: 'exports', jobTypes: ['export', 'archive'], queueUrl: 'e', highQueueUrl: 'eh', lowQueueUrl: 'el', dlqUrl: 'ed', timeoutSeconds: 300 },
    { name: 'fast', jobTypes: ['billing'], queueUrl: 'f', dlqUrl: 'fd', maxConcurrency: 8, lowMaxConcurrency: 2, batchSize: 5 },
  ],
  localMode: true,
  tenantDefaults: { maxActiveJobs: 12, maxInFlightRuns: 3, createsPerSecond: null, maxActiveBackfills: 100 },
  legacyNameGuards: true,
  allowPrivateTargets: true,
  allowedTargets: {
    lambdaFunctionArns: ['arn:aws:lambda:us-east-1:123456789012:function:f'],
    sqsQueueArns: ['arn:aws:sqs:us-east-1:123456789012:q'],
    snsTopicArns: [],
    eventBusArns: ['arn:aws:events:us-east-1:123456789012:event-bus/b'],
  },
  headerSecretArns: ['arn:aws:secretsmanager:us-east-1:123456789012:secret:target/token-AbC123'],
  headerSecretCacheSeconds: 30,
  nearHorizonSeconds: 60,
  tickerHorizonSeconds: 120,
  redeliveryGraceSeconds: 45,
  leaseMarginSeconds: 5,
  timeIndexShards: 32,
  backfillReleasePerTick: 1200,
  failedMessageRetrySeconds: 2,
  batchCoalesceQuietMs: 25,
  batchCoalesceCapMs: 200,
};

describe('the settings table', () => {
  it('reads back what it writes: readConfig(toEnvironment(c)) is c', () => {
    expect(readConfig(toEnvironment(full))).toStrictEqual(full);
    const defaults = readConfig(toEnvironment({ jobsTable: 'j', runsTable: 'r', dispatchQueueUrl: 'q', dispatchDlqUrl: 'dlq' }));
    expect(readConfig(toEnvironment(defaults))).toEqual(defaults);
  });

  it('gives every setting its default when its variable is absent', () => {
    const config = readConfig({ JOBS_TABLE: 'j', RUNS_TABLE: 'r', DISPATCH_QUEUE_URL: 'q', DISPATCH_DLQ_URL: 'dlq' });
    expect(config).toMatchObject({ ...DEFAULT_TUNING, pools: [], localMode: false, allowPrivateTargets: false, tenantDefaults: DEFAULT_TENANT_LIMITS });
    expect(DEFAULT_TUNING).toEqual({
      nearHorizonSeconds: 840,
      tickerHorizonSeconds: 180,
      redeliveryGraceSeconds: 300,
      leaseMarginSeconds: 30,
      timeIndexShards: 8,
      backfillReleasePerTick: 1200,
      failedMessageRetrySeconds: 10,
      batchCoalesceQuietMs: 10,
      batchCoalesceCapMs: 40,
    });
  });

  it('keeps the tenant limits a partial TENANT_DEFAULT_LIMITS leaves out at their defaults', () => {
    const config = readConfig({
      JOBS_TABLE: 'j',
      RUNS_TABLE: 'r',
      DISPATCH_QUEUE_URL: 'q',
      DISPATCH_DLQ_URL: 'dlq',
      TENANT_DEFAULT_LIMITS: '{"maxActiveJobs":5}',
    });
    expect(config.tenantDefaults).toEqual({ ...DEFAULT_TENANT_LIMITS, maxActiveJobs: 5 });
  });

  it('names every malformed or missing variable at start', () => {
    const problem = (env: NodeJS.ProcessEnv) => {
      try {
        readConfig(env);
      } catch (error) {
        return (error as Error).message;
      }
      return 'no error';
    };
    const message = problem({
      RUNS_TABLE: 'r',
      DISPATCH_QUEUE_URL: 'q',
      DISPATCH_DLQ_URL: 'dlq',
      NEAR_HORIZON_SECONDS: '901',
      TIME_INDEX_SHARDS: 'x',
      SCHEDULER_MODE: 'cloud',
      ALLOWED_TARGETS: '{',
      TENANT_DEFAULT_LIMITS: '[1]',
    });
    for (const name of [
      'JOBS_TABLE',
      'NEAR_HORIZON_SECONDS',
      'TIME_INDEX_SHARDS: must be a whole number',
      'SCHEDULER_MODE: must be aws or local',
      'ALLOWED_TARGETS: must be a JSON object of target ARNs',
      'TENANT_DEFAULT_LIMITS: must be a JSON object of tenant limits',
    ]) {
      expect(message).toContain(name);
    }
  });

  it("reads the local runtime's tunables through the same table", () => {
    expect(tuningFromEnv({ LEASE_MARGIN_SECONDS: '2', BATCH_COALESCE_CAP_MS: '100', UNRELATED: 'x' })).toEqual({
      leaseMarginSeconds: 2,
      batchCoalesceCapMs: 100,
    });
    expect(() => tuningFromEnv({ NEAR_HORIZON_SECONDS: '1000' })).toThrow(/NEAR_HORIZON_SECONDS/);
  });

  it('names each variable once', () => {
    const names = Object.values(SETTINGS).map((setting) => setting.env);
    expect(new Set(names).size).toBe(names.length);
  });
});

describe('the pools in the configuration', () => {
  it("carry every pool's route, the default one first, through the environment and back", () => {
    const routes = poolRoutesOf(full);
    expect(routes.map((route) => route.name)).toEqual(['default', 'exports', 'fast']);
    expect(routes[0]).toEqual({
      name: 'default',
      jobTypes: [],
      queueUrl: full.dispatchQueueUrl,
      highQueueUrl: full.dispatchHighQueueUrl,
      lowQueueUrl: full.dispatchLowQueueUrl,
      dlqUrl: full.dispatchDlqUrl,
    });
    expect(poolRoutesOf(readConfig(toEnvironment({ ...full, ...routingSettings(routes) })))).toEqual(routes);
    expect(() => routingSettings(routes.slice(1))).toThrow(/no default pool/);
  });

  it('give the default pool the queues it had before pools', () => {
    const queues = poolQueues(defaultPool());
    expect([queues.standard.id, queues.high.id, queues.low.id, queues.dlq.id]).toEqual(['Dispatch', 'DispatchHigh', 'DispatchLow', 'DispatchDlq']);
    expect(queues.standard.visibilityTimeoutSeconds).toBe(5400);
    expect(poolQueues({ name: 'billing-fast', timeoutSeconds: 60 }).dlq.id).toBe('PoolBillingFastDispatchDlq');
  });
});
