// The scheduler: storage, the API, the worker on the dispatch queue, and the ticker on a schedule.
import { CfnOutput, Duration, Stack } from 'aws-cdk-lib';
import type { StackProps } from 'aws-cdk-lib';
import { HttpApi, HttpMethod } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { HttpLambdaAuthorizer, HttpLambdaResponseType } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';

/** How long API Gateway keeps an authorizer answer per Authorization header. */
export const AUTHORIZER_CACHE_SECONDS = 60;
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { ContextAttribute, Schedule, ScheduleExpression, ScheduleTargetInput } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import type { Construct } from 'constructs';
import { workerConsumer } from '../lambdas/store/schema';
import type { SchedulerStackConfig } from './config';
import { defaultConfig } from './config';
import { SchedulerFunction } from './scheduler-function';
import { SchedulerObservability } from './observability';
import { applySecuritySettings } from './security';
import { SchedulerStorage } from './storage';

export interface SchedulerStackProps extends StackProps {
  readonly config?: Partial<SchedulerStackConfig>;
}

export class SchedulerStack extends Stack {
  readonly storage: SchedulerStorage;
  readonly api: SchedulerFunction;
  readonly worker: SchedulerFunction;
  readonly ticker: SchedulerFunction;
  readonly authorizer: SchedulerFunction;
  readonly httpApi: HttpApi;
  readonly observability: SchedulerObservability;

  constructor(scope: Construct, id: string, props: SchedulerStackProps = {}) {
    super(scope, id, props);
    const config: SchedulerStackConfig = { ...defaultConfig, ...props.config };
    this.storage = new SchedulerStorage(this, 'Storage', { warmThroughput: config.warmThroughput });
    const { jobsTable, runsTable, dispatchQueue, dispatchDlq } = this.storage;

    const environment = {
      JOBS_TABLE: jobsTable.tableName,
      RUNS_TABLE: runsTable.tableName,
      DISPATCH_QUEUE_URL: dispatchQueue.queueUrl,
      DISPATCH_DLQ_URL: dispatchDlq.queueUrl,
      SCHEDULER_MODE: 'aws',
      ALLOW_PRIVATE_TARGETS: String(config.allowPrivateTargets ?? false),
      NEAR_HORIZON_SECONDS: String(config.tuning.nearHorizonSeconds),
      TICKER_HORIZON_SECONDS: String(config.tuning.tickerHorizonSeconds),
      REDELIVERY_GRACE_SECONDS: String(config.tuning.redeliveryGraceSeconds),
      LEASE_MARGIN_SECONDS: String(config.tuning.leaseMarginSeconds),
      TIME_INDEX_SHARDS: String(config.tuning.timeIndexShards),
      FAILED_MESSAGE_RETRY_SECONDS: String(config.tuning.failedMessageRetrySeconds),
      TENANT_DEFAULT_LIMITS: JSON.stringify(config.tenantDefaults),
    };
    const common = { environment, logRetentionDays: config.logRetentionDays };

    this.api = new SchedulerFunction(this, 'Api', {
      ...common,
      entry: 'api',
      description: 'Job scheduler HTTP API',
      timeout: Duration.seconds(29),
    });
    // PutItem/DeleteItem on jobs: create, CAS replace, and releasing a deleted job's name;
    // UpdateItem: the tenant's active-jobs and creates-per-second counters.
    this.api.grantTable(jobsTable, ['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem']);
    // BatchGetItem on runs: the health endpoint checks the runs workers report in flight.
    this.api.grantTable(runsTable, ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem']);
    this.api.grantQueue(dispatchQueue, ['SendMessage', 'GetQueueAttributes']);
    this.api.grantQueue(dispatchDlq, ['GetQueueAttributes']);
    // The health endpoint's oldest-message age comes from the AWS/SQS metric.
    this.api.grantMetricReads();

    this.worker = new SchedulerFunction(this, 'Worker', {
      ...common,
      entry: 'worker',
      description: 'Job scheduler worker: leases and executes runs from the dispatch queue',
      timeout: Duration.seconds(workerConsumer.functionTimeoutSeconds),
      memorySize: 1024,
    });
    // BatchGetItem on runs and Query/DeleteItem on jobs: in-flight slots (taken, checked, given back);
    // UpdateItem on jobs: a job that completes frees its place under the tenant's limit.
    this.worker.grantTable(runsTable, ['GetItem', 'BatchGetItem', 'PutItem', 'UpdateItem']);
    this.worker.grantTable(jobsTable, ['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem']);
    this.worker.grantQueue(dispatchQueue, ['SendMessage']);
    this.worker.fn.addEventSource(
      new SqsEventSource(dispatchQueue, {
        batchSize: workerConsumer.batchSize,
        maxBatchingWindow: workerConsumer.maxBatchingWindowSeconds > 0 ? Duration.seconds(workerConsumer.maxBatchingWindowSeconds) : undefined,
        reportBatchItemFailures: workerConsumer.reportBatchItemFailures,
        maxConcurrency: config.workerMaxConcurrency,
      }),
    );

    this.ticker = new SchedulerFunction(this, 'Ticker', {
      ...common,
      entry: 'ticker',
      description: 'Job scheduler ticker: releases due runs from the time index and repairs lost messages',
      timeout: Duration.seconds(50),
    });
    this.ticker.grantTable(runsTable, ['GetItem', 'Query', 'PutItem', 'UpdateItem']);
    this.ticker.grantTable(jobsTable, ['GetItem', 'Query', 'PutItem', 'UpdateItem']);
    this.ticker.grantQueue(dispatchQueue, ['SendMessage']);
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

    applySecuritySettings(this, { httpApi: this.httpApi, functions: [this.api, this.worker, this.ticker, this.authorizer], metricsReader: this.api, logRetentionDays: config.logRetentionDays });

    // Dashboard and alarms (docs/operations.md#dashboard, #alarms).
    this.observability = new SchedulerObservability(this, 'Observability', {
      functions: { api: this.api.fn, worker: this.worker.fn, ticker: this.ticker.fn, authorizer: this.authorizer.fn },
      dispatchQueue,
      dispatchDlq,
      tables: { jobs: jobsTable, runs: runsTable },
      thresholds: config.alarms,
      alarmTopicArn: config.alarmTopicArn,
    });

    new CfnOutput(this, 'ApiUrl', { value: this.httpApi.apiEndpoint });
    new CfnOutput(this, 'JobsTableName', { value: jobsTable.tableName });
    new CfnOutput(this, 'DispatchDlqUrl', { value: dispatchDlq.queueUrl });
    new CfnOutput(this, 'DispatchQueueUrl', { value: dispatchQueue.queueUrl });
    new CfnOutput(this, 'DashboardUrl', { value: this.observability.dashboardUrl });
  }
}
