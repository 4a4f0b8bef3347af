// The API function: routes, authentication and error mapping around the use cases. The route
// table (what each route reads and answers) is routes.ts; this file gives each operation its handler.
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { z } from 'zod';
import type { FieldError } from '../core/errors';
import { MethodNotAllowedError, NotFoundError, ValidationError } from '../core/errors';
import { resourceId, toFieldErrors } from '../core/validation';
import type { SchedulerDeps } from '../app/deps';
import { flushTelemetry } from '../app/flush-telemetry';
import { checkHealth } from '../app/health';
import { auditedJob, createJob, getJob, getRun, listJobRuns, listJobs, listRuns, presentJob, previewSchedule } from '../app/jobs';
import type { Job } from '../domain/job';
import { deleteJobOf, patchJobOf, triggerJob } from '../app/job-lifecycle';
import { pauseJobOf, resumeJobOf } from '../app/pause-resume';
import { skipOccurrencesOf } from '../app/skip-occurrences';
import { backfillView, getBackfill, requestBackfill } from '../app/backfills';
import { cancelRunOf, listDeadRuns, replayDeadRuns, replayRun } from '../app/runs';
import { claimRun, completeRun, failRun, heartbeatRun } from '../app/external-workers';
import { createWorkflow, deleteWorkflow, getWorkflow, listWorkflows, pauseWorkflow, resumeWorkflow, updateWorkflow } from '../app/workflows';
import { cancelWorkflowRun, getWorkflowRun, listWorkflowRuns, retryWorkflowRun, startWorkflowRun } from '../app/workflow-runs';
import { issueSigningSecret, listSigningSecrets, revokeSigningSecret } from '../app/signing-secrets';
import { listRunNotifications, listWorkflowRunNotifications, resendNotification, resendWorkflowRunNotification } from '../app/run-notifications';
import type { JobNotifyEvent, WorkflowNotifyEvent } from '../domain/notify';
import type { AuditRecord } from '../app/audit';
import { listAudit, recordAudit, recordAudits } from '../app/audit';
import type { AuditAction } from '../domain/audit';
import { changesBetween } from '../domain/audit';
import type { Caller } from '../app/authenticate';
import { callerOf } from './auth';
import type { ApiEvent, ApiResult } from './http';
import { header, json, jsonBody, problemDetails } from './http';
import { openApiJson } from './openapi';
import type { OperationId, RouteSpec } from './routes';
import { PATH_PARAMS, ROUTES } from './routes';
import { formatTraceparent, traceContextOf } from '../domain/trace-context';
import { annotateTrace } from '../core/tracing';

type Routes = typeof ROUTES;
type QueryOf<R> = R extends { readonly query: infer Q extends z.ZodType } ? z.output<Q> : Record<string, never>;
type BodyOf<R> = R extends { readonly body: { readonly schema: infer B extends z.ZodType } } ? z.output<B> : undefined;

interface RouteContext<R> {
  readonly event: ApiEvent;
  readonly tenantId: string;
  readonly caller: Caller;
  /** Path parameters, already checked against PATH_PARAMS. */
  readonly params: Readonly<Record<string, string>>;
  /** The query string as the route's schema parsed it (defaults applied). */
  readonly query: QueryOf<R>;
  /** The body as the route's schema parsed it; a route whose body is optional parses `{}` when none came. */
  readonly body: BodyOf<R>;
}

/** One handler per operation of the route table: the compiler checks that none is missing. */
type Handlers = {
  readonly [K in OperationId]: Routes[K] extends { readonly public: true } ? () => Promise<ApiResult> : (ctx: RouteContext<Routes[K]>) => Promise<ApiResult>;
};

interface Route extends RouteSpec {
  readonly operationId: OperationId;
  readonly pattern: RegExp;
  readonly paramNames: readonly string[];
}

const NO_QUERY = z.strictObject({});
const EMPTY_BODY = z.strictObject({});

