// A workflow and its runs: the definition's steps, the newest runs (with Start), and one workflow run
// as a graph of its steps in columns by depth, each coloured by its status and linked to its run,
// with Cancel and Retry where they apply.
import type { WorkflowRun, WorkflowView } from '../api';
import { api } from '../api';
import { confirmDialog, h, table } from '../dom';
import { scheduleText, time, timeText, zoneOf } from '../format';
import type { Page } from '../page';
import { notificationsTable } from '../notifications';
import { act, alertBox, errorText, FOLLOWED_ROWS, heading, newestItems, oneAtATime, redraw, STATUS_CLASS } from '../page';

const FOLLOW_MS = 2_000;

/** Each step's depth: the longest chain of dependencies before it (roots are 0). */
function depths(workflow: WorkflowView): Map<string, number> {
  const byId = new Map(workflow.definition.steps.map((step) => [step.id, step]));
  const depth = new Map<string, number>();
  const of = (id: string): number => {
    const known = depth.get(id);
    if (known !== undefined) return known;
    const value = Math.max(-1, ...(byId.get(id)?.dependsOn ?? []).map(of)) + 1;
    depth.set(id, value);
    return value;
  };
  for (const step of workflow.definition.steps) of(step.id);
  return depth;
}

function graph(workflow: WorkflowView, run: WorkflowRun): HTMLElement {
  const depth = depths(workflow);
  const columns: HTMLElement[] = [];
  for (const step of workflow.definition.steps) {
    const at = depth.get(step.id) ?? 0;
    while (columns.length <= at) columns.push(h('ol', { class: 'wf-column' }));
    const state = run.steps[step.id];
    const status = state?.status ?? 'WAITING';
    columns[at]!.append(
      h(
        'li',
        { class: `wf-step ${STATUS_CLASS(status)}`, 'data-step': step.id, title: state?.reason ?? '' },
        h('strong', null, state?.runId ? h('a', { href: `#/runs/${encodeURIComponent(state.runId)}` }, step.id) : step.id),
        h('span', { class: 'wf-status' }, ` ${status.toLowerCase().replace(/_/g, ' ')}`),
        state && state.attempt > 1 ? h('span', null, ` (attempt ${state.attempt})`) : null,
        step.dependsOn.length > 0 ? h('small', null, `after ${step.dependsOn.join(', ')}`) : null,
        state?.reason && status !== 'SUCCEEDED' ? h('small', null, state.reason) : null,
      ),
    );
  }
  return h('div', { class: 'wf-graph', role: 'group', 'aria-label': 'Steps' }, columns);
}

export const workflowRunPage: Page = async (context) => {
  const [workflowId = '', workflowRunId = ''] = context.params;
  heading(context, 'Workflow run');
  const body = h('div');
  const alert = alertBox();
  context.main.append(body, alert);
  const workflow = await api.workflow(workflowId);
  let seen = '';

  const load = async (): Promise<void> => {
    const run = await api.workflowRun(workflowId, workflowRunId);
    const { items: notifications } = await api.workflowRunNotifications(workflowId, workflowRunId);
    const signature = JSON.stringify([run.status, run.retries, run.steps, notifications.map((n) => [n.retry, n.event, n.status, n.tries])]);
    if (signature === seen) return;
    seen = signature;
    const shown = run.version === workflow.version ? workflow : await api.workflow(workflowId, run.version);
    const cancel = h('button', { type: 'button', hidden: run.status !== 'RUNNING' }, 'Cancel');
    cancel.addEventListener('click', () => {
      void act(cancel, alert, context, async () => {
        const question = `Cancel workflow run ${workflowRunId}? Its waiting steps never start and its running ones are cancelled.`;
        if (!(await confirmDialog(question, 'Cancel workflow run'))) return 'Not cancelled';
        await api.cancelWorkflowRun(workflowId, workflowRunId);
        return 'Workflow run cancelled';
      })
        .then(load)
        .catch((error: unknown) => (alert.textContent = errorText(error)));
    });
    const retry = h('button', { type: 'button', hidden: run.status !== 'FAILED' && run.status !== 'CANCELLED' }, 'Retry failed steps');
    retry.addEventListener(
      'click',
      () =>
        void act(retry, alert, context, async () => (await api.retryWorkflowRun(workflowId, workflowRunId), 'Retrying the failed steps'))
          .then(load)
          .catch((error: unknown) => (alert.textContent = errorText(error))),
    );
    redraw(
      body,
      h(
        'dl',
        { class: 'facts' },
        h('dt', null, 'Status'),
        h('dd', null, h('span', { class: STATUS_CLASS(run.status), id: 'workflow-run-status' }, run.status.toLowerCase())),
        h('dt', null, 'Workflow'),
        h('dd', null, h('a', { href: `#/workflows/${encodeURIComponent(workflowId)}` }, `${workflow.name} (version ${run.version})`)),
        h('dt', null, 'Started'),
        h('dd', null, time(run.createdAt)),
        h('dt', null, 'Ended'),
        h('dd', null, time(run.finishedAt)),
        run.failedSteps.length > 0 ? [h('dt', null, 'Failed steps'), h('dd', null, run.failedSteps.join(', '))] : null,
      ),
      h('div', { class: 'actions' }, cancel, retry),
      graph(shown, run),
      ...(notifications.length > 0
        ? [
            notificationsTable('Outcome notifications of this workflow run, its latest end first', notifications, (notification, button) =>
              act(button, alert, context, async () => {
                const event = notification.event as 'succeeded' | 'failed' | 'cancelled';
                await api.resendWorkflowRunNotification(workflowId, workflowRunId, event);
                seen = '';
                await load();
                return `Notification ${event} sent again`;
              }),
            ),
          ]
        : []),
    );
  };
  await load();
  context.every(FOLLOW_MS, load);
};

