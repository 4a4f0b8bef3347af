// Emulator-only template adjustments for deploying into MiniStack (npm run test:deploy), applied
// only when the app is synthesized with `-c ministack=true` (bin/scheduler.ts), never by default.
// What each works around and why: docs/decisions/0077-deploy-test-in-ministack.md.
import type { IAspect } from 'aws-cdk-lib';
import { Stack } from 'aws-cdk-lib';
import { CfnAlarm } from 'aws-cdk-lib/aws-cloudwatch';
import { CfnPolicy } from 'aws-cdk-lib/aws-iam';
import { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { CfnQueuePolicy } from 'aws-cdk-lib/aws-sqs';
import type { IConstruct } from 'constructs';

/** A math alarm's query as the L2 Alarm writes it, tokens resolved. */
interface ResolvedQuery {
  readonly metricStat?: {
    readonly metric: { readonly namespace?: string; readonly metricName?: string; readonly dimensions?: CfnAlarm.DimensionProperty[] };
    readonly period: number;
    readonly stat: string;
  };
}

/**
 * SQS batch calls as MiniStack authorizes them under AUTH=true (an action of their own) and the action
 * AWS authorizes them as (the single call's), which is what the stack grants.
 */
export const MINISTACK_SQS_BATCH_ACTIONS: Readonly<Record<string, string>> = {
  'sqs:SendMessage': 'sqs:SendMessageBatch',
  'sqs:DeleteMessage': 'sqs:DeleteMessageBatch',
  'sqs:ChangeMessageVisibility': 'sqs:ChangeMessageVisibilityBatch',
};

interface ResolvedStatement {
  readonly Action?: string | string[];
  readonly Effect?: string;
  readonly Condition?: { readonly Bool?: Record<string, unknown> };
  readonly [key: string]: unknown;
}

/** The context key that turns the adjustments on. */
export const MINISTACK_CONTEXT = 'ministack';

/**
 * - MiniStack refuses an alarm given as metric math (`Metrics`). It evaluates no alarm either, so a
 *   math alarm is deployed there as an alarm on its first input metric: the alarm resource (and the
 *   dashboard's alarm widget that names it) exists, with a condition that is never evaluated.
 * - MiniStack runs a function from its unpacked code folder (the process's working directory), not
 *   /var/task: the workers' extra CA bundle is named relative to it.
 * - MiniStack with AUTH=true authorizes an SQS batch call as its own action (`sqs:SendMessageBatch`),
 *   where AWS authorizes it as the single call's (`sqs:SendMessage`). Wherever a policy grants the
 *   single call, the emulator's batch name is granted beside it on the same resources: an
 *   emulator-only alias, never a wider grant (a statement without the single call gets nothing).
 * - MiniStack's gateway is plain http, so with AUTH=true `aws:SecureTransport` is false for every
 *   call that does not come through the test's marking proxy, and the functions' SQS calls go to the
 *   queue URL (the SDK's default), which names MiniStack itself. The queues' deny of non-TLS access
 *   (`enforceSSL`) would refuse every one; in AWS every SDK call is https. The deny is dropped here
 *   and only here.
 */
export class MiniStackTemplateAdjustments implements IAspect {
  visit(node: IConstruct): void {
    if (node instanceof CfnFunction) {
      const environment = Stack.of(node).resolve(node.environment) as { variables?: Record<string, unknown> } | undefined;
      const caBundle = environment?.variables?.NODE_EXTRA_CA_CERTS;
      if (typeof caBundle === 'string' && caBundle.startsWith('/var/task/')) {
        node.addPropertyOverride('Environment.Variables.NODE_EXTRA_CA_CERTS', caBundle.slice('/var/task/'.length));
      }
      return;
    }
    if (node instanceof CfnQueuePolicy) {
      dropSecureTransportDeny(node);
      return;
    }
    if (node instanceof CfnPolicy) {
      aliasSqsBatchActions(node);
      return;
    }
    if (!(node instanceof CfnAlarm) || node.metrics === undefined) return;
    const metrics = Stack.of(node).resolve(node.metrics) as ResolvedQuery[];
    const first = metrics.find((query) => query.metricStat !== undefined)?.metricStat;
    if (!first) throw new Error(`${node.node.path}: a math alarm without an input metric`);
    node.metrics = undefined;
    node.namespace = first.metric.namespace;
    node.metricName = first.metric.metricName;
    node.dimensions = first.metric.dimensions;
    node.period = first.period;
    node.statistic = first.stat;
  }
}

/** Adds MiniStack's batch action name to each statement that grants the single SQS call. */
function aliasSqsBatchActions(policy: CfnPolicy): void {
  const document = Stack.of(policy).resolve(policy.policyDocument) as { Statement?: ResolvedStatement[] } & Record<string, unknown>;
  let changed = false;
  const statements = (document.Statement ?? []).map((statement) => {
    const actions = statement.Action === undefined ? [] : ([] as string[]).concat(statement.Action);
    const aliases = actions.flatMap((action) => {
      const alias = MINISTACK_SQS_BATCH_ACTIONS[action];
      return alias !== undefined && !actions.includes(alias) ? [alias] : [];
    });
    if (aliases.length === 0) return statement;
    changed = true;
    return { ...statement, Action: [...actions, ...aliases] };
  });
  if (changed) policy.addPropertyOverride('PolicyDocument', { ...document, Statement: statements });
}

/** Drops the `aws:SecureTransport: false` deny (enforceSSL) from a queue policy. */
function dropSecureTransportDeny(policy: CfnQueuePolicy): void {
  const document = Stack.of(policy).resolve(policy.policyDocument) as { Statement?: ResolvedStatement[] } & Record<string, unknown>;
  const statements = document.Statement ?? [];
  const kept = statements.filter((statement) => !(statement.Effect === 'Deny' && String(statement.Condition?.Bool?.['aws:SecureTransport']) === 'false'));
  if (kept.length !== statements.length) policy.addPropertyOverride('PolicyDocument', { ...document, Statement: kept });
}
