// `client.runs` and `client.deadRuns`: a job's runs and the tenant's, their notifications, and dead runs' replay.
import type { Transport } from './transport.js';
import { segment } from './transport.js';
import type { BulkReplayRequest, BulkReplayResult, DeadRunsQuery, ListRunsQuery, Page, Run, RunNotification } from './types.js';
import type { CallOptions, TracedOptions } from './api-calls.js';
import { everyItem, traceHeaders } from './api-calls.js';

export class RunsApi {
  constructor(private readonly transport: Transport) {}

  /** A job's runs, newest occurrence first, filtered by status and occurrence time. */
  async list(jobId: string, query: ListRunsQuery = {}, options: CallOptions = {}): Promise<Page<Run>> {
    return (
      await this.transport.send({ method: 'GET', path: `/v1/jobs/${segment(jobId)}/runs`, query: { ...query }, repeat: 'repeatable', signal: options.signal })
    ).body as Page<Run>;
  }

  iterate(jobId: string, query: ListRunsQuery = {}, options: CallOptions = {}): AsyncGenerator<Run, void, undefined> {
    return everyItem((cursor) => this.list(jobId, { ...query, cursor }, options), query.cursor);
  }

  /** The runs of every job of the tenant (`GET /v1/runs`), newest occurrence first, filtered by status and occurrence time. */
  async listAll(query: ListRunsQuery = {}, options: CallOptions = {}): Promise<Page<Run>> {
    return (await this.transport.send({ method: 'GET', path: '/v1/runs', query: { ...query }, repeat: 'repeatable', signal: options.signal }))
      .body as Page<Run>;
  }

  iterateAll(query: ListRunsQuery = {}, options: CallOptions = {}): AsyncGenerator<Run, void, undefined> {
    return everyItem((cursor) => this.listAll({ ...query, cursor }, options), query.cursor);
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
