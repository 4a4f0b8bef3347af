// Integration tests run against the emulator process: the one at AWS_ENDPOINT_URL, or moto
// started (and installed if needed) by the same code `npm run dev` uses.
import type { TestProject } from 'vitest/node';
import { ensureEmulator } from '../../scripts/local/emulator';
import { clearAccessLog } from '../support/access-log';
import { clearLeakRecords } from '../support/leak-scan';

declare module 'vitest' {
  export interface ProvidedContext {
    awsEndpoint: string;
  }
}

export default async function setup(project: TestProject): Promise<void> {
  // A fresh log of the functions' requests for this run's grants check.
  clearAccessLog();
  // And of what the files logged and sent, for this run's leak check.
  clearLeakRecords();
  const emulator = await ensureEmulator();
  project.provide('awsEndpoint', emulator.endpoint);
}
