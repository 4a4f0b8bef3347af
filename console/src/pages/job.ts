// A job: its definition, its next fire times in its zone and the viewer's, its runs (followed
// live), and the actions on it.
import type { JobDetail, Run } from '../api';
import { api } from '../api';
import { confirmDialog, h, table } from '../dom';
import { between, daylightSavingNotes, duration, localInputValue, scheduleText, time, timeText, viewerZone, zoneOf } from '../format';
import type { Page, PageContext } from '../page';
import { act, alertBox, errorText, FOLLOWED_ROWS, heading, newestItems, oneAtATime, redraw, STATUS_CLASS } from '../page';

/** How often the page asks for new runs. */
const FOLLOW_MS = 2_000;

export function runRows(runs: readonly Run[]): HTMLTableElement {
  return table(
    'Runs, newest first',
    ['Scheduled for', 'Started', 'Finished', 'Status', 'Attempt', 'Start lag', 'Duration', 'Why'],
    runs.map((run) => [
      h(
        'a',
        { href: `#/runs/${encodeURIComponent(run.runId)}`, 'aria-label': `Run scheduled for ${timeText(run.scheduledFor)}, attempt ${run.attempt}` },
        time(run.scheduledFor),
      ),
      time(run.startedAt),
      time(run.finishedAt),
      h('span', { class: STATUS_CLASS(run.status), 'data-run-status': run.runId }, run.status.toLowerCase()),
      String(run.attempt),
      duration(between(run.availableAt, run.startedAt)),
      duration(between(run.startedAt, run.finishedAt)),
      run.reason ?? (run.error ? `${run.error.code}: ${run.error.message}` : ''),
    ]),
    { class: 'runs', id: 'runs-table' },
  );
}

/** A job's notify as one line: its events, then where they go. */
function notifyText(job: JobDetail): string {
  if (!job.notify) return '—';
  const { destination } = job.notify;
  const where =
    destination.kind === 'http' ? destination.url : destination.kind === 'sns' ? `SNS ${destination.topicArn}` : `EventBridge ${destination.eventBusName}`;
  return `${job.notify.events.join(', ')} to ${where}`;
}

function definition(job: JobDetail): HTMLElement {
  const rows: [string, string | Node][] = [
    ['Job id', job.jobId],
    ['Type', job.type],
    ['Status', h('span', { class: STATUS_CLASS(job.status), id: 'job-status' }, job.status.toLowerCase())],
    ['Schedule', scheduleText(job.schedule)],
    ['Target', job.target.kind === 'http' ? `${job.target.method ?? 'POST'} ${job.target.url}` : job.target.kind],
    ['Delivery', job.delivery],
    ['Priority', job.priority],
    ['Timeout', `${job.timeoutSeconds} s`],
    ['Retries', `${job.retryPolicy.maxAttempts} attempts, ${job.retryPolicy.initialDelaySeconds} s doubling up to ${job.retryPolicy.maxDelaySeconds} s`],
    ['Overlap, misfire', `${job.overlapPolicy}, ${job.misfirePolicy}`],
    ...(job.status === 'PAUSED'
      ? ([
          ['Pause note', h('span', { id: 'pause-note' }, job.pauseNote ?? '—')],
          ['Resumes by itself', job.pausedUntil ? time(job.pausedUntil) : 'No: resume it'],
        ] as [string, string | Node][])
      : []),
    ['Notifications', notifyText(job)],
    [
      'Labels',
      job.labels && Object.keys(job.labels).length > 0
        ? Object.entries(job.labels)
            .map(([k, v]) => `${k}=${v}`)
            .join(', ')
        : '—',
    ],
    ['Created', time(job.createdAt)],
    ['Updated', time(job.updatedAt)],
  ];
  return h(
    'dl',
    { class: 'definition' },
    rows.map(([term, value]) => [h('dt', null, term), h('dd', null, value)]),
  );
}

