// One structured JSON logger per process. Payloads and API keys are never passed to it.
import { Logger } from '@aws-lambda-powertools/logger';

export const logger = new Logger({ serviceName: 'job-scheduler' });