function compile(operationId: OperationId, definition: RouteSpec): Route {
  const paramNames: string[] = [];
  // Templates are literal paths (letters, digits, `/`, `.` and `-`) with `{name}` segments.
  const source = definition.path.replace(/\./g, '\\.').replace(/\{(\w+)\}/g, (_match, name: string) => {
    if (!(name in PATH_PARAMS)) throw new Error(`route ${definition.path}: no schema for path parameter ${name}`);
    paramNames.push(name);
    return '([^/]+)';
  });
  return { ...definition, operationId, pattern: new RegExp(`^${source}$`), paramNames };
}

/** The routes the router serves: method and path template of each. */
export function routerRoutes(): { method: string; path: string }[] {
  return compiledRoutes().map(({ method, path }) => ({ method, path }));
}

function compiledRoutes(): Route[] {
  return (Object.entries(ROUTES) as [OperationId, RouteSpec][]).map(([operationId, spec]) => compile(operationId, spec));
}

/** `If-Match: 3` or `If-Match: "3"`: the job version a PATCH expects. */
function ifMatchVersion(event: ApiEvent): number | undefined {
  const raw = header(event, 'if-match');
  if (raw === undefined) return undefined;
  const match = /^\s*(?:W\/)?"?(\d{1,12})"?\s*$/.exec(raw);
  if (!match?.[1]) {
    throw new ValidationError('Invalid If-Match', [{ path: 'headers.If-Match', message: 'must be the job version, e.g. "3"' }]);
  }
  return Number(match[1]);
}

/**
 * The request's W3C trace context as the runs it makes keep it: the caller's when valid, else a new
 * trace. An invalid `traceparent` is not refused: the specification has the receiver start a new
 * trace (decision 0111).
 */
function traceparentOf(event: ApiEvent): string {
  const context = traceContextOf(header(event, 'traceparent'), Date.now());
  // In X-Ray the request's segment is found by the same trace id as the run's.
  annotateTrace({ traceId: context.traceId });
  return formatTraceparent(context);
}

function idempotencyKeyOf(event: ApiEvent): string | undefined {
  const key = header(event, 'idempotency-key');
  if (key !== undefined && !/^[\x21-\x7e]{1,128}$/.test(key)) {
    throw new ValidationError('Invalid Idempotency-Key', [{ path: 'headers.Idempotency-Key', message: 'must be 1 to 128 visible ASCII characters' }]);
  }
  return key;
}

/** A resent notification's change: from what it was (a stalled resend was PENDING; one never made, nothing). */
const resentChange = (before: string | null, after: string) => ({ ...(before !== null ? { before } : {}), after });

