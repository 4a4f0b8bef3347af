// The local runtime's worker pools: LOCAL_POOLS, a JSON array in the shape of the stack property
// `pools` ([{ name, jobTypes, maxConcurrency, timeoutSeconds, batchSize? }]); none by default.
import type { PoolDefinition } from '../../lambdas/store/schema';

export function localPoolsFromEnv(env: NodeJS.ProcessEnv = process.env): PoolDefinition[] {
  const raw = env.LOCAL_POOLS;
  if (!raw) return [];
  const parsed: unknown = JSON.parse(raw);
  if (!Array.isArray(parsed)) throw new Error('LOCAL_POOLS must be a JSON array of pools: [{ "name", "jobTypes", "maxConcurrency", "timeoutSeconds" }]');
  // createLocalResources checks each pool (validatePools).
  return parsed as PoolDefinition[];
}
