// Workflows: a versioned DAG of steps, each step a job-like definition whose runs are ordinary runs.
// The definition's checks (ids, dependencies, cycles) and the progress of a workflow run (which
// steps start, which never will, when the run ends) are plain functions over the step states.
import { z } from 'zod';
import type { Job } from './job';
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
import type { RunStatus } from './run';
import { isTerminal } from './run';

/** A workflow holds at most this many steps. */
export const MAX_WORKFLOW_STEPS = 100;
/** A step depends on at most this many others: its parents' results (4 KiB each) fit in its run item. */
export const MAX_STEP_DEPENDENCIES = 64;
/** A step's result (the JSON its target answered) is kept up to this many bytes; more fails the step. */
export const MAX_STEP_RESULT_BYTES = 4096;
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
}

/** One version of a workflow's definition: never changed once written. */
export interface WorkflowVersion {
  readonly workflowId: string;
  readonly tenantId: string;
  readonly version: number;
  readonly spec: WorkflowSpec;
  readonly createdAt: string;
}

// ---- Workflow runs -------------------------------------------------------------------------------

export const WORKFLOW_RUN_STATUSES = ['RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
export type WorkflowRunStatus = (typeof WORKFLOW_RUN_STATUSES)[number];

/**
 * A step in a workflow run: WAITING for its dependencies, STARTED (its run exists; the run holds
 * its attempts), then the outcome of its last run, or NOT_STARTED (with the reason) when a
 * dependency's outcome ruled it out or the workflow run was cancelled first.
 */
export const STEP_STATUSES = ['WAITING', 'STARTED', 'SUCCEEDED', 'DEAD', 'CANCELLED', 'SKIPPED', 'NOT_STARTED'] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

export interface StepState {
  readonly status: StepStatus;
  /** The attempt the step's current (or last) run is; a retry of the workflow run starts the next one. */
  readonly attempt: number;
  readonly runId: string | null;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
  readonly reason: string | null;
}

export interface WorkflowRun {
  readonly workflowRunId: string;
  readonly workflowId: string;
  readonly tenantId: string;
  readonly version: number;
  readonly status: WorkflowRunStatus;
  /** `schedule`: an occurrence of the workflow's schedule started it. */
  readonly trigger: 'manual' | 'retry' | 'schedule';
  /** The workflow run's time: every step run's occurrence (`scheduledFor`). */
  readonly scheduledFor: string;
  readonly createdAt: string;
  readonly finishedAt: string | null;
  readonly failedSteps: readonly string[];
  /** How often the run was retried from its failed steps (its optimistic-concurrency version). */
  readonly retries: number;
  readonly steps: Readonly<Record<string, StepState>>;
  /**
   * The W3C trace context of the request that started the run (or last retried it), or a new trace:
   * every step run started under it joins it (decision 0146). Absent on runs from before.
   */
  readonly traceparent?: string;
}

const STEP_DONE: readonly StepStatus[] = ['SUCCEEDED', 'DEAD', 'CANCELLED', 'SKIPPED', 'NOT_STARTED'];
export const isStepDone = (status: StepStatus): boolean => STEP_DONE.includes(status);

/** What a run's ending means for its step: nothing for an attempt that a retry follows. */
export function stepOutcomeOf(status: RunStatus): Extract<StepStatus, 'SUCCEEDED' | 'DEAD' | 'CANCELLED' | 'SKIPPED'> | null {
  switch (status) {
    case 'SUCCEEDED':
    case 'DEAD':
    case 'CANCELLED':
    case 'SKIPPED':
      return status;
    default:
      return null;
  }
}

export interface ProgressPlan {
  /** Steps whose dependencies are all done, as their runIf wants: their runs start now. */
  readonly start: readonly string[];
  /** Steps that will never start, with the reason (cascading: their dependants are decided too). */
  readonly notStarted: readonly { readonly stepId: string; readonly reason: string }[];
  /** Set when every step is done: how the workflow run ends. */
  readonly finished: { readonly status: 'SUCCEEDED' | 'FAILED'; readonly failedSteps: readonly string[] } | null;
}

/** The next moves of a workflow run from its steps' states (nothing moves once it is not RUNNING). */
export function planProgress(
  spec: { readonly steps: readonly Pick<StepSpec, 'id' | 'dependsOn' | 'runIf'>[] },
  run: Pick<WorkflowRun, 'status' | 'steps'>,
): ProgressPlan {
  if (run.status !== 'RUNNING') return { start: [], notStarted: [], finished: null };
  const status = new Map(spec.steps.map((step) => [step.id, run.steps[step.id]?.status ?? 'WAITING']));
  const start: string[] = [];
  const notStarted: { stepId: string; reason: string }[] = [];
  for (let changed = true; changed;) {
    changed = false;
    for (const step of spec.steps) {
      if (status.get(step.id) !== 'WAITING') continue;
      const parents = step.dependsOn.map((id) => ({ id, status: status.get(id) ?? 'WAITING' }));
      if (!parents.every((parent) => isStepDone(parent.status))) continue;
      const blocker = parents.find((parent) => parent.status !== 'SUCCEEDED');
      if (step.runIf === 'all-succeeded' && blocker) {
        const reason = blocker.status === 'NOT_STARTED' ? `dependency ${blocker.id} did not start` : `dependency ${blocker.id} ended ${blocker.status}`;
        notStarted.push({ stepId: step.id, reason });
        status.set(step.id, 'NOT_STARTED');
        changed = true;
      } else {
        start.push(step.id);
        status.set(step.id, 'STARTED');
      }
    }
  }
  const all = [...status.values()];
  const finished = all.every(isStepDone)
    ? {
        status: all.every((s) => s === 'SUCCEEDED') ? ('SUCCEEDED' as const) : ('FAILED' as const),
        failedSteps: spec.steps.filter((step) => ['DEAD', 'CANCELLED', 'SKIPPED'].includes(status.get(step.id) ?? '')).map((step) => step.id),
      }
    : null;
  return { start, notStarted, finished };
}

/**
 * The newest run of a step as a retry of its workflow run finds it: a replay of the step's dead run
 * (or that replay's own retries) may have followed the attempt the step recorded.
 */
export interface StepRunSeen {
  readonly runId: string;
  readonly attempt: number;
  readonly status: RunStatus;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
}

/**
 * The step states a retry of a finished workflow run starts from: succeeded steps are kept, the
 * others wait again at their next attempt (a fresh retry budget, as a replay). A step whose run was
 * replayed since it ended takes the replay as its own (decision 0144): succeeded, the step is
 * SUCCEEDED with the replay's result; still under way, the step is STARTED on it; ended otherwise,
 * the step's next attempt comes after the replay's, so its run id is a new one.
 */
export function stepsForRetry(run: Pick<WorkflowRun, 'steps'>, newest: Readonly<Record<string, StepRunSeen>> = {}): Record<string, StepState> {
  return Object.fromEntries(
    Object.entries(run.steps).map(([stepId, state]): [string, StepState] => {
      if (state.status === 'SUCCEEDED') return [stepId, state];
      const seen = newest[stepId];
      const replayed = seen !== undefined && state.runId !== null && seen.runId !== state.runId && seen.attempt > state.attempt;
      if (replayed && seen.status === 'SUCCEEDED') {
        return [
          stepId,
          {
            status: 'SUCCEEDED',
            attempt: seen.attempt,
            runId: seen.runId,
            startedAt: seen.startedAt,
            finishedAt: seen.finishedAt,
            reason: 'succeeded in a replay of its run',
          },
        ];
      }
      if (replayed && !isTerminal(seen.status)) {
        return [stepId, { status: 'STARTED', attempt: seen.attempt, runId: seen.runId, startedAt: seen.startedAt, finishedAt: null, reason: null }];
      }
      const last = Math.max(state.attempt, seen?.attempt ?? 0);
      return [
        stepId,
        {
          status: 'WAITING',
          // A step that ran starts its next attempt, with a fresh retry budget (as a replay).
          attempt: state.runId ? last + 1 : state.attempt,
          runId: null,
          startedAt: null,
          finishedAt: null,
          reason: null,
        },
      ];
    }),
  );
}

export function initialSteps(spec: { readonly steps: readonly Pick<StepSpec, 'id'>[] }): Record<string, StepState> {
  return Object.fromEntries(
    spec.steps.map((step) => [step.id, { status: 'WAITING' as const, attempt: 1, runId: null, startedAt: null, finishedAt: null, reason: null }]),
  );
}

// ---- Steps as jobs -------------------------------------------------------------------------------

/**
 * The job id of a step of a version: `wf_….v<version>.<stepId>`. Step runs carry it as their
 * `jobId`, so the worker finds the step's target, payload and policies the way it finds a job's.
 */
export function stepJobIdOf(workflowId: string, version: number, stepId: string): string {
  return `${workflowId}.v${version}.${stepId}`;
}

const STEP_JOB_ID = /^(wf_[0-9a-z]+)\.v(\d+)\.([A-Za-z0-9][A-Za-z0-9_-]*)$/;

export function parseStepJobId(jobId: string): { workflowId: string; version: number; stepId: string } | null {
  const match = STEP_JOB_ID.exec(jobId);
  if (!match?.[1] || !match[2] || !match[3]) return null;
  return { workflowId: match[1], version: Number(match[2]), stepId: match[3] };
}

/**
 * A workflow run's id: its workflow and its time, so that the runs of its steps (whose occurrence
 * is that time) name it, and racing creators of one occurrence make it once.
 */
export function workflowRunIdOf(workflowId: string, scheduledFor: string): string {
  return `${workflowId}.${Date.parse(scheduledFor).toString(36)}`;
}

/** The job a step's runs execute: the step's definition with the workflow's identity around it. */
export function stepJobOf(version: WorkflowVersion, stepId: string): Job | null {
  const step = version.spec.steps.find((candidate) => candidate.id === stepId);
  if (!step) return null;
  return {
    jobId: stepJobIdOf(version.workflowId, version.version, step.id),
    tenantId: version.tenantId,
    name: `${version.spec.name}/${step.id}`,
    type: step.type ?? version.spec.type,
    labels: {},
    schedule: { kind: 'now' },
    target: step.target,
    payload: step.payload,
    retryPolicy: step.retryPolicy,
    timeoutSeconds: step.timeoutSeconds,
    delivery: step.delivery,
    overlapPolicy: 'allow',
    misfirePolicy: 'fire-once',
    backfillLimit: 1,
    priority: version.spec.priority,
    // Steps are never a schedule's chain: their runs are started by the workflow run.
    status: 'COMPLETED',
    createdAt: version.createdAt,
    updatedAt: version.createdAt,
    version: version.version,
    nextRunAt: null,
    nextRunId: null,
  };
}

// ---- A workflow's schedule as a job -------------------------------------------------------------

/**
 * The job id of a workflow's schedule (its driver job, decision 0147): `wf_….schedule`. Its runs are
 * the schedule's occurrences; the worker starts a workflow run for each it executes.
 */
export function scheduleJobIdOf(workflowId: string): string {
  return `${workflowId}.schedule`;
}

const SCHEDULE_JOB_ID = /^(wf_[0-9a-z]+)\.schedule$/;

export function parseScheduleJobId(jobId: string): { workflowId: string } | null {
  const match = SCHEDULE_JOB_ID.exec(jobId);
  return match?.[1] ? { workflowId: match[1] } : null;
}

/** Job ids that belong to a workflow (its steps, its schedule): not jobs of the jobs API. */
export const isWorkflowJobId = (jobId: string): boolean => parseStepJobId(jobId) !== null || parseScheduleJobId(jobId) !== null;

/** How long starting a workflow run may take: the lease of a schedule's run. */
export const SCHEDULE_RUN_TIMEOUT_SECONDS = 60;

/** What a version's definition says of its schedule's job: the schedule, its policies, its runs' pool and lane. */
export function scheduleFieldsOf(
  spec: Pick<WorkflowSpec, 'schedule' | 'overlapPolicy' | 'misfirePolicy' | 'backfillLimit' | 'priority' | 'type' | 'notify'>,
): Pick<Job, 'schedule' | 'overlapPolicy' | 'misfirePolicy' | 'backfillLimit' | 'priority' | 'type' | 'notify'> | null {
  if (!spec.schedule) return null;
  return {
    schedule: spec.schedule,
    overlapPolicy: spec.overlapPolicy ?? 'allow',
    misfirePolicy: spec.misfirePolicy ?? 'fire-once',
    backfillLimit: spec.backfillLimit ?? 10,
    priority: spec.priority,
    type: spec.type,
    // The schedule job raises the workflow's `skipped` (an occurrence a policy skipped); a workflow
    // run's own end raises the others. Its occurrences' other outcomes raise nothing.
    notify: spec.notify?.events.includes('skipped') ? { events: ['skipped'], destination: spec.notify.destination } : null,
  };
}

/**
 * A new schedule job for a workflow (its status, next run and version are the caller's to set). Its
 * runs call nothing: starting the workflow run is all they do, retried on a short budget.
 */
export function scheduleJobOf(
  workflow: Pick<Workflow, 'workflowId' | 'tenantId' | 'name'>,
  fields: NonNullable<ReturnType<typeof scheduleFieldsOf>>,
  at: string,
): Job {
  return {
    jobId: scheduleJobIdOf(workflow.workflowId),
    tenantId: workflow.tenantId,
    name: workflow.name,
    labels: {},
    ...fields,
    target: { kind: 'workflow', workflowId: workflow.workflowId },
    payload: null,
    retryPolicy: { maxAttempts: 3, initialDelaySeconds: 1, maxDelaySeconds: 30 },
    timeoutSeconds: SCHEDULE_RUN_TIMEOUT_SECONDS,
    delivery: 'at-least-once',
    status: 'ACTIVE',
    createdAt: at,
    updatedAt: at,
    version: 1,
    nextRunAt: null,
    nextRunId: null,
  };
}

/** What a step's target receives besides its payload: where it is, and its parents' results. */
export interface StepContext {
  readonly workflowId: string;
  readonly workflowRunId: string;
  readonly stepId: string;
  readonly version: number;
  readonly results: Readonly<Record<string, unknown>>;
}
