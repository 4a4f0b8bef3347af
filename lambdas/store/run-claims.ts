// External workers' claims: a leased run of an external target is offered in a sparse index of
// claimable runs, claimed through the API under a secret lease token, and kept alive by the
// worker's heartbeats. Its outcome is recorded as any other (run-leases.ts).
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Run, RunStatus } from '../domain/run';
import { isTerminal, sourcesOf } from '../domain/run';
import { LEASE_CHECK_SLACK_MS } from '../domain/time-gate';
import { greaterThan, oneOf, plus, updateIf, updateReturning } from './conditional';
import type { RunPayload } from '../domain/payload';
import { runKey } from './keys';
import {
  budgetFromOf,
  checkpointOf,
  claimSortOf,
  inputsOf,
  gateAttributes,
  itemToRun,
  payloadOverrideOf,
  PROGRESS_ATTRIBUTE,
  runIdOfClaimSort,
} from './run-items';
import { RUNS_CLAIM_INDEX } from './schema';

export type BeatResult = { kind: 'extended'; run: Run } | { kind: 'missing' } | { kind: 'stale'; status: string };

export class RunClaims {
  constructor(
    private readonly dynamo: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /**
   * Hands a leased run of an external target to external workers: RUNNING -> QUEUED (fenced by the
   * leased version) with an entry in the claimable index. It waits there, without a check-back (the
   * lease's leaves the time index: a QUEUED entry there would be sent and leased again), until a
   * worker claims it. Admitted already, it forgets the run its job pointed at when it was planned
   * (as `RunLeases.giveBack` with `admitted`): a duplicate message that leases it runs it as it is.
   */
  async offer(run: Run, now: number): Promise<boolean> {
    return updateIf(this.dynamo, this.tableName, runKey(run.runId), {
      set: { status: 'QUEUED', updatedAt: new Date(now).toISOString(), claimTenant: run.tenantId, claimSort: claimSortOf(run) },
      remove: ['leaseExpiresAtMs', 'gateKey', 'gateAt', 'chainedFrom'],
      if: { status: oneOf(sourcesOf('QUEUED', ['RUNNING'])), version: run.version },
    });
  }

  /** Run ids waiting for an external worker of this tenant (and job type), the longest-waiting first. */
  async claimable(tenantId: string, jobType: string | undefined, limit: number): Promise<{ runId: string; leaseMs: number }[]> {
    const { Items: items = [] } = await this.dynamo.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: RUNS_CLAIM_INDEX,
        KeyConditionExpression: jobType ? '#tenant = :tenant AND begins_with(#sort, :type)' : '#tenant = :tenant',
        ExpressionAttributeNames: { '#tenant': 'claimTenant', ...(jobType ? { '#sort': 'claimSort' } : {}) },
        ExpressionAttributeValues: { ':tenant': tenantId, ...(jobType ? { ':type': `${jobType}#` } : {}) },
        Limit: limit,
      }),
    );
    return items.map((item) => ({ runId: runIdOfClaimSort(String(item.claimSort)), leaseMs: Number(item.leaseMs) }));
  }

  /**
   * An external worker claims an offered run: RUNNING under `owner` with a secret lease token, a new
   * fencing version, and a check-back in the time index at the lease's end (moved by each heartbeat),
   * by which the ticker finds a worker that stopped beating. Null when another worker claimed it first.
   */
  async claim(
    runId: string,
    tenantId: string,
    claim: { owner: string; leaseToken: string; now: number; shards: number; leaseMs: number },
  ): Promise<{ run: Run; payloadOverride: RunPayload | undefined; checkpoint: unknown; inputs: unknown } | null> {
    const gate = gateAttributes(runId, claim.now + claim.leaseMs + LEASE_CHECK_SLACK_MS, claim.shards);
    const now = new Date(claim.now).toISOString();
    const result = await updateReturning(this.dynamo, this.tableName, runKey(runId), {
      set: {
        status: 'RUNNING',
        leaseOwner: claim.owner,
        leaseToken: claim.leaseToken,
        leaseExpiresAtMs: plus('leaseMs', claim.now),
        startedAt: now,
        updatedAt: now,
        version: plus('version', 1),
        gateKey: gate.gateKey,
        gateAt: gate.gateAt,
      },
      remove: ['claimTenant', 'claimSort'],
      // Only an offered run is in the claimable index: QUEUED, with the tenant's claim entry.
      if: { status: oneOf(sourcesOf('RUNNING', ['QUEUED'])), claimTenant: tenantId },
    });
    if (!result.held) {
      // A run that ended offered before every end removed its claim entry (a cancel, a deleted job):
      // it is taken out of the index, not met first by every claim until it expires.
      const found = result.item;
      if (found && found.claimTenant === tenantId && isTerminal(itemToRun(found).status)) await this.forgetClaim(runId, found.status as RunStatus);
      return null;
    }
    const item = result.value;
    return { run: itemToRun(item), payloadOverride: payloadOverrideOf(item), checkpoint: checkpointOf(item), inputs: inputsOf(item) };
  }

  /** Removes a finished run's claim entry (conditioned on its status as read). */
  private async forgetClaim(runId: string, status: RunStatus): Promise<void> {
    await updateIf(this.dynamo, this.tableName, runKey(runId), { set: {}, remove: ['claimTenant', 'claimSort'], if: { status } });
  }

  /**
   * An external worker's heartbeat: extends its lease (and moves the check-back with it), and
   * records progress and a checkpoint, if the token is still the run's and its lease has not lapsed
   * at `now`. Otherwise says why: a lapsed lease is `stale` with the run still RUNNING (the ticker
   * records the lost worker within a tick), and is not revived, as `RunLeases.heartbeat` does not
   * revive one: its check-back may be on its way to recovery, its retry planned.
   */
  async beat(
    runId: string,
    tenantId: string,
    beat: { leaseToken: string; now: number; shards: number; progress?: unknown; checkpoint?: unknown },
  ): Promise<BeatResult> {
    // The lease's new end is only known inside DynamoDB (leaseMs lives on the run): read it first.
    const current = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: runKey(runId), ConsistentRead: true }));
    const item = current.Item;
    if (!item || item.tenantId !== tenantId) return { kind: 'missing' };
    if (item.status !== 'RUNNING' || item.leaseToken !== beat.leaseToken || !leaseLiveAt(item, beat.now)) return { kind: 'stale', status: String(item.status) };
    const gate = gateAttributes(runId, beat.now + Number(item.leaseMs) + LEASE_CHECK_SLACK_MS, beat.shards);
    const result = await updateReturning(this.dynamo, this.tableName, runKey(runId), {
      set: {
        leaseExpiresAtMs: plus('leaseMs', beat.now),
        updatedAt: new Date(beat.now).toISOString(),
        gateKey: gate.gateKey,
        gateAt: gate.gateAt,
        [PROGRESS_ATTRIBUTE]: beat.progress === undefined ? undefined : JSON.stringify(beat.progress),
        checkpointJson: beat.checkpoint === undefined ? undefined : JSON.stringify(beat.checkpoint),
      },
      if: { status: 'RUNNING', leaseToken: beat.leaseToken, tenantId, leaseExpiresAtMs: greaterThan(beat.now) },
    });
    if (result.held) return { kind: 'extended', run: itemToRun(result.value) };
    return result.item ? { kind: 'stale', status: String(result.item.status) } : { kind: 'missing' };
  }

  /** A run with what an external worker's call must match (its lease token) and what a retry carries (checkpoint, a step's inputs). */
  async getLeased(runId: string): Promise<{
    run: Run;
    leaseToken: string | null;
    budgetFrom: number;
    checkpoint: unknown;
    inputs: unknown;
    payloadOverride: RunPayload | undefined;
  } | null> {
    const { Item: item } = await this.dynamo.send(new GetCommand({ TableName: this.tableName, Key: runKey(runId), ConsistentRead: true }));
    if (!item) return null;
    const leaseToken = typeof item.leaseToken === 'string' ? item.leaseToken : null;
    return {
      run: itemToRun(item),
      leaseToken,
      budgetFrom: budgetFromOf(item),
      checkpoint: checkpointOf(item),
      inputs: inputsOf(item),
      payloadOverride: payloadOverrideOf(item),
    };
  }
}

/** Whether a claimed run's lease is live at `now`: it ends at `leaseExpiresAtMs`. */
function leaseLiveAt(item: Record<string, unknown>, now: number): boolean {
  return typeof item.leaseExpiresAtMs === 'number' && item.leaseExpiresAtMs > now;
}
