// The route table of the API as data: method, path, what each route reads and what it answers, one
// module per group of routes (routes-*.ts). The router (adapter.ts) serves it, with one handler per
// operation; the OpenAPI document (openapi.ts) is generated from it. No AWS SDK here: a client or a
// script may import it.
import type { z } from 'zod';
import { resourceId } from '../core/validation';
import type { RouteSpec } from './route-spec';
import { JOB_ROUTES } from './routes-jobs';
import { OPERATION_ROUTES } from './routes-operations';
import { RUN_ROUTES } from './routes-runs';
import { WORKFLOW_ROUTES } from './routes-workflows';
import { notifyEventParam, workflowEventParam } from './schemas';

export type { RouteSpec, SuccessResponse } from './route-spec';

/** Every path parameter of every route, by name. A malformed id is a 400; a well-formed unknown one, 404. */
export const PATH_PARAMS = {
  jobId: resourceId,
  runId: resourceId,
  secretId: resourceId,
  workflowId: resourceId,
  workflowRunId: resourceId,
  backfillId: resourceId,
  event: notifyEventParam,
  workflowEvent: workflowEventParam,
} as const satisfies Record<string, z.ZodType>;

/** The API's routes, by operation id (the OpenAPI operationId and the name of its handler), in the document's order. */
export const ROUTES = { ...JOB_ROUTES, ...RUN_ROUTES, ...WORKFLOW_ROUTES, ...OPERATION_ROUTES } as const satisfies Record<string, RouteSpec>;

export type OperationId = keyof typeof ROUTES;

/** Routes API Gateway serves without the authorizer (the stack and the local runtime both read this). */
export const PUBLIC_ROUTES: readonly { readonly method: string; readonly path: string }[] = Object.values(ROUTES as Record<string, RouteSpec>)
  .filter((route) => route.public === true)
  .map(({ method, path }) => ({ method, path }));
