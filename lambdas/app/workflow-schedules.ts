// A workflow's schedule (decision 0147) is a job of its own, kept in the workflow's partition (its
// schedule job, `wf_….schedule`): its occurrence chain is the jobs' machinery (the time gate,
// admission with the pause, overlap and misfire policies, the chain's compare-and-swap, the ticker's
// repair), and the worker starts a workflow run for each occurrence it executes (workflows.ts). Here:
// what a new workflow or a new version does to its schedule job, pause and resume, and what the API
// shows of it.
import { ConflictError, ValidationError } from '../core/errors';
import type { Job } from '../domain/job';
import type { Run } from '../domain/run';
import { firstFireTime, sameSchedule, settleLike, settleSchedule, upcomingFireTimes, validateSchedule } from '../domain/schedule';
import { isRecurring } from '../domain/schedule-series';
import type { TenantLimits } from '../domain/tenant';
import type { Workflow, WorkflowSpec } from '../domain/workflow';
import { scheduleFieldsOf, scheduleJobIdOf, scheduleJobOf } from '../domain/workflow-jobs';
import type { NewSchedule, ScheduleChange } from '../store/workflows';
import type { SchedulerDeps } from './deps';
import { pauseJobOf, resumeJobOf } from './pause-resume';
import { attemptFor } from './occurrence-chain';
import type { EndedRuns } from './job-mutation';
import { carriedBy, samePending, stillFiresAt } from './job-mutation';
import type { PendingOccurrence } from '../store/run-records';
import type { RunPlan } from './plan-run';
import { planRun } from './plan-run';
import { sendPlannedRun } from './send-planned-run';

const iso = (ms: number): string => new Date(ms).toISOString();
const UPCOMING_RUNS = 5;

/** What the API shows of a workflow's schedule: the state of its occurrences. */
export interface WorkflowScheduleState {
  /** ACTIVE, PAUSED, COMPLETED (no occurrence left), or CANCELLED (a later version removed the schedule). */
  readonly status: Job['status'];
  readonly nextRunAt: string | null;
  /** The next fire times (five), from the pending occurrence on. */
  readonly upcomingRuns: string[];
  readonly pausedAt: string | null;
}

/** A workflow's schedule job, any tenant's (the caller checks), or null when it never had a schedule. */
export function readSchedule(deps: SchedulerDeps, workflowId: string): Promise<Job | null> {
  return deps.jobs.getAnyTenant(scheduleJobIdOf(workflowId));
}

export function scheduleStateOf(job: Job): WorkflowScheduleState {
  const upcoming =
    job.status === 'ACTIVE' && job.nextRunAt
      ? isRecurring(job.schedule)
        ? [job.nextRunAt, ...upcomingFireTimes(job, Date.parse(job.nextRunAt), UPCOMING_RUNS - 1).map(iso)]
        : [job.nextRunAt]
      : [];
  return { status: job.status, nextRunAt: job.nextRunAt, upcomingRuns: upcoming, pausedAt: job.pausedAt ?? null };
}

/**
 * A schedule job's first occurrence from now: its plan, and the status the job starts in (a `now`
 * schedule's one run is queued at once: COMPLETED). `same`: a due occurrence that has not started
 * and that the new schedule still fires at, planned again with what it carried.
 */
function firstOccurrence(
  deps: SchedulerDeps,
  job: Job,
  now: number,
  previous: Run | null,
  ended?: EndedRuns,
  same?: PendingOccurrence | null,
): { plan: RunPlan | null; status: Job['status'] } {
  const first = same ? Date.parse(same.run.scheduledFor) : firstFireTime(job, now);
  if (first === null) return { plan: null, status: 'COMPLETED' };
  // An occurrence an earlier version retired (its schedule changed, or was removed) takes its next attempt.
  const attempt = attemptFor(first, previous);
  const plan = planRun(
    deps.config,
    job,
    {
      scheduledFor: first,
      attempt: ended ? ended.attemptPast(job.jobId, first, attempt) : attempt,
      trigger: 'schedule',
      chainedFrom: job.nextRunId ?? null,
      ...carriedBy(same ?? null),
    },
    now,
  );
  return { plan, status: job.schedule.kind === 'now' ? 'COMPLETED' : 'ACTIVE' };
}

