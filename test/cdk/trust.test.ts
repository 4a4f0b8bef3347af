// Issue 21's trust items in the stack: the secrets target headers may name (stack property
// `headerSecretArns`) are granted to the workers and nothing else, and told to the API, which
// refuses any other; every function runs with X-Ray active tracing, and never records responses.
import { describe, expect, it } from 'vitest';
import type { Resource } from './support/stacks';
import { synthesized } from './support/stacks';

type Statement = { Action: string | string[]; Resource: unknown };

const SECRET = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:targets/billing-token-AbC123';
const OTHER = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:other-XyZ789';
const POOLS = [{ name: 'exports', jobTypes: ['export'], maxConcurrency: 5, timeoutSeconds: 900 }];

const functionsOf = (resources: Record<string, Resource>) => Object.values(resources).filter((r) => r.Type === 'AWS::Lambda::Function');

function actionsByFunction(resources: Record<string, Resource>): Map<string, { action: string; resources: unknown }[]> {
  const byFunction = new Map<string, { action: string; resources: unknown }[]>();
  for (const fn of functionsOf(resources)) {
    const roleRef = fn.Properties.Role?.['Fn::GetAtt']?.[0] as string | undefined;
    if (!roleRef) continue;
    const statements = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((role: { Ref: string }) => role.Ref === roleRef))
      .flatMap((r) => r.Properties.PolicyDocument.Statement as Statement[]);
    byFunction.set(
      String(fn.Properties.Description),
      statements.flatMap((statement) => [statement.Action].flat().map((action) => ({ action, resources: statement.Resource }))),
    );
  }
  return byFunction;
}

describe('stack property headerSecretArns', () => {
  it('grants every worker GetSecretValue on exactly the listed secrets, and no other function any secret', () => {
    const { resources } = synthesized('Trust', { pools: POOLS, headerSecretArns: [SECRET, OTHER] });
    const byFunction = actionsByFunction(resources);
    const workers = [...byFunction.keys()].filter((description) => description.includes('worker'));
    expect(workers).toHaveLength(2);
    for (const [description, actions] of byFunction) {
      const secrets = actions.filter(({ action }) => action.startsWith('secretsmanager:'));
      expect(secrets, description).toEqual(workers.includes(description) ? [{ action: 'secretsmanager:GetSecretValue', resources: [SECRET, OTHER] }] : []);
    }
    const api = functionsOf(resources).find((r) => r.Properties.Description === 'Job scheduler HTTP API');
    expect(JSON.parse(api!.Properties.Environment.Variables.HEADER_SECRET_ARNS as string)).toEqual([SECRET, OTHER]);
  });

  it('grants no secret without the property', () => {
    const { resources } = synthesized('Trust', { pools: POOLS });
    for (const [description, actions] of actionsByFunction(resources)) {
      expect(
        actions.filter(({ action }) => action.startsWith('secretsmanager:')),
        description,
      ).toEqual([]);
    }
  });

  it('refuses at synth an ARN that is not a secret’s full ARN', () => {
    expect(() => synthesized('TrustBad', { headerSecretArns: ['arn:aws:secretsmanager:us-east-1:123456789012:secret:*'] })).toThrow();
    expect(() => synthesized('TrustBad', { headerSecretArns: ['arn:aws:secretsmanager:us-east-1:123456789012:secret:billing'] })).toThrow();
  });
});

describe('tracing', () => {
  it('runs every function with X-Ray active tracing, allowed to send segments, never recording responses', () => {
    const { resources } = synthesized('Trust', { pools: POOLS });
    const byFunction = actionsByFunction(resources);
    for (const fn of functionsOf(resources)) {
      const description = String(fn.Properties.Description);
      if (!byFunction.has(description)) continue; // CDK's own helper functions (log retention, custom resources)
      expect(fn.Properties.TracingConfig, description).toEqual({ Mode: 'Active' });
      expect(fn.Properties.Environment.Variables.POWERTOOLS_TRACER_CAPTURE_RESPONSE, description).toBe('false');
      const xray = byFunction.get(description)!.filter(({ action }) => action.startsWith('xray:'));
      expect(xray.map(({ action }) => action).sort(), description).toEqual(['xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
    }
  });
});
