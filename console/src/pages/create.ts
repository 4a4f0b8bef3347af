// New job: a form with the schedule kinds, a live preview of the next fire times, and the API's own
// validation errors beside the fields they name.
import type { FieldError } from '../api';
import { api, ApiError } from '../api';
import { h } from '../dom';
import { daylightSavingNotes, time, viewerZone } from '../format';
import type { Page } from '../page';
import { errorText, heading } from '../page';

type Kind = 'now' | 'delay' | 'at' | 'cron' | 'every';

/** A labelled field whose errors show beside it; `path` is the API's name for it (`schedule.expression`). */
function field(path: string, label: string, control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, hint?: string): HTMLElement {
  const id = `f-${path.replace(/\W/g, '-')}`;
  control.id = id;
  control.dataset.path = path;
  const errorId = `${id}-error`;
  const hintId = hint ? `${id}-hint` : null;
  control.setAttribute('aria-describedby', [hintId, errorId].filter(Boolean).join(' '));
  return h(
    'div',
    { class: 'field', 'data-field': path },
    h('label', { for: id }, label),
    control,
    hint ? h('p', { class: 'hint', id: hintId }, hint) : null,
    h('p', { class: 'field-error', id: errorId }),
  );
}

function showErrors(form: HTMLElement, summary: HTMLElement, errors: readonly FieldError[], fallback: string): void {
  const unplaced: FieldError[] = [];
  for (const error of errors) {
    // The deepest field the form has for the error's path: `target.url` beside the URL, `schedule` beside the kind.
    const parts = error.path.split('.');
    let holder: Element | null = null;
    while (parts.length > 0 && !holder) {
      holder = form.querySelector(`[data-field="${CSS.escape(parts.join('.'))}"]`);
      parts.pop();
    }
    const box = holder?.querySelector('.field-error');
    if (holder && box && !(holder as HTMLElement).hidden) {
      box.textContent = [box.textContent, error.message].filter(Boolean).join('; ');
      holder.querySelector('input, select, textarea')?.setAttribute('aria-invalid', 'true');
    } else unplaced.push(error);
  }
  summary.replaceChildren(
    ...(errors.length > 0 || fallback ? [h('p', null, fallback || 'The job was not created:')] : []),
    ...(unplaced.length > 0
      ? [
          h(
            'ul',
            null,
            unplaced.map((error) => h('li', null, `${error.path}: ${error.message}`)),
          ),
        ]
      : []),
  );
}

function clearErrors(form: HTMLElement, summary: HTMLElement): void {
  for (const box of form.querySelectorAll('.field-error')) box.textContent = '';
  for (const control of form.querySelectorAll('[aria-invalid]')) control.removeAttribute('aria-invalid');
  summary.replaceChildren();
}

