// The suite-wide leak check's scan (test/support/leak-scan.ts): what counts as a header value or a
// payload sent, and that each is found where it must never be.
import { describe, expect, it } from 'vitest';
import type { LeakRecord } from '../support/leak-scan';
import { INTENDED_LINES, findLeaks, payloadNeedlesOf, sentValuesOf, unrecognisableHeaderValues } from '../support/leak-scan';

const record = (overrides: Partial<LeakRecord>): LeakRecord => ({
  file: 'test/integration/x.test.ts',
  lines: [],
  responses: [],
  headerValues: [],
  payloadNeedles: [],
  ...overrides,
});

describe('the leak scan', () => {
  it("takes header values from every target's headers (a job's, a PATCH's, a workflow step's), not references or the mask, and payloads wherever they are", () => {
    const sent = sentValuesOf({
      target: { kind: 'http', url: 'https://x', headers: { 'X-Token': 'token-value-1', Auth: { secretArn: 'arn:…' }, Kept: '<redacted>' } },
      payload: { invoice: 'inv-0042-abcdef' },
      steps: [{ id: 'a', target: { kind: 'http', url: 'https://y', headers: { 'X-Step': 'step-header-value' } }, payload: [1, 2] }],
      result: 'a-result-text',
    });
    expect(sent.headerValues).toEqual(['token-value-1', 'step-header-value']);
    expect(sent.payloads).toEqual([{ invoice: 'inv-0042-abcdef' }, [1, 2], 'a-result-text']);
    // The other strings (logged by design, as names and types are) are not payload values to find.
    expect(sent.otherStrings).toEqual(expect.arrayContaining(['http', 'https://x', 'a']));
    expect(sent.otherStrings).not.toContain('inv-0042-abcdef');
  });

  it('walks a body nested thousands deep without failing (the API refuses it)', () => {
    const deep = JSON.parse(`${'['.repeat(5000)}1${']'.repeat(5000)}`) as unknown;
    expect(sentValuesOf({ payload: deep, nested: deep })).toMatchObject({ headerValues: [], payloads: [deep] });
    expect(() => payloadNeedlesOf(deep)).not.toThrow();
  });

  it('looks for a payload by its JSON and its string values long enough to find', () => {
    expect(payloadNeedlesOf({ invoice: 'inv-0042-abcdef', n: 1, short: 'abc' })).toEqual([
      '{"invoice":"inv-0042-abcdef","n":1,"short":"abc"}',
      'inv-0042-abcdef',
    ]);
    expect(payloadNeedlesOf({ n: 1 })).toEqual([]);
    expect(payloadNeedlesOf('a-whole-string-payload')).toEqual(['a-whole-string-payload']);
  });

  it('finds a header value planted in a log line or an answer, and a payload in a log line', () => {
    const planted = record({
      headerValues: ['hdr-0123456789'],
      payloadNeedles: ['payload-abcdef'],
      lines: ['{"level":"INFO","message":"run finished","runId":"r1"}', '{"level":"DEBUG","message":"calling","headers":{"x-token":"hdr-0123456789"}}'],
      responses: ['{"target":{"headers":{"X-Token":"hdr-0123456789"}}}'],
    });
    expect(findLeaks(planted).map(({ kind, where, value }) => [kind, where, value])).toEqual([
      ['header value', 'log line', 'hdr-0123456789'],
      ['header value', 'API answer', 'hdr-0123456789'],
    ]);
    expect(findLeaks(record({ payloadNeedles: ['payload-abcdef'], lines: ['{"payload":{"note":"payload-abcdef"}}'] }))).toEqual([
      expect.objectContaining({ kind: 'payload', where: 'log line', value: 'payload-abcdef' }),
    ]);
  });

  it('finds nothing where nothing was said, lets payloads be in answers (their owner reads them), and refuses header values too short to find', () => {
    const clean = record({
      headerValues: ['hdr-0123456789', '1'],
      payloadNeedles: ['payload-abcdef'],
      lines: ['{"level":"INFO","message":"run finished"}'],
      responses: ['{"payload":{"note":"payload-abcdef"},"target":{"headers":{"X-Token":"<redacted>"}}}'],
    });
    expect(findLeaks(clean)).toEqual([]);
    expect(unrecognisableHeaderValues(clean)).toEqual(['1']);
    // White space holds nothing to keep (a test of refused values sends "\n").
    expect(unrecognisableHeaderValues(record({ headerValues: ['\n', ' '] }))).toEqual([]);
  });

  it('passes over the lines that show a value on purpose, and only those', () => {
    expect(INTENDED_LINES.every(({ why }) => why.length > 0)).toBe(true);
    const key = 'dev_0123456789abcdefghij';
    const banner = record({
      headerValues: [key],
      lines: [
        `  API key    ${key}   (tenant "dev"; set DEV_API_KEY to choose it)`,
        `    -H "Authorization: Bearer ${key}" -H 'content-type: application/json' \\`,
      ],
    });
    expect(findLeaks(banner)).toEqual([]);
    expect(findLeaks({ ...banner, lines: [...banner.lines, `{"level":"INFO","message":"authenticated","key":"${key}"}`] })).toHaveLength(1);
  });
});
