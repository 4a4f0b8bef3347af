// The stack grants each function every AWS request the integration suite saw it make, and nothing
// no request used beyond the grants listed below with their reason. moto enforces no IAM, so
// without this a missing grant would first show as AccessDenied in a deployment. Runs after the
// integration project (vitest.config.ts: sequence.groupOrder), reading what its files recorded.
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { SchedulerStack } from '../../lib/scheduler-stack';
import type { Access } from '../support/access-log';
import { dynamoAccesses, otherAccess, readAccessLog } from '../support/access-log';
import type { GrantCheck } from '../support/grants';
import { CHECK_POOLS, checkGrants } from '../support/grants';

/** A header secret the stack lists, so that the workers have the grant their reads of listed secrets need. */
const CHECK_SECRET = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:check/header-AbC123';

/**
 * Grants no request of the suite used, each with why the function has it. The worker's queue
 * actions other than SendMessage and ChangeMessageVisibility are the event source mapping's, which
 * uses the function's role to receive and delete; locally the runtime's pollers do that part.
 */
const GRANTED_BUT_NOT_SEEN: Record<string, string> = {
  'worker:default sqs:ReceiveMessage queue:default/standard': 'event source mapping',
  'worker:default sqs:ReceiveMessage queue:default/high': 'event source mapping',
  'worker:default sqs:ReceiveMessage queue:default/low': 'event source mapping',
  'worker:default sqs:DeleteMessage queue:default/standard': 'event source mapping',
  'worker:default sqs:DeleteMessage queue:default/high': 'event source mapping',
  'worker:default sqs:DeleteMessage queue:default/low': 'event source mapping',
  'worker:default sqs:GetQueueAttributes queue:default/standard': 'event source mapping',
  'worker:default sqs:GetQueueAttributes queue:default/high': 'event source mapping',
  'worker:default sqs:GetQueueAttributes queue:default/low': 'event source mapping',
  'worker:default sqs:GetQueueUrl queue:default/standard': 'event source mapping',
  'worker:default sqs:GetQueueUrl queue:default/high': 'event source mapping',
  'worker:default sqs:GetQueueUrl queue:default/low': 'event source mapping',
  'worker:own sqs:ReceiveMessage queue:own/standard': 'event source mapping',
  'worker:own sqs:ReceiveMessage queue:own/high': 'event source mapping',
  'worker:own sqs:ReceiveMessage queue:own/low': 'event source mapping',
  'worker:own sqs:DeleteMessage queue:own/standard': 'event source mapping',
  'worker:own sqs:DeleteMessage queue:own/high': 'event source mapping',
  'worker:own sqs:DeleteMessage queue:own/low': 'event source mapping',
  'worker:own sqs:GetQueueAttributes queue:own/standard': 'event source mapping',
  'worker:own sqs:GetQueueAttributes queue:own/high': 'event source mapping',
  'worker:own sqs:GetQueueAttributes queue:own/low': 'event source mapping',
  'worker:own sqs:GetQueueUrl queue:own/standard': 'event source mapping',
  'worker:own sqs:GetQueueUrl queue:own/high': 'event source mapping',
  'worker:own sqs:GetQueueUrl queue:own/low': 'event source mapping',
  // A PATCH may move a recurring job to another type or priority: the occurrences its worker plans
  // after that go to the job's new pool and lane (decision 0050). No test waits for a cron minute
  // after such a PATCH.
  // A trigger's payload stored apart whose run was not written (another trigger at the same instant).
  'api s3:DeleteObject bucket:payloads/runs': "trigger's run not written",
  'worker:default sqs:SendMessage queue:own/standard': 'next occurrence of a job moved to another pool',
  'worker:default sqs:SendMessage queue:own/high': 'next occurrence of a job moved to another pool',
  'worker:default sqs:SendMessage queue:own/low': 'next occurrence of a job moved to another pool',
  'worker:own sqs:SendMessage queue:default/standard': 'next occurrence of a job moved to another pool',
  'worker:own sqs:SendMessage queue:default/high': 'next occurrence of a job moved to another pool',
  'worker:own sqs:SendMessage queue:default/low': 'next occurrence of a job moved to another pool',
  'worker:own sqs:SendMessage queue:other/standard': 'next occurrence of a job moved to another pool',
  'worker:own sqs:SendMessage queue:other/high': 'next occurrence of a job moved to another pool',
  'worker:own sqs:SendMessage queue:other/low': 'next occurrence of a job moved to another pool',
  // The chain's successor, deleted when the job's write then lost to an edit (decision 0175): the
  // suite races an edit against the default pool's worker only.
  'worker:own dynamodb:DeleteItem table:runs': "successor deleted after the job's write lost",
};

