// Workflows: a versioned DAG of steps, each step a job-like definition whose runs are ordinary runs.
// The definition and its checks (ids, dependencies, cycles) are here; a workflow run's progress is in
// workflow-run.ts and the jobs its steps and its schedule run as in workflow-jobs.ts.
import { z } from 'zod';
import {
  backfillLimitSchema,
  jobTypeSchema,
  jsonValue,
  MAX_PAYLOAD_BYTES,
  MAX_TIMEOUT_SECONDS,
  misfirePolicySchema,
  overlapPolicySchema,
  prioritySchema,
  retryPolicySchema,
  scheduleSchema,
  targetSchema,
} from './job';
import { DEFAULT_DELIVERY, DELIVERY_MODES } from './delivery';
import { workflowNotifySchema } from './notify';
import { MAX_JOB_PAYLOAD_BYTES } from './payload';

export const MAX_WORKFLOW_STEPS = 100;
/** A step depends on at most this many others: its parents' results (4 KiB each, or a reference to one stored apart) fit in its run item. */
export const MAX_STEP_DEPENDENCIES = 64;
/**
 * A step's result (the JSON its target answered) is kept up to this many bytes in its run's item;
 * without a payload bucket, more fails the step. With one, a larger result is stored apart
 * (decision 0163), up to MAX_STORED_STEP_RESULT_BYTES.
 */
export const MAX_STEP_RESULT_BYTES = 4096;
/** The largest result of a step where a payload bucket is configured: as large as a payload. */
export const MAX_STORED_STEP_RESULT_BYTES = MAX_JOB_PAYLOAD_BYTES;

/** How large a step's result may be: `storedApart`, a payload bucket is configured. */
export const stepResultLimit = (storedApart: boolean): number => (storedApart ? MAX_STORED_STEP_RESULT_BYTES : MAX_STEP_RESULT_BYTES);
/** The whole definition as JSON: one version item, well under DynamoDB's 400 KB. */
export const MAX_WORKFLOW_DEFINITION_BYTES = 256 * 1024;

/** Step ids: letters, digits, `_` and `-` (no `.`: a step id is a part of attribute paths and run ids). */
export const stepIdSchema = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, 'must be 1 to 64 letters, digits, _ or - (starting with a letter or digit)');

export const RUN_IF = ['all-succeeded', 'all-done'] as const;

export const stepSpecSchema = z.strictObject({
  id: stepIdSchema,
  /** The job type of the step's runs (their worker pool); the workflow's type when absent. */
  type: jobTypeSchema.optional(),
  target: targetSchema,
  payload: jsonValue.default({}),
  retryPolicy: retryPolicySchema.default({ maxAttempts: 3, initialDelaySeconds: 1, maxDelaySeconds: 300 }),
  timeoutSeconds: z.number().int().min(1).max(MAX_TIMEOUT_SECONDS).default(300),
  delivery: z.enum(DELIVERY_MODES).default(DEFAULT_DELIVERY),
  dependsOn: z.array(stepIdSchema).max(MAX_STEP_DEPENDENCIES).default([]),
  /** `all-succeeded`: start only when every dependency succeeded; `all-done`: whatever they ended as (cleanup). */
  runIf: z.enum(RUN_IF).default('all-succeeded'),
});
export type StepSpec = z.infer<typeof stepSpecSchema>;

export const workflowSpecSchema = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .max(100)
      .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, 'use letters, digits and . _ : - (starting with a letter or digit)'),
    type: jobTypeSchema.default('workflow'),
    priority: prioritySchema.default('normal'),
    /**
     * Runs of the workflow on a schedule, of any kind a job takes (decision 0147); without it a run
     * starts only by request. The policies below apply to its occurrences, as a job's do.
     */
    schedule: scheduleSchema.optional(),
    /** An occurrence while the previous one's workflow run is RUNNING (default `allow`). */
    overlapPolicy: overlapPolicySchema.optional(),
    /** An occurrence that starts late (the scheduler was down, or the workflow paused; default `fire-once`). */
    misfirePolicy: misfirePolicySchema.optional(),
    /** Under `backfill`, at most this many missed occurrences run (default 10). */
    backfillLimit: backfillLimitSchema.optional(),
    /** Notifications of the workflow runs' outcomes and of occurrences skipped by a policy (decision 0148). */
    notify: workflowNotifySchema.optional(),
    steps: z.array(stepSpecSchema).min(1).max(MAX_WORKFLOW_STEPS),
  })
  .check((ctx) => {
    if (ctx.value.schedule === undefined) {
      for (const field of ['overlapPolicy', 'misfirePolicy', 'backfillLimit'] as const) {
        if (ctx.value[field] !== undefined) {
          ctx.issues.push({
            code: 'custom',
            input: ctx.value[field],
            path: [field],
            message: 'applies to the occurrences of a schedule: give a schedule, or leave it out',
          });
        }
      }
    }
    for (const issue of graphIssues(ctx.value.steps)) ctx.issues.push({ code: 'custom', input: ctx.value.steps, ...issue });
    const size = Buffer.byteLength(JSON.stringify(ctx.value), 'utf8');
    if (size > MAX_WORKFLOW_DEFINITION_BYTES) {
      ctx.issues.push({
        code: 'custom',
        input: ctx.value,
        path: ['steps'],
        message: `the definition must be at most ${MAX_WORKFLOW_DEFINITION_BYTES} bytes of JSON (got ${size})`,
      });
    }
    ctx.value.steps.forEach((step, index) => {
      const bytes = Buffer.byteLength(JSON.stringify(step.payload ?? null), 'utf8');
      if (bytes > MAX_PAYLOAD_BYTES) {
        ctx.issues.push({
          code: 'custom',
          input: step.payload,
          path: ['steps', index, 'payload'],
          message: `must be at most ${MAX_PAYLOAD_BYTES} bytes of JSON (got ${bytes})`,
        });
      }
    });
  });
