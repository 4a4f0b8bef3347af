// DynamoDB's limits on what the workflow store writes, measured on the requests the real store
// builds: each expression string of a write under 4 KB (moto does not enforce it; AWS refuses the
// write), and a workflow run's item and a step run's item under 400 KB, for the largest workflow
// the API accepts (100 steps with 64-character ids, 64 dependencies each, results of 4 KiB).
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import type { StepState, WorkflowRun } from '../../lambdas/domain/workflow-run';
import { MAX_STEP_DEPENDENCIES, MAX_STEP_RESULT_BYTES, MAX_WORKFLOW_STEPS } from '../../lambdas/domain/workflow';
import { initialSteps } from '../../lambdas/domain/workflow-run';
import { MAX_PAYLOAD_BYTES } from '../../lambdas/domain/job';
import { MAX_EXPRESSION_BYTES } from '../../lambdas/store/conditional';
import { workflowRunKey } from '../../lambdas/store/keys';
import { runToItem } from '../../lambdas/store/run-items';
import { stepContextOf, storedStepInputs } from '../../lambdas/domain/workflow-jobs';
import { WorkflowRunsRepository } from '../../lambdas/store/workflow-runs';
import { stepStatesToItem } from '../../lambdas/store/step-states';
import type { Run } from '../../lambdas/domain/run';

/** DynamoDB's item size: attribute names and values in UTF-8, numbers by their digits, 3 bytes per map or list and per element. */
function itemBytes(value: unknown): number {
  if (value === null || value === undefined || typeof value === 'boolean') return 1;
  if (typeof value === 'string') return Buffer.byteLength(value, 'utf8');
  if (typeof value === 'number') return Math.ceil(String(Math.abs(value)).replace(/^0\./, '').replace('.', '').length / 2) + 1;
  if (Array.isArray(value)) return 3 + value.reduce<number>((sum, element) => sum + 1 + itemBytes(element), 0);
  return (
    3 + Object.entries(value as Record<string, unknown>).reduce((sum, [name, element]) => sum + 1 + Buffer.byteLength(name, 'utf8') + itemBytes(element), 0)
  );
}
const topLevelBytes = (item: Record<string, unknown>): number =>
  Object.entries(item).reduce((sum, [name, value]) => sum + Buffer.byteLength(name, 'utf8') + itemBytes(value), 0);
const ITEM_LIMIT = 400 * 1024;

/** A document client that records each request's input and answers the item as the store expects it back. */
function recordingClient(answer: () => Record<string, unknown>): { client: DynamoDBDocumentClient; inputs: Record<string, unknown>[] } {
  const inputs: Record<string, unknown>[] = [];
  const client = {
    send: (command: { input: Record<string, unknown> }) => {
      inputs.push(command.input);
      return Promise.resolve({ Attributes: answer(), Item: answer() });
    },
  } as unknown as DynamoDBDocumentClient;
  return { client, inputs };
}

// Letters, digits and `_` only: ids an attribute name could hold as they are (the readable placeholders' case).
const id64 = (index: number): string => `step_${String(index).padStart(3, '0')}_`.padEnd(64, 'x');
const stepIds = Array.from({ length: MAX_WORKFLOW_STEPS }, (_, index) => id64(index));
const at = '2026-11-25T12:00:00.000Z';
const runId = (stepId: string, attempt = 1): string => `wf_01m8a0b1c2d3e4f5g6h7j8k9m0.v999.${stepId}.mww2k5aa.${attempt}`;
/** The longest reason a step records: an external worker's error (code 64, message 1024 characters). */
const longReason = `${'E'.repeat(64)}: ${'m'.repeat(1024)}`;

function run(steps: Record<string, StepState>): WorkflowRun {
  return {
    workflowRunId: 'wf_01m8a0b1c2d3e4f5g6h7j8k9m0.mww2k5aa',
    workflowId: 'wf_01m8a0b1c2d3e4f5g6h7j8k9m0',
    tenantId: 'tenant-with-a-long-name-of-sixty-four-characters-for-the-limits-',
    version: 999,
    status: 'RUNNING',
    trigger: 'manual',
    scheduledFor: at,
    createdAt: at,
    finishedAt: null,
    failedSteps: [],
    retries: 0,
    steps,
  };
}

function expressionsOf(input: Record<string, unknown>): string[] {
  return ['UpdateExpression', 'ConditionExpression', 'ProjectionExpression', 'KeyConditionExpression', 'FilterExpression'].flatMap((name) =>
    typeof input[name] === 'string' ? [input[name]] : [],
  );
}

