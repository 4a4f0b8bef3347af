// One synthesis per stack configuration, shared by every CDK test file: the cdk project runs its
// files in one worker without isolation (vitest.config.ts), so this module, and its cache, is
// loaded once. A synthesis takes seconds on a busy machine; each file synthesizing the same stack
// again in its beforeAll was what timed the hooks out.
import { App, Aspects } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { SchedulerStackConfig } from '../../../lib/config';
import { SchedulerStack } from '../../../lib/scheduler-stack';

export type Resource = {
  Type: string;
  Properties: Record<string, any>;
  Metadata?: Record<string, any>;
  /** What CloudFormation does with the resource when the stack deletes it, and when an update replaces it. */
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
};

export const TEST_ENV = { account: '123456789012', region: 'us-east-1' } as const;

export interface Synthesized {
  readonly stack: SchedulerStack;
  readonly template: Template;
  readonly resources: Record<string, Resource>;
}

const cache = new Map<string, Synthesized>();

/**
 * The stack `id` with `config` (and cdk-nag's AwsSolutions checks when `nag`), synthesized once per
 * distinct (id, config, nag) and shared. Callers must not add to the stack: it is shared.
 */
export function synthesized(id: string, config?: Partial<SchedulerStackConfig>, options: { nag?: boolean } = {}): Synthesized {
  const key = JSON.stringify([id, config ?? {}, options.nag ?? false]);
  const cached = cache.get(key);
  if (cached) return cached;
  // Skip bundling: these tests read the template, not the code assets.
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new SchedulerStack(app, id, { env: TEST_ENV, config });
  if (options.nag) Aspects.of(stack).add(new AwsSolutionsChecks());
  const template = Template.fromStack(stack);
  const result: Synthesized = { stack, template, resources: template.toJSON().Resources as Record<string, Resource> };
  cache.set(key, result);
  return result;
}
