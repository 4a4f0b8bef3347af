// AWS clients, built once per process. Every client honours AWS_ENDPOINT_URL, which is how the
// same code talks to moto or LocalStack on a laptop and to AWS in a deployment. The Lambda client
// that invokes lambda targets may point elsewhere (LAMBDA_ENDPOINT_URL), as moto cannot run
// functions without Docker and MiniStack can.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { LambdaClient } from '@aws-sdk/client-lambda';
import type { TargetClients } from '../targets/invoker';

export interface AwsClients {
  readonly dynamo: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  readonly cloudwatch: CloudWatchClient;
  /** Clients of target calls: no SDK retries (a retried send or invoke would be a second call). */
  readonly targets: TargetClients;
}

export function createTargetClients(lambdaEndpoint = process.env.LAMBDA_ENDPOINT_URL): TargetClients {
  return {
    sqs: new SQSClient({ maxAttempts: 1 }),
    lambda: new LambdaClient({ maxAttempts: 1, ...(lambdaEndpoint ? { endpoint: lambdaEndpoint } : {}) }),
    eventbridge: new EventBridgeClient({ maxAttempts: 1 }),
  };
}

export function createAwsClients(): AwsClients {
  const dynamo = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
    marshallOptions: { removeUndefinedValues: true },
  });
  return { dynamo, sqs: new SQSClient({}), cloudwatch: new CloudWatchClient({}), targets: createTargetClients() };
}
