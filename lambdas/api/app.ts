// The API function: routes, authentication and error mapping around the jobs use cases.
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { z } from 'zod';
import type { FieldError } from '../core/errors';
import { MethodNotAllowedError, NotFoundError, ValidationError } from '../core/errors';
import { resourceId, toFieldErrors } from '../core/validation';
import { jobPatchSchema, jobSpecSchema } from '../domain/job';
import type { SchedulerDeps } from '../app/deps';
import { flushTelemetry } from '../app/flush-telemetry';
import { checkHealth, healthQuery } from '../app/health';
import { createJob, getJob, getRun, listJobRuns, listJobs, listJobsQuery, pageQuery, previewSchedule, previewSchema } from '../app/jobs';
import { deleteJob, patchJob, pauseJob, resumeJob, triggerJob, triggerSchema } from '../app/job-lifecycle';
import { bulkReplaySchema, cancelRun, deadQuery, listDeadRuns, replayDeadRuns, replayRun } from '../app/runs';
import { claimRun, claimSchema, completeRun, completeSchema, failRun, failSchema, heartbeatRun, heartbeatSchema } from '../app/external-workers';
import { issueSigningSecret, issueSigningSecretSchema, listSigningSecrets, revokeSigningSecret } from '../app/signing-secrets';
import type { Caller } from '../app/authenticate';
import { callerOf } from './auth';
import type { ApiEvent, ApiResult } from './http';
import { header, json, jsonBody, problemDetails } from './http';

interface RouteContext {
  readonly event: ApiEvent;
  readonly tenantId: string;
  readonly caller: Caller;
  /** Path parameters, already checked against PATH_PARAMS. */
  readonly params: Readonly<Record<string, string>>;
  /** The query string, already checked against the route's query schema. */
  readonly query: Readonly<Record<string, string | undefined>>;
  /** The parsed JSON body, already checked against the route's body schema (undefined when absent). */
  readonly body: unknown;
}

/** What a route reads from a request body. `none`: no body, or an empty object. */
type BodySpec = { readonly kind: 'none' } | { readonly kind: 'json'; readonly schema: z.ZodType; readonly required: boolean };

interface RouteDefinition {
  readonly method: string;
  /** A path template; `{name}` is one segment, checked by PATH_PARAMS[name]. */
  readonly path: string;
  /** The query string's schema; a route without one takes no query parameters. */
  readonly query?: z.ZodType;
  readonly body: BodySpec;
  readonly handle: (ctx: RouteContext) => Promise<ApiResult>;
}

interface Route extends RouteDefinition {
  readonly pattern: RegExp;
  readonly paramNames: readonly string[];
}

const NO_BODY: BodySpec = { kind: 'none' };
const json_ = (schema: z.ZodType, required: boolean): BodySpec => ({ kind: 'json', schema, required });
const NO_QUERY = z.strictObject({});
const EMPTY_BODY = z.strictObject({});

/** Every path parameter of every route, by name. A malformed id is a 400; a well-formed unknown one, 404. */
const PATH_PARAMS: Readonly<Record<string, z.ZodType>> = { jobId: resourceId, runId: resourceId, secretId: resourceId };

