// Invokes a Lambda function synchronously with the run's envelope as its event. A function error
// (the function threw, timed out or crashed) is the attempt's failure, retryable unless the
// function marks it permanent: an error named `PermanentError` (the Node runtime reports the
// error's name as errorType) or a message starting with `[permanent]` (which survives runtimes and
// emulators that report every error as Runtime.HandlerError).
import type { LambdaClient } from '@aws-sdk/client-lambda';
import { InvokeCommand } from '@aws-sdk/client-lambda';
import type { Target } from '../domain/job';
import { envelopeOf } from './envelope';
import { callSignal, sdkFailure } from './sdk-failure';
import type { TargetInvocation, TargetResult } from './target';
import { stepResultOf } from './target';

export type LambdaTarget = Extract<Target, { kind: 'lambda' }>;

export const PERMANENT_ERROR_TYPE = 'PermanentError';
export const PERMANENT_MESSAGE_PREFIX = '[permanent]';

/** The failure a function error payload describes. */
export function functionErrorOf(functionError: string, payload: Uint8Array | undefined): TargetResult {
  let errorType = functionError;
  let errorMessage = 'the function failed';
  try {
    const parsed: unknown = payload && payload.length > 0 ? JSON.parse(Buffer.from(payload).toString('utf8')) : null;
    if (typeof parsed === 'object' && parsed !== null) {
      const record = parsed as Record<string, unknown>;
      if (typeof record.errorType === 'string') errorType = record.errorType;
      if (typeof record.errorMessage === 'string') errorMessage = record.errorMessage;
    }
  } catch {
    // Not JSON: the function's own words are not needed to class the failure.
  }
  const permanent = errorType === PERMANENT_ERROR_TYPE || errorMessage.trimStart().toLowerCase().startsWith(PERMANENT_MESSAGE_PREFIX);
  const timedOut = errorType === 'Sandbox.Timedout' || /Task timed out/.test(errorMessage);
  return {
    ok: false,
    timedOut,
    error: { code: timedOut ? 'LAMBDA_TIMEOUT' : 'LAMBDA_FUNCTION_ERROR', message: `${errorType}: ${errorMessage}`.slice(0, 512), retryable: !permanent },
  };
}

export async function callLambdaTarget(lambda: LambdaClient, target: LambdaTarget, invocation: TargetInvocation): Promise<TargetResult> {
  const { timeout, signal } = callSignal(invocation.timeoutMs, invocation.signal);
  try {
    const out = await lambda.send(
      new InvokeCommand({
        FunctionName: target.functionArn,
        InvocationType: 'RequestResponse',
        Payload: Buffer.from(JSON.stringify(envelopeOf(invocation.job, invocation.run, invocation.payload, invocation.traceparent, invocation.step)), 'utf8'),
      }),
      { abortSignal: signal },
    );
    if (out.FunctionError) return functionErrorOf(out.FunctionError, out.Payload);
    const detail = `Lambda ${out.StatusCode ?? 200}`;
    if (invocation.step && out.Payload)
      return stepResultOf(Buffer.from(out.Payload).toString('utf8'), 'application/json', detail, undefined, invocation.resultLimitBytes);
    return { ok: true, detail };
  } catch (error) {
    return sdkFailure(error, timeout, invocation.signal, invocation.timeoutMs);
  }
}
