// How long a finished run is kept (decision 0156): RUN_RETENTION_DAYS after it finished or after its
// occurrence, whichever is later, then it leaves through the runs table's TTL. A record of an
// occurrence skipped ahead of time (its occurrence in the future) is so kept until after it would
// have fired, which is what keeps the chain from writing that occurrence's run again. A workflow
// step's runs are kept the same way; an ended workflow run is kept RUN_RETENTION_DAYS after it ended
// or after its time, and may be retried up to a day before its steps' runs can have left
// (decision 0159).

const DAY_SECONDS = 24 * 60 * 60;

/** The occurrence a run id names (`<jobId>.<occurrence ms, base 36>.<attempt>`, runIdFor), or undefined. */
export function occurrenceOfRunId(runId: string): { readonly jobId: string; readonly at: number } | undefined {
  const parts = runId.split('.');
  if (parts.length < 3) return undefined;
  const encoded = parts[parts.length - 2] ?? '';
  if (!/^[0-9a-z]{1,12}$/.test(encoded)) return undefined;
  const at = parseInt(encoded, 36);
  return Number.isSafeInteger(at) ? { jobId: parts.slice(0, -2).join('.'), at } : undefined;
}

/** The epoch second a finished run leaves at, or undefined when runs are kept forever (retention 0). */
export function runExpiresAtEpoch(runId: string, finishedAt: number, retentionDays: number): number | undefined {
  if (retentionDays <= 0) return undefined;
  const occurrence = occurrenceOfRunId(runId);
  return Math.floor(Math.max(finishedAt, occurrence?.at ?? finishedAt) / 1000) + retentionDays * DAY_SECONDS;
}

/** The epoch second an ended workflow run leaves at (after it ended or after its time, whichever is later), or undefined when kept forever. */
export function workflowRunExpiresAtEpoch(scheduledFor: number, finishedAt: number, retentionDays: number): number | undefined {
  return retentionDays <= 0 ? undefined : Math.floor(Math.max(finishedAt, scheduledFor) / 1000) + retentionDays * DAY_SECONDS;
}

/**
 * The last instant an ended workflow run may be retried, or undefined when runs are kept forever.
 * Its steps' runs all ended after the workflow run's time, so each is kept at least until that time
 * plus the retention; a day's margin is left for the retried steps to run and read their parents'.
 */
export function latestWorkflowRetry(scheduledFor: number, retentionDays: number): number | undefined {
  return retentionDays <= 0 ? undefined : scheduledFor + (retentionDays - 1) * DAY_SECONDS * 1000;
}

/** The epoch second the exactly-once ledger's entry of an occurrence leaves at: with the occurrence's runs, which a replay would need. */
export function effectExpiresAtEpoch(occurrenceAt: number, recordedAt: number, retentionDays: number): number | undefined {
  return retentionDays <= 0 ? undefined : Math.floor(Math.max(occurrenceAt, recordedAt) / 1000) + retentionDays * DAY_SECONDS;
}

/**
 * The earliest instant a backfill may start from, or undefined when runs are kept forever: an
 * occurrence older than the retention may have lost its run, and a backfill would run it again. A
 * day's margin covers a large backfill's release, which takes hours.
 */
export function earliestBackfillFrom(now: number, retentionDays: number): number | undefined {
  return retentionDays <= 0 ? undefined : now - (retentionDays - 1) * DAY_SECONDS * 1000;
}

/**
 * How far past a replay's making (or a run's end) an effect it refers to is kept beyond the
 * retention: the run's own expiry counts from its end, which comes a little later (decision 0159).
 */
export const EFFECT_KEPT_SLACK_MS = 86_400_000;

/**
 * The earliest fire time a backfill may still release, or undefined when runs are kept forever: a
 * run of a later one, had it run, is still kept (its expiry is at least its occurrence plus the
 * retention). The request's own bound (`earliestBackfillFrom`) keeps a day's margin for the release.
 */
export function earliestReleasable(now: number, retentionDays: number): number | undefined {
  // Ten minutes inside the retention: the tick's writes come after its start, and a run that ended
  // at its occurrence expires exactly the retention after it.
  return retentionDays <= 0 ? undefined : now - retentionDays * DAY_SECONDS * 1000 + RELEASE_MARGIN_MS;
}

const RELEASE_MARGIN_MS = 10 * 60_000;
