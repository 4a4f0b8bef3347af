// The layer rules of eslint.config.js, checked against imports that break them and imports that
// keep them: a rule that matched nothing would pass `npm run lint` forever.
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const eslint = new ESLint({ cwd: process.cwd() });

async function restrictedImports(filePath: string, specifier: string): Promise<number> {
  const [result] = await eslint.lintText(`import { x } from '${specifier}';\nexport const y = x;\n`, { filePath });
  return result!.messages.filter((message) => message.ruleId === 'no-restricted-imports').length;
}

describe('import boundaries', { timeout: 120_000 }, () => {
  it.each([
    ['lambdas/domain/job.ts', '../store/keys'],
    ['lambdas/domain/job.ts', '../app/deps'],
    ['lambdas/domain/job.ts', '../targets/target'],
    ['lambdas/domain/job.ts', '@aws-sdk/client-dynamodb'],
    ['lambdas/targets/target.ts', '../store/keys'],
    ['lambdas/store/keys.ts', 'aws-cdk-lib'],
    ['lambdas/app/deps.ts', 'aws-cdk-lib/aws-sqs'],
    ['lambdas/api/adapter.ts', 'constructs'],
    ['lambdas/app/deps.ts', '../../lib/config'],
  ])('%s may not import %s', async (filePath, specifier) => {
    expect(await restrictedImports(filePath, specifier)).toBe(1);
  });

  it.each([
    ['lambdas/domain/job.ts', './run'],
    ['lambdas/domain/job.ts', '../core/errors'],
    ['lambdas/domain/job.ts', 'zod'],
    ['lambdas/targets/target.ts', '../domain/run'],
    ['lambdas/app/deps.ts', '../store/keys'],
  ])('%s may import %s', async (filePath, specifier) => {
    expect(await restrictedImports(filePath, specifier)).toBe(0);
  });
});
