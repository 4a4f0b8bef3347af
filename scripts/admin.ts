// `npm run admin -- <command>`: tenants, limits and API keys (see scripts/ops/admin.ts for the
// commands). Local emulator by default; `--jobs-table <name>` for a deployment.
import { readConfig } from '../lambdas/config/config';
import type { TenantLimits } from '../lambdas/domain/tenant';
import { ApiKeysRepository } from '../lambdas/store/api-keys-repository';
import { createAwsClients } from '../lambdas/store/aws';
import { TenantsRepository } from '../lambdas/store/tenants-repository';
import { emulatorEnvironment, ensureEmulator } from './local/emulator';
import { createLocalResources } from './local/resources';
import { localPoolsFromEnv } from './local/pools';
import { AdminUsageError, auditAsAdmin, parseAdminArgs, runAdmin } from './ops/admin';
import { AuditLog } from '../lambdas/store/audit-log';
import { SETTINGS } from '../lambdas/config/settings';

const argv = process.argv.slice(2);
// Parsed with the commands' own declared options before anything else: `--jobs-table` without its
// value must be an error, never local mode (which would write the tenant to the emulator and print
// a key the deployment refuses).
let jobsTable: string | undefined;
try {
  jobsTable = parseAdminArgs(argv).values['jobs-table'];
} catch (error) {
  if (!(error instanceof AdminUsageError)) throw error;
  console.error(error.message);
  process.exit(2);
}
// The deployment's tenant defaults, only to show the limits in force: unknown (null) against a
// deployment unless TENANT_DEFAULT_LIMITS says what it was deployed with.
let defaults: TenantLimits | null = null;
if (!jobsTable) {
  const emulator = await ensureEmulator();
  Object.assign(process.env, emulatorEnvironment(emulator.endpoint));
  const config = await createLocalResources(createAwsClients(), process.env.LOCAL_PREFIX ?? 'scheduler', {}, {}, localPoolsFromEnv());
  jobsTable = config.jobsTable;
  defaults = config.tenantDefaults;
} else if (process.env.TENANT_DEFAULT_LIMITS) {
  defaults = readConfig({ ...process.env, JOBS_TABLE: jobsTable, RUNS_TABLE: '-', DISPATCH_QUEUE_URL: '-', DISPATCH_DLQ_URL: '-' }).tenantDefaults;
}
const clients = createAwsClients();
try {
  const output = await runAdmin(argv, {
    tenants: new TenantsRepository(clients.dynamo, jobsTable),
    apiKeys: new ApiKeysRepository(clients.dynamo, jobsTable),
    defaults,
    now: Date.now,
    audit: auditAsAdmin({ audit: new AuditLog(clients.dynamo, jobsTable), clock: Date.now, config: { auditRetentionDays: auditRetentionDays() } }),
  });
  console.log(JSON.stringify(output, null, 2));
} catch (error) {
  if (!(error instanceof AdminUsageError)) throw error;
  console.error(error.message);
  process.exitCode = 2;
}

/** The deployment's audit retention (AUDIT_RETENTION_DAYS, as it was deployed with), or the default. */
function auditRetentionDays(): number {
  const raw = process.env.AUDIT_RETENTION_DAYS;
  return SETTINGS.auditRetentionDays.schema.parse(raw === undefined || raw === '' ? undefined : Number(raw));
}