function handlers(deps: SchedulerDeps): Handlers {
  /** Appends what the caller changed to the tenant's audit trail (after the change succeeded). */
  const audit = (caller: Caller, action: AuditAction, objectId: string, details: Pick<AuditRecord, 'changes' | 'requested'> = {}) =>
    recordAudit(deps, { tenantId: caller.tenantId, actor: caller.keyId, action, objectId, ...details });
  /** A change of a job, audited with the fields it changed (the job as stored before and after). */
  const jobChange = async (caller: Caller, action: AuditAction, jobId: string, change: (jobId: string) => Promise<Job>, requested?: readonly string[]) => {
    const before = await deps.jobs.get(caller.tenantId, jobId);
    const after = await change(jobId);
    const changes = changesBetween(before ? auditedJob(before) : undefined, auditedJob(after));
    // A call that changed nothing (a second delete, a pause of a paused job with the same note) is
    // not an entry: the trail says what changed.
    if (Object.keys(changes).length > 0) await audit(caller, action, jobId, { changes, ...(requested ? { requested } : {}) });
    return presentJob(deps, after);
  };
  return {
    createJob: async ({ event, tenantId, caller, body }) => {
      const result = await createJob(deps, tenantId, body, idempotencyKeyOf(event), caller.limits, traceparentOf(event));
      if (result.created) await audit(caller, 'job.create', result.job.jobId, { changes: changesBetween(undefined, result.job) });
      // A replay answers as the first request did (201), and says it is one.
      return json(
        201,
        { job: result.job, nextRunAt: result.nextRunAt },
        {
          location: `/v1/jobs/${result.job.jobId}`,
          ...(result.created ? {} : { 'idempotent-replayed': 'true' }),
        },
      );
    },
    listJobs: async ({ tenantId, query }) => json(200, await listJobs(deps, tenantId, query)),
    getJob: async ({ tenantId, params }) => json(200, await getJob(deps, tenantId, param(params, 'jobId'))),
    patchJob: async ({ event, caller, params, body }) =>
      json(
        200,
        await jobChange(
          caller,
          'job.update',
          param(params, 'jobId'),
          (jobId) => patchJobOf(deps, caller.tenantId, jobId, body, ifMatchVersion(event), caller.limits),
          Object.keys(body).sort(),
        ),
      ),
    deleteJob: async ({ caller, params }) =>
      json(200, await jobChange(caller, 'job.delete', param(params, 'jobId'), (jobId) => deleteJobOf(deps, caller.tenantId, jobId))),
    pauseJob: async ({ caller, params, body }) =>
      json(200, await jobChange(caller, 'job.pause', param(params, 'jobId'), (jobId) => pauseJobOf(deps, caller.tenantId, jobId, body ?? {}))),
    skipJob: async ({ caller, params, body }) =>
      json(200, await jobChange(caller, 'job.skip', param(params, 'jobId'), (jobId) => skipOccurrencesOf(deps, caller.tenantId, jobId, body, caller.keyId))),
    resumeJob: async ({ caller, params }) =>
      json(200, await jobChange(caller, 'job.resume', param(params, 'jobId'), (jobId) => resumeJobOf(deps, caller.tenantId, jobId))),
    triggerJob: async ({ event, tenantId, caller, params, body }) => {
      const run = await triggerJob(deps, tenantId, param(params, 'jobId'), body, caller.limits, traceparentOf(event));
      await audit(caller, 'job.trigger', run.jobId, { changes: { run: { after: run.runId } } });
      return json(202, { run });
    },
    backfillJob: async ({ event, caller, params, body }) => {
      const { created, backfill } = await requestBackfill(deps, caller.tenantId, param(params, 'jobId'), body, caller.limits, traceparentOf(event));
      if (created)
        await audit(caller, 'job.backfill', backfill.jobId, {
          changes: { backfill: { after: { backfillId: backfill.backfillId, from: backfill.from, to: backfill.to, total: backfill.total } } },
        });
      return json(202, { backfill: backfillView(backfill) }, { location: `/v1/jobs/${backfill.jobId}/backfills/${backfill.backfillId}` });
    },
    getBackfill: async ({ tenantId, params }) =>
      json(200, { backfill: backfillView(await getBackfill(deps, tenantId, param(params, 'jobId'), param(params, 'backfillId'))) }),
    listJobRuns: async ({ tenantId, params, query }) => json(200, await listJobRuns(deps, tenantId, param(params, 'jobId'), query)),
    listRuns: async ({ tenantId, query }) => json(200, await listRuns(deps, tenantId, query)),
    getRun: async ({ tenantId, params }) => json(200, await getRun(deps, tenantId, param(params, 'runId'))),
    cancelRun: async ({ tenantId, caller, params }) => {
      const { run, cancelled, previousStatus } = await cancelRunOf(deps, tenantId, param(params, 'runId'));
      // A cancel of a run that had ended CANCELLED already (a second one, or one that lost a race)
      // changed nothing: no entry.
      if (cancelled) await audit(caller, 'run.cancel', run.runId, { changes: { status: { before: previousStatus, after: 'CANCELLED' } } });
      return json(200, run);
    },
    replayRun: async ({ event, tenantId, caller, params }) => {
      const run = await replayRun(deps, tenantId, param(params, 'runId'), caller.limits, traceparentOf(event));
      await audit(caller, 'run.replay', param(params, 'runId'), { changes: { replayedAs: { after: run.runId } } });
      return json(202, { run });
    },
    listRunNotifications: async ({ tenantId, params }) => json(200, { items: await listRunNotifications(deps, tenantId, param(params, 'runId')) }),
    resendNotification: async ({ caller, params }) => {
      const event = param(params, 'event') as JobNotifyEvent;
      const { notification, before } = await resendNotification(deps, caller.tenantId, param(params, 'runId'), event, caller.limits);
      await audit(caller, 'notification.resend', param(params, 'runId'), { changes: { [`notification.${event}`]: resentChange(before, notification.status) } });
      return json(202, notification);
    },
    claimRun: async ({ tenantId, body }) => {
      const claimed = await claimRun(deps, tenantId, body);
      // Nothing to do within waitSeconds: the worker asks again.
      return claimed ? json(200, claimed) : { statusCode: 204, headers: {}, body: '' };
    },
    heartbeatRun: async ({ tenantId, params, body }) => json(200, await heartbeatRun(deps, tenantId, param(params, 'runId'), body)),
    completeRun: async ({ tenantId, params, body }) => json(200, await completeRun(deps, tenantId, param(params, 'runId'), body)),
    failRun: async ({ tenantId, params, body }) => json(200, await failRun(deps, tenantId, param(params, 'runId'), body)),
    createWorkflow: async ({ caller, body }) => {
      const workflow = await createWorkflow(deps, caller.tenantId, body, caller.limits);
      await audit(caller, 'workflow.create', workflow.workflowId, { changes: { version: { after: workflow.version } } });
      return json(201, workflow, { location: `/v1/workflows/${workflow.workflowId}` });
    },
    listWorkflows: async ({ tenantId, query }) => json(200, await listWorkflows(deps, tenantId, query)),
    getWorkflow: async ({ tenantId, params, query }) => json(200, await getWorkflow(deps, tenantId, param(params, 'workflowId'), query.version)),
    deleteWorkflow: async ({ caller, params }) => {
      const { workflow, deletedNow } = await deleteWorkflow(deps, caller.tenantId, param(params, 'workflowId'));
      if (deletedNow) await audit(caller, 'workflow.delete', workflow.workflowId, { changes: { deletedAt: { after: workflow.deletedAt } } });
      return json(200, workflow);
    },
    pauseWorkflow: async ({ caller, params }) => {
      const { workflow, pausedNow } = await pauseWorkflow(deps, caller.tenantId, param(params, 'workflowId'));
      if (pausedNow) await audit(caller, 'workflow.pause', workflow.workflowId, { changes: { status: { before: 'ACTIVE', after: 'PAUSED' } } });
      return json(200, workflow);
    },
    resumeWorkflow: async ({ caller, params }) => {
      const workflow = await resumeWorkflow(deps, caller.tenantId, param(params, 'workflowId'));
      await audit(caller, 'workflow.resume', workflow.workflowId, { changes: { status: { before: 'PAUSED', after: workflow.scheduleState?.status } } });
      return json(200, workflow);
    },
    updateWorkflow: async ({ event, caller, params, body }) => {
      const workflow = await updateWorkflow(deps, caller.tenantId, param(params, 'workflowId'), body, ifMatchVersion(event), caller.limits);
      await audit(caller, 'workflow.update', workflow.workflowId, { changes: { version: { before: workflow.version - 1, after: workflow.version } } });
      return json(201, workflow);
    },
    startWorkflowRun: async ({ event, caller, params }) => {
      const run = await startWorkflowRun(deps, caller.tenantId, param(params, 'workflowId'), caller.limits, traceparentOf(event));
      await audit(caller, 'workflow.run', run.workflowId, { changes: { run: { after: run.workflowRunId } } });
      return json(202, run);
    },
    listWorkflowRuns: async ({ tenantId, params, query }) => json(200, await listWorkflowRuns(deps, tenantId, param(params, 'workflowId'), query)),
    getWorkflowRun: async ({ tenantId, params }) =>
      json(200, await getWorkflowRun(deps, tenantId, param(params, 'workflowId'), param(params, 'workflowRunId'))),
    cancelWorkflowRun: async ({ caller, params }) => {
      const run = await cancelWorkflowRun(deps, caller.tenantId, param(params, 'workflowId'), param(params, 'workflowRunId'));
      await audit(caller, 'workflow-run.cancel', run.workflowRunId, { changes: { status: { after: run.status } } });
      return json(200, run);
    },
    listWorkflowRunNotifications: async ({ tenantId, params }) =>
      json(200, { items: await listWorkflowRunNotifications(deps, tenantId, param(params, 'workflowId'), param(params, 'workflowRunId')) }),
    resendWorkflowRunNotification: async ({ caller, params }) => {
      const event = param(params, 'workflowEvent') as Exclude<WorkflowNotifyEvent, 'skipped'>;
      const workflowRunId = param(params, 'workflowRunId');
      const { notification, before } = await resendWorkflowRunNotification(
        deps,
        caller.tenantId,
        param(params, 'workflowId'),
        workflowRunId,
        event,
        caller.limits,
      );
      await audit(caller, 'notification.resend', workflowRunId, {
        changes: { [`notification.${event}`]: resentChange(before, notification.status), retry: { after: notification.retry } },
      });
      return json(202, notification);
    },
    retryWorkflowRun: async ({ event, caller, params }) => {
      const run = await retryWorkflowRun(
        deps,
        caller.tenantId,
        param(params, 'workflowId'),
        param(params, 'workflowRunId'),
        caller.limits,
        traceparentOf(event),
      );
      await audit(caller, 'workflow-run.retry', run.workflowRunId, { changes: { retries: { after: run.retries } } });
      return json(202, run);
    },
    listDeadRuns: async ({ tenantId, query }) => json(200, await listDeadRuns(deps, tenantId, query)),
    replayDeadRuns: async ({ event, tenantId, caller, body }) => {
      const { replayedFrom, ...result } = await replayDeadRuns(deps, tenantId, body, caller.limits, traceparentOf(event));
      // An entry per replayed run, as a single replay's: each run's trail finds it (decision 0119).
      await recordAudits(
        deps,
        result.replayed.map((run, i) => ({
          tenantId: caller.tenantId,
          actor: caller.keyId,
          action: 'dead-runs.replay' as const,
          objectId: replayedFrom[i]!,
          changes: { replayedAs: { after: run.runId } },
        })),
      );
      return json(202, result);
    },
    previewSchedule: async ({ tenantId, body }) => json(200, await previewSchedule(deps, tenantId, body)),
    issueSigningSecret: async ({ tenantId, caller, body }) => {
      const { ended, ...issued } = await issueSigningSecret(deps, tenantId, body);
      // An issue with no grace stops every other secret: each one's trail says so, as a revoke's does.
      await recordAudits(deps, [
        {
          tenantId: caller.tenantId,
          actor: caller.keyId,
          action: 'signing-secret.issue',
          objectId: issued.secretId,
          changes: { replaces: { after: issued.previous.map((old) => old.secretId) }, ...(ended.length > 0 ? { ends: { after: [...ended] } } : {}) },
        },
        ...ended.map((secretId) => ({
          tenantId: caller.tenantId,
          actor: caller.keyId,
          action: 'signing-secret.revoke' as const,
          objectId: secretId,
          changes: { status: { before: 'issued', after: 'revoked' }, revokedBy: { after: issued.secretId } },
        })),
      ]);
      // The value is in this answer only: never cached by anything in between.
      return json(201, issued, { 'cache-control': 'no-store' });
    },
    listSigningSecrets: async ({ tenantId }) => json(200, { items: await listSigningSecrets(deps, tenantId) }),
    revokeSigningSecret: async ({ tenantId, caller, params }) => {
      await revokeSigningSecret(deps, tenantId, param(params, 'secretId'));
      await audit(caller, 'signing-secret.revoke', param(params, 'secretId'), { changes: { status: { before: 'issued', after: 'revoked' } } });
      return { statusCode: 204, headers: {}, body: '' };
    },
    listAudit: async ({ tenantId, query }) => json(200, await listAudit(deps, tenantId, query)),
    checkHealth: async ({ tenantId, query }) => json(200, await checkHealth(deps, tenantId, query)),
    getOpenApi: () =>
      Promise.resolve({ statusCode: 200, headers: { 'content-type': 'application/json', 'cache-control': 'public, max-age=300' }, body: openApiJson() }),
  };
}

