// Lambda entry point of the ticker.
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import { traceClient, tracer } from '../core/tracing';
import { createDeps } from '../app/deps';
import { readConfig } from '../config/config';
import { createAwsClients } from '../store/aws';
import { createTickerHandler } from './adapter';

export const handler = createTickerHandler(createDeps(readConfig(), createAwsClients(undefined, traceClient))).use(
  captureLambdaHandler(tracer, { captureResponse: false }),
);
