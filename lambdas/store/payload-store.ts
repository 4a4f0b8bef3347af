// The payload bucket (decision 0162): payloads too large to sit in their items, one object per
// write, named by its owner and a random id (two writers never share an object, so neither can
// delete the other's), with the content's SHA-256 kept beside the key and checked on every read. This module owns the keys and the wire format
// (the payload's JSON text, as `payloadJson` holds it inline).
//
// An object is written before the item that names it, so an item never names a missing object. An
// object no item names any more (a create that failed, a payload a PATCH replaced) is deleted, or,
// where a worker may still be about to read it, tagged `superseded` for the bucket's lifecycle rule
// to delete a day later. A trigger's payload lives under `runs/`, which the lifecycle rule expires
// after the runs' retention.
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, NoSuchKey, PutObjectCommand, PutObjectTaggingCommand } from '@aws-sdk/client-s3';
import type { S3Client } from '@aws-sdk/client-s3';
import { randomUUID } from 'node:crypto';
import type { PayloadRef } from '../domain/payload';
import { payloadText, sha256Of } from '../domain/payload';

import { JOB_PAYLOAD_PREFIX, RUN_PAYLOAD_PREFIX, SUPERSEDED_TAG } from './payload-layout';

/** A stored object is gone (expired, deleted): the item that names it outlived it. */
export class PayloadMissingError extends Error {
  constructor(readonly key: string) {
    super(`the payload ${key} is no longer stored`);
    this.name = 'PayloadMissingError';
  }
}

/** An object of the bucket: its key, the job it was stored for, when (epoch ms). */
export interface StoredObject {
  readonly key: string;
  readonly jobId: string;
  readonly storedAt: number;
}

/**
 * How many bytes of payload text a process keeps after reading them. An object never changes (each
 * write stores a new one), so a kept text stays right for as long as it is kept: a worker that runs a
 * recurring job's occurrences reads its payload once, not at every occurrence.
 */
export const PAYLOAD_CACHE_BYTES = 16 * 1024 * 1024;

export class PayloadStore {
  /** Texts read, least recently used first (Map order), and their bytes together. */
  private readonly texts = new Map<string, string>();
  private textBytes = 0;

  constructor(
    private readonly s3: S3Client,
    readonly bucket: string,
    private readonly cacheBytes = PAYLOAD_CACHE_BYTES,
  ) {}

  /** Stores a job's payload, as a new object. */
  putForJob(tenantId: string, jobId: string, payload: unknown): Promise<PayloadRef> {
    return this.put(`${JOB_PAYLOAD_PREFIX}${tenantId}/${jobId}/`, payload);
  }

  /** Stores a run's own payload (a trigger's of this job), as a new object. */
  putForRun(tenantId: string, jobId: string, payload: unknown): Promise<PayloadRef> {
    return this.put(`${RUN_PAYLOAD_PREFIX}${tenantId}/${jobId}/`, payload);
  }

  private async put(prefix: string, payload: unknown): Promise<PayloadRef> {
    const text = payloadText(payload);
    const sha256 = sha256Of(text);
    const key = `${prefix}${randomUUID()}.json`;
    const body = Buffer.from(text, 'utf8');
    await this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: 'application/json' }));
    return { key, bytes: body.length, sha256 };
  }

  /** The payload an item names; PayloadMissingError when its object is gone. Parsed anew at each call. */
  async get(ref: PayloadRef): Promise<unknown> {
    const kept = this.texts.get(ref.key);
    if (kept !== undefined) {
      this.texts.delete(ref.key);
      this.texts.set(ref.key, kept);
      return JSON.parse(kept) as unknown;
    }
    // Reads of one object at once (a parent's result read by its dependants, a batch of one job's
    // runs) share one GET.
    let reading = this.reading.get(ref.key);
    if (reading === undefined) {
      reading = this.read(ref).finally(() => this.reading.delete(ref.key));
      this.reading.set(ref.key, reading);
    }
    return JSON.parse(await reading) as unknown;
  }

  private readonly reading = new Map<string, Promise<string>>();

  private async read(ref: PayloadRef): Promise<string> {
    let text: string;
    try {
      const out = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: ref.key }));
      text = (await out.Body?.transformToString('utf8')) ?? '';
    } catch (error) {
      if (error instanceof NoSuchKey || (error instanceof Error && error.name === 'NoSuchKey')) throw new PayloadMissingError(ref.key);
      throw error;
    }
    // Keys are content-addressed: anything else under the key is not the payload the item names.
    if (sha256Of(text) !== ref.sha256) throw new Error(`the payload ${ref.key} does not match its checksum`);
    JSON.parse(text);
    this.keep(ref.key, text);
    return text;
  }

  private keep(key: string, text: string): void {
    const bytes = Buffer.byteLength(text, 'utf8');
    // Kept once: a key counted twice would fill the bound with text the cache does not hold.
    if (bytes > this.cacheBytes || this.texts.has(key)) return;
    this.texts.set(key, text);
    this.textBytes += bytes;
    for (const [oldest, oldText] of this.texts) {
      if (this.textBytes <= this.cacheBytes) break;
      this.texts.delete(oldest);
      this.textBytes -= Buffer.byteLength(oldText, 'utf8');
    }
  }

  /** An object nothing names any more and nobody may be reading: deleted now. */
  async delete(ref: PayloadRef): Promise<void> {
    await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: ref.key }));
  }

  /** An object an item stopped naming that a worker may still be reading: deleted by the lifecycle rule a day later. */
  async supersede(ref: Pick<PayloadRef, 'key'>): Promise<void> {
    await this.s3.send(new PutObjectTaggingCommand({ Bucket: this.bucket, Key: ref.key, Tagging: { TagSet: [SUPERSEDED_TAG] } }));
  }

  /** The jobs' payload objects, a page (up to 1,000) at a time, with the job each belongs to. */
  async *jobObjects(): AsyncGenerator<StoredObject[]> {
    let token: string | undefined;
    do {
      const page = await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: JOB_PAYLOAD_PREFIX, ContinuationToken: token }));
      yield (page.Contents ?? []).flatMap((object) => {
        // jobs/<tenant>/<job>/<uuid>.json
        const [, , jobId] = (object.Key ?? '').split('/');
        return object.Key && jobId && object.LastModified ? [{ key: object.Key, jobId, storedAt: object.LastModified.getTime() }] : [];
      });
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }
}