function param(params: Readonly<Record<string, string>>, name: string): string {
  const value = params[name];
  if (value === undefined) throw new Error(`route has no path parameter ${name}`);
  return value;
}

/**
 * Checks every input of a request against its route before any use case runs: path parameters,
 * the query string and the body, with one 400 naming every failing field (`path.jobId`,
 * `limit`, `schedule.kind`). Returns the parsed query and body (defaults applied).
 */
function validateRequest(
  found: Route,
  event: ApiEvent,
  params: Readonly<Record<string, string>>,
  query: Readonly<Record<string, string | undefined>>,
): { query: unknown; body: unknown } {
  const errors: FieldError[] = [];
  let detail = 'Invalid request';
  for (const name of found.paramNames) {
    const result = ((PATH_PARAMS as Record<string, z.ZodType>)[name] ?? resourceId).safeParse(params[name]);
    if (!result.success) errors.push(...toFieldErrors(result.error.issues, `path.${name}`));
  }
  const queryResult = (found.query ?? NO_QUERY).safeParse(query);
  // Query parameters are named as they are spelled in the URL (as before this check moved here).
  if (!queryResult.success) errors.push(...toFieldErrors(queryResult.error.issues));

  let body: unknown;
  try {
    body = jsonBody(event, found.body?.required === true);
  } catch (error) {
    // Oversized bodies (413) and other media types (415) end here; unreadable JSON joins the rest.
    if (!(error instanceof ValidationError)) throw error;
    errors.push(...error.errors);
    detail = error.message;
  }
  let parsed: unknown;
  if (!found.body) {
    if (body !== undefined && !EMPTY_BODY.safeParse(body).success) errors.push({ path: '(body)', message: 'this route takes no body (send none, or {})' });
  } else if (body !== undefined || !found.body.required) {
    // An optional body that did not come is parsed as `{}`, so that its defaults apply (a JSON
    // `null` did come, and is checked as it is).
    const bodyResult = found.body.schema.safeParse(body === undefined ? {} : body);
    if (bodyResult.success) parsed = bodyResult.data;
    else errors.push(...toFieldErrors(bodyResult.error.issues));
  }
  if (errors.length > 0) throw new ValidationError(detail, errors);
  return { query: queryResult.data, body: parsed };
}

