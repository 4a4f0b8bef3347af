// Security settings of the stack that cut across its constructs: access logs for the HTTP API, and
// the cdk-nag findings that are accepted, each with its reason (test/cdk/nag.test.ts runs the
// AwsSolutions pack; a finding without a suppression here fails it).
import { RemovalPolicy } from 'aws-cdk-lib';
import type { Stack } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import type { CfnStage } from 'aws-cdk-lib/aws-apigatewayv2';
import * as logs from 'aws-cdk-lib/aws-logs';
import { NagSuppressions } from 'cdk-nag';
import type { SchedulerFunction } from './scheduler-function';

/**
 * What an access log line holds: who called what and how it went. No header, query string or
 * body, so API keys, cursors and payloads never reach the access log.
 */
export const ACCESS_LOG_FORMAT = JSON.stringify({
  requestId: '$context.requestId',
  ip: '$context.identity.sourceIp',
  requestTime: '$context.requestTime',
  method: '$context.httpMethod',
  path: '$context.path',
  routeKey: '$context.routeKey',
  status: '$context.status',
  protocol: '$context.protocol',
  responseLength: '$context.responseLength',
  integrationLatency: '$context.integrationLatency',
  integrationError: '$context.integrationErrorMessage',
});

export interface SecurityProps {
  readonly httpApi: HttpApi;
  readonly functions: readonly SchedulerFunction[];
  /** The function that reads CloudWatch metrics for the health endpoint. */
  readonly metricsReader: SchedulerFunction;
  readonly logRetentionDays: number;
}

export function applySecuritySettings(stack: Stack, props: SecurityProps): void {
  // Kept when the stack is deleted, as the tables are: it is the record of who called the API. It
  // keeps its retention, so its lines still expire. The functions' own log groups go with them:
  // diagnostics, each tied to its function, and every tenant's change is in the audit trail.
  const accessLogs = new logs.LogGroup(stack, 'ApiAccessLogs', {
    retention: props.logRetentionDays as logs.RetentionDays,
    removalPolicy: RemovalPolicy.RETAIN,
  });
  const stage = props.httpApi.defaultStage?.node.defaultChild as CfnStage | undefined;
  if (!stage) throw new Error('the HTTP API has no default stage to log');
  stage.accessLogSettings = { destinationArn: accessLogs.logGroupArn, format: ACCESS_LOG_FORMAT };

  for (const fn of props.functions) {
    NagSuppressions.addResourceSuppressions(
      fn,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'Grants on a table extend to its global secondary indexes (table ARN + /index/*): the queries of the jobs and runs listings, the time index and the dead-run index. No other wildcard is granted.',
          appliesTo: [{ regex: '/^Resource::<.+\\.Arn>\\/index\\/\\*$/g' }],
        },
        {
          id: 'AwsSolutions-IAM5',
          reason:
            "The payload bucket's objects under one prefix (bucket ARN + /jobs/* or /runs/*): a payload is an object per write, named at run time (decision 0162); each function gets only the object actions it uses.",
          appliesTo: [{ regex: '/^Resource::<StoragePayloads.+\\.Arn>\\/(jobs|runs)\\/\\*$/g' }],
        },
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'A lambda target allowed by the stack property targets.lambdaFunctionArns may be invoked at any version or alias (function ARN + :*), as a job may name a qualified ARN; no other function is granted.',
          appliesTo: [{ regex: '/^Resource::arn:aws[a-z-]*:lambda:[a-z0-9-]+:\\d{12}:function:[A-Za-z0-9_-]+:\\*$/g' }],
        },
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'X-Ray active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords have no resource-level permissions (their resource must be *); the CDK grants them with Tracing.ACTIVE.',
          appliesTo: ['Resource::*'],
        },
        {
          id: 'AwsSolutions-L1',
          reason:
            'The runtime is pinned (Node.js 22, matching the esbuild target) and moved deliberately with the code; a "latest" runtime would change under a deployed stack.',
        },
      ],
      true,
    );
  }
  NagSuppressions.addResourceSuppressions(
    props.metricsReader,
    [
      {
        id: 'AwsSolutions-IAM5',
        reason:
          'cloudwatch:GetMetricData has no resource-level permissions (its resource must be *); the health endpoint reads the AWS/SQS oldest-message age with it.',
        appliesTo: ['Resource::*'],
      },
    ],
    true,
  );
  // EventBridge Scheduler's role for the ticker target, made by the LambdaInvoke target.
  for (const child of stack.node.findAll()) {
    if (/^SchedulerRoleForTarget/.test(child.node.id)) {
      NagSuppressions.addResourceSuppressions(
        child,
        [
          {
            id: 'AwsSolutions-IAM5',
            reason:
              "EventBridge Scheduler's role may invoke the ticker function and its versions (function ARN + :*), as the CDK LambdaInvoke target grants; nothing else.",
            appliesTo: [{ regex: '/^Resource::<Ticker.+\\.Arn>:\\*$/g' }],
          },
        ],
        true,
      );
    }
  }
}
