// Jobs: the tenant's jobs with a name search and filters by status and label.
import type { Job, JobStatus, Run } from '../api';
import { api, listJobs } from '../api';
import { h, table } from '../dom';
import { scheduleText, time, zoneOf } from '../format';
import type { Page } from '../page';
import { alertBox, errorText, heading, reloadOnChange, STATUS_CLASS } from '../page';

const STATUSES: readonly JobStatus[] = ['ACTIVE', 'PAUSED', 'COMPLETED', 'CANCELLED'];

/** A label filter's form: a half-typed one (`team`) is not sent, so the API is never asked for it. */
const LABEL_FILTER_FORM = /^[^=]+=.*$/;

/**
 * The job's last run: the newest of an occurrence due by now that started or ended. A skip is
 * recorded (ended) when asked, ahead of its occurrence: it is not the last run, nor a run waiting.
 */
async function lastRun(job: Job): Promise<Run | null> {
  const runs = await api.jobRuns(job.jobId, 5, undefined, { to: new Date(Date.now() + 1).toISOString() });
  return runs.items.find((run) => run.startedAt !== null || run.finishedAt !== null) ?? null;
}

export const jobsPage: Page = async (context) => {
  heading(context, 'Jobs');
  const search = h('input', { id: 'search-jobs', type: 'search', autocomplete: 'off', placeholder: 'name starts with…' });
  const status = h(
    'select',
    { id: 'status-filter' },
    h('option', { value: '' }, 'Any status'),
    STATUSES.map((value) => h('option', { value }, value.toLowerCase())),
  );
  const label = h('input', {
    id: 'label-filter',
    type: 'text',
    autocomplete: 'off',
    placeholder: 'team=billing',
    pattern: '[^=]+=.*',
    'aria-describedby': 'label-filter-error',
  });
  const labelError = h('p', { class: 'field-error', id: 'label-filter-error' });
  const filters = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter jobs' },
    h('div', null, h('label', { for: 'search-jobs' }, 'Search jobs'), search),
    h('div', null, h('label', { for: 'status-filter' }, 'Status'), status),
    h('div', null, h('label', { for: 'label-filter' }, 'Label'), label, labelError),
  );
  filters.addEventListener('submit', (event) => event.preventDefault());
  const results = h('div', { id: 'jobs-results' });
  const alert = alertBox();
  const more = h('button', { type: 'button', hidden: true }, 'More jobs');
  context.main.append(h('p', null, h('a', { href: '#/new', class: 'button' }, 'New job')), filters, alert, results, more);

  let cursor: string | null = null;
  let generation = 0;
  let rows: Job[] = [];

  const draw = (): void => {
    if (rows.length === 0) {
      results.replaceChildren(h('p', null, 'No jobs match.'));
      return;
    }
    results.replaceChildren(
      table(
        `Jobs (${rows.length}${cursor ? '+' : ''})`,
        ['Name', 'Type', 'Schedule', 'Status', 'Next run', 'Last run'],
        rows.map((job) => [
          h('a', { href: `#/jobs/${encodeURIComponent(job.jobId)}` }, job.name),
          job.type,
          h('span', null, scheduleText(job.schedule)),
          h('span', { class: STATUS_CLASS(job.status) }, job.status.toLowerCase()),
          job.nextRunAt ? h('span', null, time(job.nextRunAt, zoneOf(job.schedule))) : '—',
          h('span', { 'data-last-run': job.jobId }, '…'),
        ]),
        { class: 'jobs' },
      ),
    );
    for (const job of rows) {
      void lastRun(job)
        .then((run) => {
          const cell = results.querySelector(`[data-last-run="${CSS.escape(job.jobId)}"]`);
          if (!cell) return;
          cell.replaceChildren(
            run ? h('a', { href: `#/runs/${encodeURIComponent(run.runId)}`, class: STATUS_CLASS(run.status) }, run.status.toLowerCase()) : 'none yet',
          );
        })
        .catch(() => undefined);
    }
  };

  const load = async (append: boolean): Promise<void> => {
    const mine = ++generation;
    alert.textContent = '';
    const labelText = label.value.trim();
    const labelFormed = labelText === '' || LABEL_FILTER_FORM.test(labelText);
    label.setAttribute('aria-invalid', String(!labelFormed));
    labelError.textContent = labelFormed ? '' : 'A label filter is key=value (team=billing): the list filters by it once it has the "=".';
    if (!labelFormed) return;
    const labels = labelText ? [labelText] : [];
    try {
      const page = await listJobs(
        { name: search.value.trim() || undefined, status: (status.value || undefined) as JobStatus | undefined, labels },
        append ? (cursor ?? undefined) : undefined,
      );
      if (mine !== generation) return;
      rows = append ? [...rows, ...page.items] : page.items;
      cursor = page.nextCursor;
      more.hidden = cursor === null;
      draw();
      context.say(`${rows.length} job${rows.length === 1 ? '' : 's'} shown`);
    } catch (error) {
      if (mine === generation) alert.textContent = errorText(error);
    }
  };

  reloadOnChange(context, load, more, [
    { control: search, event: 'input' },
    { control: label, event: 'input' },
    { control: status, event: 'change' },
  ]);
  await load(false);
};
