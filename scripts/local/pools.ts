// The local runtime's worker pools: LOCAL_POOLS, a JSON array in the shape of the stack property
// `pools` ([{ name, jobTypes, maxConcurrency, timeoutSeconds, batchSize? }]); none by default.
import { z } from 'zod';
import type { PoolDefinition } from '../../lambdas/store/pools';
import { poolDefinitionSchema } from '../../lambdas/store/pools';

export function localPoolsFromEnv(env: NodeJS.ProcessEnv = process.env): PoolDefinition[] {
  const raw = env.LOCAL_POOLS;
  if (!raw) return [];
  const parsed = z.array(poolDefinitionSchema).safeParse(JSON.parse(raw));
  if (!parsed.success) {
    throw new Error(
      `LOCAL_POOLS must be a JSON array of pools: [{ "name", "jobTypes", "maxConcurrency", "timeoutSeconds" }]: ${parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ')}`,
    );
  }
  // createLocalResources checks the pools together (validatePools).
  return parsed.data;
}
