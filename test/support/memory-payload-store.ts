// A payload bucket in memory for unit tests (decisions 0162, 0163): the PayloadStore calls the app
// layer makes, recorded in order.
import type { PayloadRef } from '../../lambdas/domain/payload';
import { sha256Of } from '../../lambdas/domain/payload';
import type { PayloadStore } from '../../lambdas/store/payload-store';
import { PayloadMissingError } from '../../lambdas/store/payload-store';

/** A bucket in memory, with the calls made to it. */
export function memoryStore() {
  const objects = new Map<string, string>();
  const calls: string[] = [];
  let next = 0;
  const put = (prefix: string, payload: unknown): PayloadRef => {
    const text = JSON.stringify(payload);
    const key = `${prefix}${next++}.json`;
    objects.set(key, text);
    calls.push(`put ${key}`);
    return { key, bytes: Buffer.byteLength(text), sha256: sha256Of(text) };
  };
  const store = {
    putForJob: (tenantId: string, jobId: string, payload: unknown) => Promise.resolve(put(`jobs/${tenantId}/${jobId}/`, payload)),
    putForRun: (tenantId: string, jobId: string, payload: unknown) => Promise.resolve(put(`runs/${tenantId}/${jobId}/`, payload)),
    delete: (ref: PayloadRef) => {
      calls.push(`delete ${ref.key}`);
      objects.delete(ref.key);
      return Promise.resolve();
    },
    get: (ref: PayloadRef) => {
      calls.push(`get ${ref.key}`);
      const text = objects.get(ref.key);
      return text === undefined ? Promise.reject(new PayloadMissingError(ref.key)) : Promise.resolve(JSON.parse(text) as unknown);
    },
  };
  return { deps: { payloads: store as unknown as PayloadStore }, objects, calls };
}
