// GET /v1/health: is the scheduler keeping up? Queue depths, the dead-letter queue, and whether the
// ticker is running.
import type { SchedulerDeps } from './deps';
import type { QueueDepth } from '../store/dispatch-queue';

/** The ticker runs every minute; past this without a completed tick it is reported as late. */
const TICKER_STALE_MS = 3 * 60_000;

export interface HealthReport {
  readonly status: 'ok' | 'degraded';
  readonly checkedAt: string;
  readonly problems: string[];
  readonly queues: { readonly dispatch: QueueDepth; readonly dispatchDlq: QueueDepth };
  readonly ticker: { readonly lastCompletedAt: string | null; readonly sinceLastCompletionSeconds: number | null; readonly lastReport: Record<string, number> | null };
}

export async function checkHealth(deps: SchedulerDeps): Promise<HealthReport> {
  const now = deps.clock();
  const [dispatch, dispatchDlq, ticker] = await Promise.all([deps.dispatch.depth(), deps.dispatchDlq.depth(), deps.state.ticker()]);
  const since = ticker.lastCompletedAt ? now - Date.parse(ticker.lastCompletedAt) : null;
  const problems: string[] = [];
  if (dispatchDlq.visible + dispatchDlq.inFlight > 0) problems.push('the dispatch dead-letter queue holds messages');
  if (since === null || since > TICKER_STALE_MS) problems.push('the ticker has not completed a tick in the last 3 minutes');
  return {
    status: problems.length === 0 ? 'ok' : 'degraded',
    checkedAt: new Date(now).toISOString(),
    problems,
    queues: { dispatch, dispatchDlq },
    ticker: {
      lastCompletedAt: ticker.lastCompletedAt,
      sinceLastCompletionSeconds: since === null ? null : Math.round(since / 1000),
      lastReport: ticker.lastReport,
    },
  };
}
