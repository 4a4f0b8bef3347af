// CDK app entry: `npx cdk synth` / `npx cdk deploy`.
import { App } from 'aws-cdk-lib';
import { SchedulerStack } from '../lib/scheduler-stack';

const app = new App();
new SchedulerStack(app, 'JobScheduler', {
  description: 'Serverless distributed job scheduler',
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