async function fireTimes(job: JobDetail, context: PageContext, refresh: () => Promise<void>): Promise<HTMLElement> {
  const zone = zoneOf(job.schedule);
  const section = h('section', { 'aria-labelledby': 'next-title' }, h('h2', { id: 'next-title' }, 'Next fire times'));
  if (job.status !== 'ACTIVE' && job.status !== 'PAUSED') {
    section.append(h('p', null, `None: the job is ${job.status.toLowerCase()}.`));
    return section;
  }
  // A paused job's occurrences do not fire: offering them (and Skip) would say they will.
  if (job.status === 'PAUSED') {
    section.append(
      h(
        'p',
        { id: 'paused-fire-times' },
        job.pausedUntil
          ? ['None while paused: the job resumes by itself at ', time(job.pausedUntil), ', and fires again from then.']
          : 'None while paused: the job has no end to its pause, and fires again once resumed.',
      ),
    );
    return section;
  }
  try {
    const recurring = job.schedule.kind === 'cron' || job.schedule.kind === 'every';
    // A job's own preview: its skips are marked, and each start carries the job's jitter.
    const occurrences = recurring ? (await api.previewJob(job.jobId, 5)).occurrences : job.upcomingRuns.map((at) => ({ at, startsAt: at, skipped: null }));
    const notes = daylightSavingNotes(
      occurrences.map((occurrence) => occurrence.at),
      zone,
    );
    const jittered = occurrences.some((occurrence) => occurrence.startsAt !== null && occurrence.startsAt !== occurrence.at);
    const alert = alertBox();
    const skipButton = (at: string): HTMLButtonElement => {
      const button = h('button', { type: 'button', 'aria-label': `Skip the occurrence at ${timeText(at)}` }, 'Skip');
      button.addEventListener('click', () => {
        void act(button, alert, context, async () => (await api.skip(job.jobId, [at]), `Occurrence at ${timeText(at)} skipped`)).then((done) =>
          done ? refresh() : undefined,
        );
      });
      return button;
    };
    section.append(
      occurrences.length === 0
        ? h('p', null, 'None.')
        : table(
            `In the job's zone (${zone}) and yours (${viewerZone})`,
            [`Job's zone (${zone})`, `Your zone (${viewerZone})`, ...(jittered ? ['Starts (with jitter)'] : []), 'Note', ...(recurring ? [''] : [])],
            occurrences.map((occurrence, index) => [
              time(occurrence.at, zone),
              time(occurrence.at),
              ...(jittered ? [time(occurrence.startsAt)] : []),
              occurrence.skipped ? `Skipped: ${occurrence.skipped}` : (notes[index] ?? ''),
              ...(recurring ? [occurrence.skipped ? '' : skipButton(occurrence.at)] : []),
            ]),
            { id: 'fire-times' },
          ),
      alert,
    );
  } catch (error) {
    section.append(h('p', { class: 'error' }, errorText(error)));
  }
  return section;
}

/**
 * Pause, with an optional note and a time to resume by itself. A paused job's form shows its pause
 * as it is (the API replaces both note and end), so "Change pause" keeps the end unless the user
 * changes it or chooses "No end".
 */
function pauseForm(job: JobDetail, alert: HTMLElement, context: PageContext, refresh: () => Promise<void>): HTMLElement {
  const note = h('input', { type: 'text', id: 'pause-note-input', maxlength: '500', placeholder: 'Why (optional)', value: job.pauseNote ?? '' });
  // datetime-local is the viewer's wall time (the label names the zone); the API takes an instant.
  const until = h('input', { type: 'datetime-local', id: 'pause-until-input', step: '1', value: job.pausedUntil ? localInputValue(job.pausedUntil) : null });
  const endless = h('input', { type: 'checkbox', id: 'pause-endless-input', checked: !job.pausedUntil });
  until.addEventListener('input', () => (endless.checked = until.value === ''));
  endless.addEventListener('change', () => {
    if (endless.checked) until.value = '';
  });
  const button = h('button', { type: 'button' }, job.status === 'PAUSED' ? 'Change pause' : 'Pause');
  button.addEventListener('click', () => {
    void act(button, alert, context, async () => {
      if (!endless.checked && !until.value) throw new Error('Give a time to resume at, or choose "No end".');
      const resumeAt = endless.checked ? undefined : new Date(until.value).toISOString();
      await api.pause(job.jobId, { ...(note.value ? { note: note.value } : {}), ...(resumeAt ? { until: resumeAt } : {}) });
      return resumeAt ? `Job paused until ${timeText(resumeAt)}` : 'Job paused with no end';
    }).then((done) => (done ? refresh() : undefined));
  });
  return h(
    'span',
    { class: 'pause', hidden: job.status !== 'ACTIVE' && job.status !== 'PAUSED' },
    h('label', { for: 'pause-note-input' }, 'Note'),
    note,
    h('label', { for: 'pause-until-input' }, `Resume at (your time, ${viewerZone})`),
    until,
    h('label', { for: 'pause-endless-input' }, endless, ' No end'),
    button,
  );
}

