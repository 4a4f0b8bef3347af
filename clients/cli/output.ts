// How the CLI shows things to a person: aligned tables and short summaries. `--json` bypasses all of it.
import type { HealthReport, JobDetail, JobView, Occurrence, Run, RunStatus, Schedule, WorkflowDetail, WorkflowRun, WorkflowSummary } from '../types.js';

/** Run statuses that have no way out (the domain's terminal statuses; a unit test keeps them equal). */
export const FINISHED_RUN_STATUSES: ReadonlySet<RunStatus> = new Set<RunStatus>(['SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELLED', 'SKIPPED', 'DEAD']);

export interface Column<T> {
  readonly header: string;
  readonly value: (row: T) => string;
}

/** Rows under a header, each column as wide as its widest cell; an empty list says so. */
export function table<T>(rows: readonly T[], columns: readonly Column<T>[], empty = '(none)'): string {
  if (rows.length === 0) return `${empty}\n`;
  const cells = [columns.map((column) => column.header), ...rows.map((row) => columns.map((column) => column.value(row)))];
  const widths = columns.map((_, index) => Math.max(...cells.map((line) => (line[index] ?? '').length)));
  return (
    cells
      .map((line) =>
        line
          .map((cell, index) => (index === line.length - 1 ? cell : cell.padEnd(widths[index] ?? 0)))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

const dash = (value: string | null | undefined): string => (value === null || value === undefined || value === '' ? '-' : value);

/** One occurrence of a preview: its fire time, and when it starts if jitter moves it, or why it is skipped. */
export function occurrenceText(occurrence: Occurrence): string {
  if (occurrence.skipped !== null) return `${occurrence.at}  skipped (${occurrence.skipped})`;
  if (occurrence.startsAt !== null && occurrence.startsAt !== occurrence.at) return `${occurrence.at}  starts ${occurrence.startsAt}`;
  return occurrence.at;
}

/** A recurring schedule's end, count, jitter and excluded dates, as text after its series. */
function scheduleExtras(schedule: Extract<Schedule, { kind: 'cron' | 'every' }>): string {
  const parts = [
    schedule.endAt ? `until ${schedule.endAt}` : '',
    schedule.maxOccurrences ? `${schedule.maxOccurrences} times` : '',
    schedule.jitterSeconds ? `jitter ${schedule.jitterSeconds}s` : '',
    schedule.excludeDates?.length ? `not on ${schedule.excludeDates.join(', ')}` : '',
  ].filter((part) => part !== '');
  return parts.length > 0 ? `, ${parts.join(', ')}` : '';
}

export function scheduleText(schedule: Schedule): string {
  switch (schedule.kind) {
    case 'now':
      return 'now';
    case 'delay':
      return `in ${schedule.seconds}s`;
    case 'at':
      return `at ${schedule.at}`;
    case 'cron':
      return `cron "${schedule.expression}" ${schedule.timezone}${scheduleExtras(schedule)}`;
    case 'every':
      return `every ${schedule.interval} from ${schedule.anchor ?? '-'}${scheduleExtras(schedule)}`;
  }
}

export const JOB_COLUMNS: readonly Column<JobView>[] = [
  { header: 'JOB ID', value: (job) => job.jobId },
  { header: 'NAME', value: (job) => job.name },
  { header: 'TYPE', value: (job) => job.type },
  { header: 'STATUS', value: (job) => job.status },
  { header: 'SCHEDULE', value: (job) => scheduleText(job.schedule) },
  { header: 'NEXT RUN', value: (job) => dash(job.nextRunAt) },
];

export const RUN_COLUMNS: readonly Column<Run>[] = [
  { header: 'RUN ID', value: (run) => run.runId },
  { header: 'STATUS', value: (run) => run.status },
  { header: 'ATTEMPT', value: (run) => String(run.attempt) },
  { header: 'TRIGGER', value: (run) => run.trigger },
  { header: 'SCHEDULED FOR', value: (run) => run.scheduledFor },
  { header: 'FINISHED', value: (run) => dash(run.finishedAt) },
  { header: 'ERROR', value: (run) => (run.error ? `${run.error.code}: ${run.error.message}` : dash(run.reason)) },
];

const DEAD_COLUMNS: readonly Column<Run>[] = [
  { header: 'RUN ID', value: (run) => run.runId },
  { header: 'JOB ID', value: (run) => run.jobId },
  { header: 'ATTEMPT', value: (run) => String(run.attempt) },
  { header: 'SCHEDULED FOR', value: (run) => run.scheduledFor },
  { header: 'ERROR', value: (run) => (run.error ? `${run.error.code}: ${run.error.message}` : dash(run.reason)) },
];

export function deadRunsTable(runs: readonly Run[]): string {
  return table(runs, DEAD_COLUMNS);
}

function fields(pairs: readonly [string, string][]): string {
  const width = Math.max(...pairs.map(([name]) => name.length));
  return pairs.map(([name, value]) => `${`${name}:`.padEnd(width + 2)}${value}`).join('\n') + '\n';
}

export function jobText(job: JobView | JobDetail): string {
  const target = job.target.kind === 'http' ? `http ${job.target.method} ${job.target.url}` : job.target.kind;
  let text = fields([
    ['Job', `${job.jobId} (${job.name})`],
    ['Type', job.type],
    ['Status', job.status],
    ['Version', String(job.version)],
    ['Schedule', scheduleText(job.schedule)],
    ['Target', target],
    ['Delivery', job.delivery],
    ['Priority', job.priority],
    ['Retries', `${job.retryPolicy.maxAttempts} attempts, ${job.retryPolicy.initialDelaySeconds}s to ${job.retryPolicy.maxDelaySeconds}s`],
    ['Next runs', job.upcomingRuns.length > 0 ? job.upcomingRuns.join(', ') : '-'],
    ...(job.skippedOccurrences?.length ? [['Skipping', job.skippedOccurrences.join(', ')] as [string, string]] : []),
    ...(job.status === 'PAUSED'
      ? [['Paused', `${job.pauseNote ?? '(no note)'}${job.pausedUntil ? `, until ${job.pausedUntil}` : ''}`] as [string, string]]
      : []),
  ]);
  if ('recentRuns' in job) text += `\nRecent runs:\n${table(job.recentRuns, RUN_COLUMNS)}`;
  return text;
}

export function runText(run: Run): string {
  return fields([
    ['Run', run.runId],
    ['Job', run.jobId],
    ['Status', run.status],
    ['Attempt', String(run.attempt)],
    ['Trigger', run.trigger],
    ['Scheduled for', run.scheduledFor],
    ['Started', dash(run.startedAt)],
    ['Finished', dash(run.finishedAt)],
    ['Lease owner', dash(run.leaseOwner)],
    ['Error', run.error ? `${run.error.code}: ${run.error.message}${run.error.retryable ? ' (retryable)' : ''}` : '-'],
    ['Reason', dash(run.reason)],
  ]);
}

export function healthText(report: HealthReport): string {
  const lag = report.runs.startLagMs;
  const queues = Object.entries(report.queues.pools).map(([name, pool]) => ({
    name,
    waiting: pool.standard.visible + (pool.high?.visible ?? 0) + (pool.low?.visible ?? 0),
    inFlight: pool.standard.inFlight + (pool.high?.inFlight ?? 0) + (pool.low?.inFlight ?? 0),
    dlq: pool.dlq.visible + pool.dlq.inFlight,
  }));
  return (
    fields([
      ['Status', report.status],
      ['Checked at', report.checkedAt],
      ['Ticker', report.ticker.lastCompletedAt ? `last tick ${report.ticker.sinceLastCompletionSeconds ?? '?'}s ago` : 'no tick yet'],
      [
        'Runs',
        `${report.runs.started} started, ${report.runs.byStatus.SUCCEEDED} succeeded, ${report.runs.byStatus.FAILED + report.runs.byStatus.TIMED_OUT + report.runs.byStatus.DEAD} failed in the last ${report.runs.windowMinutes} min`,
      ],
      ['Start lag', lag.samples > 0 ? `p50 ${lag.p50 ?? '-'} ms, p99 ${lag.p99 ?? '-'} ms (${lag.samples} runs)` : '-'],
      ['In flight', String(report.inFlight.length)],
      ['Dead runs', `${report.runs.deadAwaitingReplay.count}${report.runs.deadAwaitingReplay.capped ? '+' : ''} awaiting replay`],
    ]) +
    `\nQueues:\n${table(queues, [
      { header: 'POOL', value: (queue) => queue.name },
      { header: 'WAITING', value: (queue) => String(queue.waiting) },
      { header: 'IN FLIGHT', value: (queue) => String(queue.inFlight) },
      { header: 'DLQ', value: (queue) => String(queue.dlq) },
    ])}` +
    (report.problems.length > 0 ? `\nProblems:\n${report.problems.map((problem) => `  - ${problem}`).join('\n')}\n` : '')
  );
}

export const WORKFLOW_COLUMNS: readonly Column<WorkflowSummary>[] = [
  { header: 'WORKFLOW ID', value: (workflow) => workflow.workflowId },
  { header: 'NAME', value: (workflow) => workflow.name },
  { header: 'VERSION', value: (workflow) => String(workflow.version) },
  { header: 'STEPS', value: (workflow) => (workflow.stepCount === undefined ? '-' : String(workflow.stepCount)) },
  { header: 'SCHEDULE', value: (workflow) => dash(workflow.scheduleState?.status) },
  { header: 'NEXT RUN', value: (workflow) => dash(workflow.scheduleState?.nextRunAt) },
  { header: 'UPDATED', value: (workflow) => workflow.updatedAt },
];

export const WORKFLOW_RUN_COLUMNS: readonly Column<WorkflowRun>[] = [
  { header: 'WORKFLOW RUN ID', value: (run) => run.workflowRunId },
  { header: 'STATUS', value: (run) => run.status },
  { header: 'VERSION', value: (run) => String(run.version) },
  { header: 'TRIGGER', value: (run) => run.trigger },
  { header: 'SCHEDULED FOR', value: (run) => run.scheduledFor },
  { header: 'FINISHED', value: (run) => dash(run.finishedAt) },
  { header: 'FAILED STEPS', value: (run) => (run.failedSteps.length > 0 ? run.failedSteps.join(',') : '-') },
];

export function workflowText(workflow: WorkflowDetail): string {
  const { definition } = workflow;
  let text = fields([
    ['Workflow', `${workflow.workflowId} (${workflow.name})`],
    ['Version', String(workflow.version)],
    ['Type', definition.type],
    ['Steps', definition.steps.map((step) => (step.dependsOn.length > 0 ? `${step.id} <- ${step.dependsOn.join(',')}` : step.id)).join('; ')],
    ['Schedule', definition.schedule ? scheduleText(definition.schedule) : '- (started by request)'],
    ['Schedule status', dash(workflow.scheduleState?.status)],
    ['Next runs', workflow.scheduleState && workflow.scheduleState.upcomingRuns.length > 0 ? workflow.scheduleState.upcomingRuns.join(', ') : '-'],
  ]);
  if (workflow.recentOccurrences.length > 0) text += `\nRecent occurrences:\n${table(workflow.recentOccurrences, RUN_COLUMNS)}`;
  return text;
}

export function workflowRunText(run: WorkflowRun): string {
  const steps = Object.entries(run.steps).map(([stepId, state]) => ({ stepId, ...state }));
  return (
    fields([
      ['Workflow run', run.workflowRunId],
      ['Workflow', `${run.workflowId} (version ${run.version})`],
      ['Status', run.status],
      ['Trigger', run.trigger],
      ['Scheduled for', run.scheduledFor],
      ['Finished', dash(run.finishedAt)],
      ['Retries', String(run.retries)],
    ]) +
    `\nSteps:\n${table(steps, [
      { header: 'STEP', value: (step) => step.stepId },
      { header: 'STATUS', value: (step) => step.status },
      { header: 'ATTEMPT', value: (step) => String(step.attempt) },
      { header: 'RUN ID', value: (step) => dash(step.runId) },
      { header: 'REASON', value: (step) => dash(step.reason) },
    ])}`
  );
}
