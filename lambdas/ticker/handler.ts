// Lambda entry point of the ticker.
import { createDeps } from '../app/deps';
import { readConfig } from '../config/config';
import { createAwsClients } from '../store/aws';
import { createTickerHandler } from './adapter';

export const handler = createTickerHandler(createDeps(readConfig(), createAwsClients()));