function compile(definition: RouteDefinition): Route {
  const paramNames: string[] = [];
  // Templates are literal paths (letters, digits, `/` and `-`) with `{name}` segments.
  const source = definition.path.replace(/\{(\w+)\}/g, (_match, name: string) => {
    if (!PATH_PARAMS[name]) throw new Error(`route ${definition.path}: no schema for path parameter ${name}`);
    paramNames.push(name);
    return '([^/]+)';
  });
  return { ...definition, pattern: new RegExp(`^${source}$`), paramNames };
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

function idempotencyKeyOf(event: ApiEvent): string | undefined {
  const key = header(event, 'idempotency-key');
  if (key !== undefined && !/^[\x21-\x7e]{1,128}$/.test(key)) {
    throw new ValidationError('Invalid Idempotency-Key', [
      { path: 'headers.Idempotency-Key', message: 'must be 1 to 128 visible ASCII characters' },
    ]);
  }
  return key;
}

function routes(deps: SchedulerDeps): Route[] {
  const definitions: RouteDefinition[] = [
    {
      method: 'POST',
      path: '/v1/jobs',
      body: json_(jobSpecSchema, true),
      handle: async ({ event, tenantId, caller, body }) => {
        const result = await createJob(deps, tenantId, body, idempotencyKeyOf(event), caller.limits);
        // A replay answers as the first request did (201), and says it is one.
        return json(201, { job: result.job, nextRunAt: result.nextRunAt }, {
          location: `/v1/jobs/${result.job.jobId}`,
          ...(result.created ? {} : { 'idempotent-replayed': 'true' }),
        });
      },
    },
    {
      method: 'GET',
      path: '/v1/jobs',
      query: listJobsQuery,
      body: NO_BODY,
      handle: async ({ tenantId, query }) => json(200, await listJobs(deps, tenantId, query)),
    },
    {
      method: 'GET',
      path: '/v1/jobs/{jobId}',
      body: NO_BODY,
      handle: async ({ tenantId, params }) => json(200, await getJob(deps, tenantId, param(params, 'jobId'))),
    },
    {
      method: 'PATCH',
      path: '/v1/jobs/{jobId}',
      body: json_(jobPatchSchema, true),
      handle: async ({ event, tenantId, caller, params, body }) =>
        json(200, await patchJob(deps, tenantId, param(params, 'jobId'), body, ifMatchVersion(event), caller.limits)),
    },
    {
      method: 'DELETE',
      path: '/v1/jobs/{jobId}',
      body: NO_BODY,
      handle: async ({ tenantId, params }) => json(200, await deleteJob(deps, tenantId, param(params, 'jobId'))),
    },
    {
      method: 'POST',
      path: '/v1/jobs/{jobId}/pause',
      body: NO_BODY,
      handle: async ({ tenantId, params }) => json(200, await pauseJob(deps, tenantId, param(params, 'jobId'))),
    },
    {
      method: 'POST',
      path: '/v1/jobs/{jobId}/resume',
      body: NO_BODY,
      handle: async ({ tenantId, params }) => json(200, await resumeJob(deps, tenantId, param(params, 'jobId'))),
    },
    {
      method: 'POST',
      path: '/v1/jobs/{jobId}/trigger',
      body: json_(triggerSchema, false),
      handle: async ({ tenantId, caller, params, body }) => json(202, { run: await triggerJob(deps, tenantId, param(params, 'jobId'), body, caller.limits) }),
    },
    {
      method: 'GET',
      path: '/v1/jobs/{jobId}/runs',
      query: pageQuery,
      body: NO_BODY,
      handle: async ({ tenantId, params, query }) => json(200, await listJobRuns(deps, tenantId, param(params, 'jobId'), query)),
    },
    {
      method: 'GET',
      path: '/v1/runs/{runId}',
      body: NO_BODY,
      handle: async ({ tenantId, params }) => json(200, await getRun(deps, tenantId, param(params, 'runId'))),
    },
    {
      method: 'POST',
      path: '/v1/runs/{runId}/cancel',
      body: NO_BODY,
      handle: async ({ tenantId, params }) => json(200, await cancelRun(deps, tenantId, param(params, 'runId'))),
    },
    {
      method: 'POST',
      path: '/v1/runs/{runId}/replay',
      body: NO_BODY,
      handle: async ({ tenantId, caller, params }) => json(202, { run: await replayRun(deps, tenantId, param(params, 'runId'), caller.limits) }),
    },
    {
      method: 'POST',
      path: '/v1/workers/claim',
      body: json_(claimSchema, false),
      handle: async ({ tenantId, body }) => {
        const claimed = await claimRun(deps, tenantId, claimSchema.parse(body ?? {}));
        // Nothing to do within waitSeconds: the worker asks again.
        return claimed ? json(200, claimed) : { statusCode: 204, headers: {}, body: '' };
      },
    },
    {
      method: 'POST',
      path: '/v1/runs/{runId}/heartbeat',
      body: json_(heartbeatSchema, true),
      handle: async ({ tenantId, params, body }) => json(200, await heartbeatRun(deps, tenantId, param(params, 'runId'), heartbeatSchema.parse(body))),
    },
    {
      method: 'POST',
      path: '/v1/runs/{runId}/complete',
      body: json_(completeSchema, true),
      handle: async ({ tenantId, params, body }) => json(200, await completeRun(deps, tenantId, param(params, 'runId'), completeSchema.parse(body))),
    },
    {
      method: 'POST',
      path: '/v1/runs/{runId}/fail',
      body: json_(failSchema, true),
      handle: async ({ tenantId, params, body }) => json(200, await failRun(deps, tenantId, param(params, 'runId'), failSchema.parse(body))),
    },
    {
      method: 'GET',
      path: '/v1/dead-runs',
      query: deadQuery,
      body: NO_BODY,
      handle: async ({ tenantId, query }) => json(200, await listDeadRuns(deps, tenantId, query)),
    },
    {
      method: 'POST',
      path: '/v1/dead-runs/replay',
      body: json_(bulkReplaySchema, false),
      handle: async ({ tenantId, caller, body }) => json(202, await replayDeadRuns(deps, tenantId, body, caller.limits)),
    },
    {
      method: 'POST',
      path: '/v1/signing-secrets',
      body: json_(issueSigningSecretSchema, false),
      handle: async ({ tenantId, body }) => {
        const issued = await issueSigningSecret(deps, tenantId, issueSigningSecretSchema.parse(body ?? {}));
        // The value is in this answer only: never cached by anything in between.
        return json(201, issued, { 'cache-control': 'no-store' });
      },
    },
    {
      method: 'GET',
      path: '/v1/signing-secrets',
      body: NO_BODY,
      handle: async ({ tenantId }) => json(200, { items: await listSigningSecrets(deps, tenantId) }),
    },
    {
      method: 'DELETE',
      path: '/v1/signing-secrets/{secretId}',
      body: NO_BODY,
      handle: async ({ tenantId, params }) => {
        await revokeSigningSecret(deps, tenantId, param(params, 'secretId'));
        return { statusCode: 204, headers: {}, body: '' };
      },
    },
    {
      method: 'POST',
      path: '/v1/schedules/preview',
      body: json_(previewSchema, true),
      handle: ({ body }) => Promise.resolve(json(200, previewSchedule(deps, body))),
    },
    {
      method: 'GET',
      path: '/v1/health',
      query: healthQuery,
      body: NO_BODY,
      handle: async ({ tenantId, query }) => json(200, await checkHealth(deps, tenantId, query)),
    },
  ];
  return definitions.map(compile);
}

function param(params: Readonly<Record<string, string>>, name: string): string {
  const value = params[name];
  if (value === undefined) throw new Error(`route has no path parameter ${name}`);
  return value;
}

/**
 * Checks every input of a request against its route before any use case runs: path parameters,
 * the query string and the body, with one 400 naming every failing field (`path.jobId`,
 * `limit`, `schedule.kind`). Returns the parsed body.
 */
function validateRequest(found: Route, event: ApiEvent, params: Readonly<Record<string, string>>, query: Readonly<Record<string, string | undefined>>): unknown {
  const errors: FieldError[] = [];
  let detail = 'Invalid request';
  for (const name of found.paramNames) {
    const result = (PATH_PARAMS[name] ?? resourceId).safeParse(params[name]);
    if (!result.success) errors.push(...toFieldErrors(result.error.issues, `path.${name}`));
  }
  const queryResult = (found.query ?? NO_QUERY).safeParse(query);
  // Query parameters are named as they are spelled in the URL (as before this check moved here).
  if (!queryResult.success) errors.push(...toFieldErrors(queryResult.error.issues));

  let body: unknown;
  try {
    body = jsonBody(event, found.body.kind === 'json' && found.body.required);
  } catch (error) {
    // Oversized bodies (413) and other media types (415) end here; unreadable JSON joins the rest.
    if (!(error instanceof ValidationError)) throw error;
    errors.push(...error.errors);
    detail = error.message;
  }
  if (body !== undefined) {
    if (found.body.kind === 'none') {
      if (!EMPTY_BODY.safeParse(body).success) errors.push({ path: '(body)', message: 'this route takes no body (send none, or {})' });
    } else {
      const bodyResult = found.body.schema.safeParse(body);
      if (!bodyResult.success) errors.push(...toFieldErrors(bodyResult.error.issues));
    }
  }
  if (errors.length > 0) throw new ValidationError(detail, errors);
  return body;
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
    const values = found.pattern.exec(path)?.slice(1) ?? [];
    const params = Object.fromEntries(found.paramNames.map((name, index) => [name, values[index] ?? '']));
    const query = event.queryStringParameters ?? {};
    const body = validateRequest(found, event, params, query);
    return found.handle({ event, tenantId: caller.tenantId, caller, params, query, body });
  };

  return middy<ApiEvent, ApiResult, Error, Context>()
    .use(flushTelemetry(deps))
    .use(problemDetails())
    .handler(route);
}
