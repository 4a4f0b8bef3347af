import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'cdk',
          include: ['test/cdk/**/*.test.ts'],
          // One worker, modules shared across files: test/cdk/support/stacks.ts synthesizes each
          // configuration once for every file. A synthesis takes 10 s and more on two busy cores,
          // so the hooks that synthesize get minutes, not vitest's default 10 s.
          isolate: false,
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 300_000,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/integration/global-setup.ts'],
          // Records each function's AWS requests for the grants project, and what each file logged,
          // received from the API and sent as header values and payloads for the leaks project.
          setupFiles: ['test/integration/support/access-log-setup.ts', 'test/integration/support/leak-record-setup.ts'],
          sequence: { groupOrder: 0 },
          // The run-by-run INFO lines are for operators; tests keep warnings and errors.
          env: { POWERTOOLS_LOG_LEVEL: 'WARN' },
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          // The web console in headless Chromium (Debian's package) against the local runtime.
          name: 'browser',
          include: ['test/browser/**/*.test.ts'],
          globalSetup: ['test/browser/global-setup.ts'],
          sequence: { groupOrder: 0 },
          env: { POWERTOOLS_LOG_LEVEL: 'WARN' },
          // A page waits for runs on two loaded cores.
          testTimeout: 180_000,
          hookTimeout: 180_000,
        },
      },
      {
        test: {
          // Checks the integration files' recorded requests against the stack's grants, so it runs
          // after them.
          name: 'grants',
          include: ['test/grants/**/*.test.ts'],
          testTimeout: 60_000,
          // Its beforeAll synthesizes the stack: seconds, or more than vitest's 10 s on two busy cores.
          hookTimeout: 300_000,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          // No header value or payload the integration files sent is in a line they logged, nor a
          // header value in an answer they received (test/support/leak-scan.ts): after them, too.
          name: 'leaks',
          include: ['test/leaks/**/*.test.ts'],
          testTimeout: 120_000,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
