// AWS clients, built once per process. Every client honours AWS_ENDPOINT_URL, which is how the
// same code talks to moto or LocalStack on a laptop and to AWS in a deployment.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';

export interface AwsClients {
  readonly dynamo: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  readonly cloudwatch: CloudWatchClient;
}

export function createAwsClients(): AwsClients {
  const dynamo = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
    marshallOptions: { removeUndefinedValues: true },
  });
  return { dynamo, sqs: new SQSClient({}), cloudwatch: new CloudWatchClient({}) };
}
