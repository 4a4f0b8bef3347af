// Lambda entry point of the worker (SQS event source mapping with partial batch responses).
import { createDeps } from '../app/deps';
import { readConfig } from '../config/config';
import { createAwsClients } from '../store/aws';
import { createWorkerHandler } from './adapter';

export const handler = createWorkerHandler(createDeps(readConfig(), createAwsClients()));
