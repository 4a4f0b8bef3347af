// The synthesized template: what each function may do, how the worker consumes the queue, how
// poison messages are parked, and how the ticker is driven.
import { Match } from 'aws-cdk-lib/assertions';
import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { synthesized } from './support/stacks';
import { dispatchQueue, workerConsumer } from '../../lambdas/store/schema';
import { DEFAULT_TUNING } from '../../lambdas/config/config';
import { DEFAULT_TENANT_LIMITS } from '../../lambdas/domain/tenant';
import { apiKeyKey } from '../../lambdas/store/keys';
import { defaultAlarmThresholds } from '../../lib/config';

type Resource = { Type: string; Properties: Record<string, any> };

let template: Template;
let resources: Record<string, Resource>;

beforeAll(() => {
  ({ template, resources } = synthesized('Test'));
});

function logicalIdOf(type: string, predicate: (r: Resource) => boolean): string {
  const found = Object.entries(resources).filter(([, r]) => r.Type === type && predicate(r));
  expect(found).toHaveLength(1);
  return found[0]![0];
}

function functionId(description: string): string {
  return logicalIdOf('AWS::Lambda::Function', (r) => String(r.Properties.Description).startsWith(description));
}

type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };

/** The statements of the policies attached to a function's role. */
function statementsOf(fnId: string, of: Record<string, Resource> = resources): Statement[] {
  const roleRef = of[fnId]!.Properties.Role['Fn::GetAtt'][0] as string;
  return Object.values(of)
    .filter((r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((role: { Ref: string }) => role.Ref === roleRef))
    .flatMap((r) => r.Properties.PolicyDocument.Statement as Statement[]);
}

/** Every action granted (allowed) to a function's role, with the logical ids its resources refer to. */
function grantsOf(fnId: string): Map<string, Set<string>> {
  const grants = new Map<string, Set<string>>();
  for (const statement of statementsOf(fnId).filter((candidate) => candidate.Effect === 'Allow')) {
    const actions = Array.isArray(statement.Action) ? statement.Action : [statement.Action];
    const refs = new Set<string>(
      JSON.stringify(statement.Resource)
        .match(/"(?:Ref|Fn::GetAtt)":\s*\[?"([A-Za-z0-9]+)"/g)
        ?.map((m) => m.replace(/.*"([A-Za-z0-9]+)"$/, '$1')) ?? [],
    );
    for (const action of actions) {
      const set = grants.get(action) ?? new Set<string>();
      refs.forEach((ref) => set.add(ref));
      grants.set(action, set);
    }
  }
  return grants;
}

/** The default pool's queues by construct id: Storage/Dispatch, Storage/DispatchHigh, Storage/DispatchLow, Storage/DispatchDlq. */
function queueIdMatching(pattern: RegExp, of: Record<string, Resource> = resources): string {
  const found = Object.entries(of).filter(([id, r]) => r.Type === 'AWS::SQS::Queue' && pattern.test(id));
  expect(found).toHaveLength(1);
  return found[0]![0];
}
const dispatchId = (of?: Record<string, Resource>) => queueIdMatching(/^StorageDispatch[0-9A-F]{8}$/, of);
const highId = (of?: Record<string, Resource>) => queueIdMatching(/^StorageDispatchHigh[0-9A-F]{8}$/, of);
const lowId = (of?: Record<string, Resource>) => queueIdMatching(/^StorageDispatchLow[0-9A-F]{8}$/, of);
const dlqIdOf = (of?: Record<string, Resource>) => queueIdMatching(/^StorageDispatchDlq[0-9A-F]{8}$/, of);

const tableId = (prefix: string) => logicalIdOf('AWS::DynamoDB::GlobalTable', (r) => JSON.stringify(r).includes(prefix) || false);

describe('storage', () => {
  it('has jobs and runs tables on demand, with point-in-time recovery, encryption and the indexes the design uses', () => {
    const tables = Object.values(resources).filter((r) => r.Type === 'AWS::DynamoDB::GlobalTable');
    expect(tables).toHaveLength(2);
    for (const table of tables) {
      expect(table.Properties.BillingMode).toBe('PAY_PER_REQUEST');
      expect(table.Properties.SSESpecification).toMatchObject({ SSEEnabled: true, SSEType: 'KMS' });
      expect(table.Properties.Replicas[0].PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
      expect(table.Properties.Replicas[0].DeletionProtectionEnabled).toBe(true);
      // The jobs table's short-lived items and the runs table's finished runs leave through TTL.
      expect(table.Properties.TimeToLiveSpecification).toEqual({ AttributeName: 'expiresAtEpoch', Enabled: true });
    }
    const indexNames = tables.flatMap((t) => (t.Properties.GlobalSecondaryIndexes as { IndexName: string }[]).map((i) => i.IndexName)).sort();
    expect(indexNames).toEqual([
      'byJobKeys',
      'byNextRun',
      'byTenantJobKeys',
      'byTenantKeys',
      'byTenantStatus',
      'claimable',
      'deadByTenant',
      'timeIndexStatusless',
    ]);
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      GlobalSecondaryIndexes: Match.arrayWith([
        Match.objectLike({
          IndexName: 'timeIndexStatusless',
          KeySchema: [
            { AttributeName: 'gateKey', KeyType: 'HASH' },
            { AttributeName: 'gateAt', KeyType: 'RANGE' },
          ],
          // Nothing a lease changes (decision 0171).
          Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: ['runId', 'tenantId', 'jobId', 'jobType', 'availableAt'] },
        }),
      ]),
    });
  });

  it('lists a tenant jobs through a keys-only index and keeps no run status in the time index, and keeps the indexes they replaced only for the first deploy of an upgrade (decisions 0165, 0171)', () => {
    const jobsIndexes = (of: Record<string, Resource>) =>
      Object.values(of)
        .filter((r) => r.Type === 'AWS::DynamoDB::GlobalTable' && JSON.stringify(r.Properties.KeySchema).includes('"sk"'))
        .flatMap((r) => r.Properties.GlobalSecondaryIndexes as { IndexName: string; Projection: { ProjectionType: string } }[])
        .filter(
          (index) => index.IndexName.startsWith('byTenant') && !['byTenantKeys', 'byTenantName', 'byTenantStatus', 'byTenantType'].includes(index.IndexName),
        );
    expect(jobsIndexes(resources)).toEqual([expect.objectContaining({ IndexName: 'byTenantJobKeys', Projection: { ProjectionType: 'KEYS_ONLY' } })]);
    // Upgrading: one index added by the first deploy, the old one dropped by the next.
    const upgrading = synthesized('Upgrading', { keepReplacedIndexes: true }).resources;
    expect(jobsIndexes(upgrading).map((index) => [index.IndexName, index.Projection.ProjectionType])).toEqual([
      ['byTenantJobKeys', 'KEYS_ONLY'],
      ['byTenant', 'ALL'],
    ]);
    const indexCount = (of: Record<string, Resource>) =>
      Object.values(of)
        .filter((r) => r.Type === 'AWS::DynamoDB::GlobalTable')
        .map((r) => (r.Properties.GlobalSecondaryIndexes as unknown[]).length);
    // Upgrading, the jobs table keeps byTenant, byTenantType (decision 0186) and byTenantName (decision
    // 0192) too, the runs table the time index with its status (decision 0171).
    expect(indexCount(resources)).toEqual([3, 5]);
    expect(indexCount(upgrading)).toEqual([6, 6]);
    const timeIndexes = (of: Record<string, Resource>) =>
      Object.values(of)
        .filter((r) => r.Type === 'AWS::DynamoDB::GlobalTable')
        .flatMap((r) => r.Properties.GlobalSecondaryIndexes as { IndexName: string; Projection: { NonKeyAttributes?: string[] } }[])
        .filter((index) => index.IndexName.startsWith('timeIndex'))
        .map((index) => [index.IndexName, index.Projection.NonKeyAttributes?.includes('status')]);
    expect(timeIndexes(resources)).toEqual([['timeIndexStatusless', false]]);
    expect(timeIndexes(upgrading)).toEqual([
      ['timeIndexStatusless', false],
      ['timeIndex', true],
    ]);
  });

  it("guards names the old way too while the stack keeps byTenantName, for an upgrade's first deploy (decision 0192)", () => {
    const legacyNameGuards = (of: Record<string, Resource>) => [
      ...new Set(
        Object.values(of)
          .filter((r) => r.Type === 'AWS::Lambda::Function' && String(r.Properties.Description).startsWith('Job scheduler'))
          .map((r) => r.Properties.Environment?.Variables?.LEGACY_NAME_GUARDS as string | undefined),
      ),
    ];
    expect(legacyNameGuards(resources)).toEqual(['false']);
    const first = synthesized('UpgradingNames', { keepReplacedIndexes: ['byTenantName'] }).resources;
    expect(legacyNameGuards(first)).toEqual(['true']);
    const jobsIndexes = Object.values(first)
      .filter((r) => r.Type === 'AWS::DynamoDB::GlobalTable')
      .flatMap((r) => (r.Properties.GlobalSecondaryIndexes as { IndexName: string }[]).map((index) => index.IndexName));
    expect(jobsIndexes).toContain('byTenantName');
    expect(legacyNameGuards(synthesized('UpgradingOtherIndex', { keepReplacedIndexes: ['byTenantType'] }).resources)).toEqual(['false']);
    expect(legacyNameGuards(synthesized('UpgradingAll', { keepReplacedIndexes: true }).resources)).toEqual(['true']);
    // The middle deploy: the functions off the index before the next deploy drops it.
    const middle = synthesized('UpgradingNamesMiddle', { keepReplacedIndexes: ['byTenantName'], legacyNameGuards: false }).resources;
    expect(legacyNameGuards(middle)).toEqual(['false']);
    expect(JSON.stringify(middle)).toContain('"IndexName":"byTenantName"');
    expect(() => synthesized('LegacyWithoutIndex', { legacyNameGuards: true })).toThrow('legacyNameGuards: true reads the byTenantName index');
  });

  it('keeps only the replaced indexes a list names, and refuses a name no release replaced (decision 0186)', () => {
    const names = (of: Record<string, Resource>) =>
      Object.values(of)
        .filter((r) => r.Type === 'AWS::DynamoDB::GlobalTable')
        .flatMap((r) => (r.Properties.GlobalSecondaryIndexes as { IndexName: string }[]).map((index) => index.IndexName));
    const base = names(resources);
    // The second deploy from a stack older than decision 0165: byTenant and timeIndex go, byTenantType stays one deploy more.
    const second = names(synthesized('UpgradingSecond', { keepReplacedIndexes: ['byTenantType'] }).resources);
    expect(second.filter((name) => !base.includes(name))).toEqual(['byTenantType']);
    expect(base.every((name) => second.includes(name))).toBe(true);
    expect(() => synthesized('Typo', { keepReplacedIndexes: ['byTenantTyp'] })).toThrow(
      'keepReplacedIndexes names byTenantTyp, which no release replaced; replaced indexes: byTenant, byTenantType, byTenantName, timeIndex',
    );
    // A config file's string where a list belongs.
    expect(() => synthesized('NotAList', { keepReplacedIndexes: 'byTenantType' as unknown as string[] })).toThrow(
      'keepReplacedIndexes: true, false or a list of index names',
    );
  });

  it('parks poison messages in an encrypted DLQ through a redrive policy', () => {
    const dlqId = dlqIdOf();
    template.hasResourceProperties('AWS::SQS::Queue', {
      VisibilityTimeout: dispatchQueue.visibilityTimeoutSeconds,
      MaximumMessageSize: 1024 * 1024,
      SqsManagedSseEnabled: true,
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] }, maxReceiveCount: dispatchQueue.maxReceiveCount },
    });
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
    });
  });
});

