// `client.jobs`: create, list, read, change, pause, resume, skip, trigger, backfill and delete jobs.
import type { Transport } from './transport.js';
import { segment } from './transport.js';
import type {
  CreatedJob,
  JobDetail,
  JobPatch,
  JobSpecInput,
  JobView,
  ListJobsQuery,
  Page,
  PauseRequest,
  SkipRequest,
  Run,
  TriggerRequest,
  Backfill,
  BackfillRequest,
} from './types.js';
import type { CallOptions, CreateOptions, TracedOptions, UpdateOptions } from './api-calls.js';
import { everyItem, traceHeaders } from './api-calls.js';

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

  /** The tenant's jobs, filtered by status, type, name (or its prefix) and labels: one page. */
  async list(query: ListJobsQuery = {}, options: CallOptions = {}): Promise<Page<JobView>> {
    // Several labels go comma-separated, as API Gateway joins a repeated parameter.
    const label = query.label === undefined || typeof query.label === 'string' ? query.label : query.label.join(',');
    return (await this.transport.send({ method: 'GET', path: '/v1/jobs', query: { ...query, label }, repeat: 'repeatable', signal: options.signal }))
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
