// The typed client of the scheduler's API: one method per route, grouped as the routes are (jobs,
// runs, dead runs, external workers), on one transport. Creates carry an Idempotency-Key of their
// own, reused by the transport's retries of the same call; lists come as pages and as async
// iterators over every item.
import type { RetryOptions } from './transport.js';
import { Transport, segment } from './transport.js';
import type {
  BulkReplayRequest,
  BulkReplayResult,
  CreatedJob,
  DeadRunsQuery,
  HealthQuery,
  HealthReport,
  JobDetail,
  JobPatch,
  JobSpecInput,
  JobView,
  ListJobsQuery,
  Page,
  PageQuery,
  PauseRequest,
  PreviewRequest,
  SkipRequest,
  PreviewResult,
  Run,
  RunNotification,
  WorkflowRunNotification,
  TriggerRequest,
  ListWorkflowRunsQuery,
  ListWorkflowsQuery,
  WorkflowDetail,
  WorkflowRun,
  WorkflowSpecInput,
  WorkflowSummary,
  WorkflowView,
  Backfill,
  BackfillRequest,
} from './types.js';
import { WorkerClient } from './worker-client.js';

export interface SchedulerClientOptions {
  /** The API's base URL, e.g. https://abc.execute-api.eu-west-1.amazonaws.com or http://127.0.0.1:3000. */
  readonly baseUrl: string;
  /** The tenant's API key (sent as `Authorization: Bearer <key>`). */
  readonly apiKey: string;
  /** Names this process in the leaseOwner of runs its `workers` claim. */
  readonly workerId?: string;
  /** Retries of 429 and 503 answers: attempts and total time (defaults: 4 tries within 30 s). */
  readonly retry?: RetryOptions;
  readonly fetch?: typeof fetch;
}

/** Per call: an abort signal; for creates, the Idempotency-Key (a random one otherwise). */
export interface CallOptions {
  readonly signal?: AbortSignal;
}

/** Calls that make runs: the W3C trace context they join (`traceparent`); without it each run starts a new trace. */
export interface TracedOptions extends CallOptions {
  readonly traceparent?: string;
}

const traceHeaders = (options: TracedOptions): Record<string, string> => (options.traceparent === undefined ? {} : { traceparent: options.traceparent });

export interface CreateOptions extends TracedOptions {
  /** Sent as Idempotency-Key; a retry of the call (by you, later) with the same key and body gets the same job. */
  readonly idempotencyKey?: string;
}

export interface UpdateOptions extends CallOptions {
  /** The job version the change expects (If-Match): a job changed since answers 412. */
  readonly ifMatch?: number;
}

async function* everyItem<T>(fetchPage: (cursor: string | undefined) => Promise<Page<T>>, cursor: string | undefined): AsyncGenerator<T, void, undefined> {
  let next = cursor;
  do {
    const page = await fetchPage(next);
    yield* page.items;
    next = page.nextCursor ?? undefined;
  } while (next !== undefined);
}

export class JobsApi {
  constructor(private readonly transport: Transport) {}

  /** Creates a job; the Idempotency-Key makes the transport's retries (and yours, with the same key) safe. */
  async create(spec: JobSpecInput, options: CreateOptions = {}): Promise<CreatedJob> {
    const idempotencyKey = options.idempotencyKey ?? globalThis.crypto.randomUUID();
    const answer = await this.transport.send({
      method: 'POST',
      path: '/v1/jobs',
      body: spec,
      headers: { 'idempotency-key': idempotencyKey, ...traceHeaders(options) },
      repeat: 'repeatable',
      signal: options.signal,
    });
    const created = answer.body as Omit<CreatedJob, 'replayed'>;
    return { ...created, replayed: answer.headers.get('idempotent-replayed') === 'true' };
  }

  async list(query: ListJobsQuery = {}, options: CallOptions = {}): Promise<Page<JobView>> {
    return (await this.transport.send({ method: 'GET', path: '/v1/jobs', query: { ...query }, repeat: 'repeatable', signal: options.signal }))
      .body as Page<JobView>;
  }

