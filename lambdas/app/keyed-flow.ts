// A leased run's keyed flow control (issue 19 items 8 and 9), after its admission and before its
// call: a slot of its concurrency key (the in-flight slots' machinery, keyed) and a start mark of
// its rate key. A run that finds neither free gives its lease back (RUNNING -> QUEUED, the attempt
// unchanged, so waiting burns none) and its message comes back when a slot or mark may be free.
import type { Job } from '../domain/job';
import type { Run } from '../domain/run';
import { decideRate, keyedWaitSeconds, NO_KEY_SCOPE, renderKey, stillWaitsForKey } from '../domain/flow-control';
import { checkBackAt } from '../domain/time-gate';
import { homeSlot } from '../store/in-flight-slots';
import { flowScope } from '../store/keys';
import type { KeyWaiter } from '../store/key-waiters';
import { waiterSortOf } from '../store/key-waiters';
import type { SchedulerDeps } from './deps';
import { logger } from '../core/logger';
import type { DispatchContext } from './execute-run';
import { slotLiveness } from './in-flight-slot';
import { dispatchOfRun } from '../store/dispatch-queue';

/** Tries at a rate mark when another worker takes the one read first. */
const RATE_MARK_TRIES = 3;

export type KeyedFlow =
  /** The run may start; `release` gives its concurrency slot back after the run. */
  | { readonly kind: 'start'; readonly release: () => Promise<void> }
  /** The run waits: its lease was given back and its message sent again. */
  | { readonly kind: 'waiting' }
  /** The lease was lost (cancelled, taken over) before it could be given back. */
  | { readonly kind: 'fenced' };

const nothingToRelease = async (): Promise<void> => {};

export async function passKeyedFlow(deps: SchedulerDeps, job: Job, run: Run, payload: unknown, message: DispatchContext): Promise<KeyedFlow> {
  if (!job.concurrency && !job.rateLimit) return { kind: 'start', release: nothingToRelease };
  const source = { type: job.type, labels: job.labels, payload };
  let release = nothingToRelease;
  let leaveQueue: (() => Promise<unknown>) | undefined;
  // What every give-back of this run records as the key it waits for (decision 0187): its
  // concurrency key's, or none, so that an entry of a key it no longer has stops counting.
  let waitScope = NO_KEY_SCOPE;

  if (job.concurrency) {
    const { limit } = job.concurrency;
    const key = renderKey(job.concurrency.key, source);
    const scope = flowScope(run.tenantId, key);
    waitScope = scope;
    const me: KeyWaiter = {
      runId: run.runId,
      sort: waiterSortOf(run),
      tenantId: run.tenantId,
      jobType: run.jobType,
      priority: run.priority ?? 'normal',
      ...(run.traceparent ? { traceparent: run.traceparent } : {}),
    };
    // In order: a run may try for a slot only while fewer than `limit` runs ahead of it (of a higher
    // priority, or of its own that became due before it) still wait (with a limit of 1, only the
    // first in the queue; decision 0191).
    const queue = await deps.keyWaiters.first(scope, limit + 1);
    const mayTry = (await waitingAhead(deps, scope, queue, me, limit)) < limit;
    const slot = mayTry ? await deps.keyedSlots.acquire(scope, run.runId, limit, deps.clock(), (runIds) => slotLiveness(deps, runIds)) : null;
    if (slot === null) {
      const waits = (message.deferrals ?? 0) + 1;
      const until = deps.clock() + keyedWaitSeconds(waits, deps.random()) * 1000;
      // The give-back records the key before the run joins its queue: a run checking the queue
      // meanwhile never finds the entry with the run's previous key (decision 0187).
      return wait(deps, run, message, until, `waiting for a slot of concurrency key ${key}`, scope, () => deps.keyWaiters.join(scope, me, deps.clock()));
    }
    release = async () => {
      await deps.keyedSlots.release(scope, slot, run.runId);
      await wakeFirstWaiter(deps, scope, run.runId);
    };
    // Every entry of the run's in the page: one written before decision 0191 has another sort.
    const mine = queue.filter((waiter) => waiter.runId === run.runId);
    if (mine.length > 0) leaveQueue = () => Promise.all(mine.map((waiter) => deps.keyWaiters.leave(scope, waiter.sort)));
  }

  try {
    await leaveQueue?.();
    return await rateKeyOf(deps, job, run, message, source, release, waitScope);
  } catch (error) {
    // The caller gives the slot back only once the run starts: a store error from here on would
    // keep it for as long as the lease lasts, every other run of the key waiting behind it.
    await release().catch((releaseError: unknown) =>
      logger.warn('could not give back a concurrency key slot after an error', { runId: run.runId, error: String(releaseError) }),
    );
    throw error;
  }
}

