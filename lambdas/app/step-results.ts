// Workflow steps' results stored apart (decision 0163). A result of up to INLINE_PAYLOAD_MAX_BYTES
// of JSON is kept in its run's item, as before; a larger one, up to MAX_STORED_STEP_RESULT_BYTES,
// is an object of the payload bucket that the item names, as a large payload is (decision 0162).
// A dependant's run keeps the reference, not the result: the worker that delivers it reads the
// object, and the API reads it where it shows the result. Without a payload bucket every result is
// inline and limited to MAX_STEP_RESULT_BYTES, as before.
import { logger } from '../core/logger';
import type { Run } from '../domain/run';
import type { PayloadRef, RunPayload } from '../domain/payload';
import { INLINE_PAYLOAD_MAX_BYTES, LIST_PAYLOAD_BUDGET_BYTES, LIST_PAYLOAD_MAX_BYTES, payloadBytes, stepDeliveryLimit } from '../domain/payload';
import type { Target } from '../domain/job';
import { MAX_PAYLOAD_BYTES } from '../domain/job';
import type { StepContext } from '../domain/workflow-jobs';
import { stepResultLimit } from '../domain/workflow';
import { PayloadMissingError } from '../store/payload-store';
import type { SchedulerDeps } from './deps';

/**
 * How many bytes of JSON a run's result may have in this deployment: 1 MiB with a payload bucket;
 * without one, a step's 4 KiB (its dependants' items hold it) and another run's 64 KiB, as before.
 */
export const resultLimitOf = (deps: Pick<SchedulerDeps, 'payloads'>, step = true): number =>
  step || deps.payloads ? stepResultLimit(deps.payloads !== null) : MAX_PAYLOAD_BYTES;

/** A step's result as its run keeps it: inline up to the bound, stored apart (a new object) above it. */
export async function keptResult(deps: Pick<SchedulerDeps, 'payloads'>, run: Pick<Run, 'tenantId' | 'jobId'>, result: unknown): Promise<RunPayload> {
  if (!deps.payloads || payloadBytes(result) <= INLINE_PAYLOAD_MAX_BYTES) return { inline: result };
  return { ref: await deps.payloads.putForRun(run.tenantId, run.jobId, result) };
}

/** A dependant's inputs from its parents' kept results: inline ones as they are, stored ones by reference. */
export function inputsFrom(kept: ReadonlyMap<string, RunPayload | null>): Pick<StepContext, 'results' | 'storedResults'> {
  const results: Record<string, unknown> = {};
  const storedResults: Record<string, PayloadRef> = {};
  for (const [stepId, result] of kept) {
    if (result && 'ref' in result) storedResults[stepId] = result.ref;
    else results[stepId] = result ? result.inline : null;
  }
  return Object.keys(storedResults).length > 0 ? { results, storedResults } : { results };
}

/**
 * The context a step's target receives: its parents' stored results read into `results`. Throws
 * PayloadMissingError when one's object is gone (past the bucket's lifecycle).
 */
export async function deliveredStepContext(deps: Pick<SchedulerDeps, 'payloads'>, step: StepContext): Promise<StepContext> {
  const { storedResults, ...context } = step;
  if (!storedResults) return context;
  const payloads = deps.payloads;
  if (!payloads) throw new Error("a step's inputs name results stored apart, and this deployment has no payload bucket");
  const read = await Promise.all(Object.entries(storedResults).map(async ([stepId, ref]) => [stepId, await payloads.get(ref)] as const));
  return { ...context, results: { ...context.results, ...Object.fromEntries(read) } };
}

/**
 * Why a step's run cannot be delivered to its target, or null: its payload and its parents' results
 * together are over what the target takes (stepDeliveryLimit). Sizes are known before any read.
 */
export function stepDeliveryRefusal(payload: unknown, step: StepContext, kind: Target['kind'] | 'workflow'): string | null {
  const stored = Object.values(step.storedResults ?? {}).reduce((sum, ref) => sum + ref.bytes, 0);
  const bytes = payloadBytes(payload) + payloadBytes(step.results) + stored;
  const limit = stepDeliveryLimit(kind);
  if (bytes <= limit) return null;
  return `its payload and its dependencies' results are ${bytes} bytes of JSON, more than a ${kind} target takes (${limit})`;
}

/**
 * The run with its stored result in place (the API's answers). One whose object is gone is shown
 * with `resultStored` alone: its dependants, if any, end DEAD with PAYLOAD_MISSING.
 */
export async function withResult(deps: Pick<SchedulerDeps, 'payloads' | 'runs'>, run: Run): Promise<Run> {
  return run.resultStored ? ((await withStoredResults(deps, [run]))[0] ?? run) : run;
}

/**
 * A page of runs with their stored results in place, as long as each is within LIST_PAYLOAD_MAX_BYTES
 * and the page within LIST_PAYLOAD_BUDGET_BYTES (as a page of jobs shows payloads); the others show
 * `resultStored` alone, and GET /v1/runs/{runId} shows them.
 */
export async function withListedResults<P extends { readonly items: readonly Run[] }>(deps: Pick<SchedulerDeps, 'payloads' | 'runs'>, page: P): Promise<P> {
  let budget = LIST_PAYLOAD_BUDGET_BYTES;
  const shown = new Set<Run>();
  for (const run of page.items) {
    if (!run.resultStored || run.resultStored.bytes > LIST_PAYLOAD_MAX_BYTES || run.resultStored.bytes > budget) continue;
    budget -= run.resultStored.bytes;
    shown.add(run);
  }
  if (shown.size === 0) return page;
  const read = new Map((await withStoredResults(deps, [...shown])).map((run) => [run.runId, run]));
  return { ...page, items: page.items.map((run) => read.get(run.runId) ?? run) };
}

/** Runs whose results are stored apart, read: their references in one batch, their objects side by side. */
async function withStoredResults(deps: Pick<SchedulerDeps, 'payloads' | 'runs'>, runs: readonly Run[]): Promise<Run[]> {
  const payloads = deps.payloads;
  if (!payloads) return [...runs];
  const kept = await deps.runs.resultsOf(runs.map((run) => run.runId));
  return Promise.all(
    runs.map(async (run) => {
      const result = kept.get(run.runId);
      if (!result || !('ref' in result)) return run;
      try {
        return { ...run, result: await payloads.get(result.ref) };
      } catch (error) {
        if (!(error instanceof PayloadMissingError)) throw error;
        logger.warn("a run's stored result is gone", { runId: run.runId, tenantId: run.tenantId, key: result.ref.key });
        return run;
      }
    }),
  );
}
