// Every integration file records what its process logged, the API's answers and the header values
// and payloads it sent, and writes them out when it ends, for the leak check in test/leaks
// (test/support/leak-scan.ts). This hook is registered before the file's own, so it runs after them:
// the lines of the file's teardown are in its record.
import { afterAll, expect } from 'vitest';
import { writeLeakRecord } from '../../support/leak-scan';
import { installLeakRecorder, leakRecordOf, markRecordingStarted } from './leak-record';

installLeakRecorder();
markRecordingStarted();

afterAll(() => {
  const file = expect.getState().testPath;
  if (!file) throw new Error('the leak record has no test file to name');
  writeLeakRecord(leakRecordOf(file));
});
