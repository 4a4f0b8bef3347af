// Integration tests run against the emulator process: the one at AWS_ENDPOINT_URL, or moto
// started (and installed if needed) by the same code `npm run dev` uses.
import type { TestProject } from 'vitest/node';
import { ensureEmulator } from '../../scripts/local/emulator';

declare module 'vitest' {
  export interface ProvidedContext {
    awsEndpoint: string;
  }
}

export default async function setup(project: TestProject): Promise<void> {
  const emulator = await ensureEmulator();
  project.provide('awsEndpoint', emulator.endpoint);
}
