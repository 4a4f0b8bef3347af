// The scheduler: storage, the API, the worker on the dispatch queue, and the ticker on a schedule.
import { CfnOutput, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Key } from 'aws-cdk-lib/aws-kms';
import type { StackProps } from 'aws-cdk-lib';
import { HttpApi, HttpMethod } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { HttpLambdaAuthorizer, HttpLambdaResponseType } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { JOB_PAYLOAD_PREFIX, RUN_PAYLOAD_PREFIX } from '../lambdas/store/payload-layout';

/** How long API Gateway keeps an authorizer answer per Authorization header. */
export const AUTHORIZER_CACHE_SECONDS = 60;
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { ContextAttribute, Schedule, ScheduleExpression, ScheduleTargetInput } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import type { Construct } from 'constructs';
import { NagSuppressions } from 'cdk-nag';
import { PUBLIC_ROUTES } from '../lambdas/api/routes';
import { JOBS_BY_NAME_INDEX, jobsTable as jobsTableDefinition, workerConsumer } from '../lambdas/store/schema';
import { apiKeyKey } from '../lambdas/store/keys';
import type { Pool } from '../lambdas/store/pools';
import { DEFAULT_POOL_NAME, defaultPool, lowLaneConcurrency, poolResourceNames, validatePools } from '../lambdas/store/pools';
import { allowlistOf, deploymentTargetsSchema } from '../lambdas/domain/target-allowlist';
import { secretArnSchema } from '../lambdas/domain/job';
import { z } from 'zod';
import { routingSettings, toEnvironment } from '../lambdas/config/config';
import { SETTINGS } from '../lambdas/config/settings';
import type { PoolQueues } from './storage';
import type { SchedulerStackConfig } from './config';
import { checkStackConfig, defaultConfig } from './config';
import { SchedulerConsole } from './console';
import { SchedulerFunction } from './scheduler-function';
import type { WorkerNetwork } from './scheduler-function';
import { SchedulerObservability } from './observability';
import { applySecuritySettings } from './security';
import { keptIndexes, SchedulerStorage } from './storage';

export interface SchedulerStackProps extends StackProps {
  readonly config?: Partial<SchedulerStackConfig>;
  /**
   * The VPC, subnets and security groups every pool's worker runs in: what `allowPrivateTargets`
   * needs to reach a target inside the network. The subnets need a way to DynamoDB and SQS (a NAT
   * gateway or VPC endpoints). Default: no VPC. See docs/operations.md#private-targets.
   */
  readonly workerNetwork?: WorkerNetwork;
  /**
   * A PEM file (a path at synth) of extra CA certificates the workers trust for https targets, for
   * targets whose certificates a private CA signed. Default: the public CAs only.
   */
  readonly targetCaBundle?: string;
}

export class SchedulerStack extends Stack {
  readonly storage: SchedulerStorage;
  readonly api: SchedulerFunction;
  /** The default pool's worker. */
  readonly worker: SchedulerFunction;
  /** Every pool's worker, the default one included, by pool name. */
  readonly workers: Record<string, SchedulerFunction>;
  readonly ticker: SchedulerFunction;
  readonly authorizer: SchedulerFunction;
  readonly httpApi: HttpApi;
  /** The web console on the HTTP API's /console routes. */
  readonly console: SchedulerConsole;
  readonly observability: SchedulerObservability;
  /** Encrypts the tenants' webhook signing secrets. */
  readonly signingKey: Key;

