// How the calls the runs of one worker batch make at about the same time wait for each other to
// share one request.
import type { SchedulerConfig } from '../config/config';

/**
 * The job read and the message's visibility right after the leases, and the successors' sends after
 * the chains move on (decision 0160): until none has joined for 10 ms, and at most 40 ms, by default
 * (tunable). On AWS a batch's leases land within a few milliseconds; the cap bounds what a run can
 * lose before its call when they trickle in (decisions 0031, 0033).
 */
export function batchCoalesce(config: SchedulerConfig): { readonly quietMs: number; readonly capMs: number } {
  return { quietMs: config.batchCoalesceQuietMs, capMs: config.batchCoalesceCapMs };
}
