// CDK app entry: `npx cdk synth` / `npx cdk deploy`.
// Optional context: `-c configFile=<path>` (the stack's config, lib/config.ts, as JSON) and
// `-c targetCaBundle=<path>` (a PEM of extra CAs the workers trust; docs/operations.md#private-targets),
// `-c keepReplacedIndexes=true` or `=<index>,<index>` and `-c legacyNameGuards=false` (the deploys of an upgrade; docs/operations.md).
import { readFileSync } from 'node:fs';
import { App, Aspects } from 'aws-cdk-lib';
import type { SchedulerStackConfig } from '../lib/config';
import { MINISTACK_CONTEXT, MiniStackTemplateAdjustments } from '../lib/ministack-adjustments';
import { SchedulerStack } from '../lib/scheduler-stack';

const app = new App();
const context = (key: string): string | undefined => {
  const value: unknown = app.node.tryGetContext(key);
  if (value === undefined) return undefined;
  if (typeof value === 'string' || typeof value === 'boolean' || typeof value === 'number') return String(value);
  throw new Error(`context ${key}: a string`);
};
const configFile = context('configFile');
const fromFile = configFile ? (JSON.parse(readFileSync(configFile, 'utf8')) as Partial<SchedulerStackConfig>) : undefined;
// The deploys of an upgrade that replaces or drops an index (lib/config.ts, keepReplacedIndexes):
// `true` keeps every index a release replaced, a list the ones it names.
const keep = context('keepReplacedIndexes');
// `false` overrides a config file's value.
const keepReplacedIndexes = keep === undefined ? undefined : keep === 'true' ? true : keep === 'false' ? false : keep.split(',').map((name) => name.trim());
// The upgrade's middle deploy from before decision 0192 (lib/config.ts, legacyNameGuards).
const legacy = context('legacyNameGuards');
if (legacy !== undefined && legacy !== 'true' && legacy !== 'false') throw new Error('context legacyNameGuards: true or false');
const config = {
  ...fromFile,
  ...(keepReplacedIndexes === undefined ? {} : { keepReplacedIndexes }),
  ...(legacy === undefined ? {} : { legacyNameGuards: legacy === 'true' }),
};
new SchedulerStack(app, 'JobScheduler', {
  description: 'Serverless distributed job scheduler',
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  config,
  targetCaBundle: context('targetCaBundle'),
});
// Only for the deploy test into the MiniStack emulator (`-c ministack=true`); never in a real deployment.
if (context(MINISTACK_CONTEXT) === 'true') Aspects.of(app).add(new MiniStackTemplateAdjustments());