  constructor(scope: Construct, id: string, props: SchedulerStackProps = {}) {
    super(scope, id, props);
    const config: SchedulerStackConfig = { ...defaultConfig, ...props.config };
    checkStackConfig(config);
    // The event source mapping's maxConcurrency is 2 at least.
    validatePools(config.pools, { minConcurrency: 2 });
    for (const [name, value] of [
      ['workerMaxConcurrency', config.workerMaxConcurrency],
      ['workerLowMaxConcurrency', config.workerLowMaxConcurrency],
    ] as const) {
      if (value !== undefined && (!Number.isInteger(value) || value < 2 || value > 1000)) throw new Error(`${name} must be a whole number from 2 to 1000`);
    }
    // The default pool is a pool like the others: the job types none lists, the worker's own timeout.
    const poolDefinitions: readonly Pool[] = [
      defaultPool({ maxConcurrency: config.workerMaxConcurrency, lowMaxConcurrency: config.workerLowMaxConcurrency }),
      ...config.pools,
    ];
    const runRetentionDays = SETTINGS.runRetentionDays.schema.parse(config.runRetentionDays);
    // An upgrade from before decision 0192 keeps byTenantName: names are then guarded the old way
    // too, until `npm run ops:backfill-name-entries` has copied them and a deploy with
    // `legacyNameGuards: false` has moved the functions off the index, which the next one drops.
    const keepsNameIndex = keptIndexes(jobsTableDefinition, config.keepReplacedIndexes).some((index) => index.indexName === JOBS_BY_NAME_INDEX);
    if (config.legacyNameGuards === true && !keepsNameIndex) {
      throw new Error(`legacyNameGuards: true reads the ${JOBS_BY_NAME_INDEX} index, which the stack keeps only with keepReplacedIndexes naming it`);
    }
    const legacyNameGuards = config.legacyNameGuards ?? keepsNameIndex;
    this.storage = new SchedulerStorage(this, 'Storage', {
      warmThroughput: config.warmThroughput,
      pools: poolDefinitions,
      runRetentionDays,
      keepReplacedIndexes: config.keepReplacedIndexes,
    });
    const { jobsTable, runsTable, dispatchQueue, dispatchDlq, pools, payloadBucket } = this.storage;
    const definitionOf = (pool: PoolQueues): Pool => poolDefinitions.find((candidate) => candidate.name === pool.name)!;
    /** Where any run may be sent: every lane of every pool. */
    const lanes = pools.flatMap((pool) => [pool.high, pool.standard, pool.low]);
    // Checked here, so a malformed ARN fails the synth rather than every create.
    const targets = deploymentTargetsSchema.parse(config.targets ?? {});
    const headerSecretArns = z.array(secretArnSchema).parse(config.headerSecretArns ?? []);

    // The tenants' webhook signing secrets are encrypted with this key (decision 0078). Kept when
    // the stack is deleted, as the tables are: without it the stored secrets are unreadable.
    this.signingKey = new Key(this, 'SigningKey', {
      description: "Job scheduler: encrypts the tenants' webhook signing secrets",
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });

    // What every function reads at start (lambdas/config/settings.ts), the routing table included:
    // job type -> pool -> lane queue URLs (lambdas/store/dispatch-queue.ts).
    const environment = toEnvironment(
      {
        jobsTable: jobsTable.tableName,
        runsTable: runsTable.tableName,
        signingKeyId: this.signingKey.keyArn,
        payloadBucket: payloadBucket.bucketName,
        // The API refuses jobs whose timeout does not fit in their pool's worker.
        ...routingSettings(
          pools.map((pool) => ({
            name: pool.name,
            jobTypes: pool.jobTypes,
            queueUrl: pool.standard.queueUrl,
            highQueueUrl: pool.high.queueUrl,
            lowQueueUrl: pool.low.queueUrl,
            dlqUrl: pool.dlq.queueUrl,
            timeoutSeconds: definitionOf(pool).timeoutSeconds,
          })),
        ),
        localMode: false,
        allowPrivateTargets: config.allowPrivateTargets ?? false,
        allowedTargets: allowlistOf(targets),
        headerSecretArns,
        tenantDefaults: config.tenantDefaults,
        runRetentionDays,
        legacyNameGuards,
        auditRetentionDays: SETTINGS.auditRetentionDays.schema.parse(config.auditRetentionDays),
        ...config.tuning,
      },
      // Queue URLs are tokens until deployment: JSON holding them is written by the stack.
      { json: (value) => this.toJsonString(value) },
    );
    const common = { environment, logRetentionDays: config.logRetentionDays };
    // API keys are written by operators only (scripts/ops/admin.ts through ApiKeysRepository: issue,
    // revoke); no function writes one, and the authorizer only reads them. The API, the workers
    // (which call arbitrary HTTP targets) and the ticker write much of the jobs table, so a bug or a
    // compromised dependency in them could otherwise mint a key for any tenant: this explicit Deny on
    // the `APIKEY#<hash>` partitions, where the authorizer looks a key up, beats their grants (and
    // covers their transactions' writes, which IAM authorizes as PutItem, UpdateItem and DeleteItem).
    // What it cannot cover: `dynamodb:LeadingKeys` sees the partition key only, and a key's record
    // under its tenant (`TENANT#<t>`, sort key `KEY#<id>`) and the tenant's profile (limits, grants)
    // share that partition with the usage counter and signing secrets the API writes, so TENANT#* is
    // not denied. A write there mints no key (the authorizer reads only the hash's record), but could
    // mislead `key list` and `key revoke`, which finds a key's hash through that record.
    const denyApiKeyWrites = (fn: SchedulerFunction) => fn.denyItemWrites(jobsTable, apiKeyKey('').pk);

    this.api = new SchedulerFunction(this, 'Api', {
      ...common,
      entry: 'api',
      description: 'Job scheduler HTTP API',
      timeout: Duration.seconds(29),
    });
    // PutItem/DeleteItem on jobs: create, CAS replace, and releasing a deleted job's name;
    // UpdateItem: the tenant's active-jobs and creates-per-second counters.
    // Query on jobs: API keys, roll-ups, the worker registry and label entries (the table); listings
    // (an index). BatchGetItem on jobs: a listing reads the jobs its keys-only index points at.
    // BatchWriteItem on jobs: an audit entry, written under the tenant and under its object (decision 0079).
    // ConditionCheckItem on jobs: a new backfill is not an ended one (decision 0182).
    this.api.grantTable(jobsTable, [
      'GetItem',
      'BatchGetItem',
      'BatchWriteItem',
      'Query',
      'QueryIndexes',
      'PutItem',
      'UpdateItem',
      'DeleteItem',
      'ConditionCheckItem',
    ]);
    denyApiKeyWrites(this.api);
    // BatchGetItem on runs: the health endpoint checks the runs workers report in flight. DeleteItem:
    // the run a refused create wrote ahead of its job (decision 0167).
    this.api.grantTable(runsTable, ['GetItem', 'BatchGetItem', 'QueryIndexes', 'PutItem', 'UpdateItem', 'DeleteItem']);
    // SendMessage: a new run goes to its pool's lane; GetQueueAttributes: the health report's depths.
    for (const lane of lanes) this.api.grantQueue(lane, ['SendMessage', 'GetQueueAttributes']);
    for (const pool of pools) this.api.grantQueue(pool.dlq, ['GetQueueAttributes']);
    // The health endpoint's oldest-message age comes from the AWS/SQS metric.
    this.api.grantMetricReads();
    // Encrypt: a new signing secret is stored encrypted; the API never decrypts one.
    this.signingKey.grant(this.api.fn, 'kms:Encrypt');
    // Payloads stored apart (decision 0162): a create, PATCH or trigger stores one (PutObject), a
    // GET shows it, a replaced one is tagged for the lifecycle rule, one no write came to name is deleted.
    // Steps' results (decision 0163): an external worker's complete stores one, a claim reads a
    // step's parents' results, and a GET of a run shows its result.
    this.api.grantPayloads(payloadBucket, JOB_PAYLOAD_PREFIX, ['PutObject', 'GetObject', 'PutObjectTagging', 'DeleteObject']);
    this.api.grantPayloads(payloadBucket, RUN_PAYLOAD_PREFIX, ['PutObject', 'GetObject', 'DeleteObject']);

    // One worker function per pool (the same code, the pool's timeout), fed by one event source
    // mapping per lane: the high and standard lanes each capped at the pool's concurrency (decision
    // 0050), the low lane at its own, smaller cap (decision 0051).
    const workerOf = (pool: PoolQueues, definition: Pool): SchedulerFunction => {
      const isDefault = pool.name === DEFAULT_POOL_NAME;
      const worker = new SchedulerFunction(this, `Worker${poolResourceNames(pool.name).id}`, {
        ...common,
        entry: 'worker',
        // Operators (and the tests) know the default pool's worker by this description.
        description: isDefault
          ? 'Job scheduler worker: leases and executes runs from the dispatch queue'
          : `Job scheduler pool worker (${pool.name}: ${pool.jobTypes.join(', ')}): leases and executes runs from its pool's queues`.slice(0, 256),
        timeout: Duration.seconds(definition.timeoutSeconds),
        memorySize: 1024,
        network: props.workerNetwork,
        extraCaBundle: props.targetCaBundle,
      });
      // BatchGetItem on runs and Query/DeleteItem on jobs: in-flight slots (taken, checked, given back);
      // UpdateItem on jobs: a job that completes frees its place under the tenant's limit.
      // DeleteItem on runs: the successor the chain wrote when the job's write then lost to an edit (decision 0175).
      worker.grantTable(runsTable, ['GetItem', 'BatchGetItem', 'PutItem', 'UpdateItem', 'DeleteItem']);
      // BatchGetItem on jobs: the runs of a batch share one read of their jobs (decision 0033).
      worker.grantTable(jobsTable, ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem']);
      denyApiKeyWrites(worker);
      // Retries follow the job as it is now: a PATCH may have moved it to another pool or lane.
      for (const lane of lanes) worker.grantQueue(lane, ['SendMessage']);
      // The lambda, sqs and eventbridge targets the deployment allows, and only those.
      worker.grantTargets(targets);
      // The secrets target headers may name, and only those (decision 0110).
      worker.grantSecretReads(headerSecretArns);
      // Decrypt: deliveries are signed with the tenant's secrets.
      this.signingKey.grant(worker.fn, 'kms:Decrypt');
      // The payload a run delivers, when it is stored apart (its job's, or its trigger's), and a step's
      // parents' results; a step's large result is stored (decision 0163), and deleted when its
      // attempt was fenced and nothing names it.
      worker.grantPayloads(payloadBucket, JOB_PAYLOAD_PREFIX, ['GetObject']);
      worker.grantPayloads(payloadBucket, RUN_PAYLOAD_PREFIX, ['GetObject', 'PutObject', 'DeleteObject']);
      for (const [lane, laneConcurrency] of [
        [pool.standard, definition.maxConcurrency],
        [pool.high, definition.maxConcurrency],
        [pool.low, lowLaneConcurrency(definition.maxConcurrency, 2, definition.lowMaxConcurrency)],
      ] as const) {
        worker.fn.addEventSource(
          new SqsEventSource(lane, {
            batchSize: definition.batchSize ?? workerConsumer.batchSize,
            maxBatchingWindow: workerConsumer.maxBatchingWindowSeconds > 0 ? Duration.seconds(workerConsumer.maxBatchingWindowSeconds) : undefined,
            reportBatchItemFailures: workerConsumer.reportBatchItemFailures,
            maxConcurrency: laneConcurrency,
          }),
        );
      }
      return worker;
    };
    this.workers = Object.fromEntries(pools.map((pool) => [pool.name, workerOf(pool, definitionOf(pool))]));
    this.worker = this.workers[DEFAULT_POOL_NAME]!;

    this.ticker = new SchedulerFunction(this, 'Ticker', {
      ...common,
      entry: 'ticker',
      description: 'Job scheduler ticker: releases due runs from the time index and repairs lost messages',
      timeout: Duration.seconds(50),
    });
    // BatchGetItem on runs: the priority (the lane) of the runs it releases or redelivers.
    // QueryIndexes: the time index (runs) and overdue recurring jobs (jobs). Query: the active backfills (jobs);
    // DeleteItem on jobs: an ended backfill leaves their partition (decision 0182).
    this.ticker.grantTable(runsTable, ['GetItem', 'BatchGetItem', 'QueryIndexes', 'PutItem', 'UpdateItem']);
    this.ticker.grantTable(jobsTable, ['GetItem', 'Query', 'QueryIndexes', 'PutItem', 'UpdateItem', 'DeleteItem']);
    denyApiKeyWrites(this.ticker);
    for (const lane of lanes) this.ticker.grantQueue(lane, ['SendMessage']);
    // The Scheduler invokes the ticker asynchronously: Lambda's own retries of a failed or throttled
    // tick (two, and up to 6 hours) would come late with the old scheduledTime, when the next tick
    // has done the work.
    this.ticker.fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(1) });
    new Schedule(this, 'TickerSchedule', {
      description: 'Drives the job scheduler ticker once a minute',
      schedule: ScheduleExpression.rate(Duration.minutes(1)),
      target: new LambdaInvoke(this.ticker.fn, {
        input: ScheduleTargetInput.fromObject({ scheduledTime: ContextAttribute.scheduledTime }),
        // A tick that is late by a minute is superseded by the next one.
        maxEventAge: Duration.minutes(1),
        retryAttempts: 0,
      }),
    });