export function createApiHandler(deps: SchedulerDeps) {
  const table = compiledRoutes();
  const handle = handlers(deps) as Readonly<Record<OperationId, (ctx?: RouteContext<RouteSpec>) => Promise<ApiResult>>>;

  const route = async (event: ApiEvent): Promise<ApiResult> => {
    const path = event.rawPath.replace(/\/+$/, '') || '/';
    const method = event.requestContext.http.method.toUpperCase();
    const matching = table.filter((candidate) => candidate.pattern.test(path));
    if (matching.length === 0) throw new NotFoundError(`No route for ${path}`);
    const found = matching.find((candidate) => candidate.method === method);
    if (!found) throw new MethodNotAllowedError(`${method} is not allowed on ${path}`);
    if (found.public) return handle[found.operationId]();
    // Authenticate before anything else is read, so that an anonymous caller learns nothing.
    const caller = await callerOf(event, deps.authenticator, deps.config.tenantDefaults);
    const values = found.pattern.exec(path)?.slice(1) ?? [];
    const params = Object.fromEntries(found.paramNames.map((name, index) => [name, values[index] ?? '']));
    const { query, body } = validateRequest(found, event, params, event.queryStringParameters ?? {});
    return handle[found.operationId]({ event, tenantId: caller.tenantId, caller, params, query: query as QueryOf<RouteSpec>, body: body as BodyOf<RouteSpec> });
  };

  return middy<ApiEvent, ApiResult, Error, Context>().use(flushTelemetry(deps)).use(problemDetails()).handler(route);
}
