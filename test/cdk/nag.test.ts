// cdk-nag's AwsSolutions pack over the synthesized stack: no finding may stand without a
// suppression (lib/security.ts gives each its reason), and the security settings the design asks
// for are in the template: encrypted tables and queues, API access logs that carry no secrets.
import { App, Aspects, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import type { SchedulerStack } from '../../lib/scheduler-stack';
import { synthesized } from './support/stacks';

type Resource = { Type: string; Properties: Record<string, unknown>; Metadata?: { cdk_nag?: { rules_to_suppress?: { id: string; reason: string }[] } } };

let stack: SchedulerStack;
let resources: Record<string, Resource>;

const nagFindings = (of: Stack, level: 'error' | 'warning'): string[] => {
  const annotations = Annotations.fromStack(of);
  const found =
    level === 'error'
      ? annotations.findError('*', Match.stringLikeRegexp('AwsSolutions-.*'))
      : annotations.findWarning('*', Match.stringLikeRegexp('AwsSolutions-.*'));
  return found.map((finding) => `${finding.id}: ${JSON.stringify(finding.entry.data).slice(0, 200)}`);
};

beforeAll(() => {
  const synth = synthesized('Nag', undefined, { nag: true });
  stack = synth.stack;
  resources = synth.resources;
});

describe('cdk-nag AwsSolutions', () => {
  it('reports no unsuppressed error', () => {
    expect(nagFindings(stack, 'error')).toEqual([]);
  });

  it('reports no unsuppressed warning', () => {
    expect(nagFindings(stack, 'warning')).toEqual([]);
  });

  it("grants on resource * only the actions its suppressions name (X-Ray's two, CloudWatch's GetMetricData): the suppression matches any action on *", () => {
    const ONLY_ON_ANY_RESOURCE = new Set(['xray:PutTraceSegments', 'xray:PutTelemetryRecords', 'cloudwatch:GetMetricData']);
    type Statement = { Effect: string; Action?: string | string[]; NotAction?: unknown; Resource: unknown };
    type Document = { Statement: Statement[] };
    // Every policy document: policies, managed policies, and those inline in a role.
    const documents = Object.values(resources).flatMap((resource): Document[] => {
      if (resource.Type === 'AWS::IAM::Policy' || resource.Type === 'AWS::IAM::ManagedPolicy') return [resource.Properties.PolicyDocument as Document];
      if (resource.Type === 'AWS::IAM::Role')
        return ((resource.Properties.Policies ?? []) as { PolicyDocument: Document }[]).map((policy) => policy.PolicyDocument);
      return [];
    });
    const allows = documents.flatMap((document) => document.Statement).filter((statement) => statement.Effect === 'Allow');
    // NotAction grants everything but what it names: never.
    expect(allows.filter((statement) => statement.NotAction !== undefined)).toEqual([]);
    const onAnyResource = allows
      .filter((statement) => statement.Resource === '*' || (Array.isArray(statement.Resource) && statement.Resource.includes('*')))
      .flatMap((statement) => [statement.Action ?? []].flat());
    expect(onAnyResource.length).toBeGreaterThan(0);
    expect(onAnyResource.filter((action) => !ONLY_ON_ANY_RESOURCE.has(action))).toEqual([]);
  });

  it('gives every suppression a reason of its own', () => {
    const suppressions = Object.values(resources).flatMap((r) => r.Metadata?.cdk_nag?.rules_to_suppress ?? []);
    expect(suppressions.length).toBeGreaterThan(0);
    for (const { id, reason } of suppressions) expect({ id, long: reason.length >= 60 }).toEqual({ id, long: true });
    // S1: the payload bucket's server access logs (lib/storage.ts).
    expect(new Set(suppressions.map((s) => s.id))).toEqual(new Set(['AwsSolutions-IAM5', 'AwsSolutions-L1', 'AwsSolutions-APIG4', 'AwsSolutions-S1']));
    // Routes without the authorizer: the console's static files and the API's public contract only.
    const open = Object.values(resources).filter(
      (r) => r.Type === 'AWS::ApiGatewayV2::Route' && r.Metadata?.cdk_nag?.rules_to_suppress?.some((s: { id: string }) => s.id === 'AwsSolutions-APIG4'),
    );
    expect(open.map((r) => r.Properties.RouteKey as string).every((key) => / \/console(\/|$)/.test(key) || key === 'GET /v1/openapi.json')).toBe(true);
  });

  it('does flag what it should: an unencrypted queue without a DLQ in another stack', () => {
    const app = new App();
    const careless = new Stack(app, 'Careless');
    new sqs.Queue(careless, 'Queue', { encryption: sqs.QueueEncryption.UNENCRYPTED });
    Aspects.of(careless).add(new AwsSolutionsChecks());
    app.synth();
    expect(nagFindings(careless, 'error').join('\n')).toMatch(/AwsSolutions-SQS3/);
  });
});

describe('security settings in the template', () => {
  it('encrypts every table and queue', () => {
    const tables = Object.values(resources).filter((r) => r.Type === 'AWS::DynamoDB::GlobalTable');
    const queues = Object.values(resources).filter((r) => r.Type === 'AWS::SQS::Queue');
    expect(tables).toHaveLength(2);
    // The default pool's high, standard and low lanes and its DLQ.
    expect(queues).toHaveLength(4);
    for (const table of tables) expect(table.Properties.SSESpecification).toMatchObject({ SSEEnabled: true });
    for (const queue of queues) expect(queue.Properties.SqsManagedSseEnabled === true || queue.Properties.KmsMasterKeyId !== undefined).toBe(true);
  });

  it('logs API access to its own log group, with no header, query string or body in the format', () => {
    const stages = Object.values(resources).filter((r) => r.Type === 'AWS::ApiGatewayV2::Stage');
    expect(stages).toHaveLength(1);
    const settings = stages[0]!.Properties.AccessLogSettings as { DestinationArn: unknown; Format: string };
    expect(JSON.stringify(settings.DestinationArn)).toMatch(/ApiAccessLogs/);
    const format = JSON.parse(settings.Format) as Record<string, string>;
    expect(format).toMatchObject({ requestId: '$context.requestId', status: '$context.status', routeKey: '$context.routeKey' });
    expect(settings.Format).not.toMatch(/header|querystring|requestBody|authorizer|apiKey/i);
  });

  it('gives the functions roles without AWS managed policies', () => {
    const roles = Object.values(resources).filter(
      (r) => r.Type === 'AWS::IAM::Role' && JSON.stringify(r.Properties.AssumeRolePolicyDocument).includes('lambda.amazonaws.com'),
    );
    // The API, worker, ticker, authorizer and console.
    expect(roles).toHaveLength(5);
    for (const role of roles) expect(role.Properties.ManagedPolicyArns).toBeUndefined();
  });

  it('refuses private target addresses unless the deployment allows them', () => {
    const envOf = (of: Stack) =>
      Object.values(Template.fromStack(of).toJSON().Resources as Record<string, Resource>)
        .filter((r) => r.Type === 'AWS::Lambda::Function' && String(r.Properties.Description).startsWith('Job scheduler'))
        .map((r) => (r.Properties.Environment as { Variables: Record<string, string> }).Variables.ALLOW_PRIVATE_TARGETS);
    expect(envOf(stack)).toEqual(['false', 'false', 'false', 'false']);
    const open = synthesized('Open', { allowPrivateTargets: true }).stack;
    expect(envOf(open)).toEqual(['true', 'true', 'true', 'true']);
  });
});
