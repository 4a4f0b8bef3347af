// Health: GET /v1/health over the last hour, its per-minute roll-ups as charts, in its own words.
import uPlot from 'uplot';
import type { HealthReport } from '../api';
import { api } from '../api';
import { h, table } from '../dom';
import { time, timeText, viewerZone } from '../format';
import type { Page } from '../page';
import { alertBox, errorText, heading, redraw } from '../page';

const REFRESH_MS = 15_000;

type Minute = HealthReport['runs']['perMinute'][number];

function chart(
  title: string,
  id: string,
  minutes: readonly Minute[],
  series: readonly { label: string; values: (minute: Minute) => number | null; color: string }[],
  unit: string,
  plots: uPlot[],
): HTMLElement {
  const figure = h('figure', { class: 'chart', id, 'aria-labelledby': `${id}-caption` });
  const caption = h('figcaption', { id: `${id}-caption` }, title);
  const holder = h('div', { class: 'plot', 'aria-hidden': 'true' });
  // The figures as a table for screen readers and for reading exact values.
  const recent = minutes.filter((minute) => minute.started > 0 || minute.succeeded > 0 || minute.errors > 0).slice(-10);
  const details = h(
    'details',
    { id: `${id}-figures` },
    h('summary', null, `${title}: figures`),
    recent.length === 0
      ? h('p', null, 'No runs in the last hour.')
      : table(
          title,
          ['Minute', ...series.map((one) => `${one.label} (${unit})`)],
          recent.map((minute) => [timeText(minute.minute), ...series.map((one) => String(one.values(minute) ?? '—'))]),
        ),
  );
  figure.append(caption, holder, details);
  const x = minutes.map((minute) => Date.parse(minute.minute) / 1000);
  const data: uPlot.AlignedData = [x, ...series.map((one) => minutes.map((minute) => one.values(minute)))];
  requestAnimationFrame(() => {
    // Drawn again before this frame: the chart is not shown, and would never be destroyed.
    if (!holder.isConnected) return;
    const width = Math.max(260, Math.min(holder.clientWidth || 600, 900));
    const plot = new uPlot(
      {
        width,
        height: 180,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), viewerZone),
        scales: { x: { time: true } },
        axes: [{}, { label: unit, size: 60 }],
        series: [{}, ...series.map((one) => ({ label: one.label, stroke: one.color, width: 2, spanGaps: false, points: { show: true, size: 4 } }))],
        legend: { show: true, live: false },
      },
      data,
      holder,
    );
    plots.push(plot);
  });
  return figure;
}

function queueRows(report: HealthReport): (readonly (string | Node)[])[] {
  const rows: (readonly (string | Node)[])[] = [];
  for (const [pool, health] of Object.entries(report.queues.pools)) {
    const lanes = [
      ['standard', health.standard],
      ['high', health.high],
      ['low', health.low],
      ['dead-letter', health.dlq],
    ] as const;
    for (const [lane, queue] of lanes) {
      if (!queue) continue;
      rows.push([
        pool,
        lane,
        String(queue.visible),
        String(queue.inFlight),
        String(queue.delayed),
        queue.oldestMessageAgeSeconds === null ? '—' : `${queue.oldestMessageAgeSeconds} s`,
      ]);
    }
  }
  return rows;
}