let check: GrantCheck;
let accesses: Access[];
let template: Record<string, { Type: string; Properties: Record<string, any> }>;

beforeAll(() => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new SchedulerStack(app, 'Grants', {
    env: { account: '123456789012', region: 'us-east-1' },
    config: { pools: CHECK_POOLS, headerSecretArns: [CHECK_SECRET] },
  });
  template = Template.fromStack(stack).toJSON().Resources as typeof template;
  accesses = readAccessLog();
  check = checkGrants(accesses, template);
});

describe('grants against what the functions did in the integration suite', () => {
  it("has the integration suite's requests to check", () => {
    // Empty when the integration project did not run first: `npm test` and `vitest run` run both.
    expect(accesses.length, 'no recorded requests: run the integration project before this one (vitest run)').toBeGreaterThan(0);
    const roles = new Set(accesses.map((access) => access.role.replace(/^worker:(?!default$).*/, 'worker:<pool>')));
    expect([...roles].sort()).toEqual(['api', 'authorizer', 'ticker', 'worker:<pool>', 'worker:default']);
  });

  it("finds every request's resource in the stack", () => {
    expect(check.unknown).toEqual([]);
  });

  it('finds a grant for every request each function made', () => {
    expect(check.missing).toEqual([]);
  });

  it('gives no function a grant that no request used, but for those listed with their reason', () => {
    expect(check.unused.filter((grant) => !(grant in GRANTED_BUT_NOT_SEEN))).toEqual([]);
    // The list names grants the stack gives, so that it does not outlive them.
    expect(Object.keys(GRANTED_BUT_NOT_SEEN).filter((grant) => !check.granted.includes(grant))).toEqual([]);
  });
});

describe('the check itself', () => {
  it('reports a request the function has no grant for, and a resource the stack lacks', () => {
    const fabricated: Access[] = [
      // The bug this check was written for: a batch read of jobs by a worker without the grant.
      { role: 'authorizer', action: 'dynamodb:BatchGetItem', resource: 'table:it-1-jobs' },
      { role: 'worker:exports', action: 'sqs:ChangeMessageVisibility', resource: 'queue:it-1-pool-billing-low' },
      { role: 'api', action: 'sqs:SendMessage', resource: 'queue:it-1-somewhere-else' },
    ];
    const result = checkGrants(fabricated, template);
    expect(result.missing).toEqual(['authorizer dynamodb:BatchGetItem table:jobs', 'worker:own sqs:ChangeMessageVisibility queue:other/low']);
    expect(result.unknown).toEqual(['api sqs:SendMessage queue:it-1-somewhere-else']);
  });

  it('authorizes batches and transactions as the actions they contain', () => {
    expect(
      dynamoAccesses('api', 'TransactWriteItems', {
        TransactItems: [{ Put: { TableName: 'j' } }, { ConditionCheck: { TableName: 'r' } }, { Update: { TableName: 'j' } }],
      }),
    ).toEqual([
      { role: 'api', action: 'dynamodb:PutItem', resource: 'table:j' },
      { role: 'api', action: 'dynamodb:ConditionCheckItem', resource: 'table:r' },
      { role: 'api', action: 'dynamodb:UpdateItem', resource: 'table:j' },
    ]);
    expect(dynamoAccesses('api', 'BatchGetItem', { RequestItems: { j: {}, r: {} } }).map((a) => a.resource)).toEqual(['table:j', 'table:r']);
    expect(dynamoAccesses('api', 'Query', { TableName: 'r', IndexName: 'timeIndex' })).toEqual([
      { role: 'api', action: 'dynamodb:Query', resource: 'table:r', index: true },
    ]);
    expect(otherAccess('worker:default', 'sqs', 'ChangeMessageVisibilityBatch', { QueueUrl: 'http://h/000/q-dispatch-high' })).toEqual({
      role: 'worker:default',
      action: 'sqs:ChangeMessageVisibility',
      resource: 'queue:q-dispatch-high',
    });
  });
});
