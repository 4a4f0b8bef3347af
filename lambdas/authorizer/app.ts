// The Lambda authorizer of the HTTP API (payload format 2.0, simple responses): an API key in,
// the tenant and its limits out, as context for the API function. API Gateway caches the answer
// per Authorization header for the TTL the stack sets, and answers 401 itself when the header is
// missing. An unknown or revoked key is let through marked unauthenticated, so that the API answers
// the contract's 401 problem+json rather than API Gateway's bare 403 (decision 0023); the mark is
// cached like any answer, so a flood of one bad key costs one lookup per TTL.
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
      // A store failure is not the caller's fault: deny this request, and say why in the logs.
      logger.error('authorizer could not check a key', { error: error instanceof Error ? error.message : String(error) });
      throw error;
    }
  };
}