/** A new schedule job with its first occurrence's plan (sent once written). */
export interface PlannedSchedule extends NewSchedule {
  readonly firstRun: RunPlan | null;
}

/** A new workflow's schedule job and first occurrence, or null without a schedule. A schedule that never fires is a 400. */
export function newSchedule(deps: SchedulerDeps, workflow: Workflow, spec: WorkflowSpec, now: number, limits: TenantLimits): PlannedSchedule | null {
  const requested = scheduleFieldsOf(spec);
  if (!requested) return null;
  validateSchedule(requested.schedule, now);
  // What the schedule counts from (an interval's anchor, a counted cron's start) is fixed now.
  const fields = { ...requested, schedule: settleSchedule(requested.schedule, now) };
  const draft = scheduleJobOf(workflow, fields, iso(now));
  const { plan, status } = firstOccurrence(deps, draft, now, null);
  return {
    job: { ...draft, status, ...(plan ? { nextRunAt: plan.run.scheduledFor, nextRunId: plan.run.runId } : {}) },
    firstRun: plan,
    maxActiveJobs: limits.maxActiveJobs,
  };
}

export interface PlannedScheduleChange {
  readonly change: ScheduleChange;
  /** Run after the change is committed: the new occurrence sent, the old pending one retired. */
  readonly afterCommit: () => Promise<void>;
}

/**
 * What a new version does to the workflow's schedule job (null: nothing). A new schedule replans the
 * pending occurrence from the new one's first (a paused schedule keeps waiting, from it); new
 * policies, priority or type apply from the next occurrence on; a version without a schedule cancels
 * the schedule job, and one that brings a schedule back makes it active again.
 */
