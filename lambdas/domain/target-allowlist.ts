// Which AWS resources a deployment may target: the ARNs given to the stack (which grants exactly
// those to the workers). The API refuses a job naming anything else, as the worker's call would be
// denied; local mode allows any. A tenant's grants (decision 0194) narrow that further, in both
// modes: a tenant that has them may name only what both the deployment and its grants list.
import { z } from 'zod';
import type { JobTarget, Target } from './job';
import { SECRET_ARN_PATTERN, isSecretReference } from './job';
import type { NotifyDestination } from './notify';
import type { TenantGrants } from './tenant';
import { MAX_TENANT_GRANTS } from './tenant';

const LAMBDA_FUNCTION_ARN = /^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]+$/;
const SQS_QUEUE_ARN = /^arn:aws[a-z-]*:sqs:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]+(\.fifo)?$/;
const EVENT_BUS_ARN = /^arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus\/[A-Za-z0-9._/-]+$/;
const SNS_TOPIC_ARN = /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]+(\.fifo)?$/;

export const targetAllowlistSchema = z.strictObject({
  lambdaFunctionArns: z.array(z.string().regex(LAMBDA_FUNCTION_ARN)).default([]),
  sqsQueueArns: z.array(z.string().regex(SQS_QUEUE_ARN)).default([]),
  eventBusArns: z.array(z.string().regex(EVENT_BUS_ARN)).default([]),
  /** Topics that outcome notifications may publish to (a job's `notify`; no target publishes to SNS). */
  snsTopicArns: z.array(z.string().regex(SNS_TOPIC_ARN)).default([]),
});
export type TargetAllowlist = z.infer<typeof targetAllowlistSchema>;
export const NO_TARGETS_ALLOWED: TargetAllowlist = { lambdaFunctionArns: [], sqsQueueArns: [], eventBusArns: [], snsTopicArns: [] };

/**
 * One ARN a tenant may be granted (decision 0194): exact, of a kind the deployment lists (a secret
 * with its 6-character suffix, an unqualified function, a queue, a bus, a topic). No wildcard: a
 * grant is what the operator wrote, and the deployment's lists it narrows are exact ARNs too.
 */
export const grantArnSchema = z
  .string()
  .max(2048)
  .refine(
    (arn) => [SECRET_ARN_PATTERN, LAMBDA_FUNCTION_ARN, SQS_QUEUE_ARN, EVENT_BUS_ARN, SNS_TOPIC_ARN].some((pattern) => pattern.test(arn)),
    'must be the exact ARN of a Secrets Manager secret (with its 6-character suffix), a Lambda function (without version or alias), an SQS queue, an event bus or an SNS topic; no wildcards',
  );
export const tenantGrantsSchema = z.array(grantArnSchema).max(MAX_TENANT_GRANTS);

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

/** The deployment's allowlist a check uses: null in local mode, where any AWS resource may be named (the emulator's). */
export type DeploymentAllowlist = TargetAllowlist | null;

// One message per field, whichever list refused: a tenant learns nothing from it about what the
// deployment lists for the other tenants (decision 0194).
const REFUSED = {
  lambda: {
    path: 'target.functionArn',
    message: "is not a function this deployment may invoke for this tenant (stack property targets.lambdaFunctionArns and the tenant's grants)",
  },
  sqs: {
    path: 'target.queueUrl',
    message: "is not a queue this deployment may send to for this tenant (stack property targets.sqsQueueArns and the tenant's grants)",
  },
  eventbridge: {
    path: 'target.eventBusName',
    message: "is not an event bus this deployment may put events on for this tenant (stack property targets.eventBusArns and the tenant's grants)",
  },
  sns: {
    path: 'notify.destination.topicArn',
    message: "is not a topic this deployment may publish to for this tenant (stack property targets.snsTopicArns and the tenant's grants)",
  },
  notifyBus: {
    path: 'notify.destination.eventBusName',
    message: "is not an event bus this deployment may put events on for this tenant (stack property targets.eventBusArns and the tenant's grants)",
  },
} as const;

/** What a header's secret not granted is refused with: the same whichever list left it out. */
export const SECRET_REFUSAL_MESSAGE =
  "is not a secret this deployment may read for this tenant (stack property headerSecretArns and the tenant's grants; locally LOCAL_HEADER_SECRET_ARNS)";

/**
 * Why this target is refused (a field path and a message), or null when both the deployment
 * (`allowed`; null in local mode: any) and the tenant's grants (null: none set) allow it.
 */
export function targetRefusal(target: Target, allowed: DeploymentAllowlist, grants: TenantGrants = null): { path: string; message: string } | null {
  switch (target.kind) {
    case 'lambda': {
      const fn = unqualifiedFunctionArn(target.functionArn);
      const listed = allowed === null || allowed.lambdaFunctionArns.map(unqualifiedFunctionArn).includes(fn);
      return listed && targetGranted(target, allowed, grants) ? null : REFUSED.lambda;
    }
    case 'sqs': {
      // Locally the emulator's queues are plain http on its own port.
      if (allowed !== null) {
        const transport = queueUrlTransportRefusal(target.queueUrl);
        if (transport !== null) return { path: 'target.queueUrl', message: transport };
      }
      const arn = queueArnOfUrl(target.queueUrl);
      const listed = allowed === null || (arn !== null && allowed.sqsQueueArns.includes(arn));
      return listed && targetGranted(target, allowed, grants) ? null : REFUSED.sqs;
    }
    case 'eventbridge':
      return busListed(target.eventBusName, allowed) && busGranted(target.eventBusName, allowed, grants) ? null : REFUSED.eventbridge;
    default:
      return null;
  }
}

