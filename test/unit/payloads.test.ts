// Payloads stored apart (decision 0162), without AWS: where a payload goes, how items carry the
// reference, what a run delivers, and what a page of jobs shows.
import { describe, expect, it } from 'vitest';
import type { Job } from '../../lambdas/domain/job';
import { INLINE_PAYLOAD_MAX_BYTES, LIST_PAYLOAD_BUDGET_BYTES, payloadBytes } from '../../lambdas/domain/payload';
import { deliveredPayload, discardAfterFailure, ownCopyOf, runPayloadOf, withListedPayloads, withStoredPayload } from '../../lambdas/app/payloads';
import { ConflictError, ServiceUnavailableError } from '../../lambdas/core/errors';
import { memoryStore } from '../support/memory-payload-store';
import { itemToJob, jobToItem } from '../../lambdas/store/job-items';
import { payloadOverrideAttributes, payloadOverrideOf, runToItem } from '../../lambdas/store/run-items';
import { jobSpecSchema } from '../../lambdas/domain/job';
import type { Run } from '../../lambdas/domain/run';

const job = (payload: unknown, jobId = 'job_1'): Job => ({
  ...jobSpecSchema.parse({ name: 'n', type: 't', schedule: { kind: 'now' }, target: { kind: 'http', url: 'https://example.com/' }, payload }),
  name: 'n',
  jobId,
  tenantId: 'tenant-a',
  status: 'ACTIVE',
  createdAt: '2026-11-27T00:00:00.000Z',
  updatedAt: '2026-11-27T00:00:00.000Z',
  version: 1,
  nextRunAt: null,
  nextRunId: null,
});
/** A payload of exactly `bytes` bytes of JSON. */
const payloadOf = (bytes: number) => ({ blob: 'x'.repeat(bytes - 11) });