function actions(job: JobDetail, context: PageContext, refresh: () => Promise<void>): HTMLElement {
  const alert = alertBox();
  const button = (label: string, hidden: boolean, action: () => Promise<string>, danger = false): HTMLButtonElement => {
    const element = h('button', { type: 'button', hidden, class: danger ? 'danger' : null }, label);
    element.addEventListener('click', () => {
      void act(element, alert, context, action).then((done) => (done ? refresh() : undefined));
    });
    return element;
  };
  const open = job.status === 'ACTIVE' || job.status === 'PAUSED' || job.status === 'COMPLETED';
  return h(
    'div',
    { class: 'actions', role: 'group', 'aria-label': 'Job actions' },
    button('Resume', job.status !== 'PAUSED', async () => (await api.resume(job.jobId), 'Job resumed')),
    pauseForm(job, alert, context, refresh),
    button('Trigger now', !open, async () => {
      const { run } = await api.trigger(job.jobId);
      return `Run ${run.runId} triggered`;
    }),
    button(
      'Delete',
      job.status === 'CANCELLED',
      async () => {
        if (!(await confirmDialog(`Delete job ${job.name}? No occurrence fires afterwards and runs not yet started are cancelled.`, 'Delete job')))
          return 'Not deleted';
        await api.deleteJob(job.jobId);
        return `Job ${job.name} deleted`;
      },
      true,
    ),
    alert,
  );
}

export const jobPage: Page = async (context) => {
  const [jobId = ''] = context.params;
  const title = heading(context, 'Job');
  const body = h('div');
  const runsBox = h(
    'section',
    { 'aria-labelledby': 'runs-title' },
    h('h2', { id: 'runs-title' }, 'Runs'),
    h('p', { class: 'note' }, 'Follows new runs as they come, every 2 seconds.'),
  );
  const runsTable = h('div', { id: 'runs' });
  const moreRuns = h('button', { type: 'button', id: 'more-runs', hidden: true }, 'More runs');
  runsBox.append(runsTable, moreRuns);
  context.main.append(body, runsBox);

  let seen = '';
  let shown = FOLLOWED_ROWS;
  const loadRuns = oneAtATime(async (): Promise<void> => {
    const { items, more } = await newestItems((limit, cursor) => api.jobRuns(jobId, limit, cursor), shown);
    moreRuns.hidden = !more;
    const signature = JSON.stringify(items.map((run) => [run.runId, run.status, run.finishedAt]));
    if (signature === seen) return;
    seen = signature;
    redraw(runsTable, items.length === 0 ? h('p', null, 'No runs yet.') : runRows(items));
  });
  moreRuns.addEventListener('click', () => {
    shown += FOLLOWED_ROWS;
    void loadRuns().then(
      () => context.say(`${runsTable.querySelectorAll('tbody tr').length} runs shown`),
      (error: unknown) => context.say(`Couldn't load more runs (${errorText(error)})`),
    );
  });

  const loadJob = async (): Promise<void> => {
    const job = await api.job(jobId);
    title.textContent = `Job ${job.name}`;
    document.title = `${job.name} · Job scheduler`;
    body.replaceChildren(actions(job, context, refresh), definition(job), await fireTimes(job, context, refresh));
  };
  const refresh = async (): Promise<void> => {
    const hadFocus = body.contains(document.activeElement) || document.activeElement === document.body;
    await Promise.all([loadJob(), loadRuns()]);
    // The buttons were drawn again: keep the keyboard in the actions (Pause becomes Resume).
    if (hadFocus) body.querySelector<HTMLButtonElement>('.actions button:not([hidden])')?.focus();
  };
  await refresh();
  context.every(FOLLOW_MS, loadRuns);
};
