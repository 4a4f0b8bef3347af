// Dead runs: replay one, or the selected ones after a confirmation that says how many.
import type { Run } from '../api';
import { api, workflowRunOf } from '../api';
import { confirmDialog, h, table } from '../dom';
import { time } from '../format';
import type { Page } from '../page';
import { act, alertBox, errorText, heading } from '../page';

/** Where a dead run's job is shown: a workflow step's is its workflow run (no job page serves a step). */
function ownerHref(run: Run): string {
  const owner = workflowRunOf(run);
  return owner
    ? `#/workflows/${encodeURIComponent(owner.workflowId)}/runs/${encodeURIComponent(owner.workflowRunId)}`
    : `#/jobs/${encodeURIComponent(run.jobId)}`;
}

export const deadPage: Page = async (context) => {
  heading(context, 'Dead runs');
  const alert = alertBox();
  const bulk = h('button', { type: 'button', disabled: true }, 'Replay selected');
  const holder = h('div', { id: 'dead-runs' });
  const more = h('button', { type: 'button', hidden: true }, 'More dead runs');
  context.main.append(
    h(
      'p',
      null,
      'Runs that failed permanently or spent their retries. A replay is a new run of the same occurrence with a fresh retry budget; a run is replayed once.',
    ),
    h('div', { class: 'actions' }, bulk),
    alert,
    holder,
    more,
  );

  let runs: Run[] = [];
  let cursor: string | null = null;
  const selected = new Set<string>();

  const updateBulk = (): void => {
    bulk.disabled = selected.size === 0;
    bulk.textContent = selected.size === 0 ? 'Replay selected' : `Replay selected (${selected.size})`;
  };

  const draw = (): void => {
    if (runs.length === 0) {
      holder.replaceChildren(h('p', null, 'No dead runs.'));
      return;
    }
    holder.replaceChildren(
      table(
        `Dead runs (${runs.length}${cursor ? '+' : ''}), newest first`,
        ['Select', 'Job', 'Scheduled for', 'Attempt', 'Finished', 'Error', 'Replay'],
        runs.map((run) => {
          const box = h('input', { type: 'checkbox', 'aria-label': `Select run ${run.runId}`, checked: selected.has(run.runId) });
          box.addEventListener('change', () => {
            if (box.checked) selected.add(run.runId);
            else selected.delete(run.runId);
            updateBulk();
          });
          const replay = h('button', { type: 'button', 'aria-label': `Replay run ${run.runId}` }, 'Replay');
          replay.addEventListener('click', () => {
            void act(replay, alert, context, async () => {
              const { run: replayed } = await api.replay(run.runId);
              runs = runs.filter((other) => other.runId !== run.runId);
              selected.delete(run.runId);
              updateBulk();
              draw();
              return `Run ${run.runId} replayed as ${replayed.runId}`;
            });
          });
          return [
            box,
            h('a', { href: ownerHref(run) }, run.jobId),
            h('a', { href: `#/runs/${encodeURIComponent(run.runId)}` }, time(run.scheduledFor)),
            String(run.attempt),
            time(run.finishedAt),
            run.error ? `${run.error.code}: ${run.error.message}` : (run.reason ?? ''),
            replay,
          ];
        }),
        { class: 'dead' },
      ),
    );
  };

  bulk.addEventListener('click', () => {
    const ids = [...selected];
    void (async () => {
      if (!(await confirmDialog(`Replay ${ids.length} dead run${ids.length === 1 ? '' : 's'}?`, `Replay ${ids.length}`))) return;
      await act(bulk, alert, context, async () => {
        const failures: string[] = [];
        for (const runId of ids) {
          try {
            await api.replay(runId);
            runs = runs.filter((run) => run.runId !== runId);
            selected.delete(runId);
          } catch (error) {
            failures.push(`${runId}: ${errorText(error)}`);
          }
        }
        draw();
        updateBulk();
        if (failures.length > 0) throw new Error(`${failures.length} of ${ids.length} not replayed: ${failures.join('; ')}`);
        return `${ids.length} run${ids.length === 1 ? '' : 's'} replayed`;
      });
    })();
  });

  const load = async (append: boolean): Promise<void> => {
    const page = await api.deadRuns(append ? (cursor ?? undefined) : undefined);
    runs = append ? [...runs, ...page.items] : page.items;
    cursor = page.nextCursor;
    more.hidden = cursor === null;
    draw();
  };
  more.addEventListener('click', () => void load(true).catch((error: unknown) => (alert.textContent = errorText(error))));
  await load(false);
};