export const workflowPage: Page = async (context) => {
  const [workflowId = ''] = context.params;
  const title = heading(context, 'Workflow');
  const alert = alertBox();
  const start = h('button', { type: 'button' }, 'Start a run');
  const runs = h('div', { id: 'workflow-runs' });
  const workflow = await api.workflow(workflowId);
  title.textContent = `Workflow ${workflow.name}`;
  document.title = `${workflow.name} · Job scheduler`;
  start.addEventListener('click', () => {
    void act(start, alert, context, async () => {
      const run = await api.startWorkflowRun(workflowId);
      location.hash = `#/workflows/${encodeURIComponent(workflowId)}/runs/${encodeURIComponent(run.workflowRunId)}`;
      return 'Workflow run started';
    });
  });
  let seen = '';
  let shown = FOLLOWED_ROWS;
  const moreRuns = h('button', { type: 'button', id: 'more-workflow-runs', hidden: true }, 'More runs');
  const load = oneAtATime(async (): Promise<void> => {
    const { items, more } = await newestItems((limit, cursor) => api.workflowRuns(workflowId, limit, cursor), shown);
    moreRuns.hidden = !more;
    const signature = JSON.stringify(items.map((run) => [run.workflowRunId, run.status, run.finishedAt]));
    if (signature === seen) return;
    seen = signature;
    redraw(
      runs,
      items.length === 0
        ? h('p', null, 'No runs yet.')
        : table(
            'Runs of this workflow, newest first',
            ['Run', 'Status', 'Version', 'Started', 'Ended'],
            items.map((run) => [
              h('a', { href: `#/workflows/${encodeURIComponent(workflowId)}/runs/${encodeURIComponent(run.workflowRunId)}` }, run.workflowRunId),
              h('span', { class: STATUS_CLASS(run.status) }, run.status.toLowerCase()),
              String(run.version),
              time(run.createdAt),
              time(run.finishedAt),
            ]),
          ),
    );
  });
  // A scheduled workflow: its schedule, its state, and Pause or Resume (decision 0147).
  const schedule = h('p', { id: 'workflow-schedule' });
  const toggle = h('button', { type: 'button', id: 'workflow-schedule-toggle', hidden: true });
  const showSchedule = (state: WorkflowView['scheduleState']): void => {
    const definition = workflow.definition.schedule;
    schedule.replaceChildren(
      definition ? `Schedule: ${scheduleText(definition)}. ` : 'Started by request only. ',
      ...(state
        ? [
            h('span', { class: STATUS_CLASS(state.status), id: 'workflow-schedule-status' }, state.status.toLowerCase()),
            ...(state.nextRunAt ? [', next run ', time(state.nextRunAt, zoneOf(definition ?? { kind: 'now' }))] : []),
          ]
        : []),
    );
    toggle.hidden = state?.status !== 'ACTIVE' && state?.status !== 'PAUSED';
    toggle.textContent = state?.status === 'PAUSED' ? 'Resume schedule' : 'Pause schedule';
  };
  showSchedule(workflow.scheduleState);
  toggle.addEventListener('click', () => {
    const resume = toggle.textContent === 'Resume schedule';
    void act(toggle, alert, context, async () => {
      const changed = resume ? await api.resumeWorkflow(workflowId) : await api.pauseWorkflow(workflowId);
      showSchedule(changed.scheduleState);
      return resume ? 'Schedule resumed' : 'Schedule paused';
    });
  });
  // Delete (decision 0149): its schedule and running runs are cancelled; the page then says so, and its runs stay.
  const deleted = h('p', { id: 'workflow-deleted', hidden: !workflow.deletedAt }, workflow.deletedAt ? `Deleted ${timeText(workflow.deletedAt)}.` : '');
  const remove = h('button', { type: 'button', class: 'danger', hidden: Boolean(workflow.deletedAt) }, 'Delete workflow');
  const showDeleted = (at: string): void => {
    deleted.textContent = `Deleted ${at ? timeText(at) : ''}. Its runs stay readable; it can no longer be started or changed.`;
    deleted.hidden = false;
    start.hidden = true;
    toggle.hidden = true;
    remove.hidden = true;
  };
  if (workflow.deletedAt) showDeleted(workflow.deletedAt);
  remove.addEventListener('click', () => {
    void act(remove, alert, context, async () => {
      const question = `Delete workflow ${workflow.name}? Its schedule and running workflow runs are cancelled, and its name is free again.`;
      if (!(await confirmDialog(question, 'Delete workflow'))) return 'Not deleted';
      const changed = await api.deleteWorkflow(workflowId);
      showSchedule(changed.scheduleState);
      showDeleted(changed.deletedAt ?? '');
      return `Workflow ${workflow.name} deleted`;
    });
  });
  context.main.append(
    h('p', null, `Version ${workflow.version}, ${workflow.definition.steps.length} steps.`),
    deleted,
    schedule,
    h('div', { class: 'actions' }, start, toggle, remove),
    alert,
    h('h2', null, 'Runs'),
    runs,
    moreRuns,
  );
  moreRuns.addEventListener('click', () => {
    shown += FOLLOWED_ROWS;
    void load().catch((error: unknown) => context.say(`Couldn't load more runs (${errorText(error)})`));
  });
  await load();
  context.every(FOLLOW_MS, load);
};
