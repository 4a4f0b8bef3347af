// What `WorkerClient.process` sends to POST /v1/runs/{runId}/fail when the work throws: always a
// body the route's schema takes, so that a long message or an odd code cannot leave the run
// RUNNING until its lease ends (the route answered 400 to them).
import { describe, expect, it } from 'vitest';
import { MAX_RUN_ERROR_MESSAGE_LENGTH, RUN_ERROR_CODE_PATTERN, runErrorOf } from '../../clients/worker-client';
import { failSchema } from '../../lambdas/api/schemas';

const accepted = (error: ReturnType<typeof runErrorOf>): boolean => failSchema.safeParse({ leaseToken: 'lease_token_of_the_claim', error }).success;

describe("a work error as the fail route's schema takes it", () => {
  it('keeps an error that fits as it is', () => {
    expect(runErrorOf('UPSTREAM_DOWN', 'the warehouse is down', true)).toEqual({ code: 'UPSTREAM_DOWN', message: 'the warehouse is down', retryable: true });
  });

  it('cuts a long message to the bound, ending in an ellipsis, without splitting a surrogate pair', () => {
    const long = runErrorOf('WORKER_ERROR', 'x'.repeat(5000), true);
    expect(long.message).toHaveLength(MAX_RUN_ERROR_MESSAGE_LENGTH);
    expect(long.message.endsWith('x…')).toBe(true);
    expect(accepted(long)).toBe(true);
    const emoji = runErrorOf('WORKER_ERROR', `${'x'.repeat(MAX_RUN_ERROR_MESSAGE_LENGTH - 2)}😀😀`, false);
    expect(emoji.message).toBe(`${'x'.repeat(MAX_RUN_ERROR_MESSAGE_LENGTH - 2)}…`);
    expect(accepted(emoji)).toBe(true);
    expect(runErrorOf('E', 'y'.repeat(MAX_RUN_ERROR_MESSAGE_LENGTH), true).message).toBe('y'.repeat(MAX_RUN_ERROR_MESSAGE_LENGTH));
  });

  it("fits a code to the route's pattern", () => {
    expect(runErrorOf('bad code/with spaces!', 'm', false).code).toBe('bad_code_with_spaces_');
    expect(runErrorOf('C'.repeat(100), 'm', false).code).toBe('C'.repeat(64));
    expect(runErrorOf('', 'm', false).code).toBe('WORKER_ERROR');
    for (const code of ['bad code/with spaces!', 'C'.repeat(100), '', 'é', 'ns:E.1-x']) {
      const error = runErrorOf(code, 'm'.repeat(2000), true);
      expect(RUN_ERROR_CODE_PATTERN.test(error.code), code).toBe(true);
      expect(accepted(error), code).toBe(true);
    }
  });

  it('states the bounds of failSchema', () => {
    expect(accepted({ code: 'E', message: 'm'.repeat(MAX_RUN_ERROR_MESSAGE_LENGTH + 1), retryable: true })).toBe(false);
    expect(accepted({ code: 'E'.repeat(65), message: 'm', retryable: true })).toBe(false);
    expect(accepted({ code: 'E'.repeat(64), message: 'm'.repeat(MAX_RUN_ERROR_MESSAGE_LENGTH), retryable: true })).toBe(true);
  });
});