export type WorkflowSpec = z.infer<typeof workflowSpecSchema>;

/**
 * What is wrong with a graph of steps, each issue naming the step: a duplicate id, a dependency on
 * an unknown step, a step on a cycle, and a step that can never start because it depends on one.
 */
export function graphIssues(steps: readonly Pick<StepSpec, 'id' | 'dependsOn'>[]): { path: (string | number)[]; message: string }[] {
  const issues: { path: (string | number)[]; message: string }[] = [];
  const indexOf = new Map<string, number>();
  steps.forEach((step, index) => {
    if (indexOf.has(step.id))
      issues.push({ path: ['steps', index, 'id'], message: `step ${step.id}: the id is used twice (first at steps[${indexOf.get(step.id)}])` });
    else indexOf.set(step.id, index);
  });
  steps.forEach((step, index) => {
    step.dependsOn.forEach((parent, at) => {
      if (!indexOf.has(parent)) issues.push({ path: ['steps', index, 'dependsOn', at], message: `step ${step.id}: depends on unknown step ${parent}` });
      else if (step.dependsOn.indexOf(parent) !== at)
        issues.push({ path: ['steps', index, 'dependsOn', at], message: `step ${step.id}: names ${parent} twice` });
    });
  });
  if (issues.length > 0) return issues;
  // Kahn's algorithm: what is left after taking every step whose dependencies are taken is on a
  // cycle, or waits behind one.
  const byId = new Map(steps.map((step) => [step.id, step]));
  const done = new Set<string>();
  for (let progress = true; progress;) {
    progress = false;
    for (const step of steps) {
      if (!done.has(step.id) && step.dependsOn.every((parent) => done.has(parent))) {
        done.add(step.id);
        progress = true;
      }
    }
  }
  const left = steps.filter((step) => !done.has(step.id)).map((step) => step.id);
  const onCycle = new Set(left.filter((id) => reaches(byId, id, id, new Set(left))));
  for (const id of left) {
    const index = indexOf.get(id) ?? 0;
    if (onCycle.has(id)) {
      issues.push({ path: ['steps', index, 'dependsOn'], message: `step ${id}: is on a cycle (${cycleThrough(byId, id, onCycle).join(' -> ')})` });
    } else {
      // The nearest: a dependency on the cycle itself, else the first the step waits behind.
      const direct = byId.get(id)?.dependsOn.find((parent) => onCycle.has(parent));
      const blocker = direct ?? [...onCycle].find((cycleId) => reaches(byId, id, cycleId, new Set(left))) ?? 'a cycle';
      issues.push({ path: ['steps', index, 'dependsOn'], message: `step ${id}: is unreachable: it depends on step ${blocker}, which is on a cycle` });
    }
  }
  return issues;
}

/** Whether `to` is among the (transitive) dependencies of `from`, walking only steps in `within`. */
function reaches(byId: Map<string, Pick<StepSpec, 'id' | 'dependsOn'>>, from: string, to: string, within: Set<string>): boolean {
  const seen = new Set<string>();
  const stack = [...(byId.get(from)?.dependsOn ?? [])];
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (id === to) return true;
    if (seen.has(id) || !within.has(id)) continue;
    seen.add(id);
    stack.push(...(byId.get(id)?.dependsOn ?? []));
  }
  return false;
}

function cycleThrough(byId: Map<string, Pick<StepSpec, 'id' | 'dependsOn'>>, start: string, onCycle: Set<string>): string[] {
  const path = [start];
  let current = start;
  for (let guard = 0; guard <= onCycle.size; guard++) {
    const next = byId.get(current)?.dependsOn.find((parent) => onCycle.has(parent) && reaches(byId, parent, start, onCycle));
    if (!next) break;
    path.push(next);
    if (next === start) break;
    current = next;
  }
  return path;
}

// ---- Stored workflows ----------------------------------------------------------------------------

export interface Workflow {
  readonly workflowId: string;
  readonly tenantId: string;
  readonly name: string;
  /** The newest version: what a new workflow run starts with. */
  readonly version: number;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** When `DELETE /v1/workflows/{id}` deleted it (decision 0149): kept for its runs' history, changed no more. */
  readonly deletedAt?: string;
}

/** One version of a workflow's definition: never changed once written. */
export interface WorkflowVersion {
  readonly workflowId: string;
  readonly tenantId: string;
  readonly version: number;
  readonly spec: WorkflowSpec;
  readonly createdAt: string;
}
