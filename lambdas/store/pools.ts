// A worker pool's routing entry: its job types and the queue URLs of its lanes, as the functions are
// told them (DISPATCH_POOLS) and the local runtime makes them.
import { z } from 'zod';
import { jobTypeSchema } from '../domain/job';

export const poolRouteSchema = z.strictObject({
  name: z.string().regex(/^[a-z][a-z0-9-]{0,31}$/),
  jobTypes: z.array(jobTypeSchema).max(100).readonly(),
  queueUrl: z.string().min(1),
  highQueueUrl: z.string().min(1).optional(),
  lowQueueUrl: z.string().min(1).optional(),
  dlqUrl: z.string().min(1),
  maxConcurrency: z.number().int().min(1).max(1000).optional(),
  lowMaxConcurrency: z.number().int().min(1).max(1000).optional(),
  timeoutSeconds: z.number().int().min(1).max(900).optional(),
  batchSize: z.number().int().min(1).max(10).optional(),
});
