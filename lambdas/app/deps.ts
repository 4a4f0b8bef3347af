// Everything a use case needs, built once per process from the configuration.
import { randomUUID } from 'node:crypto';
import type { SchedulerConfig } from '../config/config';
import { poolRoutesOf } from '../config/config';
import type { AwsClients } from '../store/aws';
import { ApiKeysRepository } from '../store/api-keys-repository';
import { DispatchQueue, DispatchRouter } from '../store/dispatch-queue';
import { JobsRepository } from '../store/jobs-repository';
import { CoalescedItemReads } from '../store/batch-get';
import { batchCoalesce } from './batch-coalesce';
import { RunRecords } from '../store/run-records';
import { RunLeases } from '../store/run-leases';
import { RunClaims } from '../store/run-claims';
import { TimeIndex } from '../store/time-index';
import { DeadRuns } from '../store/dead-runs';
import { SchedulerStateRepository } from '../store/scheduler-state-repository';
import { TenantsRepository } from '../store/tenants-repository';
import { InFlightSlots } from '../store/in-flight-slots';
import { keyedSlotKeys } from '../store/keys';
import { RateMarks } from '../store/rate-marks';
import { KeyWaiters } from '../store/key-waiters';
import { Backfills } from '../store/backfills';
import { DebounceWindows } from '../store/debounce-windows';
import { SigningSecretsRepository } from '../store/signing-secrets';
import { AuditLog } from '../store/audit-log';
import { Notifications } from '../store/notifications';
import type { NotificationTry } from '../targets/notification-destinations';
import { deliverNotification } from '../targets/notification-destinations';
import type { TargetResult } from '../targets/target';
import { WorkflowsRepository } from '../store/workflows';
import { WorkflowRunsRepository } from '../store/workflow-runs';
import { SigningSecretsCache } from './signing-secrets';
import { PayloadStore } from '../store/payload-store';

import { TenantsFullMemo } from './in-flight-slot';
import { TenantLimitsCache } from './tenant-limits';
import { Authenticator } from './authenticate';
import type { TargetInvoker } from '../targets/target';
import type { MetricSink } from '../core/metrics';
import { MetricsRecorder } from '../core/metrics';
import { TelemetryStore } from '../store/telemetry-store';
import { QueueMetrics } from '../store/queue-metrics';
import { Telemetry } from './telemetry';
import { createTargetInvoker } from '../targets/invoker';
import type { Egress, HostResolver } from '../targets/egress';
import { egressPolicyOf, systemResolver } from '../targets/egress';
import { HeaderSecretsCache, secretsManagerRead } from '../targets/header-secrets';
import { KeyedTurns } from '../core/concurrency';

