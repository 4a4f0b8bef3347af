// The admin commands: tenants, their limits, their grants and their API keys. Plain functions over the
// repositories, so that tests run them against the emulator; scripts/admin.ts is the CLI.
import type { AuditDeps, AuditRecord } from '../../lambdas/app/audit';
import { recordAudit } from '../../lambdas/app/audit';
import { changesBetween } from '../../lambdas/domain/audit';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import type { Tenant, TenantLimits } from '../../lambdas/domain/tenant';
import { effectiveLimits, tenantIdSchema, tenantLimitsSchema } from '../../lambdas/domain/tenant';
import { tenantGrantsSchema } from '../../lambdas/domain/target-allowlist';
import type { ApiKeysRepository } from '../../lambdas/store/api-keys-repository';
import type { TenantsRepository } from '../../lambdas/store/tenants-repository';

export interface AdminContext {
  readonly tenants: TenantsRepository;
  readonly apiKeys: ApiKeysRepository;
  /**
   * The deployment's tenant defaults, to show the limits in force; null when unknown (a deployment
   * whose TENANT_DEFAULT_LIMITS the command was not given). Never stored into a tenant.
   */
  readonly defaults: TenantLimits | null;
  readonly now: () => number;
  /** Appends to the tenant's audit trail what the operator changed (actor `admin`). */
  readonly audit: (record: Omit<AuditRecord, 'actor'>) => Promise<unknown>;
}

export class AdminUsageError extends Error {}

export const ADMIN_USAGE = `Usage: npm run admin -- <command> [options]
  tenant create <tenant-id> [--name <name>] [limits] [grants]   create a tenant and issue its first API key
  tenant show <tenant-id>                              profile, its own limits and those in force, grants, usage and keys
  tenant limits <tenant-id> [limits]                   change some of its limits
  tenant grants <tenant-id> grants                     set or clear the ARNs it may use
  key issue <tenant-id>                                issue another API key (printed once)
  key list <tenant-id>                                 its keys (ids, created, revoked)
  key revoke <tenant-id> <key-id>                      revoke a key (takes effect within 2 minutes)
limits: --max-active-jobs <n|none> --max-in-flight-runs <n|none> --creates-per-second <n|none> --max-active-backfills <n|none>
grants: --arns <arn,arn,…>   exact ARNs of secrets, Lambda functions, SQS queues, event buses, SNS topics
        --arns none          no ARN at all (plain HTTP targets and HTTP notifications only)
        --arns all           clear them: every ARN the deployment lists, which all its tenants share
target: local emulator by default; --jobs-table <JobsTableName output> for a deployment (AWS credentials)`;

const LIMIT_OPTIONS = {
  'max-active-jobs': 'maxActiveJobs',
  'max-in-flight-runs': 'maxInFlightRuns',
  'creates-per-second': 'createsPerSecond',
  'max-active-backfills': 'maxActiveBackfills',
} as const;

/** The audit of an operator's change: the actor is `admin`, as the CLI holds no API key. */
export function auditAsAdmin(deps: AuditDeps): AdminContext['audit'] {
  return (record) => recordAudit(deps, { ...record, actor: 'admin' });
}

/** Every option the admin CLI takes, declared once: the entry script and `runAdmin` parse alike. */
const ADMIN_OPTIONS = {
  name: { type: 'string' },
  'max-active-jobs': { type: 'string' },
  'max-in-flight-runs': { type: 'string' },
  'creates-per-second': { type: 'string' },
  'max-active-backfills': { type: 'string' },
  arns: { type: 'string' },
  'jobs-table': { type: 'string' },
} as const;

/** The commands that take `--arns`: anywhere else it would be ignored, and an operator think grants were set. */
const GRANTING_COMMANDS: ReadonlySet<string> = new Set(['tenant create', 'tenant grants']);

/**
 * `--arns` as the grants it sets (decision 0194): `all` clears them (null: every ARN the deployment
 * grants), `none` grants no ARN at all, anything else is a comma-separated list of exact ARNs.
 */
export function parseGrants(raw: string): readonly string[] | null {
  const value = raw.trim();
  if (value === 'all') return null;
  if (value === 'none') return [];
  const arns = [...new Set(value.split(/[\s,]+/).filter(Boolean))];
  if (arns.length === 0) throw new AdminUsageError('--arns: give ARNs separated by commas, or none, or all');
  const parsed = tenantGrantsSchema.safeParse(arns);
  if (!parsed.success) {
    throw new AdminUsageError(
      `--arns: ${parsed.error.issues.map((issue) => (issue.path.length > 0 ? `${arns[Number(issue.path[0])] ?? ''}: ${issue.message}` : issue.message)).join('; ')}`,
    );
  }
  return parsed.data;
}

