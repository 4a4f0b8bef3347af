// The AWS requests the scheduler's functions make, as the IAM action each needs and the resource it
// names, by function (scripts/local/function-role.ts). The integration suite records them in every
// test file and writes them out when the file ends; test/grants checks them all against the grants
// the stack gives each function. moto enforces no IAM, so this is how a missing grant shows before
// a deployment does.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { AwsClients } from '../../lambdas/store/aws';
import { currentFunction } from '../../scripts/local/function-role';

/** One kind of request a function made: `dynamodb:Query` on `table:<name>` (via an index), `sqs:SendMessage` on `queue:<name>`. */
export interface Access {
  readonly role: string;
  readonly action: string;
  /** `table:<table name>`, `queue:<queue name>`, or `*` for actions without a resource (GetMetricData). */
  readonly resource: string;
  /** A Query or Scan of a secondary index (its grant names `<table>/index/*`). */
  readonly index?: boolean;
}

/** Where the integration files write what they recorded, for the grants check that runs after them. */
export const ACCESS_LOG_DIR = join(process.cwd(), '.local', 'access-log');

type Handler = (args: { input: Record<string, unknown> }) => Promise<unknown>;
interface MiddlewareStack {
  add(middleware: (next: Handler, context: { commandName?: string }) => Handler, options: { step: 'initialize'; name: string }): void;
}

const recorded = new Map<string, Access>();
const attached = new WeakSet<object>();

function record(access: Access): void {
  recorded.set(JSON.stringify(access), access);
}

// Batch and transaction operations are authorized as the single-item actions they contain.
const SQS_ACTIONS: Record<string, string> = {
  SendMessageBatch: 'SendMessage',
  DeleteMessageBatch: 'DeleteMessage',
  ChangeMessageVisibilityBatch: 'ChangeMessageVisibility',
};
const TRANSACT_ACTIONS: Record<string, string> = {
  Put: 'PutItem',
  Update: 'UpdateItem',
  Delete: 'DeleteItem',
  ConditionCheck: 'ConditionCheckItem',
  Get: 'GetItem',
};

/** The accesses one DynamoDB request needs: one per table, and per contained action for transactions. */
export function dynamoAccesses(role: string, operation: string, input: Record<string, unknown>): Access[] {
  if (operation === 'TransactWriteItems' || operation === 'TransactGetItems') {
    const items = (input.TransactItems ?? []) as Record<string, { TableName?: string }>[];
    return items.flatMap((item) =>
      Object.entries(item).map(([kind, request]) => ({
        role,
        action: `dynamodb:${TRANSACT_ACTIONS[kind] ?? kind}`,
        resource: `table:${request.TableName ?? '?'}`,
      })),
    );
  }
  if (operation === 'BatchGetItem' || operation === 'BatchWriteItem') {
    return Object.keys((input.RequestItems ?? {}) as Record<string, unknown>).map((table) => ({
      role,
      action: `dynamodb:${operation}`,
      resource: `table:${table}`,
    }));
  }
  const table = typeof input.TableName === 'string' ? input.TableName : '?';
  return [{ role, action: `dynamodb:${operation}`, resource: `table:${table}`, ...(input.IndexName ? { index: true } : {}) }];
}

/** The access one SQS, CloudWatch, KMS, Secrets Manager or S3 request needs. */
export function otherAccess(
  role: string,
  service: 'sqs' | 'cloudwatch' | 'kms' | 'secretsmanager' | 's3',
  operation: string,
  input: Record<string, unknown>,
): Access {
  // The payload bucket's objects, by the prefix the grants name (`jobs/`, `runs/`).
  if (service === 's3') {
    const prefix = typeof input.Key === 'string' ? input.Key.split('/')[0] : '?';
    return { role, action: `s3:${operation === 'HeadObject' ? 'GetObject' : operation}`, resource: `bucket:payloads/${prefix}` };
  }
  if (service === 'cloudwatch') return { role, action: `cloudwatch:${operation}`, resource: '*' };
  // Header secrets: the tests' schedulers list exactly the secrets their jobs name (headerSecretArns).
  if (service === 'secretsmanager') return { role, action: `secretsmanager:${operation}`, resource: 'secret:listed' };
  // The deployment has one KMS key, the signing secrets'.
  if (service === 'kms') return { role, action: `kms:${operation}`, resource: 'key:signing' };
  const url = typeof input.QueueUrl === 'string' ? input.QueueUrl : '?';
  return { role, action: `sqs:${SQS_ACTIONS[operation] ?? operation}`, resource: `queue:${url.split('/').pop() ?? url}` };
}

/** Records every request these clients make inside a function invocation of the local runtime. */
export function recordAccesses(clients: AwsClients): void {
  const attach = (stack: MiddlewareStack, service: 'dynamodb' | 'sqs' | 'cloudwatch' | 'kms' | 'secretsmanager' | 's3') => {
    if (attached.has(stack)) return;
    attached.add(stack);
    stack.add(
      (next, context) => (args) => {
        const role = currentFunction();
        if (role) {
          const operation = (context.commandName ?? 'Unknown').replace(/Command$/, '');
          const accesses = service === 'dynamodb' ? dynamoAccesses(role, operation, args.input) : [otherAccess(role, service, operation, args.input)];
          accesses.forEach(record);
        }
        return next(args);
      },
      { step: 'initialize', name: `accessLog-${service}` },
    );
  };
  attach(clients.dynamo.middlewareStack, 'dynamodb');
  attach(clients.sqs.middlewareStack, 'sqs');
  attach(clients.cloudwatch.middlewareStack, 'cloudwatch');
  attach(clients.kms.middlewareStack, 'kms');
  attach(clients.secrets.middlewareStack, 'secretsmanager');
  attach(clients.s3.middlewareStack, 's3');
}

/** Writes what this process recorded (one file per test file) for the grants check. */
export function writeAccessLog(name: string): void {
  if (recorded.size === 0) return;
  mkdirSync(ACCESS_LOG_DIR, { recursive: true });
  writeFileSync(join(ACCESS_LOG_DIR, `${name.replace(/[^A-Za-z0-9.-]/g, '_')}-${randomUUID().slice(0, 8)}.json`), JSON.stringify([...recorded.values()]));
  recorded.clear();
}

/** Starts a new log: the integration suite's global setup calls it, so a check reads only this run's. */
export function clearAccessLog(): void {
  rmSync(ACCESS_LOG_DIR, { recursive: true, force: true });
}

/** Every access the integration files of the last run recorded. */
export function readAccessLog(): Access[] {
  let files: string[];
  try {
    files = readdirSync(ACCESS_LOG_DIR).filter((file) => file.endsWith('.json'));
  } catch {
    return [];
  }
  const all = new Map<string, Access>();
  for (const file of files)
    for (const access of JSON.parse(readFileSync(join(ACCESS_LOG_DIR, file), 'utf8')) as Access[]) all.set(JSON.stringify(access), access);
  return [...all.values()];
}
