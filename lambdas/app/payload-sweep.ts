// The sweep of jobs' payload objects that no job names (decision 0162): a create or PATCH that
// crashed between storing its payload and writing its job left one behind, which nothing else
// removes, and a job deleted before deletes released their payloads kept its. The sweep tags each such object `superseded`, never deletes it, so that the bucket's
// lifecycle rule removes it a day later: an object a job stopped naming a moment ago may still be
// read by a worker that read the job before. Objects younger than the cutoff are left alone: their
// writer may not have written its job yet. Run by operators (`npm run payloads:sweep`).
import type { Job } from '../domain/job';
import type { PayloadStore } from '../store/payload-store';

export interface SweepDeps {
  readonly payloads: PayloadStore;
  /** Jobs by id, of any tenant (JobsRepository.getManyAnyTenant). */
  readonly jobsById: (jobIds: readonly string[]) => Promise<Map<string, Job>>;
}

export interface SweepReport {
  /** Objects under `jobs/` looked at. */
  readonly objects: number;
  /** Stored after the cutoff: left for their writer. */
  readonly young: number;
  /** Named by their job. */
  readonly named: number;
  /** Named by no job: tagged `superseded` (listed when `dryRun`, not tagged). */
  readonly unnamed: string[];
  readonly dryRun: boolean;
}

export async function sweepJobPayloads(deps: SweepDeps, options: { readonly storedBefore: number; readonly dryRun: boolean }): Promise<SweepReport> {
  let objects = 0;
  let young = 0;
  let named = 0;
  const unnamed: string[] = [];
  for await (const page of deps.payloads.jobObjects()) {
    objects += page.length;
    const old = page.filter((object) => object.storedAt < options.storedBefore);
    young += page.length - old.length;
    const jobs = old.length > 0 ? await deps.jobsById([...new Set(old.map((object) => object.jobId))]) : new Map<string, Job>();
    for (const object of old) {
      // A deleted job does not name its payload (one deleted before it stopped keeping the name).
      const job = jobs.get(object.jobId);
      if (job && job.status !== 'CANCELLED' && job.payloadRef?.key === object.key) {
        named++;
        continue;
      }
      unnamed.push(object.key);
      if (!options.dryRun) await deps.payloads.supersede(object);
    }
  }
  return { objects, young, named, unnamed, dryRun: options.dryRun };
}