/** A bus is named by its ARN, or by its name in the deployment's own account and region. */
function busListed(bus: string, allowed: DeploymentAllowlist): boolean {
  if (allowed === null) return true;
  return bus.startsWith('arn:') ? allowed.eventBusArns.includes(bus) : allowed.eventBusArns.some((arn) => arn.endsWith(`:event-bus/${bus}`));
}

/**
 * Whether the tenant's grants cover a bus. By name it is the bus of that name in the deployment's
 * own account and region, which the check cannot tell apart from a listed bus of the same name
 * elsewhere: every listed bus of that name must be granted (locally, where none is listed, one).
 */
function busGranted(bus: string, allowed: DeploymentAllowlist, grants: TenantGrants): boolean {
  if (grants === null) return true;
  if (bus.startsWith('arn:')) return grants.includes(bus);
  const named = (arn: string) => arn.endsWith(`:event-bus/${bus}`);
  if (allowed === null) return grants.some(named);
  const listed = allowed.eventBusArns.filter(named);
  return listed.length > 0 && listed.every((arn) => grants.includes(arn));
}

/**
 * Whether the tenant's grants (null: none set, every ARN) cover the resource a target names: its
 * function (every version and alias of a granted one), its queue, its bus. Targets naming none
 * (HTTP, external, a workflow's start) need no grant here; an HTTP target's secrets are
 * `secretGranted`'s. Locally an emulator's queue URL (`<origin>/<account>/<name>`) is the granted
 * queue of that account and name in any region.
 */
export function targetGranted(target: JobTarget, allowed: DeploymentAllowlist, grants: TenantGrants): boolean {
  if (grants === null) return true;
  switch (target.kind) {
    case 'lambda':
      return grants.includes(unqualifiedFunctionArn(target.functionArn));
    case 'sqs': {
      const arn = queueArnOfUrl(target.queueUrl);
      if (arn !== null) return grants.includes(arn);
      const local = allowed === null ? emulatorQueueOf(target.queueUrl) : null;
      return local !== null && grants.some((grant) => SQS_QUEUE_ARN.test(grant) && grant.endsWith(`:${local.account}:${local.name}`));
    }
    case 'eventbridge':
      return busGranted(target.eventBusName, allowed, grants);
    default:
      return true;
  }
}

/** The account and name of an emulator's queue URL (`http://127.0.0.1:4566/<account>/<name>`), or null. */
function emulatorQueueOf(queueUrl: string): { account: string; name: string } | null {
  if (!URL.canParse(queueUrl)) return null;
  const [account, name, ...rest] = new URL(queueUrl).pathname.split('/').filter(Boolean);
  return account && name && rest.length === 0 && /^\d{12}$/.test(account) ? { account, name } : null;
}

/** Whether the tenant's grants (null: none set) cover a header's secret. */
export function secretGranted(secretArn: string, grants: TenantGrants): boolean {
  return grants === null || grants.includes(secretArn);
}

/**
 * What a job's target names that the tenant's grants no longer cover, said by its kind (never the
 * ARN), or null: the worker's check at the call (decision 0194), for a grant narrowed after the job
 * was written. The deployment's own list it leaves to IAM, which denies the call.
 */
export function ungrantedAtCall(target: JobTarget, allowed: DeploymentAllowlist, grants: TenantGrants): string | null {
  if (grants === null) return null;
  if (target.kind === 'http') {
    const header = Object.entries(target.headers).find(([, value]) => isSecretReference(value) && !secretGranted(value.secretArn, grants));
    return header ? `the secret of header ${header[0]}` : null;
  }
  if (targetGranted(target, allowed, grants)) return null;
  return KIND_NAMES[target.kind as keyof typeof KIND_NAMES] ?? 'its target';
}

const KIND_NAMES = { lambda: 'its Lambda function', sqs: 'its SQS queue', eventbridge: 'its event bus' } as const;

/**
 * Why a notification destination is refused (a field path under `notify.destination` and a
 * message), or null. SNS topics and buses are checked against the same stack property as targets
 * (`targets.snsTopicArns`, `targets.eventBusArns`) and the tenant's grants; HTTP URLs by the
 * egress policy, as targets' are.
 */
export function notifyDestinationRefusal(
  destination: NotifyDestination,
  allowed: DeploymentAllowlist,
  grants: TenantGrants = null,
): { path: string; message: string } | null {
  switch (destination.kind) {
    case 'sns':
      return (allowed === null || allowed.snsTopicArns.includes(destination.topicArn)) && destinationGranted(destination, allowed, grants) ? null : REFUSED.sns;
    case 'eventbridge':
      return busListed(destination.eventBusName, allowed) && busGranted(destination.eventBusName, allowed, grants) ? null : REFUSED.notifyBus;
    case 'http':
      return null;
  }
}

/** Whether the tenant's grants (null: none set) cover a notification's topic or bus; HTTP needs none. */
export function destinationGranted(destination: NotifyDestination, allowed: DeploymentAllowlist, grants: TenantGrants): boolean {
  if (grants === null) return true;
  switch (destination.kind) {
    case 'sns':
      return grants.includes(destination.topicArn);
    case 'eventbridge':
      return busGranted(destination.eventBusName, allowed, grants);
    case 'http':
      return true;
  }
}
