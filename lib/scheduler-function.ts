// One construct holds the defaults of every function of the scheduler (runtime, architecture,
// bundling, logs), and the grant helpers that give a function exactly the actions it uses.
import { RemovalPolicy } from 'aws-cdk-lib';
import type { Duration } from 'aws-cdk-lib';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import type { DeploymentTargets } from '../lambdas/domain/target-allowlist';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface SchedulerFunctionProps {
  /** Folder under lambdas/ whose handler.ts is the entry point. */
  readonly entry: 'api' | 'worker' | 'ticker' | 'authorizer' | 'console';
  readonly description: string;
  readonly timeout: Duration;
  readonly memorySize?: number;
  readonly environment: Record<string, string>;
  readonly logRetentionDays: number;
  /** The network the function runs in (workers only: to reach private targets). */
  readonly network?: WorkerNetwork;
  /**
   * A PEM file of extra CA certificates, copied into the bundle and named by NODE_EXTRA_CA_CERTS,
   * which Node reads at start: targets whose certificates a private CA signed are trusted too.
   */
  readonly extraCaBundle?: string;
  /** Shell commands that add files to the bundle once esbuild has written it into `outputDir`. */
  readonly addToBundle?: (outputDir: string) => string[];
}

/** The VPC, subnets and security groups of the worker functions. */
export interface WorkerNetwork {
  readonly vpc: ec2.IVpc;
  /** Default: the VPC's private subnets (with egress). */
  readonly subnets?: ec2.SubnetSelection;
  /** Default: a new security group that allows all outbound traffic. */
  readonly securityGroups?: readonly ec2.ISecurityGroup[];
}

/** Where the extra CA bundle lands in a function's code (/var/task is the code's root in Lambda). */
export const EXTRA_CA_BUNDLE_FILE = 'extra-ca-certificates.pem';

/** `Query` queries the table itself, `QueryIndexes` its secondary indexes (dynamodb:Query on `<table>/index/*`). */
export type DynamoAction =
  'GetItem' | 'BatchGetItem' | 'BatchWriteItem' | 'Query' | 'QueryIndexes' | 'PutItem' | 'UpdateItem' | 'DeleteItem' | 'ConditionCheckItem';