/**
 * Parses the admin CLI's arguments strictly: an unknown option, an option without its value (or
 * with an empty one) is an AdminUsageError, never a flag and a stray positional.
 */
export function parseAdminArgs(argv: readonly string[]) {
  const parsed = parseOrExplain({ args: [...argv], allowPositionals: true, strict: true, options: ADMIN_OPTIONS });
  for (const [option, value] of Object.entries(parsed.values)) {
    if (value === '') throw new AdminUsageError(`Option '--${option} <value>' needs a value\n${ADMIN_USAGE}`);
  }
  // An unknown command is refused here, before the entry script starts an emulator for it.
  const [noun, verb, id, keyId] = parsed.positionals;
  if (!ADMIN_COMMANDS.has(`${noun ?? ''} ${verb ?? ''}`)) throw new AdminUsageError(ADMIN_USAGE);
  // So is a command without what it acts on, with the usage to say what that is.
  if (id === undefined) throw new AdminUsageError(`${noun} ${verb} needs a tenant id\n${ADMIN_USAGE}`);
  if (noun === 'key' && verb === 'revoke' && keyId === undefined) throw new AdminUsageError(`key revoke needs a tenant id and a key id\n${ADMIN_USAGE}`);
  const arns = parsed.values.arns;
  if (arns !== undefined && !GRANTING_COMMANDS.has(`${noun} ${verb}`))
    throw new AdminUsageError(`${noun} ${verb} takes no --arns; set grants with tenant grants`);
  if (noun === 'tenant' && verb === 'grants' && arns === undefined)
    throw new AdminUsageError(`tenant grants needs --arns <arn,arn,…>, --arns none or --arns all\n${ADMIN_USAGE}`);
  // Checked here too, so that the entry script refuses a bad ARN before it starts an emulator.
  if (arns !== undefined) parseGrants(arns);
  return parsed;
}

const ADMIN_COMMANDS: ReadonlySet<string> = new Set(['tenant create', 'tenant show', 'tenant limits', 'tenant grants', 'key issue', 'key list', 'key revoke']);

