// The typed client of the scheduler's API: one method per route, grouped as the routes are (jobs,
// runs, dead runs, workflows, external workers, signing secrets, the audit trail), on one transport. Creates carry an Idempotency-Key of their
// own, reused by the transport's retries of the same call; lists come as pages and as async
// iterators over every item.
import type { RetryOptions } from './transport.js';
import { Transport } from './transport.js';
import type { HealthQuery, HealthReport, PreviewRequest, PreviewResult } from './types.js';
import type { CallOptions } from './api-calls.js';
import { JobsApi } from './jobs-api.js';
import { DeadRunsApi, RunsApi } from './runs-api.js';
import { AuditApi, SigningSecretsApi } from './operations-api.js';
import { WorkflowsApi } from './workflows-api.js';
import { WorkerClient } from './worker-client.js';

export type { CallOptions, CreateOptions, TracedOptions, UpdateOptions } from './api-calls.js';
export { AuditApi, DeadRunsApi, JobsApi, RunsApi, SigningSecretsApi, WorkflowsApi };

export interface SchedulerClientOptions {
  /**
   * The API's base URL, e.g. https://abc.execute-api.eu-west-1.amazonaws.com or http://127.0.0.1:3000,
   * with or without the routes' `/v1` (a trailing `/v1` or `/v1/` is dropped).
   */
  readonly baseUrl: string;
  /** The tenant's API key (sent as `Authorization: Bearer <key>`). */
  readonly apiKey: string;
  /** Names this process in the leaseOwner of runs its `workers` claim. */
  readonly workerId?: string;
  /** Retries of 429 and 503 answers: attempts and total time (defaults: 4 tries within 30 s). */
  readonly retry?: RetryOptions;
  readonly fetch?: typeof fetch;
}

/**
 * ```ts
 * const client = new SchedulerClient({ baseUrl: process.env.SCHEDULER_URL!, apiKey: process.env.SCHEDULER_API_KEY! });
 * const { job } = await client.jobs.create({ name: 'nightly', type: 'report', schedule: { kind: 'cron', expression: '0 2 * * *' }, target: { kind: 'http', url: 'https://example.com/hook' } });
 * for await (const run of client.runs.iterate(job.jobId)) console.log(run.status);
 * ```
 */
export class SchedulerClient {
  readonly jobs: JobsApi;
  readonly runs: RunsApi;
  readonly deadRuns: DeadRunsApi;
  readonly workflows: WorkflowsApi;
  /** The webhook signing secrets: issue (rotate), list, revoke. */
  readonly signingSecrets: SigningSecretsApi;
  /** The audit trail: who changed what, and when. */
  readonly audit: AuditApi;
  /** External workers: claim, heartbeat, complete, fail, and `process` around a work function. */
  readonly workers: WorkerClient;
  private readonly transport: Transport;

  constructor(options: SchedulerClientOptions) {
    this.transport = new Transport(options);
    this.jobs = new JobsApi(this.transport);
    this.runs = new RunsApi(this.transport);
    this.deadRuns = new DeadRunsApi(this.transport, this.runs);
    this.workflows = new WorkflowsApi(this.transport);
    this.signingSecrets = new SigningSecretsApi(this.transport);
    this.audit = new AuditApi(this.transport);
    this.workers = new WorkerClient({ transport: this.transport, ...(options.workerId ? { workerId: options.workerId } : {}) });
  }

  get baseUrl(): string {
    return this.transport.baseUrl;
  }

  /** The next fire times of a schedule, without creating a job. */
  async preview(request: PreviewRequest, options: CallOptions = {}): Promise<PreviewResult> {
    return (await this.transport.send({ method: 'POST', path: '/v1/schedules/preview', body: request, repeat: 'repeatable', signal: options.signal }))
      .body as PreviewResult;
  }

  /** The API's OpenAPI 3.1 document (`GET /v1/openapi.json`). */
  async openApi(options: CallOptions = {}): Promise<Record<string, unknown>> {
    return (await this.transport.send({ method: 'GET', path: '/v1/openapi.json', repeat: 'repeatable', signal: options.signal })).body as Record<
      string,
      unknown
    >;
  }

  /** Whether the scheduler keeps up: queues, the ticker, the tenant's runs and in-flight work. */
  async health(query: HealthQuery = {}, options: CallOptions = {}): Promise<HealthReport> {
    return (await this.transport.send({ method: 'GET', path: '/v1/health', query: { ...query }, repeat: 'repeatable', signal: options.signal }))
      .body as HealthReport;
  }
}