/** With its concurrency key's slot (if it has one): its rate key, then it starts. */
async function rateKeyOf(
  deps: SchedulerDeps,
  job: Job,
  run: Run,
  message: DispatchContext,
  source: Parameters<typeof renderKey>[1],
  release: () => Promise<void>,
  waitScope: string,
): Promise<KeyedFlow> {
  if (job.rateLimit) {
    const key = renderKey(job.rateLimit.key, source);
    const scope = flowScope(run.tenantId, key);
    for (let attempt = 0; ; attempt++) {
      const now = deps.clock();
      // Each run looks from a mark of its own (and the next on each try), so a burst spreads over the marks.
      const start = homeSlot(run.runId, job.rateLimit.limit) + attempt;
      const decision = decideRate(job.rateLimit, await deps.rateMarks.marks(scope), now, start);
      if ('waitUntil' in decision || attempt >= RATE_MARK_TRIES) {
        await release();
        // Spread over a second, so the runs that wait for one mark do not all come back at once.
        const until = ('waitUntil' in decision ? decision.waitUntil : now + 1000) + Math.floor(deps.random() * 1000);
        const reason =
          'waitUntil' in decision
            ? `over the rate of key ${key} (${job.rateLimit.limit} per ${job.rateLimit.periodSeconds} s)`
            : `other runs of key ${key} took the rate's free marks first; trying again`;
        return wait(deps, run, message, until, reason, waitScope);
      }
      if (await deps.rateMarks.take(scope, decision.take, now, decision.lastUsedAt, job.rateLimit.periodSeconds)) break;
    }
  }
  return { kind: 'start', release };
}

/**
 * Gives the lease back and sends the run's message again for `until`. The give-back records the
 * concurrency key the run waits for (`keyWaitScope`, NO_KEY_SCOPE for none; decision 0187): its
 * entry in another key's queue (its job's key changed) then stops counting there. `joined` puts the
 * run in its key's queue once its lease is given back.
 */
async function wait(
  deps: SchedulerDeps,
  run: Run,
  message: DispatchContext,
  until: number,
  reason: string,
  keyWaitScope: string,
  joined?: () => Promise<void>,
): Promise<KeyedFlow> {
  const now = deps.clock();
  // Admitted already (its chain moved on): leased again, it runs as it is.
  const given = await deps.leases.giveBack(run.runId, run.version, now, checkBackAt(until, now, deps.config), deps.config.timeIndexShards, reason, {
    admitted: true,
    keyWaitScope,
  });
  if (!given) return { kind: 'fenced' };
  await joined?.();
  const deferrals = (message.deferrals ?? 0) + 1;
  await deps.dispatch.send([dispatchOfRun(run, until, deferrals)], now);
  deps.telemetry.runWaitingForKey(run, reason, Math.ceil((until - now) / 1000));
  return { kind: 'waiting' };
}

/**
 * How many runs of the queue wait ahead of `me`, up to `limit`. When `limit` or more seem to, their
 * run items decide (`stillWaitsForKey`, decision 0187): an entry whose run no longer waits here
 * (cancelled, finished, its lease lapsed, running with a slot, or waiting for another key now) is
 * removed. A page whose every entry was ahead counts as full.
 */
async function waitingAhead(deps: SchedulerDeps, scope: string, queue: readonly KeyWaiter[], me: KeyWaiter, limit: number): Promise<number> {
  const ahead = queue.filter((waiter) => waiter.sort < me.sort && waiter.runId !== me.runId);
  if (ahead.length < limit) return ahead.length;
  const now = deps.clock();
  const states = await deps.runs.keyWaitStates(ahead.map((waiter) => waiter.runId));
  const stale = ahead.filter((waiter) => !stillWaitsForKey(scope, states.get(waiter.runId), now));
  await Promise.all(stale.map((waiter) => deps.keyWaiters.leave(scope, waiter.sort)));
  // Every entry of a full page was ahead: more may be, past it. (A run's own entry is never before
  // its sort: its priority and due time do not change, and an entry from before decision 0191 sorts
  // after every ranked one.)
  const mayBeMore = queue.length > limit && ahead.length === queue.length;
  return mayBeMore && stale.length > 0 ? limit : ahead.length - stale.length;
}

/** Entries a freed slot looks through for the first run that still waits. */
const WAKE_LOOKAHEAD = 5;

/**
 * A slot was given back: the first run still waiting for the key (decision 0187: not one whose
 * entry is stale) is sent for now, not at the end of its wait.
 */
async function wakeFirstWaiter(deps: SchedulerDeps, scope: string, freedBy: string): Promise<void> {
  const queue = (await deps.keyWaiters.first(scope, WAKE_LOOKAHEAD + 1)).filter((waiter) => waiter.runId !== freedBy);
  if (queue.length === 0) return;
  const now = deps.clock();
  const states = await deps.runs.keyWaitStates(queue.map((waiter) => waiter.runId));
  const first = queue.find((waiter) => stillWaitsForKey(scope, states.get(waiter.runId), now));
  if (first) await deps.dispatch.send([dispatchOfRun(first, now)], now);
}
