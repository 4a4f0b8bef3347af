// Routes an invocation to the adapter of its target kind, with the target clients of the process.
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { SNSClient } from '@aws-sdk/client-sns';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { callEventBridgeTarget } from './eventbridge-target';
import { callHttpTarget } from './http-target';
import { callLambdaTarget } from './lambda-target';
import { callSqsTarget } from './sqs-target';
import type { TargetInvocation, TargetInvoker, TargetResult } from './target';

/** Clients for target calls only: one attempt each, as the run's retry policy does the retrying. */
export interface TargetClients {
  readonly sqs: SQSClient;
  readonly lambda: LambdaClient;
  readonly eventbridge: EventBridgeClient;
  /** Outcome notifications' SNS destinations (no target publishes to SNS). */
  readonly sns: SNSClient;
}

export const SUPPORTED_TARGET_KINDS = ['http', 'lambda', 'sqs', 'eventbridge', 'external'] as const;

export function createTargetInvoker(clients: TargetClients): TargetInvoker {
  return {
    async invoke(invocation: TargetInvocation): Promise<TargetResult> {
      const { target } = invocation.job;
      switch (target.kind) {
        case 'http':
          return callHttpTarget(target, invocation);
        case 'lambda':
          return callLambdaTarget(clients.lambda, target, invocation);
        case 'sqs':
          return callSqsTarget(clients.sqs, target, invocation);
        case 'eventbridge':
          return callEventBridgeTarget(clients.eventbridge, target, invocation);
        case 'external':
          // Never called: the worker offers such runs to external workers instead (execute-run).
          return { ok: false, timedOut: false, error: { code: 'EXTERNAL_TARGET', message: 'external runs are claimed by external workers', retryable: false } };
        case 'workflow':
          // Never called: the worker starts the workflow run of a workflow's schedule itself (leased-run).
          return {
            ok: false,
            timedOut: false,
            error: { code: 'WORKFLOW_SCHEDULE', message: "a workflow schedule's runs start workflow runs; they call no target", retryable: false },
          };
      }
    },
  };
}
