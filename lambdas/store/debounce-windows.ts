// A job's debounce window (issue 19 item 10): one item per job naming the run that the triggers of
// the open window coalesce into. A window is opened in one transaction with its run (the window's
// item on its version, the run new), so two triggers racing to open one open it once; a trigger
// within the window replaces the run's payload while the run has not started.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { PENDING_STATUSES } from '../domain/run';
import type { NewRun } from './jobs-repository';
import { IF_NEW, absent, conditionExpressions, oneOf, transactRetryingConflicts, updateIf } from './conditional';
import { debounceKey, runKey } from './keys';
import { payloadOverrideAttributes, runToItem } from './run-items';
import type { RunPayload } from '../domain/payload';

export interface DebounceWindow {
  readonly jobId: string;
  readonly runId: string;
  /** Epoch ms: the window's end, when its run becomes due. */
  readonly endsAt: number;
  readonly version: number;
}

/** A window's item outlives its end by a day, then expires; an ended window is only ever replaced. */
const WINDOW_RETENTION_SECONDS = 24 * 3600;

export class DebounceWindows {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly jobsTable: string,
    private readonly runsTable: string,
  ) {}

  async get(jobId: string): Promise<DebounceWindow | null> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.jobsTable, Key: debounceKey(jobId), ConsistentRead: true }));
    return item ? { jobId, runId: String(item.runId), endsAt: Number(item.endsAt), version: Number(item.version) } : null;
  }

  /**
   * Opens a window with its run, replacing `previous` (the window read, or null for none). False when
   * another trigger changed the window first, or the run exists (one triggered at the same instant).
   */
  async open(plan: NewRun, endsAt: number, previous: DebounceWindow | null): Promise<boolean> {
    const { run } = plan;
    const result = await transactRetryingConflicts(
      this.dynamo,
      {
        window: {
          Put: {
            TableName: this.jobsTable,
            Item: {
              ...debounceKey(run.jobId),
              runId: run.runId,
              endsAt,
              version: (previous?.version ?? 0) + 1,
              expiresAtEpoch: Math.floor(endsAt / 1000) + WINDOW_RETENTION_SECONDS,
            },
            ...conditionExpressions(previous ? { version: previous.version } : { pk: absent }),
          },
        },
        run: { Put: { TableName: this.runsTable, Item: runToItem(run, plan.extras), ...conditionExpressions(IF_NEW) } },
      },
      3,
    );
    return result.committed;
  }

  /** A trigger within the window: the run carries its payload (none: the job's), if it has not started. */
  async carryPayload(runId: string, payload: RunPayload | undefined, now: number): Promise<boolean> {
    const at = new Date(now).toISOString();
    // A payload it carried before and stored apart is left to the bucket's lifecycle rule (decision 0162).
    const attributes = payload ? payloadOverrideAttributes(payload) : { set: {}, remove: ['payloadOverrideJson', 'payloadOverrideRef'] };
    return updateIf(this.dynamo, this.runsTable, runKey(runId), {
      set: { updatedAt: at, ...attributes.set },
      remove: attributes.remove,
      // Not a change of status: the run is still waiting (SCHEDULED or QUEUED), so no lease has read its payload.
      if: { status: oneOf(PENDING_STATUSES) },
    });
  }
}
