// Worker pools: what a pool is (the stack property `pools`, and the default pool, an ordinary pool
// of its own), the queues it has and what they are called, and its routing entry as the functions
// read it (DISPATCH_POOLS, lambdas/config/settings.ts). lib/, scripts/ and lambdas/ all use these.
import { z } from 'zod';
import { jobTypeSchema } from '../domain/job';
import type { QueueDefinition } from './schema';
import { dispatchDeadLetterQueue, dispatchQueue, workerConsumer } from './schema';

export const DEFAULT_POOL_NAME = 'default';

/** Every pool, the default one included: its job types, limits and worker timeout. */
export const poolSchema = z.strictObject({
  /** Lower-case letters, digits and dashes. */
  name: z.string().regex(/^[a-z][a-z0-9-]{0,31}$/),
  /** The job types it runs; the default pool lists none and runs every type no other pool lists. */
  jobTypes: z.array(jobTypeSchema).max(100).readonly(),
  /** Concurrent batches of the high and standard lanes each (the event source mapping's maxConcurrency; local pollers); none: uncapped. */
  maxConcurrency: z.number().int().min(1).max(1000).optional(),
  /** Concurrent batches of the low lane; default lowLaneConcurrency(maxConcurrency). At most maxConcurrency. */
  lowMaxConcurrency: z.number().int().min(1).max(1000).optional(),
  /** The pool's worker function timeout (its runs' timeoutSeconds must fit inside it). */
  timeoutSeconds: z.number().int().min(1).max(900),
  /** Messages per batch; default workerConsumer.batchSize. */
  batchSize: z.number().int().min(1).max(10).optional(),
});
export type Pool = z.infer<typeof poolSchema>;

/** A pool of the stack property `pools` (and LOCAL_POOLS): it caps its concurrency. */
export const poolDefinitionSchema = poolSchema.required({ maxConcurrency: true });
export type PoolDefinition = z.infer<typeof poolDefinitionSchema>;

/** A pool's routing entry: the pool and its queues' URLs (a pool without high or low lane sends those runs to its standard lane). */
export const poolRouteSchema = poolSchema.partial({ timeoutSeconds: true }).extend({
  /** The standard lane: `normal` runs. */
  queueUrl: z.string().min(1),
  highQueueUrl: z.string().min(1).optional(),
  lowQueueUrl: z.string().min(1).optional(),
  dlqUrl: z.string().min(1),
});
export type PoolRoute = z.infer<typeof poolRouteSchema>;

/** The default pool: the job types no other pool lists, on the worker's own timeout, capped only if the deployment says so. */
export function defaultPool(limits: { readonly maxConcurrency?: number; readonly lowMaxConcurrency?: number } = {}): Pool {
  return {
    name: DEFAULT_POOL_NAME,
    jobTypes: [],
    timeoutSeconds: workerConsumer.functionTimeoutSeconds,
    ...(limits.maxConcurrency !== undefined ? { maxConcurrency: limits.maxConcurrency } : {}),
    ...(limits.lowMaxConcurrency !== undefined ? { lowMaxConcurrency: limits.lowMaxConcurrency } : {}),
  };
}

/** The low lane's concurrency in a pool whose lanes are uncapped (the default pool, unless configured). */
export const UNCAPPED_POOL_LOW_LANE_CONCURRENCY = 50;

/**
 * Concurrent batches of a pool's low lane (decision 0051): a quarter of the pool's lane
 * concurrency, at least `min` (the event source mapping takes 2 at least), unless set.
 */
export function lowLaneConcurrency(maxConcurrency: number | undefined, min: number, explicit?: number): number {
  if (explicit !== undefined) return explicit;
  if (maxConcurrency === undefined) return UNCAPPED_POOL_LOW_LANE_CONCURRENCY;
  return Math.min(maxConcurrency, Math.max(min, Math.ceil(maxConcurrency / 4)));
}

/** A pool's queues: `high` runs, `normal` runs (the standard lane), `low` runs, and the DLQ they share. */
export interface PoolLanes<Q> {
  readonly standard: Q;
  readonly high: Q;
  readonly low: Q;
  readonly dlq: Q;
}

