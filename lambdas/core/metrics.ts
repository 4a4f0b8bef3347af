// Metrics in CloudWatch Embedded Metric Format. The namespace, metric names and dimensions are
// defined here once; the CDK dashboard and alarms read the same constants.
//
// Every metric is published under two dimension sets: [Service] (the whole scheduler, for alarms)
// and [Service, JobType] (per job type, for finding what fails). Job types are chosen by users but
// few per deployment; run ids, job ids and tenants are never dimensions. Values are buffered per
// job type and written as one JSON line per job type at flush (up to 100 values per metric per
// line, as EMF allows), so a batch of runs costs a few log lines, not a few per run.

export const METRICS_NAMESPACE = 'JobScheduler';
export const SERVICE_NAME = 'job-scheduler';
/** The JobType dimension value for metrics that belong to no job (the ticker's). */
export const NO_JOB_TYPE = '-';

export const Metric = {
  RunsCreated: 'RunsCreated',
  RunsQueued: 'RunsQueued',
  RunsStarted: 'RunsStarted',
  RunsSucceeded: 'RunsSucceeded',
  RunsFailed: 'RunsFailed',
  RunsTimedOut: 'RunsTimedOut',
  RunsRetried: 'RunsRetried',
  RunsDead: 'RunsDead',
  RunsSkipped: 'RunsSkipped',
  RunsCancelled: 'RunsCancelled',
  /** A run waited because its tenant was at its in-flight limit (counted per wait). */
  RunsDeferred: 'RunsDeferred',
  /** When the message reached a worker minus when the run was due: the time gate's lag. */
  SchedulingLag: 'SchedulingLag',
  /** When the run was leased minus when it was due: what a user sees. */
  StartLag: 'StartLag',
  /**
   * When an external worker claimed the run minus when it was due: the wait for a poller, which the
   * scheduler does not control (its own part, due to offered, is the run's StartLag).
   */
  ClaimWait: 'ClaimWait',
  RunDuration: 'RunDuration',
  LeaseExpirations: 'LeaseExpirations',
  WorkerLost: 'WorkerLost',
  TickerRuns: 'TickerRuns',
  TickerReleased: 'TickerReleased',
  TickerRedelivered: 'TickerRedelivered',
  TickerRepairedJobs: 'TickerRepairedJobs',
  /** When the tick ran minus when it was scheduled. */
  TickerLag: 'TickerLag',
  TickerDuration: 'TickerDuration',
  TickerErrors: 'TickerErrors',
  /** A tick that ran out of its release budget: the next one goes on from the same cursor. */
  TickerBehind: 'TickerBehind',
  /** Partitions of the time index a tick could not read and skipped (the cursor waits for them). */
  TickerUnreadable: 'TickerUnreadable',
  /** Outcome notifications delivered, tries that failed, and notifications that spent their budget undelivered. */
  NotificationsSent: 'NotificationsSent',
  NotificationsFailed: 'NotificationsFailed',
  NotificationsDead: 'NotificationsDead',
  /** Workflow runs, per workflow (the JobType dimension is `workflow:<name>`). */
  WorkflowRunsStarted: 'WorkflowRunsStarted',
  WorkflowRunsSucceeded: 'WorkflowRunsSucceeded',
  WorkflowRunsFailed: 'WorkflowRunsFailed',
  WorkflowRunsCancelled: 'WorkflowRunsCancelled',
  /** A step of a workflow run ended other than SUCCEEDED (DEAD, CANCELLED, SKIPPED). */
  WorkflowStepFailures: 'WorkflowStepFailures',
  /** From a workflow run's start to its end. */
  WorkflowRunDuration: 'WorkflowRunDuration',
} as const;
export type MetricName = (typeof Metric)[keyof typeof Metric];

export type MetricUnit = 'Count' | 'Milliseconds';

