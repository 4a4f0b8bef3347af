// The browser tests use the emulator as the integration tests do, but leave the integration
// files' access log alone: the integration project's own global setup clears it, and a second
// clear from this project, run while integration files had already written theirs, lost them for
// the grants check.
import type { TestProject } from 'vitest/node';
import { ensureEmulator } from '../../scripts/local/emulator';

export default async function setup(project: TestProject): Promise<void> {
  const emulator = await ensureEmulator();
  project.provide('awsEndpoint', emulator.endpoint);
}
