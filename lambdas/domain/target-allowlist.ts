// Which AWS resources a deployment may target: the ARNs given to the stack (which grants exactly
// those to the workers). The API refuses a job naming anything else, as the worker's call would be
// denied; local mode allows any.
import { z } from 'zod';
import type { Target } from './job';
import type { NotifyDestination } from './notify';

export const targetAllowlistSchema = z.strictObject({
  lambdaFunctionArns: z.array(z.string().regex(/^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]+$/)).default([]),
  sqsQueueArns: z.array(z.string().regex(/^arn:aws[a-z-]*:sqs:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]+(\.fifo)?$/)).default([]),
  eventBusArns: z.array(z.string().regex(/^arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus\/[A-Za-z0-9._/-]+$/)).default([]),
  /** Topics that outcome notifications may publish to (a job's `notify`; no target publishes to SNS). */
  snsTopicArns: z.array(z.string().regex(/^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]+(\.fifo)?$/)).default([]),
});
export type TargetAllowlist = z.infer<typeof targetAllowlistSchema>;
export const NO_TARGETS_ALLOWED: TargetAllowlist = { lambdaFunctionArns: [], sqsQueueArns: [], eventBusArns: [], snsTopicArns: [] };

/**
 * The stack property `targets`: the allowlist, and the customer-managed KMS keys that encrypt listed
 * queues or buses (sending to them needs kms:GenerateDataKey and kms:Decrypt on the key). The keys are
 * granted to the workers only; the API checks jobs against the allowlist alone, so they stay here.
 * Key ARNs (a key id, or mrk-… for a multi-Region key), not aliases: an IAM grant on an alias ARN
 * does not cover the key it names.
 */
export const deploymentTargetsSchema = targetAllowlistSchema
  .extend({
    kmsKeyArns: z
      .array(
        z
          .string()
          .regex(
            /^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key\/(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32})$/,
            'must be the ARN of a KMS key (arn:aws:kms:<region>:<account>:key/<key id>), not of an alias',
          ),
      )
      .default([]),
  })
  .refine((targets) => targets.kmsKeyArns.length === 0 || targets.sqsQueueArns.length + targets.eventBusArns.length + targets.snsTopicArns.length > 0, {
    path: ['kmsKeyArns'],
    message: 'are the keys of listed queues, buses or topics, and none is listed (sqsQueueArns, eventBusArns, snsTopicArns)',
  });
export type DeploymentTargets = z.infer<typeof deploymentTargetsSchema>;

/** What the API checks jobs against (ALLOWED_TARGETS): the allowlist without the keys. */
export function allowlistOf({ kmsKeyArns: _keys, ...allowlist }: DeploymentTargets): TargetAllowlist {
  return allowlist;
}

/** A function ARN without its version or alias: the grant covers every qualifier of an allowed function. */
export function unqualifiedFunctionArn(arn: string): string {
  return arn.split(':').slice(0, 7).join(':');
}

/**
 * Why a queue URL must not be sent to in AWS, or null. The SQS client sends to the queue URL's
 * origin, signed with the worker's role and carrying its session token: over plain http they would
 * cross the network in clear, and another port is not SQS's endpoint.
 */
export function queueUrlTransportRefusal(queueUrl: string): string | null {
  if (!URL.canParse(queueUrl)) return 'must be a queue URL';
  const url = new URL(queueUrl);
  if (url.protocol !== 'https:') return 'must be an https URL: requests to the queue are signed and carry credentials';
  // The URL parser drops a default port (:443), so only another one is left here.
  if (url.port !== '') return 'must not name a port: SQS answers on the https default';
  return null;
}

/** The ARN of a queue from its URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`), or null. */
export function queueArnOfUrl(queueUrl: string): string | null {
  if (queueUrlTransportRefusal(queueUrl) !== null) return null;
  const url = new URL(queueUrl);
  const [account, name, ...rest] = url.pathname.split('/').filter(Boolean);
  if (!account || !name || rest.length > 0) return null;
  const host = /^(?:sqs\.([a-z0-9-]+)|([a-z0-9-]+)\.queue)\.amazonaws\.com(\.cn)?$/.exec(url.hostname);
  const region = host?.[1] ?? host?.[2];
  if (!region) return null;
  const partition = host?.[3] ? 'aws-cn' : region.startsWith('us-gov-') ? 'aws-us-gov' : 'aws';
  return `arn:${partition}:sqs:${region}:${account}:${name}`;
}

/** Why the deployment refuses this target (a field path and a message), or null when it allows it. */
export function targetRefusal(target: Target, allowed: TargetAllowlist): { path: string; message: string } | null {
  switch (target.kind) {
    case 'lambda':
      return allowed.lambdaFunctionArns.map(unqualifiedFunctionArn).includes(unqualifiedFunctionArn(target.functionArn))
        ? null
        : { path: 'target.functionArn', message: 'is not a function this deployment may invoke (stack property targets.lambdaFunctionArns)' };
    case 'sqs': {
      const transport = queueUrlTransportRefusal(target.queueUrl);
      if (transport !== null) return { path: 'target.queueUrl', message: transport };
      const arn = queueArnOfUrl(target.queueUrl);
      return arn !== null && allowed.sqsQueueArns.includes(arn)
        ? null
        : { path: 'target.queueUrl', message: 'is not a queue this deployment may send to (stack property targets.sqsQueueArns)' };
    }
    case 'eventbridge': {
      return busAllowed(target.eventBusName, allowed)
        ? null
        : { path: 'target.eventBusName', message: 'is not an event bus this deployment may put events on (stack property targets.eventBusArns)' };
    }
    default:
      return null;
  }
}

/** A bus is named by its ARN, or by its name in the deployment's own account and region. */
function busAllowed(bus: string, allowed: TargetAllowlist): boolean {
  return bus.startsWith('arn:') ? allowed.eventBusArns.includes(bus) : allowed.eventBusArns.some((arn) => arn.endsWith(`:event-bus/${bus}`));
}

/**
 * Why the deployment refuses a notification destination (a field path under `notify.destination`
 * and a message), or null. SNS topics and buses are checked against the same stack property as
 * targets (`targets.snsTopicArns`, `targets.eventBusArns`); HTTP URLs by the egress policy, as targets' are.
 */
export function notifyDestinationRefusal(destination: NotifyDestination, allowed: TargetAllowlist): { path: string; message: string } | null {
  switch (destination.kind) {
    case 'sns':
      return allowed.snsTopicArns.includes(destination.topicArn)
        ? null
        : { path: 'notify.destination.topicArn', message: 'is not a topic this deployment may publish to (stack property targets.snsTopicArns)' };
    case 'eventbridge':
      return busAllowed(destination.eventBusName, allowed)
        ? null
        : {
            path: 'notify.destination.eventBusName',
            message: 'is not an event bus this deployment may put events on (stack property targets.eventBusArns)',
          };
    case 'http':
      return null;
  }
}