const UNITS: Record<MetricName, MetricUnit> = {
  RunsCreated: 'Count',
  RunsQueued: 'Count',
  RunsStarted: 'Count',
  RunsSucceeded: 'Count',
  RunsFailed: 'Count',
  RunsTimedOut: 'Count',
  RunsRetried: 'Count',
  RunsDead: 'Count',
  RunsSkipped: 'Count',
  RunsCancelled: 'Count',
  RunsDeferred: 'Count',
  SchedulingLag: 'Milliseconds',
  StartLag: 'Milliseconds',
  ClaimWait: 'Milliseconds',
  RunDuration: 'Milliseconds',
  LeaseExpirations: 'Count',
  WorkerLost: 'Count',
  TickerRuns: 'Count',
  TickerReleased: 'Count',
  TickerRedelivered: 'Count',
  TickerRepairedJobs: 'Count',
  TickerLag: 'Milliseconds',
  TickerDuration: 'Milliseconds',
  TickerErrors: 'Count',
  TickerBehind: 'Count',
  TickerUnreadable: 'Count',
  NotificationsSent: 'Count',
  NotificationsFailed: 'Count',
  NotificationsDead: 'Count',
  WorkflowRunsStarted: 'Count',
  WorkflowRunsSucceeded: 'Count',
  WorkflowRunsFailed: 'Count',
  WorkflowRunsCancelled: 'Count',
  WorkflowStepFailures: 'Count',
  WorkflowRunDuration: 'Milliseconds',
};

/** The JobType dimension value of a workflow's metrics. */
export const workflowDimension = (name: string): string => `workflow:${name}`;

export function unitOf(name: MetricName): MetricUnit {
  return UNITS[name];
}

/** EMF allows at most 100 values per metric in one document. */
const MAX_VALUES_PER_LINE = 100;
/** A job type becomes a dimension value; CloudWatch allows 1024 characters, we keep it short. */
const MAX_DIMENSION_LENGTH = 128;

export type MetricSink = (line: string) => void;

const stdoutSink: MetricSink = (line) => {
  process.stdout.write(`${line}\n`);
};

/** Buffers metric values per job type and writes them as EMF lines on flush. */
export class MetricsRecorder {
  private readonly buffers = new Map<string, Map<MetricName, number[]>>();

  constructor(
    private readonly sink: MetricSink = stdoutSink,
    private readonly clock: () => number = Date.now,
  ) {}

  add(name: MetricName, value: number, jobType: string = NO_JOB_TYPE): void {
    if (!Number.isFinite(value)) return;
    const type = (jobType || NO_JOB_TYPE).slice(0, MAX_DIMENSION_LENGTH);
    let metrics = this.buffers.get(type);
    if (!metrics) {
      metrics = new Map();
      this.buffers.set(type, metrics);
    }
    const values = metrics.get(name);
    if (values) values.push(value);
    else metrics.set(name, [value]);
  }

  count(name: MetricName, jobType?: string, n = 1): void {
    this.add(name, n, jobType);
  }

  /** Writes everything buffered (one line per job type and up to 100 values) and clears it. */
  flush(): void {
    const timestamp = this.clock();
    for (const [jobType, metrics] of this.buffers) {
      const entries = [...metrics.entries()];
      for (let offset = 0; ; offset += MAX_VALUES_PER_LINE) {
        const slice = entries.filter(([, values]) => values.length > offset);
        if (slice.length === 0) break;
        this.sink(
          emfLine(
            timestamp,
            jobType,
            slice.map(([name, values]) => [name, values.slice(offset, offset + MAX_VALUES_PER_LINE)]),
          ),
        );
      }
    }
    this.buffers.clear();
  }
}

function emfLine(timestamp: number, jobType: string, metrics: [MetricName, number[]][]): string {
  const document: Record<string, unknown> = {
    _aws: {
      Timestamp: timestamp,
      CloudWatchMetrics: [
        {
          Namespace: METRICS_NAMESPACE,
          Dimensions: [['Service'], ['Service', 'JobType']],
          Metrics: metrics.map(([name]) => ({ Name: name, Unit: UNITS[name] })),
        },
      ],
    },
    Service: SERVICE_NAME,
    JobType: jobType,
  };
  for (const [name, values] of metrics) document[name] = values.length === 1 ? values[0] : values;
  return JSON.stringify(document);
}
