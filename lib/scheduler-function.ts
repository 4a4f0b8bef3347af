// One construct holds the defaults of every function of the scheduler (runtime, architecture,
// bundling, logs), and the grant helpers that give a function exactly the actions it uses.
import { RemovalPolicy } from 'aws-cdk-lib';
import type { Duration } from 'aws-cdk-lib';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import type { DeploymentTargets } from '../lambdas/domain/target-allowlist';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface SchedulerFunctionProps {
  /** Folder under lambdas/ whose handler.ts is the entry point. */
  readonly entry: 'api' | 'worker' | 'ticker' | 'authorizer';
  readonly description: string;
  readonly timeout: Duration;
  readonly memorySize?: number;
  readonly environment: Record<string, string>;
  readonly logRetentionDays: number;
}

/** `Query` queries the table itself, `QueryIndexes` its secondary indexes (dynamodb:Query on `<table>/index/*`). */
export type DynamoAction = 'GetItem' | 'BatchGetItem' | 'Query' | 'QueryIndexes' | 'PutItem' | 'UpdateItem' | 'DeleteItem' | 'ConditionCheckItem';
export type SqsAction = 'SendMessage' | 'GetQueueAttributes';

export class SchedulerFunction extends Construct {
  readonly fn: NodejsFunction;

  constructor(scope: Construct, id: string, props: SchedulerFunctionProps) {
    super(scope, id);
    const logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetentionDays as logs.RetentionDays,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // Its own role with write access to its own log group only, instead of the managed
    // AWSLambdaBasicExecutionRole, whose logs:* grant covers every log group of the account.
    const role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role of: ${props.description}`,
    });
    logGroup.grantWrite(role);
    this.fn = new NodejsFunction(this, 'Function', {
      role,
      entry: path.join(root, 'lambdas', props.entry, 'handler.ts'),
      handler: 'handler',
      description: props.description,
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout,
      logGroup,
      loggingFormat: lambda.LoggingFormat.JSON,
      environment: { ...props.environment, NODE_OPTIONS: '--enable-source-maps', POWERTOOLS_SERVICE_NAME: 'job-scheduler' },
      depsLockFilePath: path.join(root, 'package-lock.json'),
      projectRoot: root,
      bundling: {
        format: OutputFormat.CJS,
        target: 'node22',
        minify: true,
        sourceMap: true,
        // Bundle the AWS SDK too: a pinned SDK, and faster cold starts than the runtime's copy.
        externalModules: [],
      },
    });
  }

  /** Grants exactly `actions` on the table, and Query on its indexes with `QueryIndexes`. */
  grantTable(table: ITableV2, actions: readonly DynamoAction[]): void {
    const onTable = actions.filter((action) => action !== 'QueryIndexes');
    if (onTable.length > 0) this.fn.addToRolePolicy(new iam.PolicyStatement({ actions: onTable.map((action) => `dynamodb:${action}`), resources: [table.tableArn] }));
    if (actions.includes('QueryIndexes')) {
      this.fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['dynamodb:Query'], resources: [`${table.tableArn}/index/*`] }));
    }
  }

  grantQueue(queue: IQueue, actions: readonly SqsAction[]): void {
    this.fn.addToRolePolicy(new iam.PolicyStatement({ actions: actions.map((action) => `sqs:${action}`), resources: [queue.queueArn] }));
  }

  /**
   * The AWS targets a deployment allows, and nothing else: invoke the listed functions (any version
   * or alias of each), send to the listed queues, put events on the listed buses, and use the listed
   * KMS keys of encrypted queues and buses for what a send needs (a data key, and its decryption).
   */
  grantTargets(targets: DeploymentTargets): void {
    if (targets.lambdaFunctionArns.length > 0) {
      this.fn.addToRolePolicy(
        new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: targets.lambdaFunctionArns.flatMap((arn) => [arn, `${arn}:*`]) }),
      );
    }
    if (targets.sqsQueueArns.length > 0) this.fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: [...targets.sqsQueueArns] }));
    if (targets.eventBusArns.length > 0) this.fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['events:PutEvents'], resources: [...targets.eventBusArns] }));
    if (targets.kmsKeyArns.length > 0) {
      this.fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['kms:GenerateDataKey', 'kms:Decrypt'], resources: [...targets.kmsKeyArns] }));
    }
  }

  /** GetMetricData reads, for the health endpoint; CloudWatch does not scope this action to resources. */
  grantMetricReads(): void {
    this.fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['cloudwatch:GetMetricData'], resources: ['*'] }));
  }
}
