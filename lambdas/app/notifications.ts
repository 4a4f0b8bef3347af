// Outcome notifications made (docs/notifications.md). The outcome path makes at most one
// notification per run and event (a conditional put) and enqueues it on the default pool's standard
// lane, after the outcome is recorded and without waiting for any destination. A worker then tries
// it, under a claim, on its own budget (notification-tries.ts).
import { logger } from '../core/logger';
import type {
  NotificationBody,
  NotificationSubject,
  NotifyDestination,
  NotifyEvent,
  NotifySpec,
  WorkflowNotifyEvent,
  WorkflowNotifySpec,
  WorkflowRunNotificationBody,
} from '../domain/notify';
import { NOTIFICATION_VERSION, notificationBodyOf, notificationIdOf, wantedEvent } from '../domain/notify';
import type { Job } from '../domain/job';
import type { WorkflowRun } from '../domain/workflow-run';
import type { Run } from '../domain/run';
import { traceIdOf } from '../domain/trace-context';
import type { SchedulerDeps } from './deps';

/** What a notification needs of what raised it: a job, or a workflow's schedule job (its occurrences). */
export interface NotifyingSubject {
  readonly subject: NotificationSubject;
  readonly notify?: NotifySpec | null;
}

export function jobSubject(job: Pick<Job, 'jobId' | 'name' | 'type' | 'notify' | 'target'>): NotifyingSubject {
  // A workflow's schedule job (decision 0147) speaks for its workflow: its occurrences' `skipped`.
  if (job.target.kind === 'workflow') {
    return { subject: { kind: 'workflow', id: job.target.workflowId, name: job.name, type: job.type }, notify: job.notify ?? null };
  }
  return { subject: { kind: 'job', id: job.jobId, name: job.name, type: job.type }, notify: job.notify ?? null };
}

/**
 * The event a run's outcome raises for this subject, or null when it asks for none: the outcome
 * write records it on the run, so a redelivered message for the finished run can make the
 * notification its first delivery may not have made (the worker died in between).
 */
export function notifyEventFor(owner: NotifyingSubject | null, status: Run['status']): NotifyEvent | null {
  return owner ? wantedEvent(owner.notify, status) : null;
}

/**
 * Makes the notification of a finished run's event (once: a conditional put) and enqueues it.
 * Called after the outcome is recorded. `resend`: enqueue even when the notification exists (a
 * redelivered outcome whose first delivery may have stopped between the put and the send; a second
 * message is harmless, as each try claims the notification).
 */
export async function notifyOutcome(
  deps: SchedulerDeps,
  owner: NotifyingSubject,
  finished: Run,
  options: { readonly resend?: boolean } = {},
): Promise<'created' | 'exists' | 'none'> {
  const event = notifyEventFor(owner, finished.status);
  if (event === null || !owner.notify) return 'none';
  const now = deps.clock();
  const body = notificationBodyOf(
    owner.subject,
    finished,
    { status: finished.status, error: finished.error, reason: finished.reason, at: Date.parse(finished.finishedAt ?? finished.updatedAt) || now },
    event,
  );
  return makeNotification(
    deps,
    { key: finished.runId, tenantId: finished.tenantId, event, destination: owner.notify.destination, body, traceparent: finished.traceparent },
    now,
    options,
  );
}

/**
 * Puts a notification's record if absent (one per key and event) and enqueues its first try; with
 * `resend`, enqueues it even when it exists. `key`: a run's id, or a workflow run's end's.
 */
async function makeNotification(
  deps: SchedulerDeps,
  notification: { key: string; tenantId: string; event: NotifyEvent; destination: NotifyDestination; body: NotificationBody; traceparent?: string },
  now: number,
  options: { readonly resend?: boolean },
): Promise<'created' | 'exists'> {
  const { key, tenantId, event } = notification;
  const made = await deps.notifications.create(
    { notificationId: notificationIdOf(key, event), tenantId, runId: key, event, destination: notification.destination, body: notification.body },
    now,
  );
  if (made === 'created' || options.resend) {
    // The trace goes with each of its notification's messages, for their lines (decision 0117).
    await deps.dispatch.send([{ runId: key, tenantId, availableAt: now, notify: event, traceparent: notification.traceparent }], now);
  }
  logger.info(made === 'created' ? 'notification made' : 'notification exists', {
    ...(notification.body.subject.kind === 'workflow' && 'workflowRunId' in notification.body
      ? { workflowRunId: notification.body.workflowRunId }
      : { runId: key }),
    tenantId,
    traceId: traceIdOf(notification.traceparent),
    event,
    resent: options.resend === true,
  });
  return made;
}

/** A workflow run's end is notified once per end: its first, and each retry's (decision 0148). */
export const workflowRunNotificationKey = (run: Pick<WorkflowRun, 'workflowRunId' | 'retries'>): string => `${run.workflowRunId}.r${run.retries}`;

/**
 * Makes the notification of a workflow run's end (once per end: a conditional put) and enqueues it,
 * after the end is written; a workflow run's `notify` is its version's. `resend` as for runs.
 */
export async function notifyWorkflowRunEnd(
  deps: SchedulerDeps,
  workflow: { readonly workflowId: string; readonly name: string; readonly type: string },
  notify: WorkflowNotifySpec,
  run: WorkflowRun,
  event: WorkflowNotifyEvent,
  options: { readonly resend?: boolean } = {},
): Promise<'created' | 'exists'> {
  const now = deps.clock();
  const key = workflowRunNotificationKey(run);
  const body: WorkflowRunNotificationBody = {
    type: NOTIFICATION_VERSION,
    notificationId: notificationIdOf(key, event),
    event,
    tenantId: run.tenantId,
    subject: { kind: 'workflow', id: workflow.workflowId, name: workflow.name, type: workflow.type },
    workflowId: run.workflowId,
    workflowRunId: run.workflowRunId,
    version: run.version,
    status: run.status === 'RUNNING' ? 'FAILED' : run.status,
    trigger: run.trigger,
    retries: run.retries,
    scheduledFor: run.scheduledFor,
    finishedAt: run.finishedAt,
    failedSteps: run.failedSteps,
    occurredAt: run.finishedAt ?? new Date(now).toISOString(),
  };
  return makeNotification(deps, { key, tenantId: run.tenantId, event, destination: notify.destination, body, traceparent: run.traceparent }, now, options);
}
