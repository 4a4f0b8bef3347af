// Lambda entry point of the API authorizer: clients and the key cache live for the container.
import middy from '@middy/core';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import { traceClient, tracer } from '../core/tracing';
import { Authenticator } from '../app/authenticate';
import { readConfig } from '../config/config';
import { ApiKeysRepository } from '../store/api-keys-repository';
import { createAwsClients } from '../store/aws';
import { TenantsRepository } from '../store/tenants-repository';
import { createAuthorizerHandler } from './adapter';

const config = readConfig();
const clients = createAwsClients(undefined, traceClient);
export const handler = middy(
  createAuthorizerHandler(
    new Authenticator(
      new ApiKeysRepository(clients.dynamo, config.jobsTable),
      new TenantsRepository(clients.dynamo, config.jobsTable),
      config.tenantDefaults,
      Date.now,
    ),
  ),
).use(captureLambdaHandler(tracer, { captureResponse: false }));
