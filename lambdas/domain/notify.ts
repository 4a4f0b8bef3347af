// Outcome notifications (docs/notifications.md): what a job (or, later, a workflow) declares with
// `notify`, which run outcomes raise which event, the body every destination receives, and the
// notification's own retry budget. Plain TypeScript: the worker and the API share it.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Run, RunStatus } from './run';

export const NOTIFY_EVENTS = ['dead', 'failed', 'succeeded', 'skipped'] as const;
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];

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

export const notifySchema = z
  .strictObject({
    events: z
      .array(z.enum(NOTIFY_EVENTS))
      .min(1, 'name at least one event')
      .refine((events) => new Set(events).size === events.length, 'must not name an event twice'),
    destination: notifyDestinationSchema,
  })
  .meta({ id: 'Notify', description: 'Notifications of run outcomes (docs/notifications.md).' });
export type NotifySpec = z.infer<typeof notifySchema>;

/**
 * The event a run's new status raises, or null. `failed` is per attempt: every attempt that failed
 * or timed out with a retry to follow (each attempt is a run of its own). A run cancelled, or
 * retired by a pause (SKIPPED by the caller's own act), raises nothing.
 */
export function eventOfOutcome(status: RunStatus): NotifyEvent | null {
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

/** What raised a notification: a job today; a workflow will name itself here. */
export interface NotificationSubject {
  readonly kind: 'job';
  readonly id: string;
  readonly name: string;
  readonly type: string;
}

export const NOTIFICATION_VERSION = 'job-scheduler.notification/1';
/** An error's message is cut to this many characters in a notification. */
export const MAX_ERROR_MESSAGE_CHARS = 512;

/**
 * The body every destination receives. Never the job's payload, target or header values: only
 * what happened to the run.
 */
export interface NotificationBody {
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

export function notificationBodyOf(
  subject: NotificationSubject,
  run: Pick<Run, 'runId' | 'jobId' | 'tenantId' | 'attempt' | 'trigger' | 'scheduledFor' | 'startedAt'>,
  outcome: { readonly status: RunStatus; readonly error: Run['error']; readonly reason: string | null; readonly at: number },
  event: NotifyEvent,
): NotificationBody {
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
