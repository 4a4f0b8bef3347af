// Lambda entry point of the API: configuration and clients are built once per container.
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import { traceClient, tracer } from '../core/tracing';
import { createDeps } from '../app/deps';
import { readConfig } from '../config/config';
import { createAwsClients } from '../store/aws';
import { createApiHandler } from './adapter';

// X-Ray: the invocation and its AWS requests; never the response (it carries payloads).
export const handler = createApiHandler(createDeps(readConfig(), createAwsClients(undefined, traceClient))).use(
  captureLambdaHandler(tracer, { captureResponse: false }),
);
