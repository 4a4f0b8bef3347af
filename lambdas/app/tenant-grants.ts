// A tenant's grants (decision 0194) where the functions use them: the API checks a job's secrets,
// AWS targets and notification destinations against them with the deployment's lists (jobs.ts), and
// the worker checks again at each call, so that a grant narrowed after a job was written stops its
// calls. Both read the grants with the tenant's limits (TenantLimitsCache: one read a minute per
// tenant and process, the one the worker's in-flight limit already makes for every run).
import { logger } from '../core/logger';
import type { JobTarget } from '../domain/job';
import { isSecretReference } from '../domain/job';
import type { NotifyDestination } from '../domain/notify';
import type { RunError } from '../domain/run';
import type { DeploymentAllowlist } from '../domain/target-allowlist';
import { NO_TARGETS_ALLOWED, destinationGranted, ungrantedAtCall } from '../domain/target-allowlist';
import type { SchedulerDeps } from './deps';

/** The error code of an attempt or a notification try whose ARN the tenant is no longer granted. */
export const NOT_GRANTED = 'NOT_GRANTED';

/** What the deployment lets jobs name: its stack's list, or (local mode) any AWS resource. */
export const deploymentAllowlist = (deps: Pick<SchedulerDeps, 'config'>): DeploymentAllowlist =>
  deps.config.localMode ? null : (deps.config.allowedTargets ?? NO_TARGETS_ALLOWED);

/** Whether a target names an ARN grants cover: a secret header, a function, a queue, a bus. */
export function namesGrantedArn(target: JobTarget): boolean {
  switch (target.kind) {
    case 'http':
      return Object.values(target.headers).some(isSecretReference);
    case 'lambda':
    case 'sqs':
    case 'eventbridge':
      return true;
    default:
      return false;
  }
}

/**
 * Why a job's target must not be called for its tenant now, or null: it names an ARN the tenant's
 * grants no longer cover (not retryable: a grant comes back only by the operator's hand; the error
 * names the kind, never the ARN), or its grants could not be read (retryable, as a secret's read
 * is). Targets that name no ARN read nothing.
 */
export async function callRefusal(deps: SchedulerDeps, tenantId: string, target: JobTarget, fields: Record<string, unknown>): Promise<RunError | null> {
  if (!namesGrantedArn(target)) return null;
  let ungranted: string | null;
  try {
    ungranted = ungrantedAtCall(target, deploymentAllowlist(deps), await deps.tenantLimits.grantsOf(tenantId));
  } catch (error) {
    logger.warn("the tenant's grants could not be read; attempt failed before the call", {
      ...fields,
      error: error instanceof Error ? error.message : String(error),
    });
    return { code: 'GRANTS_UNAVAILABLE', message: "the tenant's grants could not be read; the target was not called", retryable: true };
  }
  if (ungranted === null) return null;
  logger.warn("the job names what its tenant's grants no longer cover; attempt failed before the call", { ...fields, notGranted: ungranted });
  return {
    code: NOT_GRANTED,
    message: `the tenant is not granted ${ungranted} (its grants, set by the operator: npm run admin -- tenant grants); the target was not called`,
    retryable: false,
  };
}

/**
 * Why a notification must not be sent to its topic or bus now, or null: the tenant's grants no
 * longer cover it (not retryable, the destination named by its kind). A read of the grants that
 * fails is thrown: the try stops on a fault and its message comes back.
 */
export async function destinationRefusal(deps: SchedulerDeps, tenantId: string, destination: NotifyDestination): Promise<RunError | null> {
  if (destination.kind === 'http') return null;
  if (destinationGranted(destination, deploymentAllowlist(deps), await deps.tenantLimits.grantsOf(tenantId))) return null;
  const kind = destination.kind === 'sns' ? 'its SNS topic' : 'its event bus';
  return {
    code: NOT_GRANTED,
    message: `the tenant is not granted ${kind} (its grants, set by the operator: npm run admin -- tenant grants); not sent`,
    retryable: false,
  };
}