export interface SchedulerDeps {
  readonly config: SchedulerConfig;
  readonly jobs: JobsRepository;
  /** Runs as records: reads, a new run, the end of one not yet started. */
  readonly runs: RunRecords;
  /** Leases and the outcomes recorded under them, with the effect ledger. */
  readonly leases: RunLeases;
  /** External workers' claims of offered runs, and their heartbeats. */
  readonly claims: RunClaims;
  /** The ticker's index of runs by time: due runs and check-backs. */
  readonly timeIndex: TimeIndex;
  /** Tenants' DEAD runs: counted, listed, replayed. */
  readonly deadRuns: DeadRuns;
  readonly apiKeys: ApiKeysRepository;
  readonly tenants: TenantsRepository;
  /** Resolves API keys to callers (the authorizer's code, with its cache). */
  readonly authenticator: Authenticator;
  /** Tenants' limits as the worker applies them (cached). */
  readonly tenantLimits: TenantLimitsCache;
  readonly inFlight: InFlightSlots;
  /** The slots of concurrency keys (the in-flight machinery, keyed by tenant and key). */
  readonly keyedSlots: InFlightSlots;
  /** The runs waiting for a concurrency key's slot, oldest first. */
  readonly keyWaiters: KeyWaiters;
  /** The start marks of rate keys. */
  readonly rateMarks: RateMarks;
  /** Backfills over ranges of fire times, released by the ticker. */
  readonly backfills: Backfills;
  /** Jobs' debounce windows for manual triggers. */
  readonly debounce: DebounceWindows;
  /** The tenants this process found at their in-flight limit a moment ago; one per process. */
  readonly tenantsFull: TenantsFullMemo;
  /**
   * This process's continuations of one workflow run, one at a time (decision 0179): two steps that
   * end together here record their outcomes in turn rather than race for the item's write.
   */
  readonly workflowTurns: KeyedTurns;
  readonly state: SchedulerStateRepository;
  /** Every pool's dispatch queues; sends route by job type and priority. */
  readonly dispatch: DispatchRouter;
  readonly dispatchDlq: DispatchQueue;
  readonly targets: TargetInvoker;
  /** Where targets may connect, from the configuration; names resolve through `resolve`. */
  readonly egress: Egress;
  /** Epoch milliseconds; injectable so that tests can move time. */
  readonly clock: () => number;
  /** Names this process in leases (`leaseOwner`). */
  readonly workerId: string;
  /** Uniform in [0, 1): the jitter of retry backoff; injectable so that tests can pin it. */
  readonly random: () => number;
  /** Metrics and health roll-ups; flushed by the handlers once per invocation. */
  readonly telemetry: Telemetry;
  readonly telemetryStore: TelemetryStore;
  readonly queueMetrics: QueueMetrics;
  /** The tenants' webhook signing secrets (issued through the API). */
  readonly signingSecrets: SigningSecretsRepository;
  /** Their live values as the worker signs with them (cached per tenant for a minute). */
  readonly signingCache: SigningSecretsCache;
  /** What people changed, appended by the API and the admin CLI. */
  readonly audit: AuditLog;
  /** The values of the secrets HTTP target headers name, as the worker sends them (cached briefly). */
  readonly headerSecrets: HeaderSecretsCache;
  /** Outcome notifications: one record per run and event (docs/notifications.md). */
  readonly notifications: Notifications;
  /** Tries a notification's destination once. */
  readonly notifier: Notifier;
  /** Workflows: their versions and their runs (with their steps' states). */
  readonly workflows: WorkflowsRepository;
  /** Workflow runs: one item each, with its steps' states. */
  readonly workflowRuns: WorkflowRunsRepository;
  /** Payloads too large for their items (decision 0162); null without a payload bucket. */
  readonly payloads: PayloadStore | null;
}

export interface Notifier {
  deliver(attempt: NotificationTry): Promise<TargetResult>;
}

export interface DepsOverrides extends Partial<Pick<SchedulerDeps, 'clock' | 'workerId' | 'targets' | 'random' | 'notifier'>> {
  /** Where EMF lines go (standard output by default). */
  readonly metricSink?: MetricSink;
  /** How target host names resolve (the system's resolver by default); tests inject their own. */
  readonly resolveHost?: HostResolver;
}

/**
 * This process's worker id: its log stream's name, to find its lines, and a part of its own. Lambda
 * starts a sandbox again under the same log stream after a crash or a timeout: with the stream's
 * name alone, the new process took the old one's leases and slots for its own, and its registry and
 * roll-up writes (numbered from 0 again) were refused until it passed the old one's count.
 */
export function processWorkerId(logStream: string | undefined): string {
  const own = randomUUID().slice(0, 8);
  return logStream ? `worker-${logStream}-${own}` : `worker-${own}`;
}

