// Steps' results stored apart (decision 0163), without AWS: where a result goes, what a dependant's
// run keeps, what its target receives, what a step's delivery may weigh, and how items carry it.
import { describe, expect, it } from 'vitest';
import { deliveredStepContext, inputsFrom, keptResult, resultLimitOf, stepDeliveryRefusal } from '../../lambdas/app/step-results';
import {
  EXTERNAL_STEP_DELIVERY_MAX_BYTES,
  INLINE_PAYLOAD_MAX_BYTES,
  MAX_JOB_PAYLOAD_BYTES,
  STEP_DELIVERY_MAX_BYTES,
  targetPayloadLimit,
} from '../../lambdas/domain/payload';
import { MAX_PAYLOAD_BYTES } from '../../lambdas/domain/job';
import { MAX_STEP_RESULT_BYTES, MAX_STORED_STEP_RESULT_BYTES } from '../../lambdas/domain/workflow';
import type { StepContext } from '../../lambdas/domain/workflow-jobs';
import { stepContextOf, storedStepInputs, workflowRunIdOf } from '../../lambdas/domain/workflow-jobs';
import { itemToRun, resultOf } from '../../lambdas/store/run-items';
import { stepResultOf } from '../../lambdas/targets/target';
import { stepFieldsOf } from '../../lambdas/targets/envelope';
import { memoryStore } from '../support/memory-payload-store';

const valueOf = (bytes: number) => ({ blob: 'v'.repeat(bytes - 11) });
const run = { tenantId: 't1', jobId: 'wf_1.v1.a' };
const where = { workflowId: 'wf_1', workflowRunId: 'wfr_1', stepId: 'd', version: 1 };

describe('step results stored apart', () => {
  it('keeps a result of 4 KiB in the item, stores a larger one, and keeps every result inline without a bucket', async () => {
    const memory = memoryStore();
    expect(await keptResult(memory.deps, run, valueOf(INLINE_PAYLOAD_MAX_BYTES))).toEqual({ inline: valueOf(INLINE_PAYLOAD_MAX_BYTES) });
    const kept = await keptResult(memory.deps, run, valueOf(INLINE_PAYLOAD_MAX_BYTES + 1));
    expect(kept).toEqual({ ref: expect.objectContaining({ key: 'runs/t1/wf_1.v1.a/0.json', bytes: INLINE_PAYLOAD_MAX_BYTES + 1 }) });
    expect(await keptResult({ payloads: null }, run, valueOf(60_000))).toEqual({ inline: valueOf(60_000) });
  });

  it('bounds a result by the deployment: 1 MiB with a bucket; without one 4 KiB for a step and 64 KiB for another run', () => {
    const { deps } = memoryStore();
    expect([resultLimitOf(deps), resultLimitOf(deps, false)]).toEqual([MAX_STORED_STEP_RESULT_BYTES, MAX_STORED_STEP_RESULT_BYTES]);
    expect([resultLimitOf({ payloads: null }), resultLimitOf({ payloads: null }, false)]).toEqual([MAX_STEP_RESULT_BYTES, MAX_PAYLOAD_BYTES]);
    expect(MAX_STORED_STEP_RESULT_BYTES).toBe(MAX_JOB_PAYLOAD_BYTES);
  });

  it("gives a dependant its parents' inline results as they are and the stored ones by reference; a parent without a result is null", () => {
    const ref = { key: 'runs/t1/wf_1.v1.b/x.json', bytes: 9000, sha256: 'ab' };
    expect(
      inputsFrom(
        new Map([
          ['a', { inline: { n: 1 } }],
          ['b', { ref }],
          ['c', null],
        ]),
      ),
    ).toEqual({ results: { a: { n: 1 }, c: null }, storedResults: { b: ref } });
    expect(inputsFrom(new Map([['a', { inline: 2 }]]))).toEqual({ results: { a: 2 } });
  });

  it('reads the stored results into the context its target receives, which names no reference; a gone object is PayloadMissingError', async () => {
    const memory = memoryStore();
    const kept = await keptResult(memory.deps, run, valueOf(10_000));
    if (!('ref' in kept)) throw new Error('expected a stored result');
    const context: StepContext = { ...where, results: { a: 1 }, storedResults: { b: kept.ref } };
    const delivered = await deliveredStepContext(memory.deps, context);
    expect(delivered).toEqual({ ...where, results: { a: 1, b: valueOf(10_000) } });
    expect(stepFieldsOf(context)).toEqual({ workflow: where, results: { a: 1 } });

    memory.objects.clear();
    await expect(deliveredStepContext(memory.deps, context)).rejects.toMatchObject({ name: 'PayloadMissingError' });
    // Nothing stored apart: nothing read.
    expect(await deliveredStepContext({ payloads: null }, { ...where, results: { a: 1 } })).toEqual({ ...where, results: { a: 1 } });
  });

  it("refuses a step's delivery over what its target takes, counting its payload, inline results and stored sizes", () => {
    const ref = (bytes: number) => ({ key: `k${bytes}`, bytes, sha256: '' });
    const inputs: StepContext = { ...where, results: { a: valueOf(1000) }, storedResults: { b: ref(600_000), c: ref(500_000) } };
    expect(stepDeliveryRefusal({ p: 1 }, inputs, 'sqs')).toMatch(
      /^its payload and its dependencies' results are 110\d{4} bytes of JSON, more than a sqs target takes \(1015808\)$/,
    );
    expect(stepDeliveryRefusal({ p: 1 }, inputs, 'eventbridge')).toMatch(/more than a eventbridge target takes/);
    expect(stepDeliveryRefusal({ p: 1 }, inputs, 'http')).toBeNull();
    const exactly = targetPayloadLimit('sqs') - JSON.stringify({ a: valueOf(1000) }).length - 2;
    expect(stepDeliveryRefusal(null, { ...where, results: { a: valueOf(1000) }, storedResults: { b: ref(exactly - 4) } }, 'sqs')).toBeNull();
    expect(stepDeliveryRefusal(null, { ...where, results: {}, storedResults: { b: ref(STEP_DELIVERY_MAX_BYTES) } }, 'lambda')).toMatch(/lambda target takes/);
    // An external claim's answer is encoded twice on its way out of the API function (under 6 MB).
    const quoted = { ...where, results: {}, storedResults: { b: ref(3 * 1024 * 1024) } };
    expect(stepDeliveryRefusal(null, quoted, 'http')).toBeNull();
    expect(stepDeliveryRefusal(null, quoted, 'external')).toMatch(/more than a external target takes \(2621440\)/);
    const worst = JSON.stringify(JSON.stringify({ results: { b: '"'.repeat((EXTERNAL_STEP_DELIVERY_MAX_BYTES - 20) / 2) } }));
    expect(Buffer.byteLength(worst)).toBeLessThan(6_000_000 - 64 * 1024);
  });

  it('reads a run item: a stored result shows its size and no key; resultOf gives the reference', () => {
    const ref = { key: 'runs/t1/wf_1.v1.a/x.json', bytes: 9000, sha256: 'ab' };
    const item = { runId: 'r1', status: 'SUCCEEDED', resultRef: ref, leaseExpiresAtMs: null };
    expect(itemToRun(item)).toMatchObject({ resultStored: { bytes: 9000 } });
    expect(itemToRun(item)).not.toHaveProperty('result');
    expect(JSON.stringify(itemToRun(item))).not.toContain(ref.key);
    expect(resultOf(item)).toEqual({ ref });
    expect(resultOf({ resultJson: '{"n":1}' })).toEqual({ inline: { n: 1 } });
    expect(resultOf({ runId: 'r2' })).toBeNull();
  });

  it("fails a step whose target answers more than the deployment's bound, and takes up to it", () => {
    expect(stepResultOf(JSON.stringify(valueOf(5000)), 'application/json', 'HTTP 200')).toMatchObject({ ok: false, error: { code: 'RESULT_TOO_LARGE' } });
    expect(stepResultOf(JSON.stringify(valueOf(5000)), 'application/json', 'HTTP 200', undefined, MAX_STORED_STEP_RESULT_BYTES)).toEqual({
      ok: true,
      detail: 'HTTP 200',
      result: valueOf(5000),
    });
  });
});

