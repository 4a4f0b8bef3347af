import { describe, expect, it } from 'vitest';
import { classifyStatus, isRetryableStatus } from '../../lambdas/targets/http-target';

describe('HTTP failure classes', () => {
  it('retries 408, 429 and 5xx, and no other 4xx', () => {
    expect([408, 429, 500, 502, 503, 504].every(isRetryableStatus)).toBe(true);
    expect([400, 401, 403, 404, 409, 410, 422].some(isRetryableStatus)).toBe(false);
  });

  it("lets the target's X-Retryable header override the status class", () => {
    expect(classifyStatus(503, 'false')).toBe(false);
    expect(classifyStatus(503, ' FALSE ')).toBe(false);
    expect(classifyStatus(409, 'true')).toBe(true);
    expect(classifyStatus(503, null)).toBe(true);
    expect(classifyStatus(400, 'maybe')).toBe(false);
  });
});
