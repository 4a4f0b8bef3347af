// Where a target call may connect: the deployment's policy, the resolver, and the check of every
// address a host resolves to. The caller connects only to the addresses checked here (it pins
// them), so a DNS answer that changes between the check and the connection changes nothing.
import type { LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { SchedulerConfig } from '../config/config';
import type { AddressClass, EgressPolicy, ProtectedEndpoint } from './address-policy';
import { classifyAddress, isAllowedClass, protectedEndpointOf, protectedEndpointReached } from './address-policy';

/** Resolves a host name to every address it has (as `dns.lookup(host, { all: true })`). */
export type HostResolver = (hostname: string) => Promise<readonly LookupAddress[]>;

export interface Egress {
  readonly policy: EgressPolicy;
  readonly resolve: HostResolver;
}

export const systemResolver: HostResolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

/**
 * The AWS endpoints this process talks to when they are not AWS's own (an emulator: AWS_ENDPOINT_URL,
 * the per-service AWS_ENDPOINT_URL_* and LAMBDA_ENDPOINT_URL). None is set in a deployment.
 */
export function serviceEndpointsOf(env: NodeJS.ProcessEnv = process.env): ProtectedEndpoint[] {
  return Object.entries(env)
    .filter(([name, value]) => value && (name === 'AWS_ENDPOINT_URL' || name.startsWith('AWS_ENDPOINT_URL_') || name === 'LAMBDA_ENDPOINT_URL'))
    .flatMap(([, value]) => {
      const endpoint = protectedEndpointOf(value ?? '');
      return endpoint ? [endpoint] : [];
    });
}

/**
 * Local mode calls plain http and loopback (the tests' targets), but never the emulator's own
 * endpoints; AWS mode only public https.
 */
export function egressPolicyOf(
  config: Pick<SchedulerConfig, 'localMode' | 'allowPrivateTargets'>,
  serviceEndpoints: readonly ProtectedEndpoint[] = serviceEndpointsOf(),
): EgressPolicy {
  return { allowPlainHttp: config.localMode, allowLoopback: config.localMode, allowPrivate: config.allowPrivateTargets, protectedEndpoints: serviceEndpoints };
}

export type ResolvedTarget =
  | { readonly kind: 'allowed'; readonly addresses: readonly LookupAddress[] }
  | { readonly kind: 'blocked'; readonly address: string; readonly addressClass: AddressClass }
  /** An address on the port of one of the deployment's own services (the emulator). */
  | { readonly kind: 'protected'; readonly address: string; readonly endpoint: ProtectedEndpoint };

/** Every address of `host` (a name or a literal) on `port`, or the first that the policy refuses. */
export async function resolveTarget(host: string, egress: Egress, port?: number): Promise<ResolvedTarget> {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  const family = isIP(bare);
  const addresses: readonly LookupAddress[] = family !== 0 ? [{ address: bare, family }] : await egress.resolve(bare);
  if (addresses.length === 0) throw new Error(`${host} has no address`);
  for (const { address } of addresses) {
    const endpoint = port === undefined ? null : protectedEndpointReached(address, port, egress.policy);
    if (endpoint) return { kind: 'protected', address, endpoint };
    const addressClass = classifyAddress(address);
    // One refused address refuses the host: a round-robin answer must not get a private one through.
    if (!isAllowedClass(addressClass, egress.policy)) return { kind: 'blocked', address, addressClass };
  }
  return { kind: 'allowed', addresses };
}