describe("a step run's inputs (decision 0164)", () => {
  const run = { jobId: 'wf_01m8a0b1c2d3e4f5g6h7j8k9m0.v3.transform', scheduledFor: '2026-11-27T10:00:00.000Z' };
  const where = {
    workflowId: 'wf_01m8a0b1c2d3e4f5g6h7j8k9m0',
    workflowRunId: workflowRunIdOf('wf_01m8a0b1c2d3e4f5g6h7j8k9m0', run.scheduledFor),
    stepId: 'transform',
    version: 3,
  };

  it('keeps only the parents results, and nothing for a root step', () => {
    expect(storedStepInputs({ results: {} })).toBeUndefined();
    expect(storedStepInputs({ results: {}, storedResults: {} })).toBeUndefined();
    expect(storedStepInputs({ results: { a: null } })).toEqual({ results: { a: null } });
    const ref = { key: 'k', bytes: 9000, sha256: 'ab' };
    expect(storedStepInputs({ results: {}, storedResults: { b: ref } })).toEqual({ results: {}, storedResults: { b: ref } });
  });

  it('builds the context from the run ids and what the item keeps, in the compact form and the whole form runs kept before', () => {
    expect(stepContextOf(run, undefined)).toEqual({ ...where, results: {} });
    expect(stepContextOf(run, { results: { a: 1 } })).toEqual({ ...where, results: { a: 1 } });
    const ref = { key: 'k', bytes: 9000, sha256: 'ab' };
    expect(stepContextOf(run, { results: {}, storedResults: { b: ref } })).toEqual({ ...where, results: {}, storedResults: { b: ref } });
    // An item written before decision 0164 kept the whole context: its results are read the same way.
    expect(stepContextOf(run, { ...where, results: { a: 2 } })).toEqual({ ...where, results: { a: 2 } });
    // Not a step's run: no context.
    expect(stepContextOf({ jobId: 'job_01m8a0b1c2d3e4f5g6h7j8k9m0', scheduledFor: run.scheduledFor }, { results: {} })).toBeUndefined();
  });
});
