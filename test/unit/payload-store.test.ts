// The payload bucket's store without AWS: a fake S3 client that answers from memory and counts the
// requests, so that the read cache is seen doing its work and its bound.
import { describe, expect, it } from 'vitest';
import type { S3Client } from '@aws-sdk/client-s3';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { PayloadMissingError, PayloadStore } from '../../lambdas/store/payload-store';

function fakeS3() {
  const objects = new Map<string, string>();
  const sent: string[] = [];
  const client = {
    send: (command: unknown) => {
      if (command instanceof PutObjectCommand) {
        sent.push('put');
        objects.set(command.input.Key!, Buffer.from(command.input.Body as Buffer).toString('utf8'));
        return Promise.resolve({});
      }
      if (command instanceof GetObjectCommand) {
        sent.push('get');
        const text = objects.get(command.input.Key!);
        if (text === undefined) return Promise.reject(Object.assign(new Error('The specified key does not exist.'), { name: 'NoSuchKey' }));
        return Promise.resolve({ Body: { transformToString: () => Promise.resolve(text) } });
      }
      return Promise.reject(new Error('unexpected command'));
    },
  };
  return { client: client as unknown as S3Client, objects, sent };
}

describe('the payload store', () => {
  it('reads an object once per process: later reads come from memory, each a value of its own', async () => {
    const s3 = fakeS3();
    const store = new PayloadStore(s3.client, 'bucket');
    const ref = await store.putForJob('tenant-a', 'job_1', { list: [1, 2] });
    const first = (await store.get(ref)) as { list: number[] };
    first.list.push(3); // a caller's change stays its own
    expect(await store.get(ref)).toEqual({ list: [1, 2] });
    expect(s3.sent).toEqual(['put', 'get']);
  });

  it('reads of one object at once share one GET, and the object is kept (counted) once', async () => {
    const s3 = fakeS3();
    const store = new PayloadStore(s3.client, 'bucket', 250);
    const a = await store.putForJob('t', 'a', { text: 'a'.repeat(100) }); // 113 bytes of JSON
    const b = await store.putForJob('t', 'b', { text: 'b'.repeat(100) });
    s3.sent.length = 0;
    const values = await Promise.all(Array.from({ length: 12 }, () => store.get(a)));
    expect(values.every((value) => JSON.stringify(value) === JSON.stringify({ text: 'a'.repeat(100) }))).toBe(true);
    expect(s3.sent).toEqual(['get']);
    // Both fit the bound: before, twelve counts of a (1,356 bytes) emptied the cache, and each later
    // read went to S3 again.
    await store.get(b);
    await store.get(a);
    await store.get(b);
    expect(s3.sent).toEqual(['get', 'get']);
  });

  it('keeps at most its bound of text, the least recently read out first, and nothing larger than the bound', async () => {
    const s3 = fakeS3();
    const store = new PayloadStore(s3.client, 'bucket', 250);
    const payload = (fill: string) => ({ text: fill.repeat(100) }); // 113 bytes of JSON
    const a = await store.putForJob('t', 'a', payload('a'));
    const b = await store.putForJob('t', 'b', payload('b'));
    const c = await store.putForJob('t', 'c', payload('c'));
    const big = await store.putForJob('t', 'big', { text: 'x'.repeat(300) });
    s3.sent.length = 0;
    await store.get(a);
    await store.get(b);
    await store.get(a); // a is now the most recent
    await store.get(c); // 339 bytes > 250: b, the least recent, goes
    await store.get(a);
    await store.get(b);
    await store.get(big);
    await store.get(big);
    expect(s3.sent).toEqual(['get', 'get', 'get', 'get', 'get', 'get']);
  });

  it('says an object is gone, and refuses one whose text is not the one the item names', async () => {
    const s3 = fakeS3();
    const store = new PayloadStore(s3.client, 'bucket');
    const ref = await store.putForJob('t', 'j', { v: 1 });
    s3.objects.set(ref.key, '{"v":2}');
    await expect(store.get(ref)).rejects.toThrow(/does not match its checksum/);
    s3.objects.delete(ref.key);
    await expect(store.get(ref)).rejects.toBeInstanceOf(PayloadMissingError);
  });
});
