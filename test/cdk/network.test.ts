// The workers' network and extra CA bundle as synthesized: with a VPC given, every pool's worker
// runs in its subnets with its security groups (what allowPrivateTargets needs to reach anything),
// the other functions stay outside; an extra CA bundle reaches the workers as NODE_EXTRA_CA_CERTS.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App, Aspects, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { EXTRA_CA_BUNDLE_FILE } from '../../lib/scheduler-function';
import { SchedulerStack } from '../../lib/scheduler-stack';
import type { Resource } from './support/stacks';
import { synthesized, TEST_ENV } from './support/stacks';

const POOLS = [{ name: 'exports', jobTypes: ['export'], maxConcurrency: 3, timeoutSeconds: 300 }];
let resources: Record<string, Resource>;
let scheduler: SchedulerStack;
let network: Stack;

const functions = (of: Record<string, Resource>) =>
  Object.values(of).filter((r) => r.Type === 'AWS::Lambda::Function' && String(r.Properties.Description).startsWith('Job scheduler'));
const isWorker = (r: Resource) => /worker/.test(String(r.Properties.Description));

beforeAll(() => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  network = new Stack(app, 'Network', { env: TEST_ENV });
  const vpc = new ec2.Vpc(network, 'Vpc', { maxAzs: 2, natGateways: 1 });
  const targets = new ec2.SecurityGroup(network, 'ToTargets', { vpc, description: 'Workers to the private targets' });
  const caBundle = path.join(mkdtempSync(path.join(tmpdir(), 'ca-')), 'private-ca.pem');
  writeFileSync(caBundle, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
  scheduler = new SchedulerStack(app, 'Private', {
    env: TEST_ENV,
    config: { allowPrivateTargets: true, pools: POOLS },
    workerNetwork: { vpc, subnets: { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS }, securityGroups: [targets] },
    targetCaBundle: caBundle,
  });
  Aspects.of(scheduler).add(new AwsSolutionsChecks());
  resources = Template.fromStack(scheduler).toJSON().Resources as Record<string, Resource>;
});

describe('worker network', () => {
  it("puts every pool's worker, and only the workers, in the given subnets with the given security groups", () => {
    const all = functions(resources);
    expect(all.filter(isWorker)).toHaveLength(2);
    const privateSubnets = Template.fromStack(network).toJSON().Resources as Record<string, Resource>;
    const privateSubnetCount = Object.entries(privateSubnets).filter(([id, r]) => r.Type === 'AWS::EC2::Subnet' && /PrivateSubnet/.test(id)).length;
    for (const worker of all.filter(isWorker)) {
      const config = worker.Properties.VpcConfig as { SubnetIds: unknown[]; SecurityGroupIds: unknown[] };
      expect(config.SubnetIds).toHaveLength(privateSubnetCount);
      expect(JSON.stringify(config.SubnetIds)).toMatch(/PrivateSubnet/);
      expect(JSON.stringify(config.SecurityGroupIds)).toMatch(/ToTargets/);
    }
    for (const other of all.filter((r) => !isWorker(r))) expect(other.Properties.VpcConfig, String(other.Properties.Description)).toBeUndefined();
    // Without a network, no function is in a VPC.
    for (const fn of functions(synthesized('Test').resources)) expect(fn.Properties.VpcConfig).toBeUndefined();
  });

  it('names the bundled CA file in NODE_EXTRA_CA_CERTS of the workers only', () => {
    for (const fn of functions(resources)) {
      const variables = (fn.Properties.Environment as { Variables: Record<string, string> }).Variables;
      expect(variables.NODE_EXTRA_CA_CERTS, String(fn.Properties.Description)).toBe(isWorker(fn) ? `/var/task/${EXTRA_CA_BUNDLE_FILE}` : undefined);
    }
    for (const fn of functions(synthesized('Test').resources)) {
      expect((fn.Properties.Environment as { Variables: Record<string, string> }).Variables.NODE_EXTRA_CA_CERTS).toBeUndefined();
    }
  });

  it('refuses a CA bundle that is not there, at synth', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    expect(() => new SchedulerStack(app, 'NoBundle', { env: TEST_ENV, targetCaBundle: '/nonexistent/ca.pem' })).toThrow(/extraCaBundle: no file/);
  });

  it('leaves no cdk-nag finding unsuppressed', () => {
    const found = [
      ...Annotations.fromStack(scheduler).findError('*', Match.stringLikeRegexp('AwsSolutions-.*')),
      ...Annotations.fromStack(scheduler).findWarning('*', Match.stringLikeRegexp('AwsSolutions-.*')),
    ];
    expect(found.map((finding) => `${finding.id}: ${JSON.stringify(finding.entry.data).slice(0, 200)}`)).toEqual([]);
  });
});
