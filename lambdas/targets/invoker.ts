// Routes an invocation to the adapter of its target kind.
import { callHttpTarget } from './http-target';
import type { TargetInvocation, TargetInvoker, TargetResult } from './target';

export const SUPPORTED_TARGET_KINDS = ['http'] as const;

export const targetInvoker: TargetInvoker = {
  async invoke(invocation: TargetInvocation): Promise<TargetResult> {
    const { target } = invocation.job;
    if (target.kind === 'http') return callHttpTarget(target, invocation);
    return {
      ok: false,
      timedOut: false,
      error: { code: 'TARGET_NOT_SUPPORTED', message: `${target.kind} targets are not supported`, retryable: false },
    };
  },
};
