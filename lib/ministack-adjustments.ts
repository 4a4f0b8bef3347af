// Emulator-only template adjustments for deploying into MiniStack (npm run test:deploy), applied
// only when the app is synthesized with `-c ministack=true` (bin/scheduler.ts), never by default.
// What each works around and why: docs/decisions/0077-deploy-test-in-ministack.md.
import type { IAspect } from 'aws-cdk-lib';
import { Stack } from 'aws-cdk-lib';
import { CfnAlarm } from 'aws-cdk-lib/aws-cloudwatch';
import { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import type { IConstruct } from 'constructs';

/** A math alarm's query as the L2 Alarm writes it, tokens resolved. */
interface ResolvedQuery {
  readonly metricStat?: {
    readonly metric: { readonly namespace?: string; readonly metricName?: string; readonly dimensions?: CfnAlarm.DimensionProperty[] };
    readonly period: number;
    readonly stat: string;
  };
}

/** The context key that turns the adjustments on. */
export const MINISTACK_CONTEXT = 'ministack';

/**
 * - MiniStack refuses an alarm given as metric math (`Metrics`). It evaluates no alarm either, so a
 *   math alarm is deployed there as an alarm on its first input metric: the alarm resource (and the
 *   dashboard's alarm widget that names it) exists, with a condition that is never evaluated.
 * - MiniStack runs a function from its unpacked code folder (the process's working directory), not
 *   /var/task: the workers' extra CA bundle is named relative to it.
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