export const healthPage: Page = async (context) => {
  heading(context, 'Health');
  const alert = alertBox();
  const body = h('div');
  context.main.append(
    h('p', { class: 'note' }, `The last 60 minutes from GET /v1/health?minutes=60, refreshed every ${REFRESH_MS / 1000} s. Times in ${viewerZone}.`),
    alert,
    body,
  );

  // The charts of the report shown: a uPlot keeps listeners on the window until destroyed.
  let plots: uPlot[] = [];
  const destroyPlots = (): void => {
    for (const plot of plots) plot.destroy();
    plots = [];
  };
  context.onLeave(destroyPlots);
  const checkedAt = (report: HealthReport): HTMLElement => h('p', { id: 'health-checked-at' }, 'checkedAt: ', time(report.checkedAt));
  const tickerLast = ({ ticker }: HealthReport): HTMLElement =>
    h(
      'p',
      { id: 'ticker-last' },
      'lastCompletedAt: ',
      time(ticker.lastCompletedAt),
      ticker.sinceLastCompletionSeconds === null ? '' : ` (${ticker.sinceLastCompletionSeconds} s ago)`,
    );
  let seen = '';

  const load = async (): Promise<void> => {
    let report: HealthReport;
    try {
      report = await api.health(60);
    } catch (error) {
      alert.textContent = errorText(error);
      return;
    }
    alert.textContent = '';
    // Only the clocks moved: those two lines change, the rest (open figures, the focus) stays as it is.
    const signature = JSON.stringify({ ...report, checkedAt: null, ticker: { ...report.ticker, sinceLastCompletionSeconds: null } });
    if (signature === seen) {
      body.querySelector('#health-checked-at')?.replaceWith(checkedAt(report));
      body.querySelector('#ticker-last')?.replaceWith(tickerLast(report));
      return;
    }
    seen = signature;
    destroyPlots();
    const { runs } = report;
    const minutes = runs.perMinute;
    const outcomes = (minute: Minute): number => minute.succeeded + minute.errors;
    redraw(
      body,
      h(
        'section',
        { 'aria-labelledby': 'status-title', class: `health-status health-${report.status}` },
        h('h2', { id: 'status-title' }, `status: ${report.status}`),
        report.problems.length === 0
          ? h('p', null, 'problems: none')
          : h(
              'ul',
              { 'aria-label': 'problems' },
              report.problems.map((problem) => h('li', null, problem)),
            ),
        checkedAt(report),
      ),
      h(
        'section',
        { 'aria-labelledby': 'figures-title' },
        h('h2', { id: 'figures-title' }, `runs over the last ${runs.windowMinutes} minutes`),
        h(
          'dl',
          { class: 'definition' },
          [
            [
              'startLagMs p50 / p95 / p99',
              `${runs.startLagMs.p50 ?? '—'} / ${runs.startLagMs.p95 ?? '—'} / ${runs.startLagMs.p99 ?? '—'} ms (${runs.startLagMs.samples} samples)`,
            ],
            ['successRate', runs.successRate === null ? '— (no outcomes)' : `${runs.successRate} %`],
            ['started', String(runs.started)],
            ['retried', String(runs.retried)],
            ['workerLost', String(runs.workerLost)],
            [
              'byStatus',
              Object.entries(runs.byStatus)
                .map(([status, count]) => `${status} ${count}`)
                .join(', '),
            ],
            ['deadAwaitingReplay', `${runs.deadAwaitingReplay.count}${runs.deadAwaitingReplay.capped ? '+' : ''}`],
            ['inFlight', String(report.inFlight.length)],
          ].map(([term, value]) => [h('dt', null, term), h('dd', null, value)]),
        ),
      ),
      h(
        'div',
        { class: 'charts' },
        chart(
          'Start lag p50 and p99 per minute',
          'chart-lag',
          minutes,
          [
            { label: 'p50', values: (minute) => minute.startLagP50Ms ?? null, color: '#2563eb' },
            { label: 'p99', values: (minute) => minute.startLagP99Ms ?? null, color: '#dc2626' },
          ],
          'ms',
          plots,
        ),
        chart(
          'Runs per minute',
          'chart-runs',
          minutes,
          [
            { label: 'started', values: (minute) => minute.started, color: '#2563eb' },
            { label: 'succeeded', values: (minute) => minute.succeeded, color: '#16a34a' },
            { label: 'errors', values: (minute) => minute.errors, color: '#dc2626' },
          ],
          'runs',
          plots,
        ),
        chart(
          'Success rate per minute',
          'chart-success',
          minutes,
          [
            {
              label: 'successRate',
              values: (minute) => (outcomes(minute) === 0 ? null : Math.round((minute.succeeded / outcomes(minute)) * 1000) / 10),
              color: '#16a34a',
            },
          ],
          '%',
          plots,
        ),
      ),
      h(
        'section',
        { 'aria-labelledby': 'queues-title' },
        h('h2', { id: 'queues-title' }, 'queues'),
        table('Queue depths by pool and lane', ['Pool', 'Lane', 'visible', 'inFlight', 'delayed', 'oldestMessageAgeSeconds'], queueRows(report)),
      ),
      h('section', { 'aria-labelledby': 'ticker-title' }, h('h2', { id: 'ticker-title' }, 'ticker'), tickerLast(report)),
    );
  };
  await load();
  context.every(REFRESH_MS, load);
};
