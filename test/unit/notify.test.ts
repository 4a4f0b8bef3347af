// The rules of outcome notifications (lambdas/domain/notify.ts): which outcome raises which event,
// what a job may declare, where the deployment lets notifications go, what the body carries, and
// the notification's own retry budget.
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../lambdas/core/errors';
import { parseOrThrow } from '../../lambdas/core/validation';
import { jobPatchSchema, jobSpecSchema } from '../../lambdas/domain/job';
import {
  NOTIFICATION_RETRY,
  eventOfOutcome,
  notificationBodyOf,
  notificationIdOf,
  notificationRetryDelay,
  notifySchema,
  wantedEvent,
} from '../../lambdas/domain/notify';
import { RUN_STATUSES } from '../../lambdas/domain/run';
import { notifyDestinationRefusal, targetAllowlistSchema } from '../../lambdas/domain/target-allowlist';
import { notifyEventOf } from '../../lambdas/store/run-items';

const job = { name: 'nightly', type: 'reports', schedule: { kind: 'now' }, target: { kind: 'http', url: 'https://example.com/run' } };

function failingPaths(schema: typeof jobSpecSchema | typeof jobPatchSchema, body: unknown): string[] {
  try {
    parseOrThrow(schema, body);
  } catch (error) {
    if (error instanceof ValidationError) return error.errors.map((e) => e.path);
    throw error;
  }
  return [];
}

describe('notification events', () => {
  it('maps each outcome to its event: failed is every attempt that failed or timed out with a retry to follow', () => {
    expect(Object.fromEntries(RUN_STATUSES.map((status) => [status, eventOfOutcome(status)]))).toEqual({
      SCHEDULED: null,
      QUEUED: null,
      RUNNING: null,
      SUCCEEDED: 'succeeded',
      FAILED: 'failed',
      TIMED_OUT: 'failed',
      CANCELLED: null,
      SKIPPED: 'skipped',
      DEAD: 'dead',
    });
  });

  it('raises an event only when the job asks for it', () => {
    const notify = parseOrThrow(notifySchema, { events: ['dead'], destination: { kind: 'http', url: 'https://example.com/n' } });
    expect(wantedEvent(notify, 'DEAD')).toBe('dead');
    expect(wantedEvent(notify, 'SUCCEEDED')).toBeNull();
    expect(wantedEvent(undefined, 'DEAD')).toBeNull();
    expect(wantedEvent(null, 'DEAD')).toBeNull();
  });

  it('gives a notification one id per run and event, free of the dot the signature separates on', () => {
    expect(notificationIdOf('run-1', 'dead')).toBe(notificationIdOf('run-1', 'dead'));
    expect(notificationIdOf('run-1', 'dead')).not.toBe(notificationIdOf('run-1', 'failed'));
    expect(notificationIdOf('run-1', 'dead')).not.toBe(notificationIdOf('run-2', 'dead'));
    expect(notificationIdOf('run-1', 'dead')).toMatch(/^ntf_[A-Za-z0-9_-]{32}$/);
  });

  it('reads the event marked on a finished run item, and nothing else', () => {
    expect(notifyEventOf({ notifyEvent: 'dead' })).toBe('dead');
    expect(notifyEventOf({ notifyEvent: 'exploded' })).toBeUndefined();
    expect(notifyEventOf({})).toBeUndefined();
  });
});

describe('notify in a job', () => {
  it('accepts each destination and fills the bus source', () => {
    const spec = parseOrThrow(jobSpecSchema, {
      ...job,
      notify: { events: ['dead', 'skipped'], destination: { kind: 'eventbridge', eventBusName: 'ops' } },
    });
    expect(spec.notify).toEqual({
      events: ['dead', 'skipped'],
      destination: { kind: 'eventbridge', eventBusName: 'ops', source: 'job-scheduler.notifications' },
    });
    expect(
      failingPaths(jobSpecSchema, {
        ...job,
        notify: { events: ['succeeded'], destination: { kind: 'sns', topicArn: 'arn:aws:sns:us-east-1:123456789012:ops' } },
      }),
    ).toEqual([]);
    expect(failingPaths(jobSpecSchema, job)).toEqual([]);
  });

  it('names each bad field of notify', () => {
    expect(failingPaths(jobSpecSchema, { ...job, notify: { events: [], destination: { kind: 'http', url: 'https://example.com' } } })).toEqual([
      'notify.events',
    ]);
    expect(failingPaths(jobSpecSchema, { ...job, notify: { events: ['exploded'], destination: { kind: 'http', url: 'https://example.com' } } })).toEqual([
      'notify.events.0',
    ]);
    expect(failingPaths(jobSpecSchema, { ...job, notify: { events: ['dead', 'dead'], destination: { kind: 'http', url: 'https://example.com' } } })).toEqual([
      'notify.events',
    ]);
    expect(failingPaths(jobSpecSchema, { ...job, notify: { events: ['dead'], destination: { kind: 'http', url: 'ftp://example.com' } } })).toEqual([
      'notify.destination.url',
    ]);
    expect(failingPaths(jobSpecSchema, { ...job, notify: { events: ['dead'], destination: { kind: 'http', url: 'https://u:p@example.com' } } })).toEqual([
      'notify.destination.url',
    ]);
    expect(failingPaths(jobSpecSchema, { ...job, notify: { events: ['dead'], destination: { kind: 'sns', topicArn: 'ops' } } })).toEqual([
      'notify.destination.topicArn',
    ]);
    expect(failingPaths(jobSpecSchema, { ...job, notify: { events: ['dead'], destination: { kind: 'pager' } } })).toEqual(['notify.destination.kind']);
    expect(failingPaths(jobSpecSchema, { ...job, notify: { events: ['dead'] } })).toEqual(['notify.destination']);
    expect(failingPaths(jobSpecSchema, { ...job, notify: { events: ['dead'], destination: { kind: 'http', url: 'https://e.com' }, extra: 1 } })).toEqual([
      'notify.extra',
    ]);
  });

  it('lets a PATCH set notify, or remove it with null', () => {
    expect(failingPaths(jobPatchSchema, { notify: null })).toEqual([]);
    expect(failingPaths(jobPatchSchema, { notify: { events: ['dead'], destination: { kind: 'http', url: 'https://example.com' } } })).toEqual([]);
    expect(failingPaths(jobPatchSchema, { notify: { events: [] } })).toEqual(['notify.events', 'notify.destination']);
  });
});