/** Runs one admin command; returns what to print. Bad input throws AdminUsageError and changes nothing. */
export async function runAdmin(argv: readonly string[], ctx: AdminContext): Promise<Record<string, unknown>> {
  const { values, positionals } = parseAdminArgs(argv);
  const [noun, verb, id, keyId] = positionals;
  const tenantId = (): string => {
    const parsed = tenantIdSchema.safeParse(id);
    if (!parsed.success) throw new AdminUsageError(`tenant id: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    return parsed.data;
  };
  const limits = (): Partial<TenantLimits> => {
    const given: Record<string, number | null> = {};
    for (const [option, field] of Object.entries(LIMIT_OPTIONS)) {
      const raw = values[option as keyof typeof LIMIT_OPTIONS];
      if (raw === undefined) continue;
      given[field] = raw === 'none' ? null : Number(raw);
    }
    const parsed = tenantLimitsSchema.partial().safeParse(given);
    if (!parsed.success) {
      throw new AdminUsageError(parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message} (a whole number, or none)`).join('; '));
    }
    return parsed.data;
  };
  // Its own limits are stored; those in force resolve over the deployment's defaults when used.
  const limitsOf = (tenant: Tenant) =>
    ctx.defaults
      ? { effectiveLimits: effectiveLimits(ctx.defaults, tenant.limits) }
      : {
          effectiveLimits: null,
          limitsNote: 'Limits the tenant has not set are the deployment defaults: set TENANT_DEFAULT_LIMITS as deployed to see those in force.',
        };
  // What the tenant may name: its grants, or every ARN the deployment grants when it has none.
  const grantsOf = (tenant: Tenant) => ({
    grants: tenant.grants ?? null,
    grantsNote:
      tenant.grants === undefined
        ? 'No grants: the tenant may name every secret and AWS resource the deployment lists (headerSecretArns, targets), those other tenants use too. Give each tenant of a shared deployment its grants: tenant grants <tenant-id> --arns …'
        : 'The tenant may name only these, and of these only what the deployment also lists (headerSecretArns, targets).',
  });
  const existing = async (): Promise<Tenant> => {
    const tenant = await ctx.tenants.get(tenantId());
    if (!tenant) throw new AdminUsageError(`no tenant ${tenantId()}; create it with: tenant create ${tenantId()}`);
    return tenant;
  };

  switch (`${noun ?? ''} ${verb ?? ''}`) {
    case 'tenant create': {
      const own = limits();
      const name = z
        .string()
        .min(1)
        .max(200)
        .safeParse(values.name ?? tenantId());
      if (!name.success) throw new AdminUsageError('name: 1 to 200 characters');
      const grants = values.arns === undefined ? null : parseGrants(values.arns);
      const at = new Date(ctx.now()).toISOString();
      // Only what was given: a limit copied from the defaults would no longer follow them.
      const tenant: Tenant = { tenantId: tenantId(), name: name.data, limits: own, ...(grants ? { grants } : {}), createdAt: at, updatedAt: at };
      if (!(await ctx.tenants.create(tenant))) throw new AdminUsageError(`tenant ${tenant.tenantId} exists already`);
      // Its name and the limits it was given (those not given follow the deployment's defaults).
      await ctx.audit({
        tenantId: tenant.tenantId,
        action: 'tenant.create',
        objectId: tenant.tenantId,
        changes: changesBetween(undefined, { name: tenant.name, ...tenant.limits, ...(tenant.grants ? { grants: tenant.grants } : {}) }, new Set()),
      });
      const apiKey = newApiKey();
      const issuedKeyId = await ctx.apiKeys.issue(apiKey, tenant.tenantId, ctx.now());
      await ctx.audit({ tenantId: tenant.tenantId, action: 'api-key.issue', objectId: issuedKeyId });
      return { tenant, apiKey, keyId: issuedKeyId, note: 'The API key is shown once; store it now.' };
    }
    case 'tenant show': {
      const tenant = await existing();
      return {
        tenant,
        ...limitsOf(tenant),
        ...grantsOf(tenant),
        usage: await ctx.tenants.usage(tenant.tenantId),
        keys: await ctx.apiKeys.list(tenant.tenantId),
      };
    }
    case 'tenant grants': {
      const before = await existing();
      const grants = parseGrants(values.arns ?? '');
      const tenant = await ctx.tenants.setGrants(tenantId(), grants, ctx.now());
      // The lists before and after (the tenant's own ARNs, which its audit trail may show it).
      const changed = changesBetween({ grants: before.grants }, { grants: grants ?? undefined }, new Set());
      if (Object.keys(changed).length > 0) await ctx.audit({ tenantId: before.tenantId, action: 'tenant.grants', objectId: before.tenantId, changes: changed });
      return {
        tenant,
        ...(tenant ? grantsOf(tenant) : {}),
        note: 'Running functions pick the new grants up within 2 minutes; a job naming an ARN no longer granted fails its next attempt (NOT_GRANTED).',
      };
    }
    case 'tenant limits': {
      const before = await existing();
      const changes = limits();
      if (Object.keys(changes).length === 0) throw new AdminUsageError('give at least one limit to change');
      const tenant = await ctx.tenants.setLimits(tenantId(), changes, ctx.now());
      const changed = changesBetween(before.limits ?? {}, tenant?.limits ?? {}, new Set());
      // Limits set to the values they had changed nothing: no entry.
      if (Object.keys(changed).length > 0) await ctx.audit({ tenantId: before.tenantId, action: 'tenant.limits', objectId: before.tenantId, changes: changed });
      return { tenant, ...(tenant ? limitsOf(tenant) : {}), note: 'Running functions pick the new limits up within 2 minutes.' };
    }
    case 'key issue': {
      const tenant = await existing();
      const apiKey = newApiKey();
      const issuedKeyId = await ctx.apiKeys.issue(apiKey, tenant.tenantId, ctx.now());
      await ctx.audit({ tenantId: tenant.tenantId, action: 'api-key.issue', objectId: issuedKeyId });
      return { tenantId: tenant.tenantId, apiKey, keyId: issuedKeyId, note: 'The API key is shown once; store it now.' };
    }
    case 'key list': {
      const tenant = await existing();
      return { tenantId: tenant.tenantId, keys: await ctx.apiKeys.list(tenant.tenantId) };
    }
    case 'key revoke': {
      const tenant = await existing();
      if (!keyId || !/^key_[0-9a-f]{16}$/.test(keyId)) throw new AdminUsageError('key id: as `key list` shows it, e.g. key_0123456789abcdef');
      const outcome = await ctx.apiKeys.revoke(tenant.tenantId, keyId, ctx.now());
      if (outcome === 'not-found') throw new AdminUsageError(`tenant ${tenant.tenantId} has no key ${keyId}`);
      await ctx.audit({ tenantId: tenant.tenantId, action: 'api-key.revoke', objectId: keyId, changes: { outcome: { after: outcome } } });
      return { tenantId: tenant.tenantId, keyId, outcome, note: 'Requests with this key are refused within 2 minutes (authorizer caches).' };
    }
    default:
      throw new AdminUsageError(ADMIN_USAGE);
  }
}

function parseOrExplain<T extends NonNullable<Parameters<typeof parseArgs>[0]>>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    throw new AdminUsageError(`${error instanceof Error ? error.message : String(error)}\n${ADMIN_USAGE}`);
  }
}

export function newApiKey(): string {
  return `sk_${randomBytes(24).toString('base64url')}`;
}
