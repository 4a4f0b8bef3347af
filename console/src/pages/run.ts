// A run: the attempt's timeline, its error and lease, the other attempts of its occurrence, and
// Cancel or Replay where they apply.
import type { NotificationView, Run } from '../api';
import { api, workflowRunOf } from '../api';
import { confirmDialog, h } from '../dom';
import { between, duration, time, timeText } from '../format';
import type { Page } from '../page';
import { notificationsTable } from '../notifications';
import { act, alertBox, errorText, heading, redraw, STATUS_CLASS } from '../page';

const CANCELLABLE = new Set(['SCHEDULED', 'QUEUED', 'RUNNING']);
const FOLLOW_MS = 2_000;

/** The token targets receive: attempt × 1,000,000 + the lease's version (decision 0061). */
const fencingToken = (run: Run): number => run.attempt * 1_000_000 + run.version;

function timeline(run: Run): HTMLElement {
  const steps: [string, string | null, string][] = [
    ['Created', run.createdAt, `trigger: ${run.trigger}`],
    ['Queued', run.enqueuedAt, `due ${timeText(run.availableAt)}`],
    ['Leased', run.startedAt, run.startedAt ? `start lag ${duration(between(run.availableAt, run.startedAt))}` : ''],
    [`Outcome: ${run.status.toLowerCase()}`, run.finishedAt, run.finishedAt ? `took ${duration(between(run.startedAt, run.finishedAt))}` : ''],
  ];
  return h(
    'ol',
    { class: 'timeline', 'aria-label': 'Timeline' },
    steps.map(([label, at, note]) =>
      h('li', { class: at ? 'done' : 'pending' }, h('strong', null, label), ' ', time(at), note ? h('span', { class: 'note' }, ` ${note}`) : null),
    ),
  );
}

/** The workflow of a workflow step's run. */
const workflowOf = (run: Run): string | null => workflowRunOf(run)?.workflowId ?? null;

/**
 * The runs of the run's occurrence, its attempts: read by the occurrence's instant, so that an old
 * run of a busy job finds them (not among the job's newest runs); a step's from the tenant's runs.
 */
async function attemptsOf(run: Run): Promise<Run[]> {
  const range = { from: run.scheduledFor, to: new Date(Date.parse(run.scheduledFor) + 1).toISOString() };
  const attempts: Run[] = [];
  // A step's instant holds every step run of its workflow run: as many pages as it takes.
  let cursor: string | undefined;
  do {
    const page = workflowOf(run) ? await api.runs(range, 100, cursor) : await api.jobRuns(run.jobId, 100, cursor, range);
    attempts.push(...page.items.filter((other) => other.jobId === run.jobId && other.scheduledFor === run.scheduledFor));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return attempts;
}

export const runPage: Page = async (context) => {
  const [runId = ''] = context.params;
  const title = heading(context, 'Run');
  const body = h('div');
  const alert = alertBox();
  context.main.append(body, alert);
  let seen = '';

  const load = async (): Promise<void> => {
    const run = await api.run(runId);
    const { items: notifications } = await api.notifications(runId);
    const signature = JSON.stringify([run.status, run.version, run.finishedAt, notifications.map((n) => [n.event, n.status, n.tries])]);
    if (signature === seen) return;
    seen = signature;
    const attempts = (await attemptsOf(run)).sort((a, b) => a.attempt - b.attempt);
    const cancel = h('button', { type: 'button', hidden: !CANCELLABLE.has(run.status) }, 'Cancel');
    cancel.addEventListener('click', () => {
      void act(cancel, alert, context, async () => {
        const question = `Cancel run ${run.runId}? A queued run never starts; a running one is cancelled at its next heartbeat.`;
        if (!(await confirmDialog(question, 'Cancel run'))) return 'Not cancelled';
        await api.cancel(run.runId);
        return 'Run cancelled';
      })
        .then(load)
        .catch((error: unknown) => (alert.textContent = errorText(error)));
    });
    const replay = h('button', { type: 'button', hidden: run.status !== 'DEAD' }, 'Replay');
    replay.addEventListener('click', () => {
      void act(replay, alert, context, async () => {
        const { run: replayed } = await api.replay(run.runId);
        location.hash = `#/runs/${encodeURIComponent(replayed.runId)}`;
        return `Replayed as run ${replayed.runId}`;
      });
    });
    const facts: [string, string | Node][] = [
      ['Status', h('span', { class: STATUS_CLASS(run.status), id: 'run-status' }, run.status.toLowerCase())],
      workflowOf(run)
        ? ['Workflow step', h('a', { href: `#/workflows/${encodeURIComponent(workflowOf(run) ?? '')}` }, run.jobId)]
        : ['Job', h('a', { href: `#/jobs/${encodeURIComponent(run.jobId)}` }, run.jobId)],
      ['Scheduled for', time(run.scheduledFor)],
      ['Attempt', String(run.attempt)],
      ['Error', run.error ? `${run.error.code}: ${run.error.message} (${run.error.retryable ? 'retryable' : 'permanent'})` : '—'],
      ['Reason', run.reason ?? '—'],
      ['Lease owner', run.leaseOwner ?? '—'],
      ['Lease expires', time(run.leaseExpiresAt)],
      ['Fencing token', `${fencingToken(run)} (version ${run.version})`],
      ['Delivery', run.delivery ?? 'at-least-once'],
      ['Idempotency key', run.idempotencyKey],
    ];
    redraw(
      body,
      h('div', { class: 'actions', role: 'group', 'aria-label': 'Run actions' }, cancel, replay),
      h('section', { 'aria-labelledby': 'timeline-title' }, h('h2', { id: 'timeline-title' }, 'Timeline'), timeline(run)),
      h(
        'dl',
        { class: 'definition' },
        facts.map(([term, value]) => [h('dt', null, term), h('dd', null, value)]),
      ),
      h(
        'section',
        { 'aria-labelledby': 'attempts-title' },
        h('h2', { id: 'attempts-title' }, 'Attempts of this occurrence'),
        h(
          'ol',
          null,
          attempts.map((other) =>
            h(
              'li',
              null,
              other.runId === run.runId
                ? h('strong', { 'aria-current': 'page' }, `Attempt ${other.attempt} (this run)`)
                : h('a', { href: `#/runs/${encodeURIComponent(other.runId)}` }, `Attempt ${other.attempt}`),
              ` ${other.status.toLowerCase()} (${other.trigger})`,
            ),
          ),
        ),
      ),
      ...(notifications.length > 0 ? [notificationsSection(run, notifications)] : []),
    );
    title.textContent = `Run ${run.runId}`;
    document.title = `Run ${run.runId} · Job scheduler`;
  };
  /** The run's outcome notifications; a dead one can be sent again (decision 0152). */
  const notificationsSection = (run: Run, notifications: readonly NotificationView[]): HTMLElement =>
    notificationsTable('Outcome notifications of this run', notifications, (notification, button) =>
      act(button, alert, context, async () => {
        await api.resendNotification(run.runId, notification.event);
        seen = '';
        await load();
        return `Notification ${notification.event} sent again`;
      }),
    );
  await load();
  context.every(FOLLOW_MS, load);
};
