// CDK app entry: `npx cdk synth` / `npx cdk deploy`.
import { App, Aspects } from 'aws-cdk-lib';
import { MINISTACK_CONTEXT, MiniStackTemplateAdjustments } from '../lib/ministack-adjustments';
import { SchedulerStack } from '../lib/scheduler-stack';

const app = new App();
new SchedulerStack(app, 'JobScheduler', {
  description: 'Serverless distributed job scheduler',
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
// Only for the deploy test into the MiniStack emulator (`-c ministack=true`); never in a real deployment.
if (String(app.node.tryGetContext(MINISTACK_CONTEXT)) === 'true') Aspects.of(app).add(new MiniStackTemplateAdjustments());