export function scheduleChangeFor(
  deps: SchedulerDeps,
  workflow: Workflow,
  spec: WorkflowSpec,
  current: Job | null,
  pendingRead: PendingOccurrence | null,
  now: number,
  limits: TenantLimits,
  ended?: EndedRuns,
): PlannedScheduleChange | null {
  const pending = pendingRead?.run ?? null;
  const requested = scheduleFieldsOf(spec);
  // A schedule repeated without its anchor (or a counted cron's start) keeps the stored one.
  const asStored = requested && current ? settleLike(requested.schedule, current.schedule) : requested?.schedule;
  const fields = requested && asStored ? { ...requested, schedule: current && sameSchedule(asStored, current.schedule) ? current.schedule : asStored } : null;
  const retire = (runId: string | null, status: 'SKIPPED' | 'CANCELLED', reason: string) => async () => {
    if (runId && (await deps.runs.retirePending(runId, status, reason, deps.clock()))) {
      deps.telemetry.runEnded(
        { runId, tenantId: workflow.tenantId, jobId: scheduleJobIdOf(workflow.workflowId), jobType: current?.type ?? spec.type },
        status,
        reason,
      );
    }
  };
  if (!fields) {
    if (!current || current.status === 'CANCELLED') return null;
    const next: Job = { ...touch(current, now), status: 'CANCELLED', nextRunAt: null, nextRunId: null, pausedPending: null };
    return {
      change: { kind: 'replace', next, expected: current, newRuns: [], maxActiveJobs: null },
      afterCommit: retire(current.nextRunId, 'CANCELLED', 'the workflow schedule was removed'),
    };
  }
  if (!current) {
    const created = newSchedule(deps, workflow, spec, now, limits);
    if (!created) return null;
    return { change: { kind: 'new', ...created }, afterCommit: () => sendPlannedRun(deps, created.firstRun, now) };
  }
  const scheduleChanged = !sameSchedule(fields.schedule, current.schedule);
  const reactivates = current.status === 'CANCELLED' || (current.status === 'COMPLETED' && scheduleChanged);
  const otherChanged = (Object.keys(fields) as (keyof typeof fields)[]).some((field) => JSON.stringify(fields[field]) !== JSON.stringify(current[field]));
  if (!scheduleChanged && !reactivates && !otherChanged) return null;
  if (scheduleChanged || reactivates) validateSchedule(fields.schedule, now, 'schedule');
  // A schedule brought back starts afresh: a pause it had when it was removed is over.
  const unpaused = reactivates ? { pausedAt: null, pausedPending: null, pauseNote: null, pausedUntil: null } : {};
  const updated: Job = { ...touch(current, now), ...unpaused, ...fields, schedule: scheduleChanged ? settleSchedule(fields.schedule, now) : fields.schedule };
  const replace = (next: Job, plan: RunPlan | null, afterCommit: () => Promise<void> = async () => {}): PlannedScheduleChange => ({
    change: { kind: 'replace', next, expected: current, newRuns: plan ? [plan] : [], maxActiveJobs: limits.maxActiveJobs },
    afterCommit: async () => {
      await afterCommit();
      await sendPlannedRun(deps, plan, now);
    },
  });

  if (current.status === 'PAUSED') {
    // Resume starts from the new schedule's first occurrence (as a PATCH of a paused job's schedule).
    if (!scheduleChanged) return replace(updated, null);
    const first = firstFireTime(updated, now);
    const paused = current.pausedPending ?? null;
    return replace(
      {
        ...updated,
        pausedPending: first === null ? null : { runId: paused && Date.parse(paused.scheduledFor) === first ? paused.runId : null, scheduledFor: iso(first) },
      },
      null,
    );
  }
  if (!scheduleChanged && !reactivates) return replace(updated, null);
  // A new schedule keeps a due occurrence that has not started (waiting for its jitter, or not yet
  // leased) when it still fires at it, as a job's PATCH does: a jitter or an end changed at 09:03
  // must not drop 09:00's workflow run for tomorrow's.
  const pendingSame = current.status === 'ACTIVE' ? samePending(current, pendingRead) : null;
  const same = pendingSame && stillFiresAt(updated, pendingSame.run, now) ? pendingSame : null;
  const { plan, status } = firstOccurrence(deps, updated, now, pending, ended, same);
  if (!plan && reactivates) throw new ValidationError('Invalid workflow', [{ path: 'schedule', message: 'has no occurrence after now' }]);
  return replace(
    { ...updated, status, nextRunAt: plan?.run.scheduledFor ?? null, nextRunId: plan?.run.runId ?? null },
    plan,
    current.status === 'ACTIVE' ? retire(current.nextRunId, 'SKIPPED', 'the workflow schedule changed') : undefined,
  );
}

function touch(job: Job, now: number): Job {
  return { ...job, version: job.version + 1, updatedAt: iso(now) };
}

/** The tenant's workflow's schedule job, or a 409 when the workflow has no schedule. */
async function tenantSchedule(deps: SchedulerDeps, tenantId: string, workflowId: string): Promise<Job> {
  const job = await readSchedule(deps, workflowId);
  if (!job || job.tenantId !== tenantId || job.status === 'CANCELLED') throw new ConflictError(`The workflow ${workflowId} has no schedule to pause or resume`);
  return job;
}

/** Pauses a scheduled workflow: its pending occurrence is retired (runs already started go on). */
export async function pauseWorkflowSchedule(
  deps: SchedulerDeps,
  tenantId: string,
  workflowId: string,
): Promise<{ readonly schedule: Job; readonly pausedNow: boolean }> {
  await tenantSchedule(deps, tenantId, workflowId);
  let pausedNow = false;
  const schedule = await pauseJobOf(
    deps,
    tenantId,
    scheduleJobIdOf(workflowId),
    {},
    () => readSchedule(deps, workflowId),
    'workflow',
    () => {
      pausedNow = true;
    },
  );
  return { schedule, pausedNow };
}

/** Resumes a paused scheduled workflow from the occurrence its misfire policy picks. */
export async function resumeWorkflowSchedule(deps: SchedulerDeps, tenantId: string, workflowId: string): Promise<Job> {
  await tenantSchedule(deps, tenantId, workflowId);
  return resumeJobOf(deps, tenantId, scheduleJobIdOf(workflowId), () => readSchedule(deps, workflowId), 'workflow');
}