  /** Every job matching the filters, a page (of `limit`) at a time: `for await (const job of client.jobs.iterate())`. */
  iterate(query: ListJobsQuery = {}, options: CallOptions = {}): AsyncGenerator<JobView, void, undefined> {
    return everyItem((cursor) => this.list({ ...query, cursor }, options), query.cursor);
  }

  async get(jobId: string, options: CallOptions = {}): Promise<JobDetail> {
    return (await this.transport.send({ method: 'GET', path: `/v1/jobs/${segment(jobId)}`, repeat: 'repeatable', signal: options.signal })).body as JobDetail;
  }

  /** Replaces the given fields (a schedule change re-plans the pending occurrence). */
  async update(jobId: string, patch: JobPatch, options: UpdateOptions = {}): Promise<JobView> {
    const headers: Record<string, string> = options.ifMatch === undefined ? {} : { 'if-match': `"${options.ifMatch}"` };
    // A repeat under If-Match would meet the version the first try made (412): sent once then.
    const repeat = options.ifMatch === undefined ? 'repeatable' : 'once';
    return (await this.transport.send({ method: 'PATCH', path: `/v1/jobs/${segment(jobId)}`, body: patch, headers, repeat, signal: options.signal }))
      .body as JobView;
  }

  /** Pauses the job (with a note, and a time at which it resumes by itself), or changes a paused job's note and end. */
  async pause(jobId: string, request: PauseRequest = {}, options: CallOptions = {}): Promise<JobView> {
    // Repeatable: a repeat of the same pause leaves the job PAUSED with the same note and end.
    return (
      await this.transport.send({ method: 'POST', path: `/v1/jobs/${segment(jobId)}/pause`, body: request, repeat: 'repeatable', signal: options.signal })
    ).body as JobView;
  }

  async resume(jobId: string, options: CallOptions = {}): Promise<JobView> {
    // Once: a repeat of a resume that was done answers 409 (the job is ACTIVE).
    return (await this.transport.send({ method: 'POST', path: `/v1/jobs/${segment(jobId)}/resume`, repeat: 'once', signal: options.signal })).body as JobView;
  }

  /** Skips the next N occurrences, or the fire times named; each is recorded as a SKIPPED run. */
  async skip(jobId: string, request: SkipRequest, options: CallOptions = {}): Promise<JobView> {
    // Repeatable when naming fire times (skipping one twice skips it once); `next` counts from the job's state, so once.
    const repeat = request.occurrences !== undefined ? 'repeatable' : 'once';
    return (await this.transport.send({ method: 'POST', path: `/v1/jobs/${segment(jobId)}/skip`, body: request, repeat, signal: options.signal }))
      .body as JobView;
  }

  /** Cancels the job and its runs that have not started; its name is free again. */
  async delete(jobId: string, options: CallOptions = {}): Promise<JobView> {
    // Repeatable: deleting a deleted job answers the job again.
    return (await this.transport.send({ method: 'DELETE', path: `/v1/jobs/${segment(jobId)}`, repeat: 'repeatable', signal: options.signal })).body as JobView;
  }

  /** A manual run now, outside the schedule (with the job's payload, or `request.payload`). */
  async trigger(jobId: string, request: TriggerRequest = {}, options: TracedOptions = {}): Promise<Run> {
    const answer = await this.transport.send({
      method: 'POST',
      path: `/v1/jobs/${segment(jobId)}/trigger`,
      body: request,
      headers: traceHeaders(options),
      repeat: 'once',
      signal: options.signal,
    });
    return (answer.body as { run: Run }).run;
  }

  /**
   * Backfills the fire times in [from, to) that have no run yet; the same range answers the same
   * backfill. Its runs join the trace of `options.traceparent` (of the request that made it).
   */
  async backfill(jobId: string, request: BackfillRequest, options: TracedOptions = {}): Promise<Backfill> {
    // Repeatable: the same range is the same backfill.
    const answer = await this.transport.send({
      method: 'POST',
      path: `/v1/jobs/${segment(jobId)}/backfill`,
      body: request,
      headers: traceHeaders(options),
      repeat: 'repeatable',
      signal: options.signal,
    });
    return (answer.body as { backfill: Backfill }).backfill;
  }

