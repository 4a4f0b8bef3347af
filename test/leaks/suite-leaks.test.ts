// No header value or payload any integration file sent is in a line it logged (its metric lines and
// its worker processes' lines among them), and no header value in an answer the API gave it. Runs
// after the integration project (vitest.config.ts: sequence.groupOrder), reading what each of its
// files recorded (test/integration/support/leak-record.ts). Workflows, notifications, debounce,
// backfills, external workers and the rest are covered by the integration files that drive them.
import { beforeAll, describe, expect, it } from 'vitest';
import type { LeakRecord } from '../support/leak-scan';
import { MIN_HEADER_VALUE_LENGTH, RECORDING_STARTED, findLeaks, readLeakRecords, unrecognisableHeaderValues } from '../support/leak-scan';

let records: LeakRecord[];

beforeAll(() => {
  records = readLeakRecords();
});

describe('no header value or payload leaks anywhere in the integration suite', () => {
  it("has the integration files' records to check, each of which captured the logger's lines, and what it sent if it called the API", () => {
    // Empty when the integration project did not run first: `npm test` and `npm run test:integration` run both.
    expect(records.length, 'no records: run the integration project before this one (npm run test:integration)').toBeGreaterThan(0);
    // Each file's recorder logs a line when it starts, and a file that called the API sent its API
    // key, a header value: a record without the one or the other was not captured, and finding
    // nothing in it below would mean nothing.
    expect(records.filter((record) => !record.lines.some((line) => line.includes(RECORDING_STARTED))).map((record) => record.file)).toEqual([]);
    expect(records.filter((record) => record.responses.length > 0 && record.headerValues.length === 0).map((record) => record.file)).toEqual([]);
  });

  it(`has only header values it can recognise (at least ${MIN_HEADER_VALUE_LENGTH} characters): a test sends distinctive ones`, () => {
    expect(records.flatMap((record) => unrecognisableHeaderValues(record).map((value) => `${record.file}: ${JSON.stringify(value)}`))).toEqual([]);
  });

  it('finds no header value in a log line or an API answer, and no payload in a log line', () => {
    expect(records.flatMap(findLeaks)).toEqual([]);
  });
});