export function createDeps(config: SchedulerConfig, clients: AwsClients, overrides: DepsOverrides = {}): SchedulerDeps {
  const clock = overrides.clock ?? Date.now;
  const workerId = overrides.workerId ?? processWorkerId(process.env.AWS_LAMBDA_LOG_STREAM_NAME);
  const telemetryStore = new TelemetryStore(clients.dynamo, config.jobsTable);
  const apiKeys = new ApiKeysRepository(clients.dynamo, config.jobsTable);
  // An active job's byNextRun entry sits up to half the redelivery grace before its pending
  // occurrence, so that the ticker, which looks once an entry is older than the grace, never looks at
  // a healthy chain (decision 0161).
  // A worker batch's reads of jobs and of workflow runs share BatchGetItem requests (decisions 0033, 0190).
  const jobsTableReads = new CoalescedItemReads(clients.dynamo, config.jobsTable, ['pk', 'sk'], batchCoalesce(config));
  const jobs = new JobsRepository(
    clients.dynamo,
    config.jobsTable,
    config.runsTable,
    (config.redeliveryGraceSeconds * 1000) / 2,
    jobsTableReads,
    config.legacyNameGuards,
  );
  const tenants = new TenantsRepository(clients.dynamo, config.jobsTable);
  const signingSecrets = new SigningSecretsRepository(clients.dynamo, clients.kms, config.jobsTable, config.signingKeyId);
  return {
    config,
    jobs,
    runs: new RunRecords(clients.dynamo, config.runsTable, config.runRetentionDays),
    leases: new RunLeases(clients.dynamo, config.runsTable, config.runRetentionDays),
    claims: new RunClaims(clients.dynamo, config.runsTable),
    timeIndex: new TimeIndex(clients.dynamo, config.runsTable),
    deadRuns: new DeadRuns(clients.dynamo, config.runsTable),
    apiKeys,
    tenants,
    authenticator: new Authenticator(apiKeys, tenants, config.tenantDefaults, clock),
    tenantLimits: new TenantLimitsCache(tenants, config.tenantDefaults, clock),
    inFlight: new InFlightSlots(clients.dynamo, config.jobsTable),
    keyedSlots: new InFlightSlots(clients.dynamo, config.jobsTable, keyedSlotKeys),
    keyWaiters: new KeyWaiters(clients.dynamo, config.jobsTable),
    rateMarks: new RateMarks(clients.dynamo, config.jobsTable),
    backfills: new Backfills(clients.dynamo, config.jobsTable),
    debounce: new DebounceWindows(clients.dynamo, config.jobsTable, config.runsTable),
    tenantsFull: new TenantsFullMemo(),
    workflowTurns: new KeyedTurns(),
    state: new SchedulerStateRepository(clients.dynamo, config.jobsTable),
    dispatch: new DispatchRouter(clients.sqs, poolRoutesOf(config)),
    dispatchDlq: new DispatchQueue(clients.sqs, config.dispatchDlqUrl),
    targets: overrides.targets ?? createTargetInvoker(clients.targets),
    egress: { policy: egressPolicyOf(config), resolve: overrides.resolveHost ?? systemResolver },
    clock,
    random: overrides.random ?? Math.random,
    workerId,
    telemetryStore,
    queueMetrics: new QueueMetrics(clients.cloudwatch),
    signingSecrets,
    signingCache: new SigningSecretsCache(signingSecrets, clock),
    audit: new AuditLog(clients.dynamo, config.jobsTable),
    headerSecrets: new HeaderSecretsCache(secretsManagerRead(clients.secrets), config.headerSecretCacheSeconds * 1000, clock),
    notifications: new Notifications(clients.dynamo, config.jobsTable),
    notifier: overrides.notifier ?? { deliver: (attempt) => deliverNotification(clients.targets, attempt) },
    workflows: new WorkflowsRepository(clients.dynamo, config.jobsTable, jobs),
    workflowRuns: new WorkflowRunsRepository(clients.dynamo, config.jobsTable, config.runRetentionDays, jobsTableReads),
    telemetry: new Telemetry(new MetricsRecorder(overrides.metricSink, clock), telemetryStore, workerId, clock),
    payloads: config.payloadBucket ? new PayloadStore(clients.s3, config.payloadBucket) : null,
  };
}