export const createPage: Page = async (context) => {
  heading(context, 'New job');
  const zones = Intl.supportedValuesOf('timeZone');
  const name = h('input', { type: 'text', autocomplete: 'off', maxlength: 128 });
  const type = h('input', { type: 'text', required: true, autocomplete: 'off', value: 'default', maxlength: 64 });
  const kind = h(
    'select',
    null,
    h('option', { value: 'cron' }, 'Recurring (cron)'),
    h('option', { value: 'every' }, 'Recurring (every interval)'),
    h('option', { value: 'now' }, 'Once, now'),
    h('option', { value: 'delay' }, 'Once, after a delay'),
    h('option', { value: 'at' }, 'Once, at a time'),
  );
  const expression = h('input', { type: 'text', value: '0 9 * * MON-FRI', autocomplete: 'off', spellcheck: 'false' });
  const timezone = h('input', { type: 'text', value: viewerZone, list: 'zones', autocomplete: 'off', spellcheck: 'false' });
  const seconds = h('input', { type: 'number', min: 0, value: 60 });
  const interval = h('input', { type: 'text', value: 'PT15M', autocomplete: 'off', spellcheck: 'false' });
  const jitter = h('input', { type: 'number', min: 0, value: 0 });
  const at = h('input', { type: 'datetime-local', step: 1 });
  const targetKind = h('select', null, h('option', { value: 'http' }, 'HTTP call'), h('option', { value: 'external' }, 'Your own worker (external)'));
  const url = h('input', { type: 'url', autocomplete: 'off', placeholder: 'https://example.com/hook' });
  const method = h(
    'select',
    null,
    ['POST', 'PUT', 'PATCH', 'GET', 'DELETE'].map((value) => h('option', { value }, value)),
  );
  const payload = h('textarea', { rows: 4, spellcheck: 'false' }, '{}');
  const priority = h(
    'select',
    null,
    ['normal', 'high', 'low'].map((value) => h('option', { value }, value)),
  );
  const delivery = h(
    'select',
    null,
    ['at-least-once', 'at-most-once', 'exactly-once'].map((value) => h('option', { value }, value)),
  );
  const summary = h('div', { role: 'alert', class: 'error', id: 'form-errors' });
  const preview = h('div', { id: 'preview', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit' }, 'Create job');

  const kindFields: Record<Kind, HTMLElement[]> = {
    cron: [
      field(
        'schedule.expression',
        'Cron expression',
        expression,
        'Five fields: minute hour day-of-month month day-of-week, or six with seconds first (docs/api.md, "Cron syntax").',
      ),
      field('schedule.timezone', 'Time zone', timezone),
    ],
    every: [field('schedule.interval', 'Interval', interval, 'An ISO 8601 duration from PT1S to P366D: PT30S, PT15M, PT6H, P1D, P1W.')],
    delay: [field('schedule.seconds', 'Delay in seconds', seconds)],
    at: [field('schedule.at', `Run at (${viewerZone})`, at)],
    now: [],
  };
  const jitterField = field(
    'schedule.jitterSeconds',
    'Jitter (seconds)',
    jitter,
    'Each start is delayed by up to this much, the same each time for an occurrence (0: none).',
  );
  const urlField = field('target.url', 'Target URL', url);
  const methodField = field('target.method', 'Method', method);
  const form = h(
    'form',
    { class: 'create', novalidate: true, 'aria-labelledby': 'create-title' },
    h('h2', { id: 'create-title', class: 'visually-hidden' }, 'Job definition'),
    summary,
    field('name', 'Name', name, 'Unique among your jobs: letters, digits and . _ : -. Leave it empty to name the job by its id.'),
    field('type', 'Type', type, 'The job type: its worker pool and metrics dimension.'),
    h('fieldset', null, h('legend', null, 'Schedule'), field('schedule', 'Schedule kind', kind), Object.values(kindFields), jitterField),
    h(
      'datalist',
      { id: 'zones' },
      zones.map((zone) => h('option', { value: zone })),
    ),
    h('section', { 'aria-labelledby': 'preview-title', class: 'preview' }, h('h2', { id: 'preview-title' }, 'Next fire times'), preview),
    h('fieldset', null, h('legend', null, 'Target'), field('target.kind', 'Target kind', targetKind), urlField, methodField),
    field('payload', 'Payload (JSON)', payload),
    field('priority', 'Priority', priority),
    field('delivery', 'Delivery', delivery),
    submit,
  );
  context.main.append(form);

  const atIso = (): string => (at.value ? new Date(at.value).toISOString() : '');
  const schedule = (): Record<string, unknown> => {
    switch (kind.value as Kind) {
      case 'now':
        return { kind: 'now' };
      case 'delay':
        return { kind: 'delay', seconds: Number(seconds.value) };
      case 'at':
        return { kind: 'at', at: atIso() };
      case 'cron':
        return { kind: 'cron', expression: expression.value.trim(), timezone: timezone.value.trim() || 'UTC', ...jittered() };
      case 'every':
        return { kind: 'every', interval: interval.value.trim(), ...jittered() };
    }
  };
  const jittered = (): { jitterSeconds?: number } => (Number(jitter.value) > 0 ? { jitterSeconds: Number(jitter.value) } : {});
  const showKind = (): void => {
    for (const [key, fields] of Object.entries(kindFields)) for (const element of fields) element.hidden = key !== kind.value;
    jitterField.hidden = kind.value !== 'cron' && kind.value !== 'every';
    urlField.hidden = targetKind.value !== 'http';
    methodField.hidden = targetKind.value !== 'http';
  };

  let previewSeq = 0;
  let previewTimer = 0;
  const updatePreview = async (): Promise<void> => {
    const mine = ++previewSeq;
    const sched = schedule();
    const zone = sched.kind === 'cron' ? String(sched.timezone) : 'UTC';
    if (sched.kind === 'now') {
      preview.replaceChildren(h('p', null, 'Runs once, as soon as it is created.'));
      return;
    }
    try {
      const { fireTimes } = await api.preview(sched, 5);
      if (mine !== previewSeq) return;
      const notes = daylightSavingNotes(fireTimes, zone);
      for (const box of form.querySelectorAll('[data-field^="schedule"] .field-error')) box.textContent = '';
      preview.replaceChildren(
        h(
          'ol',
          { 'aria-label': 'Next fire times' },
          fireTimes.map((fire, index) =>
            h(
              'li',
              null,
              time(fire, zone),
              sched.kind === 'cron' && zone !== viewerZone ? [' — ', time(fire)] : null,
              notes[index] ? h('span', { class: 'note' }, ` ${notes[index]}`) : null,
            ),
          ),
        ),
      );
    } catch (error) {
      if (mine !== previewSeq) return;
      if (error instanceof ApiError && error.status === 400) {
        preview.replaceChildren(h('p', { class: 'note' }, 'No preview: fix the schedule.'));
        for (const box of form.querySelectorAll('[data-field^="schedule"] .field-error')) box.textContent = '';
        showErrors(
          form,
          h('div'),
          (error.problem.errors ?? []).map((e) => ({ ...e, path: e.path.startsWith('schedule') ? e.path : `schedule.${e.path}` })),
          '',
        );
      } else preview.replaceChildren(h('p', { class: 'error' }, errorText(error)));
    }
  };
  const schedulePreview = (): void => {
    window.clearTimeout(previewTimer);
    previewTimer = window.setTimeout(() => void updatePreview(), 300);
  };
  context.onLeave(() => window.clearTimeout(previewTimer));
  for (const control of [kind, expression, timezone, seconds, at, interval, jitter]) {
    control.addEventListener('input', schedulePreview);
    control.addEventListener('change', schedulePreview);
  }
  kind.addEventListener('change', showKind);
  targetKind.addEventListener('change', showKind);

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    clearErrors(form, summary);
    let parsedPayload: unknown;
    try {
      parsedPayload = payload.value.trim() ? JSON.parse(payload.value) : {};
    } catch (error) {
      showErrors(
        form,
        summary,
        [{ path: 'payload', message: `not JSON: ${error instanceof Error ? error.message : String(error)}` }],
        'The job was not created:',
      );
      return;
    }
    const spec = {
      ...(name.value.trim() ? { name: name.value.trim() } : {}),
      type: type.value.trim(),
      schedule: schedule(),
      target: targetKind.value === 'http' ? { kind: 'http', url: url.value.trim(), method: method.value } : { kind: 'external' },
      payload: parsedPayload,
      priority: priority.value,
      delivery: delivery.value,
    };
    submit.disabled = true;
    api
      .createJob(spec)
      .then(({ job }) => {
        context.say(`Job ${job.name} created`);
        location.hash = `#/jobs/${encodeURIComponent(job.jobId)}`;
      })
      .catch((error: unknown) => {
        if (error instanceof ApiError) showErrors(form, summary, error.problem.errors ?? [], `The job was not created: ${error.message}`);
        else showErrors(form, summary, [], errorText(error));
        form.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
      })
      .finally(() => {
        submit.disabled = false;
      });
  });

  showKind();
  await updatePreview();
};
