// Every integration file records the AWS requests the scheduler's functions make (through the
// shared and per-scheduler clients of the harness) and writes them out when it ends, for the
// grants check in test/grants.
import { afterAll } from 'vitest';
import { writeAccessLog } from '../../support/access-log';

afterAll(() => {
  writeAccessLog('integration');
});
