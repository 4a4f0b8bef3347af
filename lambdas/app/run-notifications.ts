// A run's outcome notifications as the API shows them (GET /v1/runs/{runId}/notifications), and a
// dead one sent again on request with a fresh budget (POST …/notifications/{event}/resend); a
// workflow run's, one per end (its first and each retry's), likewise (decision 0153).
import { ConflictError, NotFoundError, ServiceUnavailableError } from '../core/errors';
import { logger } from '../core/logger';
import type { NotifyDestination, NotifyEvent, WorkflowNotifyEvent } from '../domain/notify';
import type { TenantLimits } from '../domain/tenant';
import { traceIdOf } from '../domain/trace-context';
import type { NotificationRecord } from '../store/notifications';
import { NOTIFICATION_RETENTION_SECONDS } from '../store/notifications';
import type { Run } from '../domain/run';
import type { SchedulerDeps } from './deps';
import { admitRunRequest } from './create-rate';
import { jobSubject, notifyOutcome, workflowRunNotificationKey } from './notifications';
import { tenantRun } from './runs';
import { getWorkflowRun } from './workflow-runs';

/** A notification as the API shows it: its state and where it goes, not the body (the run says what it would say). */
export type NotificationView = Omit<NotificationRecord, 'body' | 'tenantId' | 'runId'>;

/** How long a resend may stay PENDING with no try before it may be sent again (its message was never sent). */
export const STALLED_RESEND_MS = 15 * 60_000;

/** A resend's answer, and what the notification was before it (null: never made, made now). */
export interface Resent<V extends NotificationView = NotificationView> {
  readonly notification: V;
  readonly before: NotificationRecord['status'] | null;
}

const viewOf = ({ body: _body, tenantId: _tenant, runId: _run, ...view }: NotificationRecord): NotificationView => view;

/** The run's notifications, one per event it raised (none when its job asks for none). */
export async function listRunNotifications(deps: SchedulerDeps, tenantId: string, runId: string): Promise<NotificationView[]> {
  await tenantRun(deps, tenantId, runId);
  return (await deps.notifications.ofRun(runId)).filter((record) => record.tenantId === tenantId).map(viewOf);
}

/**
 * Sends a DEAD notification again: PENDING with a fresh budget, and its first try's message sent
 * now. Counted against the tenant's create rate, as a replay is. A 409 unless it is DEAD (or a
 * resend that stalled before its message was sent).
 */
export async function resendNotification(
  deps: SchedulerDeps,
  tenantId: string,
  runId: string,
  event: NotifyEvent,
  limits: TenantLimits = deps.config.tenantDefaults,
): Promise<Resent> {
  const run = await tenantRun(deps, tenantId, runId);
  // An outcome that raised the event, whose notification was never made (the external worker's
  // complete or fail that recorded it stopped before it): made now, and sent. Not once a record
  // made then could have expired (its retention, 14 days): it may have been SENT, and would arrive twice.
  if ((await deps.notifications.get(runId, event)) === null && (await deps.runs.notifyEventOf(runId)) === event) {
    if (mayHaveExpired(run, deps.clock())) {
      throw new ConflictError(
        `The ${event} notification of run ${runId} is no longer kept (notifications are kept ${NOTIFICATION_RETENTION_SECONDS / 86_400} days); it cannot be sent again`,
      );
    }
    const job = await deps.jobs.getAnyTenant(run.jobId);
    if (job) {
      await admitRunRequest(deps, tenantId, limits, deps.clock());
      await notifyOutcome(deps, jobSubject(job), run);
      const made = await deps.notifications.get(runId, event);
      if (made) return { notification: viewOf(made), before: null };
    }
  }
  // To where the job sends notifications now: a destination fixed since (a PATCH of `notify`) gets it.
  const job = await deps.jobs.getAnyTenant(run.jobId);
  const destination = job?.tenantId === tenantId ? job.notify?.destination : undefined;
  return resend(deps, { tenantId, key: runId, event, traceparent: run.traceparent, what: `run ${runId}`, fields: { runId }, destination }, limits);
}

/**
 * Whether a notification made at the run's end could have left by now: its record is kept
 * NOTIFICATION_RETENTION_SECONDS from when it was made, at or after the end. A day's margin covers
 * a record made late (a resend, a try put off) and DynamoDB's TTL running early never: it only runs late.
 */
function mayHaveExpired(run: Pick<Run, 'finishedAt' | 'updatedAt'>, now: number): boolean {
  const endedAt = Date.parse(run.finishedAt ?? run.updatedAt);
  return now - endedAt >= NOTIFICATION_RETENTION_SECONDS * 1000 - 86_400_000;
}

/** A workflow run's notification and the end that raised it: 0 its first, n the nth retry's. */
export type WorkflowRunNotificationView = NotificationView & { readonly retry: number };

/** The most ends of one workflow run whose notifications are listed, newest first. */
export const LISTED_WORKFLOW_RUN_ENDS = 20;