describe('payloads stored apart', () => {
  it('stores a payload over 4 KiB and keeps one of 4 KiB inline; without a bucket keeps every one inline', async () => {
    const { deps, calls } = memoryStore();
    const inline = await withStoredPayload(deps, job(payloadOf(INLINE_PAYLOAD_MAX_BYTES)));
    expect(inline.payloadRef).toBeUndefined();
    expect(calls).toEqual([]);
    const stored = await withStoredPayload(deps, job(payloadOf(INLINE_PAYLOAD_MAX_BYTES + 1)));
    expect(stored.payload).toBeNull();
    expect(stored.payloadRef).toMatchObject({ key: 'jobs/tenant-a/job_1/0.json', bytes: INLINE_PAYLOAD_MAX_BYTES + 1 });
    expect(await withStoredPayload({ payloads: null }, job(payloadOf(50_000)))).not.toHaveProperty('payloadRef');
  });

  it('round-trips the reference through the job item, which holds no payload text then', async () => {
    const { deps } = memoryStore();
    const stored = await withStoredPayload(deps, job(payloadOf(10_000)));
    const item = jobToItem(stored);
    expect(item.payloadJson).toBeUndefined();
    expect(itemToJob(item)).toEqual(stored);
    // An inline payload: text, and no reference.
    const inline = jobToItem(job([1, null, 'two']));
    expect(inline).not.toHaveProperty('payloadRef');
    expect(itemToJob(inline).payload).toEqual([1, null, 'two']);
  });

  it("delivers a trigger's own payload, inline or stored, before the job's, and the job's otherwise", async () => {
    const { deps, calls } = memoryStore();
    const stored = await withStoredPayload(deps, job(payloadOf(10_000)));
    const own = await runPayloadOf(deps, stored, payloadOf(20_000));
    expect(own).toHaveProperty('ref');
    expect(await deliveredPayload(deps, stored, own)).toEqual(payloadOf(20_000));
    expect(await deliveredPayload(deps, stored, { inline: null })).toBeNull();
    expect(await deliveredPayload(deps, stored, undefined)).toEqual(payloadOf(10_000));
    expect(calls.filter((call) => call.startsWith('get'))).toEqual(['get runs/tenant-a/job_1/1.json', 'get jobs/tenant-a/job_1/0.json']);
  });

  it("gives a replay its own copy of a stored payload, and names the run's own when it cannot be read (gone: S3 may answer access denied)", async () => {
    const { deps } = memoryStore();
    const own = await runPayloadOf(deps, job({}), payloadOf(20_000));
    const copy = await ownCopyOf(deps, job({}), own);
    expect(copy).toHaveProperty('ref');
    expect(copy !== own && copy && 'ref' in copy && own && 'ref' in own && copy.ref.key !== own.ref.key).toBe(true);
    expect(await ownCopyOf(deps, job({}), { inline: { small: true } })).toEqual({ inline: { small: true } });
    const denied = { payloads: { ...deps.payloads, get: () => Promise.reject(Object.assign(new Error('Access Denied'), { name: 'AccessDenied' })) } };
    // Before, any error but NoSuchKey failed the replay (a 500).
    expect(await ownCopyOf(denied as unknown as typeof deps, job({}), own)).toBe(own);
  });

  it("keeps a run's own payload in its item as text or as a reference, never both", async () => {
    const { deps } = memoryStore();
    const run = { runId: 'job_1.a.1', jobId: 'job_1', tenantId: 'tenant-a', leaseExpiresAt: null, progress: null } as unknown as Run;
    const ref = await runPayloadOf(deps, job({}), payloadOf(9_000));
    if (!('ref' in ref)) throw new Error('expected a stored payload');
    const withRef = runToItem(run, { payloadOverrideRef: ref.ref });
    expect(withRef).not.toHaveProperty('payloadOverrideJson');
    expect(payloadOverrideOf(withRef)).toEqual(ref);
    expect(payloadOverrideOf(runToItem(run, { payloadOverride: { a: 1 } }))).toEqual({ inline: { a: 1 } });
    expect(payloadOverrideOf(runToItem(run))).toBeUndefined();
    // A debounced trigger's carry replaces one form with the other.
    expect(payloadOverrideAttributes(ref)).toEqual({ set: { payloadOverrideRef: ref.ref }, remove: ['payloadOverrideJson'] });
    expect(payloadOverrideAttributes({ inline: 'x' })).toEqual({ set: { payloadOverrideJson: '"x"' }, remove: ['payloadOverrideRef'] });
  });

  it('shows stored payloads in a page up to 64 KiB each and 2 MiB together, the others as null', async () => {
    const { deps, calls } = memoryStore();
    const stored = async (bytes: number, jobId: string) => withStoredPayload(deps, job(payloadOf(bytes), jobId));
    const each = 60 * 1024;
    // 40 payloads of 60 KiB: 34 fit in the 2 MiB budget, the rest show null.
    const page = await Promise.all(Array.from({ length: 40 }, (_, index) => stored(each, `job_${index}`)));
    const large = await stored(65 * 1024, 'job_large');
    const small = job({ inline: true }, 'job_small');
    calls.length = 0;
    const shown = await withListedPayloads(deps, [...page, large, small]);
    const fitting = Math.floor(LIST_PAYLOAD_BUDGET_BYTES / each);
    expect(shown.filter((listed) => listed.payload !== null && listed.payloadRef)).toHaveLength(fitting);
    expect(shown.slice(0, fitting).every((listed) => payloadBytes(listed.payload) === each)).toBe(true);
    expect(shown.slice(fitting, 40).every((listed) => listed.payload === null && listed.payloadRef?.bytes === each)).toBe(true);
    expect(shown[40]).toMatchObject({ payload: null, payloadRef: { bytes: 65 * 1024 } });
    expect(shown[41]!.payload).toEqual({ inline: true });
    expect(calls).toHaveLength(fitting);
  });

  it('deletes the object of a write that was refused, and keeps it after a store failure that may have written it', async () => {
    const { deps, objects } = memoryStore();
    const stored = async () => (await withStoredPayload(deps, job(payloadOf(9_000)))).payloadRef!;
    const refused = await stored();
    await discardAfterFailure(deps, refused, new ConflictError('The job is changing too quickly; try again'));
    expect(objects.has(refused.key)).toBe(false);
    const timedOut = await stored();
    const sdkTimeout = Object.assign(new Error('a request has exceeded the configured 3000 ms requestTimeout'), { name: 'TimeoutError', $metadata: {} });
    await discardAfterFailure(deps, timedOut, sdkTimeout);
    await discardAfterFailure(deps, timedOut, new ServiceUnavailableError('The scheduler could not reach its store in time.'));
    expect(objects.has(timedOut.key)).toBe(true);
  });
});
