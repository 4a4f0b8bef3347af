// The grants a synthesized stack gives each scheduler function, and the check of recorded AWS
// requests (test/support/access-log.ts) against them. Local resource names and the stack's logical
// ids are both reduced to the same kinds: `table:jobs`, `queue:<pool>/<lane>`, where the pool is
// `default`, the invoking worker's own pool (`own`) or another one (`other`).
import type { Access } from './access-log';

type Resource = { Type: string; Properties: Record<string, any> };
export type Template = Record<string, Resource>;

/** One grant: an action on a resource kind (`*` for resource-less actions). */
export interface Grant {
  readonly action: string;
  readonly resource: string;
}

/** The stack's pools as the check synthesizes them: `own` for a pool worker's pool, `other` for any other. */
export const CHECK_POOLS = [
  { name: 'own', jobTypes: ['own-type'], maxConcurrency: 4, timeoutSeconds: 120 },
  { name: 'other', jobTypes: ['other-type'], maxConcurrency: 4, timeoutSeconds: 120 },
];

/** The function a role stands for in the synthesized stack: `worker:<any pool>` is the `own` pool's worker. */
export function functionOfRole(role: string): string {
  if (role.startsWith('worker:')) return role === 'worker:default' ? 'worker:default' : 'worker:own';
  return role;
}

const LANE_OF: Record<string, string> = { '': 'standard', '-high': 'high', '-low': 'low', '-dlq': 'dlq' };

/**
 * A recorded resource as a kind, seen from the role that used it: a local queue
 * `<prefix>-pool-<name>-high` used by the worker of pool <name> is `queue:own/high`.
 */
export function kindOfRecorded(resource: string, role: string): string | null {
  if (resource === '*' || resource === 'key:signing' || resource === 'secret:listed' || /^bucket:payloads\/(jobs|runs)$/.test(resource)) return resource;
  const table = /^table:.*-(jobs|runs)$/.exec(resource);
  if (table) return `table:${table[1]}`;
  const queue = /^queue:.*?-(dispatch|pool-([a-z][a-z0-9-]*?))(-high|-low|-dlq)?$/.exec(resource);
  if (!queue) return null;
  const lane = LANE_OF[queue[3] ?? '']!;
  const pool = queue[2];
  if (pool === undefined) return `queue:default/${lane}`;
  // A pool worker's own pool is `own` and every other named pool `other`; to the other functions
  // (and the default pool's worker) every named pool is alike, and `own` stands for it.
  const rolePool = role.startsWith('worker:') ? role.slice('worker:'.length) : 'default';
  const seen = rolePool === 'default' || rolePool === pool ? 'own' : 'other';
  return `queue:${seen}/${lane}`;
}

/** The kind of a resource of the synthesized stack, by logical id. */
function kindOfLogicalId(id: string): string | null {
  if (/^SigningKey[0-9A-F]{8}$/.test(id)) return 'key:signing';
  if (/^StoragePayloads[0-9A-F]{8}$/.test(id)) return 'bucket:payloads';
  const table = /^Storage(Jobs|Runs)[0-9A-F]{8}$/.exec(id);
  if (table) return `table:${table[1]!.toLowerCase()}`;
  const queue = /^Storage(?:Pool(Own|Other))?Dispatch(High|Low|Dlq)?[0-9A-F]{8}$/.exec(id);
  if (!queue) return null;
  return `queue:${queue[1] ? queue[1].toLowerCase() : 'default'}/${queue[2] ? queue[2].toLowerCase() : 'standard'}`;
}

/** A policy statement's resource entry as a kind: `table:runs`, `table:runs/index`, `queue:own/low`, `*`. */
function kindOfStatementResource(entry: unknown): string | null {
  if (entry === '*') return '*';
  // The secrets the stack property headerSecretArns lists.
  if (typeof entry === 'string' && /^arn:aws[a-z-]*:secretsmanager:/.test(entry)) return 'secret:listed';
  const text = JSON.stringify(entry);
  const id = /"Fn::GetAtt":\["([A-Za-z0-9]+)","Arn"\]/.exec(text)?.[1];
  if (!id) return null;
  const kind = kindOfLogicalId(id);
  if (!kind) return null;
  // The payload bucket's objects under one prefix: `<bucket ARN>/jobs/*`.
  if (kind === 'bucket:payloads') {
    const prefix = /"\/([a-z]+)\/\*"/.exec(text)?.[1];
    return prefix ? `${kind}/${prefix}` : null;
  }
  return text.includes('/index/*') ? `${kind}/index` : kind;
}