/**
 * What a pool's resources are called: the prefix of its queues' construct ids (and its worker's) and
 * the part of its local queue names. The one place the default pool differs: it keeps the names of
 * the dispatch queue from before pools, so deployed queues are not replaced (decision 0091).
 */
export function poolResourceNames(name: string): { readonly id: string; readonly local: string } {
  if (name === DEFAULT_POOL_NAME) return { id: '', local: 'dispatch' };
  return {
    id: `Pool${name
      .split('-')
      .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
      .join('')}`,
    local: `pool-${name}`,
  };
}

/** The queues of a pool, as data: every lane's visibility timeout is six times the pool's worker timeout, as the event source mapping requires. */
export function poolQueues(pool: Pick<Pool, 'name' | 'timeoutSeconds'>): PoolLanes<QueueDefinition> {
  const { id } = poolResourceNames(pool.name);
  const lane = { ...dispatchQueue, visibilityTimeoutSeconds: 6 * pool.timeoutSeconds };
  return {
    standard: { ...lane, id: `${id}Dispatch` },
    high: { ...lane, id: `${id}DispatchHigh` },
    low: { ...lane, id: `${id}DispatchLow` },
    dlq: { ...dispatchDeadLetterQueue, id: `${id}DispatchDlq` },
  };
}

/** Checks a deployment's pools: names, job types listed once, limits the event source mapping accepts. */
export function validatePools(pools: readonly PoolDefinition[], { minConcurrency }: { minConcurrency: number }): void {
  const seenTypes = new Map<string, string>();
  const seenNames = new Set<string>();
  for (const pool of pools) {
    if (!/^[a-z][a-z0-9-]{0,31}$/.test(pool.name))
      throw new Error(`pool name "${pool.name}": use lower-case letters, digits and dashes, starting with a letter (at most 32)`);
    if (pool.name === DEFAULT_POOL_NAME) throw new Error('pool name "default" is the implicit pool of every job type no pool lists');
    if (seenNames.has(pool.name)) throw new Error(`pool "${pool.name}" is defined twice`);
    seenNames.add(pool.name);
    if (pool.jobTypes.length === 0) throw new Error(`pool "${pool.name}" lists no job type`);
    for (const jobType of pool.jobTypes) {
      const refusal = jobTypeSchema.safeParse(jobType);
      if (!refusal.success) throw new Error(`pool "${pool.name}": job type "${jobType}": ${refusal.error.issues.map((issue) => issue.message).join('; ')}`);
      const other = seenTypes.get(jobType);
      if (other) throw new Error(`job type "${jobType}" is in pools "${other}" and "${pool.name}"`);
      seenTypes.set(jobType, pool.name);
    }
    if (!Number.isInteger(pool.maxConcurrency) || pool.maxConcurrency < minConcurrency || pool.maxConcurrency > 1000) {
      throw new Error(`pool "${pool.name}": maxConcurrency must be a whole number from ${minConcurrency} to 1000`);
    }
    if (
      pool.lowMaxConcurrency !== undefined &&
      (!Number.isInteger(pool.lowMaxConcurrency) || pool.lowMaxConcurrency < minConcurrency || pool.lowMaxConcurrency > pool.maxConcurrency)
    ) {
      throw new Error(`pool "${pool.name}": lowMaxConcurrency must be a whole number from ${minConcurrency} to its maxConcurrency (${pool.maxConcurrency})`);
    }
    if (!Number.isInteger(pool.timeoutSeconds) || pool.timeoutSeconds < 10 || pool.timeoutSeconds > 900) {
      throw new Error(`pool "${pool.name}": timeoutSeconds must be a whole number from 10 to 900 (a Lambda function's limit)`);
    }
    if (pool.batchSize !== undefined && (!Number.isInteger(pool.batchSize) || pool.batchSize < 1 || pool.batchSize > 10)) {
      throw new Error(`pool "${pool.name}": batchSize must be a whole number from 1 to 10`);
    }
  }
}