describe('the workflow store within DynamoDB limits', () => {
  const spec = { steps: stepIds.map((id) => ({ id })) };
  const waiting = initialSteps(spec);
  const started = Object.fromEntries(stepIds.map((id) => [id, { ...waiting[id]!, status: 'STARTED' as const, runId: runId(id), startedAt: at }]));
  const ended = Object.fromEntries(
    stepIds.map((id) => [id, { ...started[id]!, status: 'DEAD' as const, attempt: 20, runId: runId(id, 20), finishedAt: at, reason: longReason }]),
  );
  /** The item as the store writes it (its steps' states compact, decision 0176). */
  const item = (steps: Record<string, StepState>) => ({
    ...workflowRunKey(run(steps).workflowId, run(steps).workflowRunId),
    ...run(steps),
    steps: stepStatesToItem(run(steps), steps),
  });

  it(`keeps every expression of every write of a ${MAX_WORKFLOW_STEPS}-step run with 64-character step ids under ${MAX_EXPRESSION_BYTES} bytes`, async () => {
    const { client, inputs } = recordingClient(() => item(started));
    const store = new WorkflowRunsRepository(client, 'jobs');
    const workflowRun = run(waiting);
    // Every root starts at once (a graph of 100 independent steps), or every one is ruled out.
    await store.moveSteps(workflowRun, started);
    await store.moveSteps(
      workflowRun,
      Object.fromEntries(stepIds.map((id) => [id, { ...waiting[id]!, status: 'NOT_STARTED' as const, finishedAt: at, reason: longReason }])),
    );
    // A step's outcome written with the moves it allows (decision 0158): the other 99 ruled out, or
    // the run ending with them.
    const notStarted = Object.fromEntries(
      stepIds.slice(1).map((id) => [id, { ...waiting[id]!, status: 'NOT_STARTED' as const, finishedAt: at, reason: longReason }]),
    );
    await store.moveSteps(workflowRun, notStarted, { stepId: stepIds[0]!, state: ended[stepIds[0]!]! });
    await store.finish(
      workflowRun,
      'FAILED',
      stepIds,
      Date.parse(at),
      notStarted,
      { event: 'failed', checkBackAt: Date.parse(at) },
      {
        stepId: stepIds[0]!,
        state: ended[stepIds[0]!]!,
      },
    );
    for (const id of stepIds.slice(0, 3)) await store.recordStep(workflowRun, id, ended[id]!);
    // A cancel with every step but one still waiting.
    await store.finish(
      workflowRun,
      'CANCELLED',
      [],
      Date.parse(at),
      Object.fromEntries(
        stepIds.slice(1).map((id) => [id, { ...waiting[id]!, status: 'NOT_STARTED' as const, finishedAt: at, reason: 'the workflow run was cancelled' }]),
      ),
    );
    await store.finish(workflowRun, 'FAILED', stepIds, Date.parse(at));
    await store.retry({ ...workflowRun, status: 'FAILED' }, waiting, Date.parse(at));
    await store.moveCheckBack(workflowRun, Date.parse(at));
    expect(inputs.length).toBeGreaterThanOrEqual(11);
    for (const input of inputs) {
      for (const expression of expressionsOf(input)) expect(Buffer.byteLength(expression, 'utf8')).toBeLessThan(MAX_EXPRESSION_BYTES);
      // Each name and value placeholder's own limit: 255 bytes of name.
      for (const name of Object.values((input.ExpressionAttributeNames ?? {}) as Record<string, string>)) expect(name.length).toBeLessThanOrEqual(255);
    }
  });

  it('keeps a 100-step workflow run item, every step ended with the longest reason, under 400 KB', () => {
    expect(topLevelBytes(item(ended))).toBeLessThan(ITEM_LIMIT);
  });

  it('keeps a step run item with the results of 64 parents of 4 KiB each, its own result, progress and checkpoint under 400 KB', () => {
    const result = { data: 'r'.repeat(MAX_STEP_RESULT_BYTES - 11) };
    expect(Buffer.byteLength(JSON.stringify(result))).toBe(MAX_STEP_RESULT_BYTES);
    const results = Object.fromEntries(stepIds.slice(0, MAX_STEP_DEPENDENCIES).map((id) => [id, result]));
    const bounded = (bytes: number) => ({ data: 'p'.repeat(bytes - 11) });
    const stepRun: Run = {
      runId: runId(stepIds[99]!, 20),
      jobId: `wf_01m8a0b1c2d3e4f5g6h7j8k9m0.v999.${stepIds[99]}`,
      tenantId: run({}).tenantId,
      jobType: 't'.repeat(64),
      priority: 'normal',
      scheduledFor: at,
      attempt: 20,
      status: 'RUNNING',
      availableAt: at,
      enqueuedAt: at,
      startedAt: at,
      finishedAt: at,
      leaseOwner: 'external:' + 'w'.repeat(64),
      leaseExpiresAt: at,
      version: 12,
      leaseSeconds: 3600,
      progress: bounded(MAX_PAYLOAD_BYTES),
      error: { code: 'E'.repeat(64), message: 'm'.repeat(1024), retryable: true },
      reason: longReason,
      idempotencyKey: `wf_01m8a0b1c2d3e4f5g6h7j8k9m0.v999.${stepIds[99]}#${at}`,
      trigger: 'retry',
      delivery: 'at-least-once',
      result,
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      createdAt: at,
      updatedAt: at,
    };
    const inputs = { workflowId: run({}).workflowId, workflowRunId: run({}).workflowRunId, stepId: stepIds[99], version: 999, results };
    const runItem = runToItem(stepRun, { inputs, checkpoint: bounded(MAX_PAYLOAD_BYTES), budgetFrom: 20, gate: { at: Date.parse(at), shards: 8 } });
    expect(topLevelBytes({ ...runItem, leaseToken: 'x'.repeat(32), claimTenant: stepRun.tenantId, claimSort: 'x'.repeat(200) })).toBeLessThan(ITEM_LIMIT);
  });

  it("keeps a typical step run's item under 1 KB, one write unit a write: where the step is comes from its ids, not its inputs (decision 0164)", () => {
    const at = '2026-11-27T10:00:00.000Z';
    const jobId = 'wf_01m8a0b1c2d3e4f5g6h7j8k9m0.v3.transform';
    const typical: Run = {
      runId: `${jobId}.mwyu93k0.1`,
      jobId,
      tenantId: 'tenant-acme-production',
      jobType: 'etl',
      priority: 'normal',
      scheduledFor: at,
      attempt: 1,
      status: 'SUCCEEDED',
      availableAt: at,
      enqueuedAt: at,
      startedAt: at,
      finishedAt: at,
      leaseOwner: 'worker-1a2b3c4d',
      leaseExpiresAt: null,
      version: 1,
      leaseSeconds: 300,
      progress: null,
      error: null,
      reason: null,
      idempotencyKey: `${jobId}#${at}`,
      trigger: 'manual',
      delivery: 'at-least-once',
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      createdAt: at,
      updatedAt: at,
    };
    const inputs = storedStepInputs({ results: { extract: { rows: 1200, file: 's3://bucket/extract/2026-11-27.csv' } } });
    const item = { ...runToItem(typical, { inputs, budgetFrom: 1 }), expiresAtEpoch: 1_800_000_000 };
    expect(topLevelBytes(item)).toBeLessThan(1024);
    // Before, the item also kept the step's whole context: over 1 KB, two units a write.
    const before = runToItem(typical, { inputs: { ...stepContextOf(typical, inputs)!, results: inputs!.results }, budgetFrom: 1 });
    expect(topLevelBytes({ ...before, expiresAtEpoch: 1_800_000_000 })).toBeGreaterThan(1024);
  });

  it("keeps a typical 4-step workflow run's item under 1 KB with every step ended, one write unit a write (decision 0176)", async () => {
    const workflowId = 'wf_01m8a0b1c2d3e4f5g6h7j8k9m0';
    const at = '2026-11-27T10:00:00.000Z';
    const ids = ['extract', 'transform_a', 'transform_b', 'load'];
    const typical: WorkflowRun = {
      workflowRunId: `${workflowId}.mwyu93k0`,
      workflowId,
      tenantId: 'tenant-acme-production',
      version: 3,
      status: 'SUCCEEDED',
      trigger: 'manual',
      scheduledFor: at,
      createdAt: at,
      finishedAt: '2026-11-27T10:00:04.211Z',
      failedSteps: [],
      retries: 0,
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      steps: Object.fromEntries(
        ids.map((id, index): [string, StepState] => [
          id,
          {
            status: 'SUCCEEDED',
            attempt: 1,
            runId: `${workflowId}.v3.${id}.mwyu93k0.1`,
            startedAt: `2026-11-27T10:00:0${index}.113Z`,
            finishedAt: `2026-11-27T10:00:0${index}.968Z`,
            reason: null,
          },
        ]),
      ),
    };
    const { client, inputs } = recordingClient(() => ({}));
    await new WorkflowRunsRepository(client, 'jobs').createRun(typical, Date.parse(at));
    const written = { ...(inputs[0]!.Item as Record<string, unknown>), expiresAtEpoch: 1_800_000_000 };
    expect(topLevelBytes(written)).toBeLessThan(1024);
    // Before, each state kept its run id (derived from the ids), its times as ISO text and its nulls.
    expect(topLevelBytes({ ...written, steps: typical.steps })).toBeGreaterThan(1024);
  });
});
