// The scheduler's client package: `import { SchedulerClient } from '@job-scheduler/client'`.
export { SchedulerClient, JobsApi, RunsApi, DeadRunsApi, WorkflowsApi, SigningSecretsApi, AuditApi } from './scheduler-client.js';
export type { SchedulerClientOptions, CallOptions, CreateOptions, TracedOptions, UpdateOptions } from './scheduler-client.js';
export { SchedulerApiError, SchedulerConnectionError } from './errors.js';
export type { Problem, FieldError } from './errors.js';
export { WorkerClient, WorkerApiError, LeaseLostError, RunCancelledError, WorkFailure } from './worker-client.js';
export type { WorkerClientOptions, WorkContext, ProcessOutcome } from './worker-client.js';
export type { RetryOptions } from './transport.js';
export type * from './types.js';
// A target's check of a signed delivery (Standard Webhooks; docs/delivery.md#signed-deliveries).
export { verifyDelivery } from './webhook.js';
export type { VerifyFailure, VerifyOptions } from './webhook.js';
