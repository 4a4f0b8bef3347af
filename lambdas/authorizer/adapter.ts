// The Lambda authorizer of the HTTP API (payload format 2.0, simple responses): an API key in,
// the tenant and its limits out, as context for the API function. API Gateway caches the answer
// per Authorization header for the TTL the stack sets, and answers 401 itself when the header is
// missing. An unknown or revoked key is let through marked unauthenticated, so that the API answers
// the contract's 401 problem+json rather than API Gateway's bare 403 (decision 0023); the mark is
// cached like any answer, so a flood of one bad key costs one lookup per TTL. When the store does
// not answer (its clients time out in seconds), the request is let through marked `unresolved`: an
// authorizer that throws or times out makes API Gateway answer a bare 500, and a denial is a bare
// 403, neither the contract's problem+json. The API function then looks the key up itself and
// answers 503 with Retry-After if the store still does not answer; as the mark may be cached for
// the TTL, that lookup is what lets the key work again as soon as the store is back (decision 0037).
import type { APIGatewayRequestAuthorizerEventV2, APIGatewaySimpleAuthorizerWithContextResult } from 'aws-lambda';
import type { Authenticator } from '../app/authenticate';
import { callerToContext } from '../app/authenticate';
import { UnauthorizedError } from '../core/errors';
import { logger } from '../core/logger';

export type AuthorizerResult = APIGatewaySimpleAuthorizerWithContextResult<Record<string, string>>;

export function createAuthorizerHandler(authenticator: Authenticator) {
  return async (event: Pick<APIGatewayRequestAuthorizerEventV2, 'headers'>): Promise<AuthorizerResult> => {
    const authorization = event.headers?.authorization ?? event.headers?.Authorization;
    try {
      const caller = await authenticator.authenticate(authorization);
      return { isAuthorized: true, context: callerToContext(caller) };
    } catch (error) {
      if (error instanceof UnauthorizedError) return { isAuthorized: true, context: { unauthenticated: error.message } };
      // A store failure is not the caller's fault: the API function checks the key again itself.
      logger.error('authorizer could not check a key; passed on unresolved', { error: error instanceof Error ? error.message : String(error) });
      return { isAuthorized: true, context: { unresolved: 'the key could not be checked' } };
    }
  };
}