  /** A backfill's progress. */
  async getBackfill(jobId: string, backfillId: string, options: CallOptions = {}): Promise<Backfill> {
    const answer = await this.transport.send({
      method: 'GET',
      path: `/v1/jobs/${segment(jobId)}/backfills/${segment(backfillId)}`,
      repeat: 'repeatable',
      signal: options.signal,
    });
    return (answer.body as { backfill: Backfill }).backfill;
  }
}

export class RunsApi {
  constructor(private readonly transport: Transport) {}

  /** A job's runs, newest first. */
  async list(jobId: string, query: PageQuery = {}, options: CallOptions = {}): Promise<Page<Run>> {
    return (
      await this.transport.send({ method: 'GET', path: `/v1/jobs/${segment(jobId)}/runs`, query: { ...query }, repeat: 'repeatable', signal: options.signal })
    ).body as Page<Run>;
  }

  iterate(jobId: string, query: PageQuery = {}, options: CallOptions = {}): AsyncGenerator<Run, void, undefined> {
    return everyItem((cursor) => this.list(jobId, { ...query, cursor }, options), query.cursor);
  }

  async get(runId: string, options: CallOptions = {}): Promise<Run> {
    return (await this.transport.send({ method: 'GET', path: `/v1/runs/${segment(runId)}`, repeat: 'repeatable', signal: options.signal })).body as Run;
  }

  /** A waiting run never starts; a running one is marked CANCELLED and its worker stops at its next heartbeat. */
  async cancel(runId: string, options: CallOptions = {}): Promise<Run> {
    return (await this.transport.send({ method: 'POST', path: `/v1/runs/${segment(runId)}/cancel`, repeat: 'repeatable', signal: options.signal })).body as Run;
  }

  /** A new run of a finished run's occurrence, with a fresh retry budget. */
  async replay(runId: string, options: TracedOptions = {}): Promise<Run> {
    const answer = await this.transport.send({
      method: 'POST',
      path: `/v1/runs/${segment(runId)}/replay`,
      headers: traceHeaders(options),
      repeat: 'once',
      signal: options.signal,
    });
    return (answer.body as { run: Run }).run;
  }

  /** The run's outcome notifications, one per event it raised (docs/notifications.md). */
  async notifications(runId: string, options: CallOptions = {}): Promise<RunNotification[]> {
    const answer = await this.transport.send({ method: 'GET', path: `/v1/runs/${segment(runId)}/notifications`, repeat: 'repeatable', signal: options.signal });
    return (answer.body as { items: RunNotification[] }).items;
  }

  /** Sends a DEAD notification of the run again, on a fresh budget (a 409 unless it is DEAD). */
  async resendNotification(runId: string, event: RunNotification['event'], options: CallOptions = {}): Promise<RunNotification> {
    const answer = await this.transport.send({
      method: 'POST',
      path: `/v1/runs/${segment(runId)}/notifications/${segment(event)}/resend`,
      repeat: 'once',
      signal: options.signal,
    });
    return answer.body as RunNotification;
  }
}

export class WorkflowsApi {
  constructor(private readonly transport: Transport) {}

  /** A DAG of steps (docs/api.md#workflows); version 1. */
  async create(spec: WorkflowSpecInput, options: CallOptions = {}): Promise<WorkflowView> {
    return (await this.transport.send({ method: 'POST', path: '/v1/workflows', body: spec, repeat: 'once', signal: options.signal })).body as WorkflowView;
  }

  /** The tenant's workflows, newest first or by name: one page. */
  async list(query: ListWorkflowsQuery = {}, options: CallOptions = {}): Promise<Page<WorkflowSummary>> {
    return (await this.transport.send({ method: 'GET', path: '/v1/workflows', query: { ...query }, repeat: 'repeatable', signal: options.signal }))
      .body as Page<WorkflowSummary>;
  }

  /** Every workflow, a page at a time: `for await (const workflow of client.workflows.iterate())`. */
  iterate(query: ListWorkflowsQuery = {}, options: CallOptions = {}): AsyncGenerator<WorkflowSummary, void, undefined> {
    return everyItem((cursor) => this.list({ ...query, cursor }, options), query.cursor);
  }