    // The authorizer: API key in, tenant and limits out, cached by API Gateway per key.
    this.authorizer = new SchedulerFunction(this, 'Authorizer', {
      ...common,
      entry: 'authorizer',
      description: 'Job scheduler API authorizer: resolves API keys to tenants',
      timeout: Duration.seconds(10),
      memorySize: 256,
    });
    this.authorizer.grantTable(jobsTable, ['GetItem']);

    this.httpApi = new HttpApi(this, 'HttpApi', {
      description: 'Job scheduler API (v1)',
      createDefaultStage: true,
    });
    this.httpApi.addRoutes({
      path: '/v1/{proxy+}',
      methods: [HttpMethod.ANY],
      integration: new HttpLambdaIntegration('ApiIntegration', this.api.fn),
      authorizer: new HttpLambdaAuthorizer('ApiKeyAuthorizer', this.authorizer.fn, {
        responseTypes: [HttpLambdaResponseType.SIMPLE],
        identitySource: ['$request.header.Authorization'],
        resultsCacheTtl: Duration.seconds(AUTHORIZER_CACHE_SECONDS),
      }),
    });

    // The API's own contract is public (lambdas/api/routes.ts: PUBLIC_ROUTES): these more specific
    // routes take precedence over {proxy+} and carry no authorizer.
    for (const route of PUBLIC_ROUTES) {
      const routes = this.httpApi.addRoutes({
        path: route.path,
        methods: [route.method as HttpMethod],
        integration: new HttpLambdaIntegration(`Public${route.path.replace(/[^A-Za-z0-9]/g, '')}`, this.api.fn),
      });
      NagSuppressions.addResourceSuppressions(
        routes,
        [
          {
            id: 'AwsSolutions-APIG4',
            reason: `${route.method} ${route.path} is the API's public contract (its OpenAPI document): it reads nothing of any tenant.`,
          },
        ],
        true,
      );
    }