describe('functions', () => {
  it('run on Node 22 on arm64 with the configuration they read at start', () => {
    for (const description of ['Job scheduler HTTP API', 'Job scheduler worker', 'Job scheduler ticker']) {
      const fn = resources[functionId(description)]!.Properties;
      expect(fn.Runtime).toBe('nodejs22.x');
      expect(fn.Architectures).toEqual(['arm64']);
      expect(Object.keys(fn.Environment.Variables)).toEqual(
        expect.arrayContaining(['JOBS_TABLE', 'RUNS_TABLE', 'DISPATCH_QUEUE_URL', 'DISPATCH_DLQ_URL', 'SCHEDULER_MODE', 'TIME_INDEX_SHARDS']),
      );
      expect(fn.Environment.Variables.SCHEDULER_MODE).toBe('aws');
      expect(fn.Environment.Variables.RUN_RETENTION_DAYS).toBe('90');
    }
  });

  it('keep finished runs as long as the stack config says (runRetentionDays), and refuse a retention out of range at synth', () => {
    const kept = synthesized('Retention', { runRetentionDays: 7 }).resources;
    const workers = Object.values(kept).filter(
      (r) => r.Type === 'AWS::Lambda::Function' && String(r.Properties.Description).startsWith('Job scheduler worker'),
    );
    expect(workers.length).toBeGreaterThan(0);
    for (const worker of workers) expect(worker.Properties.Environment.Variables.RUN_RETENTION_DAYS).toBe('7');
    expect(() => synthesized('RetentionNegative', { runRetentionDays: -1 })).toThrow();
    expect(() => synthesized('RetentionTooLong', { runRetentionDays: 3651 })).toThrow();
  });

  it('give the worker a timeout that fits six times in the queue visibility timeout', () => {
    const worker = resources[functionId('Job scheduler worker')]!.Properties;
    expect(worker.Timeout).toBe(workerConsumer.functionTimeoutSeconds);
    expect(dispatchQueue.visibilityTimeoutSeconds).toBeGreaterThanOrEqual(6 * worker.Timeout);
  });
});

