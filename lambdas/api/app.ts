// The API function: routes, authentication and error mapping around the jobs use cases.
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { MethodNotAllowedError, NotFoundError, ValidationError } from '../core/errors';
import type { SchedulerDeps } from '../app/deps';
import { flushTelemetry } from '../app/flush-telemetry';
import { checkHealth } from '../app/health';
import { createJob, getJob, getRun, listJobRuns, listJobs, previewSchedule } from '../app/jobs';
import { deleteJob, patchJob, pauseJob, resumeJob, triggerJob } from '../app/job-lifecycle';
import { cancelRun, listDeadRuns, replayDeadRuns, replayRun } from '../app/runs';
import type { Caller } from '../app/authenticate';
import { callerOf } from './auth';
import type { ApiEvent, ApiResult } from './http';
import { header, json, jsonBody, problemDetails } from './http';

interface RouteContext {
  readonly event: ApiEvent;
  readonly tenantId: string;
  readonly caller: Caller;
  readonly params: Readonly<Record<string, string>>;
  readonly query: Readonly<Record<string, string | undefined>>;
}

interface Route {
  readonly method: string;
  readonly pattern: RegExp;
  readonly handle: (ctx: RouteContext) => Promise<ApiResult>;
}

const ID = '([A-Za-z0-9._-]{1,128})';

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

function routes(deps: SchedulerDeps): Route[] {
  return [
    {
      method: 'POST',
      pattern: /^\/v1\/jobs$/,
      handle: async ({ event, tenantId, caller }) => {
        const idempotencyKey = header(event, 'idempotency-key');
        if (idempotencyKey !== undefined && !/^[\x21-\x7e]{1,128}$/.test(idempotencyKey)) {
          throw new ValidationError('Invalid Idempotency-Key', [
            { path: 'headers.Idempotency-Key', message: 'must be 1 to 128 visible ASCII characters' },
          ]);
        }
        const result = await createJob(deps, tenantId, jsonBody(event, true), idempotencyKey, caller.limits);
        return json(201, { job: result.job, nextRunAt: result.nextRunAt }, { location: `/v1/jobs/${result.job.jobId}` });
      },
    },
    {
      method: 'GET',
      pattern: /^\/v1\/jobs$/,
      handle: async ({ tenantId, query }) => json(200, await listJobs(deps, tenantId, query)),
    },
    {
      method: 'GET',
      pattern: new RegExp(`^/v1/jobs/${ID}$`),
      handle: async ({ tenantId, params }) => json(200, await getJob(deps, tenantId, params.id ?? '')),
    },
    {
      method: 'PATCH',
      pattern: new RegExp(`^/v1/jobs/${ID}$`),
      handle: async ({ event, tenantId, params }) =>
        json(200, await patchJob(deps, tenantId, params.id ?? '', jsonBody(event, true), ifMatchVersion(event))),
    },
    {
      method: 'DELETE',
      pattern: new RegExp(`^/v1/jobs/${ID}$`),
      handle: async ({ tenantId, params }) => json(200, await deleteJob(deps, tenantId, params.id ?? '')),
    },
    {
      method: 'POST',
      pattern: new RegExp(`^/v1/jobs/${ID}/pause$`),
      handle: async ({ tenantId, params }) => json(200, await pauseJob(deps, tenantId, params.id ?? '')),
    },
    {
      method: 'POST',
      pattern: new RegExp(`^/v1/jobs/${ID}/resume$`),
      handle: async ({ tenantId, params }) => json(200, await resumeJob(deps, tenantId, params.id ?? '')),
    },
    {
      method: 'POST',
      pattern: new RegExp(`^/v1/jobs/${ID}/trigger$`),
      handle: async ({ event, tenantId, params }) => json(202, { run: await triggerJob(deps, tenantId, params.id ?? '', jsonBody(event, false)) }),
    },
    {
      method: 'GET',
      pattern: new RegExp(`^/v1/jobs/${ID}/runs$`),
      handle: async ({ tenantId, params, query }) => json(200, await listJobRuns(deps, tenantId, params.id ?? '', query)),
    },
    {
      method: 'GET',
      pattern: new RegExp(`^/v1/runs/${ID}$`),
      handle: async ({ tenantId, params }) => json(200, await getRun(deps, tenantId, params.id ?? '')),
    },
    {
      method: 'POST',
      pattern: new RegExp(`^/v1/runs/${ID}/cancel$`),
      handle: async ({ tenantId, params }) => json(200, await cancelRun(deps, tenantId, params.id ?? '')),
    },
    {
      method: 'POST',
      pattern: new RegExp(`^/v1/runs/${ID}/replay$`),
      handle: async ({ tenantId, params }) => json(202, { run: await replayRun(deps, tenantId, params.id ?? '') }),
    },
    {
      method: 'GET',
      pattern: /^\/v1\/dead-runs$/,
      handle: async ({ tenantId, query }) => json(200, await listDeadRuns(deps, tenantId, query)),
    },
    {
      method: 'POST',
      pattern: /^\/v1\/dead-runs\/replay$/,
      handle: async ({ event, tenantId }) => json(202, await replayDeadRuns(deps, tenantId, jsonBody(event, false))),
    },
    {
      method: 'POST',
      pattern: /^\/v1\/schedules\/preview$/,
      handle: ({ event }) => Promise.resolve(json(200, previewSchedule(deps, jsonBody(event, true)))),
    },
    {
      method: 'GET',
      pattern: /^\/v1\/health$/,
      handle: async ({ tenantId, query }) => json(200, await checkHealth(deps, tenantId, query)),
    },
  ];
}

export function createApiHandler(deps: SchedulerDeps) {
  const table = routes(deps);

  const route = async (event: ApiEvent): Promise<ApiResult> => {
    const path = event.rawPath.replace(/\/+$/, '') || '/';
    const method = event.requestContext.http.method.toUpperCase();
    const matching = table.filter((candidate) => candidate.pattern.test(path));
    if (matching.length === 0) throw new NotFoundError(`No route for ${path}`);
    const found = matching.find((candidate) => candidate.method === method);
    if (!found) throw new MethodNotAllowedError(`${method} is not allowed on ${path}`);
    // Authenticate before anything else is read, so that an anonymous caller learns nothing.
    const caller = await callerOf(event, deps.authenticator, deps.config.tenantDefaults);
    const id = found.pattern.exec(path)?.[1];
    return found.handle({
      event,
      tenantId: caller.tenantId,
      caller,
      params: id === undefined ? {} : { id },
      query: event.queryStringParameters ?? {},
    });
  };

  return middy<ApiEvent, ApiResult, Error, Context>()
    .use(flushTelemetry(deps))
    .use(problemDetails())
    .handler(route);
}
