// Configuration from the environment, read once when a process starts (a missing required value
// fails at start, not on the first request), and written into it: the stack gives its functions
// toEnvironment(config), and the local runtime reads its own through the same table.
import type { z } from 'zod';
import type { SettingName } from './settings';
import { SETTINGS, TUNING_SETTINGS } from './settings';
import type { PoolRoute } from '../store/pools';
import { DEFAULT_POOL_NAME } from '../store/pools';

type ValueOf<K extends SettingName> = z.output<(typeof SETTINGS)[K]['schema']>;

/** What the functions read: one field per entry of SETTINGS (lambdas/config/settings.ts). */
export type SchedulerConfig = { readonly [K in SettingName]: ValueOf<K> };

export type TuningName = (typeof TUNING_SETTINGS)[number];
export type Tuning = { [K in TuningName]: number };

const defaultOf = <K extends SettingName>(key: K): ValueOf<K> => SETTINGS[key].schema.parse(undefined) as ValueOf<K>;

/** The tunables' defaults. */
export const DEFAULT_TUNING: Readonly<Tuning> = Object.fromEntries(TUNING_SETTINGS.map((key) => [key, defaultOf(key)])) as Tuning;

/** The variables a configuration is given in; settings left undefined are left out (their defaults apply). */
export function toEnvironment(config: Partial<SchedulerConfig>, options: { json?: (value: unknown) => string } = {}): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const [key, setting] of Object.entries(SETTINGS) as [SettingName, (typeof SETTINGS)[SettingName]][]) {
    const value: unknown = config[key];
    if (value === undefined) continue;
    // The stack passes its own JSON writer: values holding CDK tokens (queue URLs) need Stack.toJsonString.
    environment[setting.env] = options.json && setting.format.kind === 'json' ? options.json(value) : setting.format.encode(value);
  }
  return environment;
}

/** Reads every setting from `env`; throws naming every malformed or missing variable. */
export function readConfig(env: NodeJS.ProcessEnv = process.env): SchedulerConfig {
  const config: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [key, setting] of Object.entries(SETTINGS) as [SettingName, (typeof SETTINGS)[SettingName]][]) {
    const raw = env[setting.env];
    const given = raw !== undefined && raw !== '';
    const expected = 'expected' in setting ? `must be ${setting.expected}` : undefined;
    let decoded: unknown;
    try {
      decoded = given ? setting.format.decode(raw) : undefined;
    } catch (error) {
      problems.push(`${setting.env}: ${expected ?? (error instanceof Error ? error.message : String(error))}`);
      continue;
    }
    const parsed = setting.schema.safeParse(decoded);
    if (parsed.success) config[key] = parsed.data;
    else
      problems.push(
        `${setting.env}: ${expected ?? parsed.error.issues.map((issue) => `${issue.path.length > 0 ? `${issue.path.join('.')} ` : ''}${issue.message}`).join(', ')}`,
      );
  }
  if (problems.length > 0) throw new Error(`Invalid scheduler configuration: ${problems.join('; ')}`);
  return config as SchedulerConfig;
}

/** The tunables given in `env` (the local runtime's overrides), checked as the functions check them. */
export function tuningFromEnv(env: NodeJS.ProcessEnv = process.env): Partial<Tuning> {
  const given = TUNING_SETTINGS.filter((key) => env[SETTINGS[key].env] !== undefined && env[SETTINGS[key].env] !== '');
  const names = Object.fromEntries(given.map((key) => [SETTINGS[key].env, env[SETTINGS[key].env]]));
  // Required settings are not the question here: stand-ins let the tunables be read alone.
  const config = readConfig({ ...toEnvironment(PLACEHOLDER_RESOURCES), ...names });
  return Object.fromEntries(given.map((key) => [key, config[key]]));
}

const PLACEHOLDER_RESOURCES: Partial<SchedulerConfig> = { jobsTable: '-', runsTable: '-', dispatchQueueUrl: '-', dispatchDlqUrl: '-' };

type RoutingSettings = Pick<SchedulerConfig, 'dispatchQueueUrl' | 'dispatchHighQueueUrl' | 'dispatchLowQueueUrl' | 'dispatchDlqUrl' | 'pools'>;

/**
 * Every pool's routing entry, the default pool first. The default pool's queues travel in
 * DISPATCH_QUEUE_URL and friends (their names from before pools, decision 0091), the others in
 * DISPATCH_POOLS; this and routingSettings are the only code that knows it.
 */
export function poolRoutesOf(config: RoutingSettings): PoolRoute[] {
  const fallback: PoolRoute = {
    name: DEFAULT_POOL_NAME,
    jobTypes: [],
    queueUrl: config.dispatchQueueUrl,
    dlqUrl: config.dispatchDlqUrl,
    ...(config.dispatchHighQueueUrl ? { highQueueUrl: config.dispatchHighQueueUrl } : {}),
    ...(config.dispatchLowQueueUrl ? { lowQueueUrl: config.dispatchLowQueueUrl } : {}),
  };
  return [fallback, ...config.pools.filter((pool) => pool.name !== DEFAULT_POOL_NAME)];
}

/** The settings that carry these pools' routing entries (one of them the default pool); DISPATCH_POOLS only when there are others. */
export function routingSettings(routes: readonly PoolRoute[]): Omit<RoutingSettings, 'pools'> & Partial<Pick<RoutingSettings, 'pools'>> {
  const fallback = routes.find((route) => route.name === DEFAULT_POOL_NAME);
  if (!fallback) throw new Error('the pools have no default pool');
  const others = routes.filter((route) => route !== fallback);
  return {
    dispatchQueueUrl: fallback.queueUrl,
    dispatchDlqUrl: fallback.dlqUrl,
    dispatchHighQueueUrl: fallback.highQueueUrl,
    dispatchLowQueueUrl: fallback.lowQueueUrl,
    ...(others.length > 0 ? { pools: others } : {}),
  };
}