describe('notification destinations the deployment allows', () => {
  const allowed = targetAllowlistSchema.parse({
    snsTopicArns: ['arn:aws:sns:us-east-1:123456789012:ops'],
    eventBusArns: ['arn:aws:events:us-east-1:123456789012:event-bus/alerts'],
  });

  it('allows only listed topics and buses (a bus by ARN or by its name)', () => {
    expect(notifyDestinationRefusal({ kind: 'sns', topicArn: 'arn:aws:sns:us-east-1:123456789012:ops' }, allowed)).toBeNull();
    expect(notifyDestinationRefusal({ kind: 'sns', topicArn: 'arn:aws:sns:us-east-1:123456789012:other' }, allowed)).toEqual({
      path: 'notify.destination.topicArn',
      message: expect.stringMatching(/snsTopicArns/),
    });
    expect(notifyDestinationRefusal({ kind: 'eventbridge', eventBusName: 'alerts', source: 's' }, allowed)).toBeNull();
    expect(
      notifyDestinationRefusal({ kind: 'eventbridge', eventBusName: 'arn:aws:events:us-east-1:123456789012:event-bus/alerts', source: 's' }, allowed),
    ).toBeNull();
    expect(notifyDestinationRefusal({ kind: 'eventbridge', eventBusName: 'default', source: 's' }, allowed)?.path).toBe('notify.destination.eventBusName');
  });

  it('leaves HTTP URLs to the egress policy, as for targets', () => {
    expect(notifyDestinationRefusal({ kind: 'http', url: 'https://example.com' }, allowed)).toBeNull();
  });
});

describe('the notification body', () => {
  const run = {
    runId: 'run-7',
    jobId: 'job-1',
    tenantId: 't-1',
    attempt: 3,
    trigger: 'schedule' as const,
    scheduledFor: '2026-01-01T00:00:00.000Z',
    startedAt: '2026-01-01T00:00:01.000Z',
  };
  const subject = { kind: 'job' as const, id: 'job-1', name: 'nightly', type: 'reports' };

  it('says what happened to the run, with the error cut short', () => {
    const body = notificationBodyOf(
      subject,
      run,
      {
        status: 'DEAD',
        error: { code: 'HTTP_500', message: 'x'.repeat(2000), retryable: true },
        reason: 'retry budget spent',
        at: Date.parse('2026-01-01T00:00:02Z'),
      },
      'dead',
    );
    expect(body).toMatchObject({
      type: 'job-scheduler.notification/1',
      notificationId: notificationIdOf('run-7', 'dead'),
      event: 'dead',
      tenantId: 't-1',
      subject,
      jobId: 'job-1',
      runId: 'run-7',
      attempt: 3,
      status: 'DEAD',
      startedAt: '2026-01-01T00:00:01.000Z',
      finishedAt: '2026-01-01T00:00:02.000Z',
      reason: 'retry budget spent',
    });
    expect(body.error?.message).toHaveLength(512);
  });

  it('carries no field of the job beyond its identity: never its payload, target or headers', () => {
    const body = notificationBodyOf(subject, run, { status: 'SKIPPED', error: null, reason: 'overlap', at: 0 }, 'skipped');
    expect(Object.keys(body).sort()).toEqual(
      [
        'attempt',
        'error',
        'event',
        'finishedAt',
        'jobId',
        'notificationId',
        'occurredAt',
        'reason',
        'runId',
        'scheduledFor',
        'startedAt',
        'status',
        'subject',
        'tenantId',
        'trigger',
        'type',
      ].sort(),
    );
    expect(body.finishedAt).toBeNull();
  });
});

describe("a notification's own budget", () => {
  it('doubles the wait between tries from 5 s, capped, and stops after its last try', () => {
    const waits = Array.from({ length: NOTIFICATION_RETRY.maxTries }, (_, index) => notificationRetryDelay(index + 1, true));
    expect(waits).toEqual([5, 10, 20, 40, 80, null]);
    expect(notificationRetryDelay(1, true, { maxTries: 20, firstDelaySeconds: 5, maxDelaySeconds: 300 })).toBe(5);
    expect(notificationRetryDelay(10, true, { maxTries: 20, firstDelaySeconds: 5, maxDelaySeconds: 300 })).toBe(300);
  });

  it('does not try again a destination that refused for good (a 4xx, a blocked address)', () => {
    expect(notificationRetryDelay(1, false)).toBeNull();
  });
});
