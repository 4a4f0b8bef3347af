// Outcome notifications (docs/notifications.md): what a job (or a workflow) declares with
// `notify`, which run outcomes raise which event, the body every destination receives, and the
// notification's own retry budget. Plain TypeScript: the worker and the API share it.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Run, RunStatus } from './run';

/** The events a job's `notify` may name: a run (an attempt) ended so. */
export const JOB_NOTIFY_EVENTS = ['dead', 'failed', 'succeeded', 'skipped'] as const;
/** The events a workflow's `notify` may name: a workflow run ended so, or an occurrence of its schedule was skipped (decision 0148). */
export const WORKFLOW_NOTIFY_EVENTS = ['succeeded', 'failed', 'cancelled', 'skipped'] as const;
/** Every event a notification may be of (its record, its message). */
export const NOTIFY_EVENTS = ['dead', 'failed', 'succeeded', 'skipped', 'cancelled'] as const;
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];
export type WorkflowNotifyEvent = (typeof WORKFLOW_NOTIFY_EVENTS)[number];
export type JobNotifyEvent = (typeof JOB_NOTIFY_EVENTS)[number];

/** Where notifications go: a signed HTTPS POST, an SNS topic, an EventBridge bus (each allowlisted as targets are). */
export const notifyDestinationSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('http'),
    url: z
      .url({ protocol: /^https?$/, message: 'must be an http or https URL' })
      .max(2048)
      .refine((url) => !URL.canParse(url) || (new URL(url).username === '' && new URL(url).password === ''), 'must not carry credentials'),
  }),
  z.strictObject({
    kind: z.literal('sns'),
    topicArn: z
      .string()
      .max(256)
      .regex(/^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$/, 'must be an SNS topic ARN'),
  }),
  z.strictObject({
    kind: z.literal('eventbridge'),
    eventBusName: z.string().min(1).max(256),
    /** The events' source and detail type; a rule on the bus matches them. */
    source: z.string().min(1).max(256).default('job-scheduler.notifications'),
  }),
]);
export type NotifyDestination = z.infer<typeof notifyDestinationSchema>;

const eventsOf = <const E extends readonly [string, ...string[]]>(events: E) =>
  z
    .array(z.enum(events))
    .min(1, 'name at least one event')
    .refine((named) => new Set(named).size === named.length, 'must not name an event twice');

export const notifySchema = z
  .strictObject({ events: eventsOf(JOB_NOTIFY_EVENTS), destination: notifyDestinationSchema })
  .meta({ id: 'Notify', description: 'Notifications of run outcomes (docs/notifications.md).' });
export type NotifySpec = z.infer<typeof notifySchema>;

/**
 * A workflow's `notify`: the jobs' shape and destinations, with the events of a workflow run's outcome
 * (`succeeded`, `failed`, `cancelled`) and of its schedule's occurrences (`skipped`); decision 0148.
 */
export const workflowNotifySchema = z
  .strictObject({ events: eventsOf(WORKFLOW_NOTIFY_EVENTS), destination: notifyDestinationSchema })
  .meta({ id: 'WorkflowNotify', description: "Notifications of a workflow's run outcomes (docs/notifications.md#workflows)." });
export type WorkflowNotifySpec = z.infer<typeof workflowNotifySchema>;

/** The event a workflow run's end raises, when its `notify` asks for it. */
export function wantedWorkflowEvent(notify: WorkflowNotifySpec | null | undefined, status: 'SUCCEEDED' | 'FAILED' | 'CANCELLED'): WorkflowNotifyEvent | null {
  const event = status === 'SUCCEEDED' ? 'succeeded' : status === 'FAILED' ? 'failed' : 'cancelled';
  return notify?.events.includes(event) ? event : null;
}

/**
 * The event a run's new status raises, or null. `failed` is per attempt: every attempt that failed
 * or timed out with a retry to follow (each attempt is a run of its own). A run cancelled, or
 * retired by a pause (SKIPPED by the caller's own act), raises nothing.
 */
export function eventOfOutcome(status: RunStatus): JobNotifyEvent | null {
  switch (status) {
    case 'DEAD':
      return 'dead';
    case 'FAILED':
    case 'TIMED_OUT':
      return 'failed';
    case 'SUCCEEDED':
      return 'succeeded';
    case 'SKIPPED':
      return 'skipped';
    default:
      return null;
  }
}

/** The event when `notify` asks for it, else null. */
export function wantedEvent(notify: NotifySpec | null | undefined, status: RunStatus): NotifyEvent | null {
  const event = eventOfOutcome(status);
  return event !== null && notify?.events.includes(event) ? event : null;
}

/**
 * The notification's id: one per run and event, so it is the same for every try of one
 * notification (the `webhook-id` of an HTTP delivery, a receiver deduplicates on it) and no `.`.
 */
export function notificationIdOf(runId: string, event: NotifyEvent): string {
  return `ntf_${createHash('sha256').update(`${runId}#${event}`).digest('base64url').slice(0, 32)}`;
}

