// The caller of an API request. In AWS the Lambda authorizer has resolved it already (API Gateway
// passes its context on, cached per key); the local runtime runs the same authorizer code first.
// A request that reaches the API without that context (a direct invocation) is authenticated here.
import type { Authenticator, Caller } from '../app/authenticate';
import { callerFromContext } from '../app/authenticate';
import type { TenantLimits } from '../domain/tenant';
import type { ApiEvent } from './http';
import { header } from './http';

export async function callerOf(event: ApiEvent, authenticator: Authenticator, defaults: TenantLimits): Promise<Caller> {
  const authorizer = (event.requestContext as { authorizer?: { lambda?: unknown } }).authorizer;
  return callerFromContext(authorizer?.lambda, defaults) ?? authenticator.authenticate(header(event, 'authorization'));
}
