// Where a target call may connect: the deployment's policy, the resolver, and the check of every
// address a host resolves to. The caller connects only to the addresses checked here (it pins
// them), so a DNS answer that changes between the check and the connection changes nothing.
import type { LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { SchedulerConfig } from '../core/config';
import type { AddressClass, EgressPolicy } from './address-policy';
import { classifyAddress, isAllowedClass } from './address-policy';

/** Resolves a host name to every address it has (as `dns.lookup(host, { all: true })`). */
export type HostResolver = (hostname: string) => Promise<readonly LookupAddress[]>;

export interface Egress {
  readonly policy: EgressPolicy;
  readonly resolve: HostResolver;
}

export const systemResolver: HostResolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

/** Local mode calls plain http and loopback (the tests' targets); AWS mode only public https. */
export function egressPolicyOf(config: Pick<SchedulerConfig, 'localMode' | 'allowPrivateTargets'>): EgressPolicy {
  return { allowPlainHttp: config.localMode, allowLoopback: config.localMode, allowPrivate: config.allowPrivateTargets };
}

export type ResolvedTarget =
  | { readonly kind: 'allowed'; readonly addresses: readonly LookupAddress[] }
  | { readonly kind: 'blocked'; readonly address: string; readonly addressClass: AddressClass };

/** Every address of `host` (a name or a literal), or the first that the policy refuses. */
export async function resolveTarget(host: string, egress: Egress): Promise<ResolvedTarget> {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  const family = isIP(bare);
  const addresses: readonly LookupAddress[] = family !== 0 ? [{ address: bare, family }] : await egress.resolve(bare);
  if (addresses.length === 0) throw new Error(`${host} has no address`);
  for (const { address } of addresses) {
    const addressClass = classifyAddress(address);
    // One refused address refuses the host: a round-robin answer must not get a private one through.
    if (!isAllowedClass(addressClass, egress.policy)) return { kind: 'blocked', address, addressClass };
  }
  return { kind: 'allowed', addresses };
}