/** What raised a notification: a job, or a workflow (its runs, and its schedule's occurrences). */
export interface NotificationSubject {
  readonly kind: 'job' | 'workflow';
  readonly id: string;
  readonly name: string;
  readonly type: string;
}

export const NOTIFICATION_VERSION = 'job-scheduler.notification/1';
/** An error's message is cut to this many characters in a notification. */
export const MAX_ERROR_MESSAGE_CHARS = 512;

/**
 * The body every destination receives of a run's outcome (a job's run, or an occurrence of a
 * workflow's schedule). Never the job's payload, target or header values: only what happened to the run.
 */
export interface RunNotificationBody {
  readonly type: typeof NOTIFICATION_VERSION;
  readonly notificationId: string;
  readonly event: NotifyEvent;
  readonly tenantId: string;
  readonly subject: NotificationSubject;
  readonly jobId: string;
  readonly runId: string;
  readonly attempt: number;
  readonly status: RunStatus;
  readonly trigger: Run['trigger'];
  readonly scheduledFor: string;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
  readonly error: { readonly code: string; readonly message: string; readonly retryable: boolean } | null;
  readonly reason: string | null;
  /** When the outcome was recorded (and the notification made). */
  readonly occurredAt: string;
}

/**
 * The body of a workflow run's outcome (decision 0148): which run of which workflow, how it ended and
 * which steps failed; never a payload, a target or a result.
 */
export interface WorkflowRunNotificationBody {
  readonly type: typeof NOTIFICATION_VERSION;
  readonly notificationId: string;
  readonly event: NotifyEvent;
  readonly tenantId: string;
  readonly subject: NotificationSubject;
  readonly workflowId: string;
  readonly workflowRunId: string;
  /** The definition version the workflow run ran. */
  readonly version: number;
  readonly status: 'SUCCEEDED' | 'FAILED' | 'CANCELLED';
  readonly trigger: 'manual' | 'retry' | 'schedule';
  /** How often the workflow run was retried before this end (each retry's end notifies once). */
  readonly retries: number;
  readonly scheduledFor: string;
  readonly finishedAt: string | null;
  readonly failedSteps: readonly string[];
  readonly occurredAt: string;
}

export type NotificationBody = RunNotificationBody | WorkflowRunNotificationBody;

export function notificationBodyOf(
  subject: NotificationSubject,
  run: Pick<Run, 'runId' | 'jobId' | 'tenantId' | 'attempt' | 'trigger' | 'scheduledFor' | 'startedAt'>,
  outcome: { readonly status: RunStatus; readonly error: Run['error']; readonly reason: string | null; readonly at: number },
  event: NotifyEvent,
): RunNotificationBody {
  const at = new Date(outcome.at).toISOString();
  return {
    type: NOTIFICATION_VERSION,
    notificationId: notificationIdOf(run.runId, event),
    event,
    tenantId: run.tenantId,
    subject,
    jobId: run.jobId,
    runId: run.runId,
    attempt: run.attempt,
    status: outcome.status,
    trigger: run.trigger,
    scheduledFor: run.scheduledFor,
    startedAt: run.startedAt,
    finishedAt: outcome.status === 'SKIPPED' ? null : at,
    error: outcome.error
      ? { code: outcome.error.code, message: outcome.error.message.slice(0, MAX_ERROR_MESSAGE_CHARS), retryable: outcome.error.retryable }
      : null,
    reason: outcome.reason,
    occurredAt: at,
  };
}

/** A notification's own budget: tries, and the wait before each new one (doubling, capped). */
export interface NotificationRetryPolicy {
  readonly maxTries: number;
  readonly firstDelaySeconds: number;
  readonly maxDelaySeconds: number;
}
export const NOTIFICATION_RETRY: NotificationRetryPolicy = { maxTries: 6, firstDelaySeconds: 5, maxDelaySeconds: 300 };

/** Seconds before try `tries + 1`, after `tries` failed ones; null when the budget is spent. */
export function notificationRetryDelay(tries: number, retryable: boolean, policy: NotificationRetryPolicy = NOTIFICATION_RETRY): number | null {
  if (!retryable || tries >= policy.maxTries) return null;
  return Math.min(policy.maxDelaySeconds, policy.firstDelaySeconds * 2 ** (tries - 1));
}

/** How long one try may take: a notification holds a worker slot while it waits. */
export const NOTIFICATION_TIMEOUT_MS = 10_000;
/**
 * A claim on a notification (a try in progress) lasts this long; a worker lost mid-try leaves it,
 * and the next message for the notification may claim it once it has passed.
 */
export const NOTIFICATION_CLAIM_MS = NOTIFICATION_TIMEOUT_MS + 20_000;
/**
 * A try calls its destination only inside its claim, less this: time for two workers' clocks apart
 * and the outcome's write after the call. Another copy of its message may claim once the claim has
 * passed, so a call still under way then would be a second one at once.
 */
export const NOTIFICATION_CLAIM_MARGIN_MS = 5_000;
/** A try left less than this of its claim to call in (what came before the call was slow) does not call: a failed try. */
export const NOTIFICATION_MIN_CALL_MS = 1_000;