/** A workflow run's notifications, one per event each of its ends raised, its latest end's first (at most the last 20 ends'). */
export async function listWorkflowRunNotifications(
  deps: SchedulerDeps,
  tenantId: string,
  workflowId: string,
  workflowRunId: string,
): Promise<WorkflowRunNotificationView[]> {
  const run = await getWorkflowRun(deps, tenantId, workflowId, workflowRunId);
  const ends = Array.from({ length: Math.min(run.retries + 1, LISTED_WORKFLOW_RUN_ENDS) }, (_, index) => run.retries - index);
  const records = await Promise.all(ends.map((retries) => deps.notifications.ofRun(workflowRunNotificationKey({ workflowRunId, retries }))));
  return records.flatMap((ofEnd, index) =>
    ofEnd.filter((record) => record.tenantId === tenantId).map((record) => ({ ...viewOf(record), retry: ends[index]! })),
  );
}

/** Sends the DEAD notification of a workflow run's latest end again, as `resendNotification` does a run's. */
export async function resendWorkflowRunNotification(
  deps: SchedulerDeps,
  tenantId: string,
  workflowId: string,
  workflowRunId: string,
  event: Exclude<WorkflowNotifyEvent, 'skipped'>,
  limits: TenantLimits = deps.config.tenantDefaults,
): Promise<Resent<WorkflowRunNotificationView>> {
  const run = await getWorkflowRun(deps, tenantId, workflowId, workflowRunId);
  const key = workflowRunNotificationKey(run);
  // To where the workflow's newest version sends notifications: a destination fixed by a new version gets it.
  const workflow = await deps.workflows.get(tenantId, workflowId);
  const newest = workflow ? await deps.workflows.getVersion(workflowId, workflow.version) : null;
  const destination = newest?.spec.notify?.destination;
  const { notification, before } = await resend(
    deps,
    {
      tenantId,
      key,
      event,
      traceparent: run.traceparent,
      what: `the latest end of workflow run ${workflowRunId}`,
      fields: { workflowId, workflowRunId },
      destination,
    },
    limits,
  );
  return { notification: { ...notification, retry: run.retries }, before };
}

async function resend(
  deps: SchedulerDeps,
  notification: {
    tenantId: string;
    key: string;
    event: NotifyEvent;
    traceparent: string | undefined;
    /** What the notification is of, for a 404. */
    what: string;
    /** Its log lines' identity. */
    fields: Record<string, string>;
    /** Where its job or workflow sends notifications now; the one it was made for when undefined. */
    destination: NotifyDestination | undefined;
  },
  limits: TenantLimits,
): Promise<Resent> {
  const { tenantId, key, event, traceparent } = notification;
  const record = await deps.notifications.get(key, event);
  if (!record || record.tenantId !== tenantId) throw new NotFoundError(`No ${event} notification of ${notification.what}`);
  const now = deps.clock();
  const untried = record.status === 'PENDING' && record.tries === 0;
  const stalled = untried && record.resentAt !== null && Date.parse(record.resentAt) < now - STALLED_RESEND_MS;
  const unsent = untried && record.resentAt === null && Date.parse(record.createdAt) < now - STALLED_RESEND_MS;
  if (record.status !== 'DEAD' && !stalled && !unsent) throw new ConflictError(`The notification is ${record.status}; only a DEAD one is sent again`);
  await admitRunRequest(deps, tenantId, limits, now);
  const revived = await deps.notifications.revive(
    key,
    event,
    now,
    stalled
      ? { kind: 'stalled', resentBefore: now - STALLED_RESEND_MS }
      : unsent
        ? { kind: 'unsent', createdBefore: now - STALLED_RESEND_MS }
        : { kind: 'dead' },
    notification.destination,
  );
  if (!revived) throw new ConflictError('The notification was sent again or changed meanwhile; read it again');
  try {
    await deps.dispatch.send([{ runId: key, tenantId, availableAt: now, notify: event, traceparent }], now);
  } catch (error) {
    // No message, no try: back to DEAD, so that the caller's retry can send it again.
    await deps.notifications.reviveFailed(key, event, now).catch(() => false);
    logger.warn('notification resend: its message was not sent; it stays DEAD', {
      ...notification.fields,
      tenantId,
      event,
      error: error instanceof Error ? error.message : String(error),
    });
    throw new ServiceUnavailableError('The notification could not be queued; try again', [], { 'retry-after': '5' });
  }
  logger.info('notification sent again on request', {
    ...notification.fields,
    tenantId,
    traceId: traceIdOf(traceparent),
    event,
    notificationId: record.notificationId,
  });
  return {
    notification: viewOf({
      ...record,
      status: 'PENDING',
      tries: 0,
      deadAt: null,
      resentAt: new Date(now).toISOString(),
      destination: notification.destination ?? record.destination,
    }),
    before: record.status,
  };
}
