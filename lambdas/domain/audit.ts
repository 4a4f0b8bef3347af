// The audit trail's entries: who changed what, when, and a before/after summary of the change. The
// run history says what the scheduler did; the audit says what people did. A summary never holds a
// payload or a header value: those may be secrets, and the audit is read by everyone with a key.

/** What was done, as the API and the admin CLI name it. */
export const AUDIT_ACTIONS = [
  'job.create',
  'job.update',
  'job.pause',
  'job.resume',
  'job.trigger',
  'job.backfill',
  'job.skip',
  'job.delete',
  'run.cancel',
  'run.replay',
  'notification.resend',
  'dead-runs.replay',
  'signing-secret.issue',
  'signing-secret.revoke',
  'api-key.issue',
  'api-key.revoke',
  'tenant.create',
  'tenant.limits',
  'tenant.grants',
  'workflow.create',
  'workflow.update',
  'workflow.run',
  'workflow.pause',
  'workflow.resume',
  'workflow.delete',
  'workflow-run.cancel',
  'workflow-run.retry',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** One field that changed: its value before and after (absent on a side where it had none). */
export interface FieldChange {
  readonly before?: unknown;
  readonly after?: unknown;
}

export interface AuditEntry {
  readonly auditId: string;
  readonly at: string;
  readonly tenantId: string;
  /** The API key's public id (`key_…`, never the key), or `admin` for the operator's CLI. */
  readonly actor: string;
  readonly action: AuditAction;
  /** The job, run, workflow, secret, key or tenant acted on. */
  readonly objectId: string;
  /**
   * Only on bulk replay entries written before each replayed run got an entry of its own (decision
   * 0119): the runs it replayed, the first of them being `objectId`. Nothing writes it any more.
   */
  readonly objectIds?: readonly string[];
  /** The fields the change set, by name. */
  readonly changes: Readonly<Record<string, FieldChange>>;
  /** The fields the request named (a PATCH), including those whose values are not shown. */
  readonly requested?: readonly string[];
}

/** Fields whose values are never written to the audit, only that they changed. */
const MASKED_FIELDS = new Set(['payload']);

/** A target as the audit shows it: its kind and address, header names only. */
function auditedTarget(target: unknown): unknown {
  if (typeof target !== 'object' || target === null) return target;
  const { headers, ...rest } = target as Record<string, unknown>;
  return headers && typeof headers === 'object' ? { ...rest, headerNames: Object.keys(headers).sort() } : rest;
}

const headersOf = (target: unknown): Readonly<Record<string, unknown>> => {
  const headers = typeof target === 'object' && target !== null ? (target as Record<string, unknown>).headers : undefined;
  return typeof headers === 'object' && headers !== null ? (headers as Record<string, unknown>) : {};
};

/** The names of the headers both targets have whose values differ (added and removed ones show by name). */
function changedHeaderNames(before: unknown, after: unknown): string[] {
  const [was, is] = [headersOf(before), headersOf(after)];
  return Object.keys(is)
    .filter((name) => name in was && !same(was[name], is[name]))
    .sort();
}

function audited(field: string, value: unknown): unknown {
  if (MASKED_FIELDS.has(field)) return '(set)';
  if (field === 'target') return auditedTarget(value);
  return value;
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/**
 * The fields of an object (a job) that differ between before and after, with audited values:
 * bookkeeping fields (versions, timestamps, the pending occurrence) are left out.
 */
export function changesBetween(
  beforeObject: object | undefined,
  afterObject: object | undefined,
  ignored: ReadonlySet<string> = JOB_BOOKKEEPING,
): Record<string, FieldChange> {
  const before = beforeObject as Readonly<Record<string, unknown>> | undefined;
  const after = afterObject as Readonly<Record<string, unknown>> | undefined;
  const changes: Record<string, FieldChange> = {};
  const fields = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})]);
  for (const field of [...fields].sort()) {
    if (ignored.has(field)) continue;
    // A field null on one side and absent on the other (a pause's empty note) did not change.
    const [was, is] = [before?.[field] ?? undefined, after?.[field] ?? undefined];
    if (same(was, is)) continue;
    const shown = audited(field, is);
    // A header's new value is never shown, but that it changed is (a credential swapped).
    const headersChanged = field === 'target' ? changedHeaderNames(was, is) : [];
    changes[field] = {
      ...(was !== undefined ? { before: audited(field, was) } : {}),
      ...(is !== undefined ? { after: headersChanged.length > 0 && typeof shown === 'object' ? { ...shown, headersChanged } : shown } : {}),
    };
  }
  return changes;
}

/** What a job carries beside its definition: not a person's change. */
export const JOB_BOOKKEEPING: ReadonlySet<string> = new Set([
  'upcomingRuns',
  'jobId',
  'tenantId',
  'createdAt',
  'updatedAt',
  'version',
  'nextRunAt',
  'nextRunId',
  'lastStartedRunId',
  'pausedAt',
  'pausedPending',
]);