/** The item writes `denyItemWrites` refuses (a transaction's writes are authorized as the first three). */
export const ITEM_WRITE_ACTIONS = ['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem'] as const satisfies readonly DynamoAction[];
export type SqsAction = 'SendMessage' | 'GetQueueAttributes';
export type PayloadAction = 'PutObject' | 'GetObject' | 'PutObjectTagging' | 'DeleteObject';

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
    const caBundle = props.extraCaBundle === undefined ? undefined : path.resolve(props.extraCaBundle);
    if (caBundle !== undefined && !existsSync(caBundle)) throw new Error(`extraCaBundle: no file ${caBundle}`);
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
      // X-Ray active tracing (CDK grants xray:PutTraceSegments and xray:PutTelemetryRecords); the
      // code traces through Powertools Tracer (lambdas/core/tracing.ts, decision 0111).
      tracing: lambda.Tracing.ACTIVE,
      environment: {
        ...props.environment,
        NODE_OPTIONS: '--enable-source-maps',
        POWERTOOLS_SERVICE_NAME: 'job-scheduler',
        // Responses carry payloads: never X-Ray metadata.
        POWERTOOLS_TRACER_CAPTURE_RESPONSE: 'false',
        ...(caBundle ? { NODE_EXTRA_CA_CERTS: `/var/task/${EXTRA_CA_BUNDLE_FILE}` } : {}),
      },
      ...(props.network
        ? {
            vpc: props.network.vpc,
            vpcSubnets: props.network.subnets,
            securityGroups: props.network.securityGroups ? [...props.network.securityGroups] : undefined,
          }
        : {}),
      depsLockFilePath: path.join(root, 'package-lock.json'),
      projectRoot: root,
      bundling: {
        format: OutputFormat.CJS,
        target: 'node22',
        minify: true,
        sourceMap: true,
        // Bundle the AWS SDK too: a pinned SDK, and faster cold starts than the runtime's copy.
        externalModules: [],
        ...(caBundle || props.addToBundle
          ? {
              commandHooks: {
                beforeBundling: () => [],
                beforeInstall: () => [],
                afterBundling: (_inputDir: string, outputDir: string) => [
                  ...(caBundle ? [`cp "${caBundle}" "${outputDir}/${EXTRA_CA_BUNDLE_FILE}"`] : []),
                  ...(props.addToBundle?.(outputDir) ?? []),
                ],
              },
            }
          : {}),
      },
    });
  }

  /** Grants exactly `actions` on the table, and Query on its indexes with `QueryIndexes`. */
  grantTable(table: ITableV2, actions: readonly DynamoAction[]): void {
    const onTable = actions.filter((action) => action !== 'QueryIndexes');
    if (onTable.length > 0)
      this.fn.addToRolePolicy(new iam.PolicyStatement({ actions: onTable.map((action) => `dynamodb:${action}`), resources: [table.tableArn] }));
    if (actions.includes('QueryIndexes')) {
      this.fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['dynamodb:Query'], resources: [`${table.tableArn}/index/*`] }));
    }
  }

  /**
   * Denies writes (PutItem, UpdateItem, DeleteItem, BatchWriteItem) to the items of `table` whose
   * partition key starts with `partitionPrefix`, whatever this role's grants allow. A transaction
   * (TransactWriteItems) is authorized as its Put, Update and Delete actions, each as PutItem,
   * UpdateItem and DeleteItem on its own key, so the deny covers those too. `dynamodb:LeadingKeys`
   * holds partition keys only: a deny cannot single out sort keys within a partition the role writes.
   */
  denyItemWrites(table: ITableV2, partitionPrefix: string): void {
    this.fn.addToRolePolicy(
      new iam.PolicyStatement({
        effect: iam.Effect.DENY,
        actions: ITEM_WRITE_ACTIONS.map((action) => `dynamodb:${action}`),
        resources: [table.tableArn],
        conditions: { 'ForAnyValue:StringLike': { 'dynamodb:LeadingKeys': [`${partitionPrefix}*`] } },
      }),
    );
  }

  grantQueue(queue: IQueue, actions: readonly SqsAction[]): void {
    this.fn.addToRolePolicy(new iam.PolicyStatement({ actions: actions.map((action) => `sqs:${action}`), resources: [queue.queueArn] }));
  }

  /**
   * The AWS targets a deployment allows, and nothing else: invoke the listed functions (any version
   * or alias of each), send to the listed queues, put events on the listed buses, publish to the
   * listed topics (outcome notifications), and use the listed KMS keys of encrypted queues, buses and topics for what a send needs (a data key, and its decryption).
   */
  grantTargets(targets: DeploymentTargets): void {
    if (targets.lambdaFunctionArns.length > 0) {
      this.fn.addToRolePolicy(
        new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: targets.lambdaFunctionArns.flatMap((arn) => [arn, `${arn}:*`]) }),
      );
    }
    if (targets.sqsQueueArns.length > 0)
      this.fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: [...targets.sqsQueueArns] }));
    if (targets.eventBusArns.length > 0)
      this.fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['events:PutEvents'], resources: [...targets.eventBusArns] }));
    // Outcome notifications' topics (a job's notify; no target publishes to SNS).
    if (targets.snsTopicArns.length > 0) this.fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['sns:Publish'], resources: [...targets.snsTopicArns] }));
    if (targets.kmsKeyArns.length > 0) {
      this.fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['kms:GenerateDataKey', 'kms:Decrypt'], resources: [...targets.kmsKeyArns] }));
    }
  }

  /**
   * GetSecretValue on the listed secrets: the values of HTTP target headers that name one. A secret
   * encrypted with a customer-managed KMS key also needs kms:Decrypt on that key for this role (in
   * the key's policy; docs/operations.md#header-secrets).
   */
  grantSecretReads(secretArns: readonly string[]): void {
    if (secretArns.length === 0) return;
    this.fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [...secretArns] }));
  }

  /** Exactly `actions` on the payload bucket's objects under `prefix` (`jobs/`, `runs/`). */
  grantPayloads(bucket: IBucket, prefix: string, actions: readonly PayloadAction[]): void {
    this.fn.addToRolePolicy(new iam.PolicyStatement({ actions: actions.map((action) => `s3:${action}`), resources: [bucket.arnForObjects(`${prefix}*`)] }));
  }

  /** GetMetricData reads, for the health endpoint; CloudWatch does not scope this action to resources. */
  grantMetricReads(): void {
    this.fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['cloudwatch:GetMetricData'], resources: ['*'] }));
  }
}
