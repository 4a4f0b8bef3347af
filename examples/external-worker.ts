// An external worker: claims runs of `external` jobs of one type, processes the payload's items one
// by one, saves a checkpoint after each (so a crash resumes where it stopped, not from the start),
// and completes the run. Run it beside `npm run dev`:
//
//   SCHEDULER_URL=http://127.0.0.1:3000 SCHEDULER_API_KEY=dev_... JOB_TYPE=export npx tsx examples/external-worker.ts
//
// A job for it: { "type": "export", "target": { "kind": "external", "leaseSeconds": 60 },
//                 "payload": { "items": 10 }, "schedule": { "kind": "now" }, ... }
import { fileURLToPath } from 'node:url';
import type { Claim, ProcessOutcome } from '../clients/worker-client';
import { WorkerClient, WorkFailure } from '../clients/worker-client';

export interface ExportPayload {
  readonly items: number;
}
export interface ExportCheckpoint {
  readonly done: number;
}
export interface ExportResult {
  readonly processed: number;
  readonly resumedFrom: number;
}

/** Processes one claimed run; `stepMs` stands in for the work of one item. */
export async function processExport(
  client: WorkerClient,
  claim: Claim<ExportPayload, ExportCheckpoint>,
  options: { stepMs?: number; onItem?: (index: number) => void } = {},
): Promise<ProcessOutcome> {
  return client.process(claim, async ({ claim: { payload, checkpoint }, signal, checkpoint: save }) => {
    if (typeof payload?.items !== 'number') throw new WorkFailure('BAD_PAYLOAD', 'payload.items must be a number', false);
    const resumedFrom = checkpoint?.done ?? 0;
    for (let index = resumedFrom; index < payload.items; index++) {
      if (signal.aborted) break;
      await new Promise((resolve) => setTimeout(resolve, options.stepMs ?? 200));
      options.onItem?.(index);
      await save({ done: index + 1 }, { done: index + 1, of: payload.items });
    }
    return { processed: payload.items - resumedFrom, resumedFrom } satisfies ExportResult;
  });
}

/** Claims and processes runs until `signal` is aborted. */
export async function runWorker(client: WorkerClient, jobType: string, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    const claim = await client.claim<ExportPayload, ExportCheckpoint>({ jobType, waitSeconds: 20 });
    if (!claim) continue;
    const outcome = await processExport(client, claim);
    console.log(`${claim.run.runId} (attempt ${claim.attempt}, fencing token ${claim.fencingToken}): ${outcome}`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const baseUrl = process.env.SCHEDULER_URL;
  const apiKey = process.env.SCHEDULER_API_KEY;
  if (!baseUrl || !apiKey) {
    console.error('set SCHEDULER_URL and SCHEDULER_API_KEY');
    process.exit(2);
  }
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  await runWorker(new WorkerClient({ baseUrl, apiKey, workerId: `example-${process.pid}` }), process.env.JOB_TYPE ?? 'export', stop.signal);
}
