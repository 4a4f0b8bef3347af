// Lambda entry point of the ticker.
import { createDeps } from '../app/deps';
import { readConfig } from '../core/config';
import { createAwsClients } from '../store/aws';
import { createTickerHandler } from './app';

export const handler = createTickerHandler(createDeps(readConfig(), createAwsClients()));