/** The template's scheduler functions by role: api, authorizer, ticker, worker:default, worker:own, worker:other. */
export function functionsByRole(template: Template): Map<string, string> {
  const roles = new Map<string, string>();
  for (const [id, resource] of Object.entries(template)) {
    if (resource.Type !== 'AWS::Lambda::Function') continue;
    const description = String(resource.Properties.Description ?? '');
    const pool = /^Job scheduler pool worker \((own|other):/.exec(description)?.[1];
    const role = pool
      ? `worker:${pool}`
      : description === 'Job scheduler HTTP API'
        ? 'api'
        : description.startsWith('Job scheduler API authorizer')
          ? 'authorizer'
          : description.startsWith('Job scheduler ticker')
            ? 'ticker'
            : description.startsWith('Job scheduler worker')
              ? 'worker:default'
              : null;
    if (role) roles.set(role, id);
  }
  return roles;
}

/** Every (action, resource kind) the role policies of a function allow, for DynamoDB, SQS, CloudWatch, KMS and Secrets Manager. */
export function grantsOf(template: Template, functionId: string): Grant[] {
  const roleRef = template[functionId]!.Properties.Role['Fn::GetAtt'][0] as string;
  const grants = new Map<string, Grant>();
  for (const resource of Object.values(template)) {
    if (resource.Type !== 'AWS::IAM::Policy' || !resource.Properties.Roles.some((role: { Ref: string }) => role.Ref === roleRef)) continue;
    for (const statement of resource.Properties.PolicyDocument.Statement as { Effect: string; Action: string | string[]; Resource: unknown }[]) {
      if (statement.Effect !== 'Allow') continue;
      const actions = [statement.Action].flat().filter((action) => /^(dynamodb|sqs|cloudwatch|kms|secretsmanager|s3):/.test(action));
      for (const entry of [statement.Resource].flat()) {
        const kind = kindOfStatementResource(entry);
        if (!kind) continue;
        for (const action of actions) grants.set(`${action} ${kind}`, { action, resource: kind });
      }
    }
  }
  return [...grants.values()].sort((a, b) => `${a.action} ${a.resource}`.localeCompare(`${b.action} ${b.resource}`));
}

/** What an access needs granted, as (action, kind) from the function it ran as. */
export function neededGrant(access: Access): Grant | null {
  const kind = kindOfRecorded(access.resource, access.role);
  if (!kind) return null;
  return { action: access.action, resource: access.index ? `${kind}/index` : kind };
}

export interface GrantCheck {
  /** Accesses whose function lacks the grant: `role action resource`. */
  readonly missing: string[];
  /** Accesses to resources the check does not know (a parse gap, or a queue or table the stack lacks). */
  readonly unknown: string[];
  /** Grants each function has that no recorded access used: `function action resource`. */
  readonly unused: string[];
  /** Every grant of every function: `function action resource`. */
  readonly granted: string[];
}

export function checkGrants(accesses: readonly Access[], template: Template): GrantCheck {
  const functions = functionsByRole(template);
  const granted = new Map([...functions].map(([role, id]) => [role, new Set(grantsOf(template, id).map((g) => `${g.action} ${g.resource}`))]));
  const used = new Map<string, Set<string>>();
  const missing: string[] = [];
  const unknown: string[] = [];
  for (const access of accesses) {
    const role = functionOfRole(access.role);
    const need = neededGrant(access);
    if (!need || !granted.has(role)) {
      unknown.push(`${access.role} ${access.action} ${access.resource}`);
      continue;
    }
    const key = `${need.action} ${need.resource}`;
    (used.get(role) ?? used.set(role, new Set()).get(role)!).add(key);
    if (!granted.get(role)!.has(key)) missing.push(`${role} ${key}`);
  }
  // Every worker runs the same code: what the default pool's worker did with its own queues, a pool
  // worker does with its pool's, and the other way round.
  const swapPools = (key: string) => key.replace(/ queue:(default|own)\//, (_, pool: string) => ` queue:${pool === 'default' ? 'own' : 'default'}/`);
  const usedBy = (role: string, key: string): boolean => {
    if (used.get(role)?.has(key)) return true;
    const sibling = role === 'worker:default' ? 'worker:own' : role === 'worker:own' ? 'worker:default' : null;
    return sibling !== null && (used.get(sibling)?.has(swapPools(key)) ?? false);
  };
  // worker:other is worker:own seen from another pool. To the functions other than pool workers the
  // `other` pool's queues are the `own` pool's again (see kindOfRecorded).
  const unused = [...granted]
    .filter(([role]) => role !== 'worker:other')
    .flatMap(([role, grants]) =>
      [...grants].filter((key) => !usedBy(role, key) && (role === 'worker:own' || !key.includes(' queue:other/'))).map((key) => `${role} ${key}`),
    );
  const all = [...granted].flatMap(([role, grants]) => [...grants].map((key) => `${role} ${key}`));
  return { missing: [...new Set(missing)].sort(), unknown: [...new Set(unknown)].sort(), unused: unused.sort(), granted: all.sort() };
}
