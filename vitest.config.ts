import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
        },
      },
      {
        test: {
          name: 'cdk',
          include: ['test/cdk/**/*.test.ts'],
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/integration/global-setup.ts'],
          // The run-by-run INFO lines are for operators; tests keep warnings and errors.
          env: { POWERTOOLS_LOG_LEVEL: 'WARN' },
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
