// Lambda entry point of the API: configuration and clients are built once per container.
import { createDeps } from '../app/deps';
import { readConfig } from '../config/config';
import { createAwsClients } from '../store/aws';
import { createApiHandler } from './adapter';

export const handler = createApiHandler(createDeps(readConfig(), createAwsClients()));
