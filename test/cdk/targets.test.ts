// The AWS targets a deployment allows (stack property `targets`): every worker is granted exactly
// those (invoke the functions at any qualifier, send to the queues, put events on the buses, use the
// listed KMS keys of encrypted queues and buses), no other function is, the API learns the allowlist
// (not the keys) to refuse anything else, and cdk-nag passes with them.
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { synthesized } from './support/stacks';

type Resource = { Type: string; Properties: Record<string, any> };
type Statement = { Action: string | string[]; Resource: unknown };

const FUNCTION = 'arn:aws:lambda:us-east-1:123456789012:function:invoices';
const QUEUE = 'arn:aws:sqs:us-east-1:123456789012:exports';
const BUS = 'arn:aws:events:us-east-1:123456789012:event-bus/billing';
const TOPIC = 'arn:aws:sns:us-east-1:123456789012:ops-alerts';
const KEY = 'arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
const MULTI_REGION_KEY = 'arn:aws:kms:eu-west-1:123456789012:key/mrk-1234abcd12ab34cd56ef1234567890ab';
const ALL = { lambdaFunctionArns: [FUNCTION], sqsQueueArns: [QUEUE], eventBusArns: [BUS], snsTopicArns: [TOPIC], kmsKeyArns: [KEY, MULTI_REGION_KEY] };

function synth(targets?: Record<string, string[]>, nag = false): Record<string, Resource> {
  const { stack, resources } = synthesized(
    'Targets',
    { pools: [{ name: 'exports', jobTypes: ['export'], maxConcurrency: 5, timeoutSeconds: 900 }], ...(targets ? { targets } : {}) },
    { nag },
  );
  if (nag) {
    const findings = [
      ...Annotations.fromStack(stack).findError('*', Match.stringLikeRegexp('AwsSolutions-.*')),
      ...Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('AwsSolutions-.*')),
    ];
    expect(findings.map((finding) => `${finding.id}: ${JSON.stringify(finding.entry.data).slice(0, 200)}`)).toEqual([]);
  }
  return resources;
}

/** Statements of the policies attached to each function's role, by the function's description. */
function statementsByFunction(resources: Record<string, Resource>): Map<string, Statement[]> {
  const byFunction = new Map<string, Statement[]>();
  for (const fn of Object.values(resources).filter((r) => r.Type === 'AWS::Lambda::Function')) {
    const roleRef = fn.Properties.Role?.['Fn::GetAtt']?.[0] as string | undefined;
    if (!roleRef) continue;
    const statements = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((role: { Ref: string }) => role.Ref === roleRef))
      .flatMap((r) => r.Properties.PolicyDocument.Statement as Statement[]);
    byFunction.set(String(fn.Properties.Description), statements);
  }
  return byFunction;
}

const targetActions = /^(lambda:InvokeFunction|sqs:SendMessage|events:PutEvents|sns:Publish|kms:.*)$/;
function targetGrants(statements: Statement[]): { action: string; resources: unknown }[] {
  return (
    statements
      .flatMap((statement) =>
        (Array.isArray(statement.Action) ? statement.Action : [statement.Action]).map((action) => ({ action, resources: statement.Resource })),
      )
      .filter(({ action, resources }) => targetActions.test(action) && (action !== 'sqs:SendMessage' || JSON.stringify(resources).includes('arn:aws:sqs')))
      // The stack's own key (the signing secrets'), not a target's.
      .filter(({ resources }) => !JSON.stringify(resources).includes('"SigningKey'))
  );
}

describe('stack property targets', () => {
  it('grants every worker exactly the allowed functions (any qualifier), queues, buses, notification topics and their keys', () => {
    const byFunction = statementsByFunction(synth(ALL));
    const workers = [...byFunction.keys()].filter((description) => description.includes('worker'));
    expect(workers).toHaveLength(2); // the default pool's and the exports pool's
    for (const worker of workers) {
      expect(targetGrants(byFunction.get(worker)!)).toEqual([
        { action: 'lambda:InvokeFunction', resources: [FUNCTION, `${FUNCTION}:*`] },
        { action: 'sqs:SendMessage', resources: QUEUE },
        { action: 'events:PutEvents', resources: BUS },
        { action: 'sns:Publish', resources: TOPIC },
        { action: 'kms:GenerateDataKey', resources: [KEY, MULTI_REGION_KEY] },
        { action: 'kms:Decrypt', resources: [KEY, MULTI_REGION_KEY] },
      ]);
    }
    for (const [description, statements] of byFunction) {
      if (!workers.includes(description)) expect(targetGrants(statements), description).toEqual([]);
    }
  });

  it('tells every function the allowlist, which the API checks at create and PATCH, and not the keys', () => {
    const resources = synth({ lambdaFunctionArns: [FUNCTION], sqsQueueArns: [QUEUE], kmsKeyArns: [KEY] });
    const api = Object.values(resources).find((r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Description === 'Job scheduler HTTP API');
    expect(JSON.parse(api!.Properties.Environment.Variables.ALLOWED_TARGETS as string)).toEqual({
      lambdaFunctionArns: [FUNCTION],
      sqsQueueArns: [QUEUE],
      eventBusArns: [],
      snsTopicArns: [],
    });
  });

  it('grants no target action at all without the property', () => {
    for (const [description, statements] of statementsByFunction(synth())) expect(targetGrants(statements), description).toEqual([]);
  });

  it('grants no key without kmsKeyArns, whatever queues and buses are listed', () => {
    const byFunction = statementsByFunction(synth({ sqsQueueArns: [QUEUE], eventBusArns: [BUS] }));
    for (const [description, statements] of byFunction) {
      expect(
        targetGrants(statements).filter(({ action }) => action.startsWith('kms:')),
        description,
      ).toEqual([]);
    }
  });

  it('refuses a malformed ARN at synth', () => {
    expect(() => synth({ lambdaFunctionArns: ['arn:aws:lambda:us-east-1:123456789012:function:*'] })).toThrow();
  });

  it('refuses at synth a key named by alias or wildcard, or keys with no queue or bus to use them', () => {
    const withQueue = (key: string) => () => synth({ sqsQueueArns: [QUEUE], kmsKeyArns: [key] });
    expect(withQueue('arn:aws:kms:us-east-1:123456789012:alias/exports')).toThrow(/not of an alias/);
    expect(withQueue('arn:aws:kms:us-east-1:123456789012:key/*')).toThrow(/kmsKeyArns/);
    expect(withQueue('1234abcd-12ab-34cd-56ef-1234567890ab')).toThrow(/kmsKeyArns/);
    expect(withQueue('arn:aws:sqs:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab')).toThrow(/kmsKeyArns/);
    expect(() => synth({ lambdaFunctionArns: [FUNCTION], kmsKeyArns: [KEY] })).toThrow(/none is listed/);
    expect(withQueue(KEY)).not.toThrow();
  });

  it('passes cdk-nag with targets allowed', () => {
    synth(ALL, true);
  });
});