  /** The workflow with its newest definition, or the given version's, and its schedule's latest occurrences. */
  async get(workflowId: string, version?: number, options: CallOptions = {}): Promise<WorkflowDetail> {
    return (
      await this.transport.send({
        method: 'GET',
        path: `/v1/workflows/${segment(workflowId)}`,
        query: version === undefined ? {} : { version },
        repeat: 'repeatable',
        signal: options.signal,
      })
    ).body as WorkflowDetail;
  }

  /** A new version of the definition; runs already started keep theirs. `ifMatch`: the version read. */
  async update(workflowId: string, spec: WorkflowSpecInput, options: UpdateOptions = {}): Promise<WorkflowView> {
    return (
      await this.transport.send({
        method: 'POST',
        path: `/v1/workflows/${segment(workflowId)}/versions`,
        body: spec,
        headers: options.ifMatch === undefined ? {} : { 'if-match': String(options.ifMatch) },
        repeat: 'once',
        signal: options.signal,
      })
    ).body as WorkflowView;
  }

  /** Pauses the workflow's schedule: its pending occurrence never starts (a 409 without a schedule). */
  async pause(workflowId: string, options: CallOptions = {}): Promise<WorkflowView> {
    return (await this.transport.send({ method: 'POST', path: `/v1/workflows/${segment(workflowId)}/pause`, repeat: 'once', signal: options.signal }))
      .body as WorkflowView;
  }

  /** Resumes the workflow's paused schedule from the occurrence its misfire policy picks. */
  async resume(workflowId: string, options: CallOptions = {}): Promise<WorkflowView> {
    return (await this.transport.send({ method: 'POST', path: `/v1/workflows/${segment(workflowId)}/resume`, repeat: 'once', signal: options.signal }))
      .body as WorkflowView;
  }

  /**
   * Deletes the workflow: its schedule is cancelled, its running workflow runs too, and its name is
   * free again; its versions and runs stay readable. Repeating it is harmless (it answers the deleted workflow).
   */
  async delete(workflowId: string, options: CallOptions = {}): Promise<WorkflowView> {
    return (await this.transport.send({ method: 'DELETE', path: `/v1/workflows/${segment(workflowId)}`, repeat: 'repeatable', signal: options.signal }))
      .body as WorkflowView;
  }

  /** Starts a run of the newest version now; its step runs join `traceparent` (a new trace without it). */
  async start(workflowId: string, options: TracedOptions = {}): Promise<WorkflowRun> {
    return (
      await this.transport.send({
        method: 'POST',
        path: `/v1/workflows/${segment(workflowId)}/runs`,
        headers: traceHeaders(options),
        repeat: 'once',
        signal: options.signal,
      })
    ).body as WorkflowRun;
  }

  async runs(workflowId: string, query: ListWorkflowRunsQuery = {}, options: CallOptions = {}): Promise<Page<WorkflowRun>> {
    return (
      await this.transport.send({
        method: 'GET',
        path: `/v1/workflows/${segment(workflowId)}/runs`,
        query: { ...query },
        repeat: 'repeatable',
        signal: options.signal,
      })
    ).body as Page<WorkflowRun>;
  }

  /** A workflow run with its steps: status, attempt, run, timings, why not started. */
  async run(workflowId: string, workflowRunId: string, options: CallOptions = {}): Promise<WorkflowRun> {
    return (
      await this.transport.send({
        method: 'GET',
        path: `/v1/workflows/${segment(workflowId)}/runs/${segment(workflowRunId)}`,
        repeat: 'repeatable',
        signal: options.signal,
      })
    ).body as WorkflowRun;
  }

  async cancel(workflowId: string, workflowRunId: string, options: CallOptions = {}): Promise<WorkflowRun> {
    return this.runAction(workflowId, workflowRunId, 'cancel', options);
  }

  /** Retries a FAILED or CANCELLED workflow run from its failed steps; succeeded steps are kept; the steps it starts join `traceparent`. */
  async retry(workflowId: string, workflowRunId: string, options: TracedOptions = {}): Promise<WorkflowRun> {
    return this.runAction(workflowId, workflowRunId, 'retry', options);
  }

