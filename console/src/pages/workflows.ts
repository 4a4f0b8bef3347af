// Workflows: the tenant's workflows, newest first or by name (with a name search), each linked to its
// page; its schedule's state and next run when it has one.
import type { WorkflowSummary } from '../api';
import { api } from '../api';
import { h, table } from '../dom';
import { time } from '../format';
import type { Page } from '../page';
import { alertBox, errorText, heading, reloadOnChange, STATUS_CLASS } from '../page';

export const workflowsPage: Page = async (context) => {
  heading(context, 'Workflows');
  const search = h('input', { id: 'search-workflows', type: 'search', autocomplete: 'off', placeholder: 'name starts with…' });
  const order = h('select', { id: 'workflow-order' }, h('option', { value: 'newest' }, 'Newest first'), h('option', { value: 'name' }, 'By name'));
  const filters = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Find workflows' },
    h('div', null, h('label', { for: 'search-workflows' }, 'Search workflows'), search),
    h('div', null, h('label', { for: 'workflow-order' }, 'Order'), order),
  );
  filters.addEventListener('submit', (event) => event.preventDefault());
  const results = h('div', { id: 'workflows-results' });
  const alert = alertBox();
  const more = h('button', { type: 'button', hidden: true }, 'More workflows');
  context.main.append(filters, alert, results, more);

  let cursor: string | null = null;
  let generation = 0;
  let rows: WorkflowSummary[] = [];

  const draw = (): void => {
    if (rows.length === 0) {
      results.replaceChildren(h('p', null, search.value.trim() ? 'No workflow names start with that.' : 'No workflows yet.'));
      return;
    }
    results.replaceChildren(
      table(
        `Workflows (${rows.length}${cursor ? '+' : ''})`,
        ['Name', 'Version', 'Steps', 'Schedule', 'Next run', 'Updated'],
        rows.map((workflow) => [
          h('a', { href: `#/workflows/${encodeURIComponent(workflow.workflowId)}` }, workflow.name),
          String(workflow.version),
          workflow.stepCount === undefined ? '—' : String(workflow.stepCount),
          workflow.scheduleState
            ? h('span', { class: STATUS_CLASS(workflow.scheduleState.status) }, workflow.scheduleState.status.toLowerCase())
            : 'on request',
          workflow.scheduleState?.nextRunAt ? time(workflow.scheduleState.nextRunAt) : '—',
          time(workflow.updatedAt),
        ]),
        { class: 'workflows' },
      ),
    );
  };

  const load = async (append: boolean): Promise<void> => {
    const mine = ++generation;
    alert.textContent = '';
    const prefix = search.value.trim() || undefined;
    try {
      const page = await api.workflows(prefix ? 'name' : (order.value as 'newest' | 'name'), prefix, append ? (cursor ?? undefined) : undefined);
      if (mine !== generation) return;
      rows = append ? [...rows, ...page.items] : page.items;
      cursor = page.nextCursor;
      more.hidden = cursor === null;
      draw();
      context.say(`${rows.length} workflow${rows.length === 1 ? '' : 's'} shown`);
    } catch (error) {
      if (mine === generation) alert.textContent = errorText(error);
    }
  };

  reloadOnChange(context, load, more, [
    { control: search, event: 'input' },
    { control: order, event: 'change' },
  ]);
  await load(false);
};
