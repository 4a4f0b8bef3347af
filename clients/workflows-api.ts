// `client.workflows`: definitions and their versions, schedules, runs and their notifications.
import type { Transport } from './transport.js';
import { segment } from './transport.js';
import type {
  Page,
  WorkflowRunNotification,
  ListWorkflowRunsQuery,
  ListWorkflowsQuery,
  WorkflowDetail,
  WorkflowRun,
  WorkflowSpecInput,
  WorkflowSummary,
  WorkflowView,
} from './types.js';
import type { CallOptions, TracedOptions, UpdateOptions } from './api-calls.js';
import { everyItem, traceHeaders } from './api-calls.js';

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
    // Repeatable: pausing a paused workflow answers it again, changing nothing.
    return (await this.transport.send({ method: 'POST', path: `/v1/workflows/${segment(workflowId)}/pause`, repeat: 'repeatable', signal: options.signal }))
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