describe('least privilege', () => {
  const dynamoAndSqs = (grants: Map<string, Set<string>>) =>
    Object.fromEntries([...grants.entries()].filter(([action]) => /^(dynamodb|sqs):/.test(action)).map(([a, refs]) => [a, [...refs].sort()]));

  it('lets the API write jobs and runs and send dispatches, and nothing more', () => {
    const jobs = tableId('"AttributeName":"tenantSort"');
    const runs = tableId('"AttributeName":"gateKey"');
    const lanes = [dispatchId(), highId(), lowId()].sort();
    const dlq = dlqIdOf();
    expect(dynamoAndSqs(grantsOf(functionId('Job scheduler HTTP API')))).toEqual({
      'dynamodb:GetItem': [jobs, runs].sort(),
      'dynamodb:BatchGetItem': [jobs, runs].sort(),
      // The audit trail's entries (decision 0079).
      'dynamodb:BatchWriteItem': [jobs],
      'dynamodb:Query': [jobs, runs].sort(),
      'dynamodb:PutItem': [jobs, runs].sort(),
      // On runs: the run a refused create wrote ahead of its job (decision 0167).
      'dynamodb:DeleteItem': [jobs, runs].sort(),
      'dynamodb:UpdateItem': [jobs, runs].sort(),
      // A new backfill is not an ended one (decision 0182).
      'dynamodb:ConditionCheckItem': [jobs],
      'sqs:SendMessage': lanes,
      'sqs:GetQueueAttributes': [dlq, ...lanes].sort(),
    });
    const api = grantsOf(functionId('Job scheduler HTTP API'));
    // X-Ray: active tracing's segments (decision 0111).
    expect([...api.keys()].filter((action) => !/^(dynamodb|sqs|logs):/.test(action)).sort()).toEqual([
      'cloudwatch:GetMetricData',
      'kms:Encrypt',
      // Payloads stored apart (decision 0162), on the payload bucket only.
      's3:DeleteObject',
      's3:GetObject',
      's3:PutObject',
      's3:PutObjectTagging',
      'xray:PutTelemetryRecords',
      'xray:PutTraceSegments',
    ]);
    for (const action of ['s3:DeleteObject', 's3:GetObject', 's3:PutObject', 's3:PutObjectTagging']) {
      expect(
        [...api.get(action)!].map((id) => resources[id]!.Type),
        action,
      ).toEqual(['AWS::S3::Bucket']);
    }
    // Encrypt only, and only with the signing secrets' key: the API never decrypts a secret.
    expect([...api.get('kms:Encrypt')!].map((id) => resources[id]!.Type)).toEqual(['AWS::KMS::Key']);
  });

  it('lets the worker lease and record runs, move a job chain on, and consume the dispatch queue', () => {
    const jobs = tableId('"AttributeName":"tenantSort"');
    const runs = tableId('"AttributeName":"gateKey"');
    const lanes = [dispatchId(), highId(), lowId()].sort();
    expect(dynamoAndSqs(grantsOf(functionId('Job scheduler worker')))).toEqual({
      'dynamodb:UpdateItem': [jobs, runs].sort(),
      'dynamodb:GetItem': [jobs, runs].sort(),
      // Runs: in-flight slots; jobs: the runs of a batch share one read of their jobs.
      'dynamodb:BatchGetItem': [jobs, runs].sort(),
      'dynamodb:Query': [jobs],
      // Jobs: in-flight slots given back; runs: the chain's successor when the job's write lost to an edit (decision 0175).
      'dynamodb:DeleteItem': [jobs, runs].sort(),
      'dynamodb:PutItem': [jobs, runs].sort(),
      'sqs:SendMessage': lanes,
      'sqs:ReceiveMessage': lanes,
      'sqs:ChangeMessageVisibility': lanes,
      'sqs:GetQueueUrl': lanes,
      'sqs:DeleteMessage': lanes,
      'sqs:GetQueueAttributes': lanes,
    });
  });

  it('lets the ticker read the time index, update runs and its own state, and send dispatches', () => {
    const jobs = tableId('"AttributeName":"tenantSort"');
    const runs = tableId('"AttributeName":"gateKey"');
    expect(dynamoAndSqs(grantsOf(functionId('Job scheduler ticker')))).toEqual({
      'dynamodb:Query': [jobs, runs].sort(),
      'dynamodb:UpdateItem': [jobs, runs].sort(),
      'dynamodb:GetItem': [jobs, runs].sort(),
      // The priorities (lanes) of the runs it sends.
      'dynamodb:BatchGetItem': [runs],
      'dynamodb:PutItem': [jobs, runs].sort(),
      // An ended backfill leaves the partition of active ones (decision 0182).
      'dynamodb:DeleteItem': [jobs],
      'sqs:SendMessage': [dispatchId(), highId(), lowId()].sort(),
    });
  });

  it('gives the worker and the ticker no action beyond their tables, queues and logs when the deployment allows no AWS target', () => {
    for (const description of ['Job scheduler worker', 'Job scheduler ticker']) {
      const grants = grantsOf(functionId(description));
      // The worker decrypts the tenants' signing secrets with the stack's own key, and reads the
      // payloads stored apart in the stack's bucket and stores steps' results there, nothing else.
      const own = description === 'Job scheduler worker' ? ['kms:Decrypt', 's3:DeleteObject', 's3:GetObject', 's3:PutObject'] : [];
      expect([...grants.keys()].filter((action) => !/^(dynamodb|sqs):/.test(action)).sort(), description).toEqual(
        [...own, 'logs:CreateLogStream', 'logs:PutLogEvents', 'xray:PutTelemetryRecords', 'xray:PutTraceSegments'].sort(),
      );
      for (const action of own)
        expect(
          [...grants.get(action)!].map((id) => resources[id]!.Type),
          description,
        ).toEqual([action.startsWith('s3:') ? 'AWS::S3::Bucket' : 'AWS::KMS::Key']);
      // Logs only to the function's own log group.
      const logGroups = [...(grants.get('logs:PutLogEvents') ?? [])];
      expect(logGroups, description).toHaveLength(1);
      expect(resources[logGroups[0]!]!.Type).toBe('AWS::Logs::LogGroup');
    }
  });

  it('lets EventBridge Scheduler invoke the ticker, and nothing else', () => {
    const schedule = Object.values(resources).find((r) => r.Type === 'AWS::Scheduler::Schedule')!;
    const roleId = schedule.Properties.Target.RoleArn['Fn::GetAtt'][0] as string;
    const statements = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((role: { Ref: string }) => role.Ref === roleId))
      .flatMap((r) => r.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[]);
    expect(statements.flatMap((statement) => [statement.Action].flat())).toEqual(['lambda:InvokeFunction']);
    const ticker = functionId('Job scheduler ticker');
    // The ticker and its versions (`<arn>:*`), each resource naming the ticker function.
    const resourcesOf = statements.flatMap((statement) => [statement.Resource].flat());
    expect(resourcesOf).toHaveLength(2);
    for (const entry of resourcesOf) expect(JSON.stringify(entry)).toContain(`{"Fn::GetAtt":["${ticker}","Arn"]}`);
  });

  it('lets the authorizer read API keys and tenants, and nothing more', () => {
    const jobs = tableId('"AttributeName":"tenantSort"');
    const grants = grantsOf(functionId('Job scheduler API authorizer'));
    expect(dynamoAndSqs(grants)).toEqual({ 'dynamodb:GetItem': [jobs] });
    expect([...grants.keys()].filter((action) => !/^(dynamodb|sqs|logs):/.test(action)).sort()).toEqual(['xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
  });

  describe('API keys (`APIKEY#<hash>` in the jobs table): written by operators only, never by a function', () => {
    // The configuration of pools.test.ts, so the two share one synthesis: every pool's worker is checked.
    const POOLS = [
      { name: 'exports', jobTypes: ['export', 'archive'], maxConcurrency: 3, timeoutSeconds: 300 },
      { name: 'billing-fast', jobTypes: ['invoice'], maxConcurrency: 20, lowMaxConcurrency: 3, timeoutSeconds: 60, batchSize: 5 },
    ];
    const WRITES = ['dynamodb:BatchWriteItem', 'dynamodb:DeleteItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'];
    const denies = (fnId: string, of: Record<string, Resource>) =>
      statementsOf(fnId, of)
        .filter((statement) => statement.Effect === 'Deny')
        .map((statement) => ({ ...statement, Action: [statement.Action].flat().sort() }));
    const functionsOf = (of: Record<string, Resource>, description: RegExp) =>
      Object.entries(of).filter(([, r]) => r.Type === 'AWS::Lambda::Function' && description.test(String(r.Properties.Description)));

    it("denies the API, every pool's worker and the ticker any write to an APIKEY# partition, their transactions' writes included, and nothing else", () => {
      // The key layout the deny names.
      expect(apiKeyKey('0123abcd').pk).toBe('APIKEY#0123abcd');
      const pooled = synthesized('Pools', { pools: POOLS }).resources;
      const jobs = Object.entries(pooled).find(([, r]) => r.Type === 'AWS::DynamoDB::GlobalTable' && JSON.stringify(r).includes('"tenantSort"'))![0];
      const writers = functionsOf(pooled, /^Job scheduler (HTTP API|worker|pool worker|ticker)/);
      // The API, the default pool's worker and the two other pools' workers, the ticker.
      expect(writers).toHaveLength(5);
      for (const [id, r] of writers) {
        expect(denies(id, pooled), String(r.Properties.Description)).toEqual([
          {
            Effect: 'Deny',
            Action: WRITES,
            Resource: { 'Fn::GetAtt': [jobs, 'Arn'] },
            // Partition keys only: the tenant's partition (TENANT#), which the API writes, is not denied.
            Condition: { 'ForAnyValue:StringLike': { 'dynamodb:LeadingKeys': ['APIKEY#*'] } },
          },
        ]);
      }
    });

    it('lets the authorizer and the console write nothing to any table', () => {
      for (const description of [/^Job scheduler API authorizer/, /^Web console of the job scheduler/]) {
        const [[id]] = functionsOf(resources, description) as [[string, Resource]];
        const allowed = [...grantsOf(id).keys()];
        expect(
          allowed.filter((action) => action.startsWith('dynamodb:') && action !== 'dynamodb:GetItem'),
          String(description),
        ).toEqual([]);
        expect(
          WRITES.filter((action) => allowed.includes(action)),
          String(description),
        ).toEqual([]);
      }
    });
  });
});

describe('wiring', () => {
  it('feeds the worker from the dispatch queue and its high and low lanes with partial batch responses', () => {
    for (const queue of [dispatchId(), highId(), lowId()]) {
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: { 'Fn::GetAtt': [queue, 'Arn'] },
        FunctionName: { Ref: functionId('Job scheduler worker') },
        BatchSize: workerConsumer.batchSize,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
    }
  });

  it('drives the ticker every minute from EventBridge Scheduler, passing the scheduled time', () => {
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(1 minute)',
      FlexibleTimeWindow: { Mode: 'OFF' },
      Target: Match.objectLike({
        Arn: { 'Fn::GetAtt': [functionId('Job scheduler ticker'), 'Arn'] },
        Input: JSON.stringify({ scheduledTime: '<aws.scheduler.scheduled-time>' }),
        RetryPolicy: { MaximumEventAgeInSeconds: 60, MaximumRetryAttempts: 0 },
      }),
    });
  });

  it('puts the API key authorizer in front of every /v1 route, cached per Authorization header', () => {
    const authorizers = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::ApiGatewayV2::Authorizer');
    expect(authorizers).toHaveLength(1);
    const [authorizerId, authorizer] = authorizers[0]!;
    expect(authorizer.Properties).toMatchObject({
      AuthorizerType: 'REQUEST',
      AuthorizerPayloadFormatVersion: '2.0',
      EnableSimpleResponses: true,
      IdentitySource: ['$request.header.Authorization'],
      AuthorizerResultTtlInSeconds: 60,
    });
    expect(JSON.stringify(authorizer.Properties.AuthorizerUri)).toContain(functionId('Job scheduler API authorizer'));
    template.hasResourceProperties('AWS::ApiGatewayV2::Route', {
      RouteKey: 'ANY /v1/{proxy+}',
      AuthorizationType: 'CUSTOM',
      AuthorizerId: { Ref: authorizerId },
    });
  });

  it('serves the web console on GET /console and below it, without the authorizer, from a function with no grant but its logs', () => {
    const consoleFunction = functionId('Web console of the job scheduler');
    const integration = Object.entries(resources).find(
      ([, r]) => r.Type === 'AWS::ApiGatewayV2::Integration' && JSON.stringify(r.Properties.IntegrationUri).includes(consoleFunction),
    );
    expect(integration).toBeDefined();
    for (const routeKey of ['GET /console', 'HEAD /console', 'GET /console/{proxy+}', 'HEAD /console/{proxy+}']) {
      template.hasResourceProperties('AWS::ApiGatewayV2::Route', {
        RouteKey: routeKey,
        AuthorizationType: 'NONE',
        Target: { 'Fn::Join': ['', ['integrations/', { Ref: integration![0] }]] },
      });
    }
    const routes = Object.values(resources)
      .filter((r) => r.Type === 'AWS::ApiGatewayV2::Route')
      .map((r) => r.Properties.RouteKey as string);
    expect(routes.filter((key) => key.includes('console')).sort()).toEqual([
      'GET /console',
      'GET /console/{proxy+}',
      'HEAD /console',
      'HEAD /console/{proxy+}',
    ]);
    const role = resources[consoleFunction]!.Properties.Role['Fn::GetAtt'][0] as string;
    const policies = Object.values(resources).filter((r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties.Roles).includes(role));
    const actions = policies.flatMap((p) => p.Properties.PolicyDocument.Statement.flatMap((st: { Action: string | string[] }) => [st.Action].flat()));
    expect(actions.every((action) => action.startsWith('logs:') || action.startsWith('xray:Put'))).toBe(true);
    expect(template.toJSON().Outputs.ConsoleUrl).toBeDefined();
  });

  it('routes every /v1 path of the HTTP API to the API function', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: 'ANY /v1/{proxy+}' });
    template.hasResourceProperties('AWS::ApiGatewayV2::Integration', {
      IntegrationType: 'AWS_PROXY',
      IntegrationUri: { 'Fn::GetAtt': [functionId('Job scheduler HTTP API'), 'Arn'] },
      PayloadFormatVersion: '2.0',
    });
  });
});

