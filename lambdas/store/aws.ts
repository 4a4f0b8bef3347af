// AWS clients, built once per process. Every client honours AWS_ENDPOINT_URL, which is how the
// same code talks to moto or LocalStack on a laptop and to AWS in a deployment. The Lambda client
// that invokes lambda targets may point elsewhere (LAMBDA_ENDPOINT_URL), as moto cannot run
// functions without Docker and MiniStack can.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { KMSClient } from '@aws-sdk/client-kms';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SNSClient } from '@aws-sdk/client-sns';
import { S3Client } from '@aws-sdk/client-s3';
import type { TargetClients } from '../targets/invoker';
import { StoreRetryStrategy } from './store-retry';

export interface AwsClients {
  readonly dynamo: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  readonly cloudwatch: CloudWatchClient;
  /** Encrypts and decrypts the tenants' webhook signing secrets. */
  readonly kms: KMSClient;
  /** Reads the secrets HTTP target headers name (lambdas/targets/header-secrets.ts). */
  readonly secrets: SecretsManagerClient;
  /** The payload bucket's (lambdas/store/payload-store.ts). */
  readonly s3: S3Client;
  /** Clients of target calls: no SDK retries (a retried send or invoke would be a second call). */
  readonly targets: TargetClients;
}

/** Wraps each client as it is made: the functions pass X-Ray's instrumentation (lambdas/core/tracing.ts). */
export type ClientInstrument = <T>(client: T) => T;
const asIs: ClientInstrument = (client) => client;

export function createTargetClients(lambdaEndpoint = process.env.LAMBDA_ENDPOINT_URL, instrument: ClientInstrument = asIs): TargetClients {
  return {
    sqs: instrument(new SQSClient({ maxAttempts: 1 })),
    lambda: instrument(new LambdaClient({ maxAttempts: 1, ...(lambdaEndpoint ? { endpoint: lambdaEndpoint } : {}) })),
    eventbridge: instrument(new EventBridgeClient({ maxAttempts: 1 })),
    sns: instrument(new SNSClient({ maxAttempts: 1 })),
  };
}

/**
 * How long the store (DynamoDB, SQS, CloudWatch) may take before a request fails: connecting, and
 * the whole exchange, per attempt. Without them a stalled store held every API request, the
 * authorizer and the workers until the function's own timeout (issue 24). DynamoDB and SQS answer in
 * milliseconds; seconds of silence mean the store is not answering. A request that timed out is
 * not retried (it may have been applied: lambdas/store/store-retry.ts); one that never connected,
 * was throttled or met a server error is tried once more. The API answers 503 problem+json well
 * inside API Gateway's 30 s (decision 0037).
 */
export const STORE_TIMEOUTS = { connectionTimeoutMs: 1_000, requestTimeoutMs: 3_000, maxAttempts: 2 } as const;

/** The settings every store client shares; `requestTimeoutMs` may be raised for a slow emulator (STORE_REQUEST_TIMEOUT_MS). */
export function storeClientConfig(requestTimeoutMs = requestTimeoutFromEnv()) {
  return {
    retryStrategy: new StoreRetryStrategy(STORE_TIMEOUTS.maxAttempts),
    requestHandler: { connectionTimeout: STORE_TIMEOUTS.connectionTimeoutMs, requestTimeout: requestTimeoutMs, throwOnRequestTimeout: true },
  };
}

function requestTimeoutFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.STORE_REQUEST_TIMEOUT_MS;
  if (raw === undefined || raw === '') return STORE_TIMEOUTS.requestTimeoutMs;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 100) throw new Error(`STORE_REQUEST_TIMEOUT_MS must be a whole number of milliseconds of at least 100, got "${raw}"`);
  return value;
}

/** `endpoint` overrides AWS_ENDPOINT_URL (a test's own emulator); `instrument` wraps every client (X-Ray in the functions). */
export function createAwsClients(endpoint?: string, instrument: ClientInstrument = asIs): AwsClients {
  const config = { ...storeClientConfig(), ...(endpoint ? { endpoint } : {}) };
  const dynamo = DynamoDBDocumentClient.from(instrument(new DynamoDBClient(config)), {
    marshallOptions: { removeUndefinedValues: true },
  });
  return {
    dynamo,
    sqs: instrument(new SQSClient(config)),
    cloudwatch: instrument(new CloudWatchClient(config)),
    kms: instrument(new KMSClient(config)),
    secrets: instrument(new SecretsManagerClient(config)),
    // An emulator serves buckets by path (http://host:port/bucket/key), not by host name.
    s3: instrument(new S3Client({ ...config, forcePathStyle: Boolean(endpoint ?? process.env.AWS_ENDPOINT_URL) })),
    targets: createTargetClients(undefined, instrument),
  };
}
