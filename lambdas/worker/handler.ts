// Lambda entry point of the worker (SQS event source mapping with partial batch responses).
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import { traceClient, tracer } from '../core/tracing';
import { createDeps } from '../app/deps';
import { readConfig } from '../config/config';
import { createAwsClients } from '../store/aws';
import { createWorkerHandler } from './adapter';

// X-Ray: the invocation, its AWS requests, a subsegment per run and per target call (lambdas/core/tracing.ts).
export const handler = createWorkerHandler(createDeps(readConfig(), createAwsClients(undefined, traceClient))).use(
  captureLambdaHandler(tracer, { captureResponse: false }),
);