describe('alarms', () => {
  it('alarms as soon as the dispatch DLQ holds a message, and notifies the topic given', () => {
    const withTopic = synthesized('WithTopic', { alarmTopicArn: 'arn:aws:sns:us-east-1:123456789012:ops' }).template;
    const dlq = Object.entries(withTopic.toJSON().Resources as Record<string, Resource>).find(
      ([, r]) => r.Type === 'AWS::SQS::Queue' && r.Properties.RedrivePolicy === undefined,
    )![0];
    withTopic.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Namespace: 'AWS/SQS',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [dlq, 'QueueName'] } }],
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 1,
      AlarmActions: ['arn:aws:sns:us-east-1:123456789012:ops'],
    });
  });
});

describe('the payload bucket (decision 0162)', () => {
  const buckets = () => Object.entries(resources).filter(([, r]) => r.Type === 'AWS::S3::Bucket');

  it('is one private, encrypted bucket, kept with the tables when the stack is deleted', () => {
    expect(buckets()).toHaveLength(1);
    const [, bucket] = buckets()[0]!;
    expect((bucket as { DeletionPolicy?: string }).DeletionPolicy).toBe('Retain');
    expect(bucket.Properties.BucketEncryption.ServerSideEncryptionConfiguration).toEqual([{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }]);
    expect(bucket.Properties.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    // TLS only: the bucket policy denies any request without it.
    const policy = Object.values(resources).find((r) => r.Type === 'AWS::S3::BucketPolicy')!;
    expect(policy.Properties.PolicyDocument.Statement).toContainEqual(
      expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
    );
  });

  it("expires superseded payloads after a day and triggers' payloads after twice the runs' retention and a day", () => {
    const [, bucket] = buckets()[0]!;
    const rules = bucket.Properties.LifecycleConfiguration.Rules as Record<string, unknown>[];
    expect(rules).toContainEqual(expect.objectContaining({ Id: 'superseded', TagFilters: [{ Key: 'superseded', Value: 'true' }], ExpirationInDays: 1 }));
    // RUN_RETENTION_DAYS defaults to 90.
    expect(rules).toContainEqual(expect.objectContaining({ Id: 'trigger-payloads', Prefix: 'runs/', ExpirationInDays: 181 }));
    // Nothing expires a job's payload: it lives as long as its job.
    expect(rules.filter((rule) => rule.Prefix === 'jobs/' || (rule.ExpirationInDays !== undefined && !rule.Prefix && !rule.TagFilters))).toEqual([]);
  });

  it('is named to every function that stores or reads payloads', () => {
    const [bucketId] = buckets()[0]!;
    for (const description of ['Job scheduler HTTP API', 'Job scheduler worker']) {
      expect(resources[functionId(description)]!.Properties.Environment.Variables.PAYLOAD_BUCKET, description).toEqual({ Ref: bucketId });
    }
  });
});

describe('a stack config the functions or the stack cannot honour', () => {
  const refused = (name: string, config: Parameters<typeof synthesized>[1], message: RegExp): void => {
    expect(() => synthesized(name, config), name).toThrow(message);
  };

  it('fails the synth, naming the field, where every function would fail at start', () => {
    refused('NearHorizon', { tuning: { ...DEFAULT_TUNING, nearHorizonSeconds: 1200 } }, /tuning\.nearHorizonSeconds: Too big/);
    refused('TickerHorizonZero', { tuning: { ...DEFAULT_TUNING, tickerHorizonSeconds: 0 } }, /tuning\.tickerHorizonSeconds: at least 120/);
    refused('TickerHorizonHuge', { tuning: { ...DEFAULT_TUNING, tickerHorizonSeconds: 100_000_000 } }, /tuning\.tickerHorizonSeconds: Too big/);
    refused('RetryPastVisibility', { tuning: { ...DEFAULT_TUNING, failedMessageRetrySeconds: 100_000 } }, /tuning\.failedMessageRetrySeconds/);
    refused('UnknownTunable', { tuning: { ...DEFAULT_TUNING, ...({ nearHorizon: 5 } as object) } }, /tuning\.nearHorizon: not a tunable/);
    refused('TenantDefaults', { tenantDefaults: { ...DEFAULT_TENANT_LIMITS, maxActiveJobs: -1 } }, /tenantDefaults: maxActiveJobs/);
  });

  it('fails the synth where the stack would not do what its config says', () => {
    refused('LowAboveMax', { workerMaxConcurrency: 4, workerLowMaxConcurrency: 100 }, /workerLowMaxConcurrency: at most workerMaxConcurrency/);
    refused('LogRetention', { logRetentionDays: 45 }, /logRetentionDays: one of CloudWatch Logs' periods \(1, 3, 5, 7, 14, 30/);
    refused('NegativeThreshold', { alarms: { ...defaultAlarmThresholds, startLagP99Ms: -5 } }, /alarms\.startLagP99Ms: a number, 0 or more/);
    // Before, these synthesized: the functions then refused ALLOW_PRIVATE_TARGETS at start, the
    // misspelled key left its default in place, and the alarm could never stop firing.
    refused('FlagAsText', { ...({ allowPrivateTargets: 'yes' } as object) }, /allowPrivateTargets: true or false/);
    refused('LegacyAsText', { ...({ legacyNameGuards: 'yes' } as object) }, /legacyNameGuards: true or false/);
    refused('MisspelledKey', { ...({ alarm: { deadRunsThreshold: 5 } } as object) }, /alarm: not a field of the stack config/);
    refused('TicksAboveFive', { alarms: { ...defaultAlarmThresholds, minTicksPerFiveMinutes: 6 } }, /alarms\.minTicksPerFiveMinutes: at most 5/);
    // What it takes is left as it was.
    expect(() => synthesized('Fine', { tuning: { ...DEFAULT_TUNING, tickerHorizonSeconds: 120 }, logRetentionDays: 14 })).not.toThrow();
  });

  it("leaves the ticker's missed or failed ticks to the next tick: no asynchronous retries", () => {
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: functionId('Job scheduler ticker') },
      MaximumRetryAttempts: 0,
      MaximumEventAgeInSeconds: 60,
    });
  });
});