  /** The workflow run's outcome notifications, one per event each of its ends raised, the latest end's first (docs/notifications.md#workflows). */
  async notifications(workflowId: string, workflowRunId: string, options: CallOptions = {}): Promise<WorkflowRunNotification[]> {
    const answer = await this.transport.send({
      method: 'GET',
      path: `/v1/workflows/${segment(workflowId)}/runs/${segment(workflowRunId)}/notifications`,
      repeat: 'repeatable',
      signal: options.signal,
    });
    return (answer.body as { items: WorkflowRunNotification[] }).items;
  }

  /** Sends the DEAD notification of the workflow run's latest end again, on a fresh budget (a 409 unless it is DEAD). */
  async resendNotification(
    workflowId: string,
    workflowRunId: string,
    event: 'succeeded' | 'failed' | 'cancelled',
    options: CallOptions = {},
  ): Promise<WorkflowRunNotification> {
    const answer = await this.transport.send({
      method: 'POST',
      path: `/v1/workflows/${segment(workflowId)}/runs/${segment(workflowRunId)}/notifications/${segment(event)}/resend`,
      repeat: 'once',
      signal: options.signal,
    });
    return answer.body as WorkflowRunNotification;
  }

  private async runAction(workflowId: string, workflowRunId: string, action: 'cancel' | 'retry', options: TracedOptions): Promise<WorkflowRun> {
    return (
      await this.transport.send({
        method: 'POST',
        path: `/v1/workflows/${segment(workflowId)}/runs/${segment(workflowRunId)}/${action}`,
        headers: traceHeaders(options),
        repeat: 'once',
        signal: options.signal,
      })
    ).body as WorkflowRun;
  }
}

export class DeadRunsApi {
  constructor(
    private readonly transport: Transport,
    private readonly runs: RunsApi,
  ) {}

  /** The tenant's DEAD runs waiting for a replay, newest first. */
  async list(query: DeadRunsQuery = {}, options: CallOptions = {}): Promise<Page<Run>> {
    return (await this.transport.send({ method: 'GET', path: '/v1/dead-runs', query: { ...query }, repeat: 'repeatable', signal: options.signal }))
      .body as Page<Run>;
  }

  iterate(query: DeadRunsQuery = {}, options: CallOptions = {}): AsyncGenerator<Run, void, undefined> {
    return everyItem((cursor) => this.list({ ...query, cursor }, options), query.cursor);
  }

  /** Replays one dead run (the same as `runs.replay`). */
  async replay(runId: string, options: TracedOptions = {}): Promise<Run> {
    return this.runs.replay(runId, options);
  }

  /** Replays up to `limit` (≤ 100) dead runs of a job and/or time range; `remaining` says whether to call again. */
  async replayAll(request: BulkReplayRequest = {}, options: TracedOptions = {}): Promise<BulkReplayResult> {
    return (
      await this.transport.send({
        method: 'POST',
        path: '/v1/dead-runs/replay',
        body: request,
        headers: traceHeaders(options),
        repeat: 'once',
        signal: options.signal,
      })
    ).body as BulkReplayResult;
  }
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
  /** External workers: claim, heartbeat, complete, fail, and `process` around a work function. */
  readonly workers: WorkerClient;
  private readonly transport: Transport;

  constructor(options: SchedulerClientOptions) {
    this.transport = new Transport(options);
    this.jobs = new JobsApi(this.transport);
    this.runs = new RunsApi(this.transport);
    this.deadRuns = new DeadRunsApi(this.transport, this.runs);
    this.workflows = new WorkflowsApi(this.transport);
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

  /** Whether the scheduler keeps up: queues, the ticker, the tenant's runs and in-flight work. */
  async health(query: HealthQuery = {}, options: CallOptions = {}): Promise<HealthReport> {
    return (await this.transport.send({ method: 'GET', path: '/v1/health', query: { ...query }, repeat: 'repeatable', signal: options.signal }))
      .body as HealthReport;
  }
}