    this.console = new SchedulerConsole(this, 'Console', { httpApi: this.httpApi, logRetentionDays: config.logRetentionDays });

    applySecuritySettings(this, {
      httpApi: this.httpApi,
      functions: [this.api, ...Object.values(this.workers), this.ticker, this.authorizer, this.console.function],
      metricsReader: this.api,
      logRetentionDays: config.logRetentionDays,
    });

    // Dashboard and alarms (docs/operations.md#dashboard, #alarms).
    this.observability = new SchedulerObservability(this, 'Observability', {
      functions: { api: this.api.fn, ticker: this.ticker.fn, authorizer: this.authorizer.fn, console: this.console.function.fn },
      pools: pools.map((pool) => ({ ...pool, worker: this.workers[pool.name]!.fn })),
      tables: { jobs: jobsTable, runs: runsTable },
      thresholds: config.alarms,
      alarmTopicArn: config.alarmTopicArn,
    });

    new CfnOutput(this, 'ApiUrl', { value: this.httpApi.apiEndpoint });
    new CfnOutput(this, 'ConsoleUrl', { value: this.console.url });
    new CfnOutput(this, 'JobsTableName', { value: jobsTable.tableName });
    // What the operations scripts take (--runs-table, --payload-bucket; docs/operations.md).
    new CfnOutput(this, 'RunsTableName', { value: runsTable.tableName });
    new CfnOutput(this, 'PayloadBucketName', { value: payloadBucket.bucketName });
    new CfnOutput(this, 'DispatchDlqUrl', { value: dispatchDlq.queueUrl });
    new CfnOutput(this, 'DispatchQueueUrl', { value: dispatchQueue.queueUrl });
    new CfnOutput(this, 'DashboardUrl', { value: this.observability.dashboardUrl });
  }
}
