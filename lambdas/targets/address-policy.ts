// Which network addresses the scheduler may call: a classifier of IPv4 and IPv6 addresses (IPv4
// embedded in IPv6 is classified as the IPv4 address it carries) and the policy of a deployment.
// A target is checked when a job is written (literal addresses and well-known names, for a clear
// 400) and again on every call against what its host resolves to, which is the real guard.
import { isIPv4, isIPv6 } from 'node:net';

export type AddressClass =
  | 'public'
  | 'loopback'
  /** RFC 1918, shared address space (100.64/10), IPv6 unique local (fc00::/7), local-use NAT64. */
  | 'private'
  | 'link-local'
  /** Cloud instance metadata and the other AWS link-local services (169.254.169.254, fd00:ec2::/32). */
  | 'metadata'
  | 'unspecified'
  | 'multicast'
  | 'broadcast'
  | 'documentation'
  /** Anything else that is not globally routable unicast (reserved, benchmarking, deprecated, Teredo). */
  | 'reserved'
  | 'invalid';

export interface EgressPolicy {
  /** Plain `http:` targets (local mode only); otherwise `https:` only. */
  readonly allowPlainHttp: boolean;
  /** Loopback addresses (local mode, whose test targets listen on 127.0.0.1, or allowPrivate). */
  readonly allowLoopback: boolean;
  /** Private addresses (ALLOW_PRIVATE_TARGETS): targets inside the deployment's own network. */
  readonly allowPrivate: boolean;
  /**
   * The deployment's own services that no target may reach whatever the rest allows: locally the
   * AWS emulator, whose control plane (`/moto-api/reset`) would wipe every tenant's tables.
   */
  readonly protectedEndpoints?: readonly ProtectedEndpoint[];
}

/** A host and port no job may call (an emulator's endpoint). */
export interface ProtectedEndpoint {
  /** Lower case, without brackets or a trailing dot. */
  readonly host: string;
  readonly port: number;
}

/** The endpoint a service URL names (its scheme's port when it names none); null when not a URL. */
export function protectedEndpointOf(url: string): ProtectedEndpoint | null {
  if (!URL.canParse(url)) return null;
  const parsed = new URL(url);
  return { host: bareHost(parsed.hostname), port: portOfUrl(parsed) };
}

function bareHost(hostname: string): string {
  return hostname
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '')
    .toLowerCase();
}

function portOfUrl(url: URL): number {
  return Number(url.port || (url.protocol === 'https:' ? 443 : 80));
}

/** The strictest policy: public https targets only. */
export const PUBLIC_HTTPS_ONLY: EgressPolicy = { allowPlainHttp: false, allowLoopback: false, allowPrivate: false };

type V4Range = readonly [base: number, prefix: number, cls: AddressClass];

/** Most specific first. */
const V4_RANGES: readonly V4Range[] = [
  [v4('169.254.169.254'), 32, 'metadata'],
  [v4('169.254.170.2'), 32, 'metadata'], // ECS task metadata and credentials
  [v4('255.255.255.255'), 32, 'broadcast'],
  [v4('0.0.0.0'), 8, 'unspecified'],
  [v4('10.0.0.0'), 8, 'private'],
  [v4('100.64.0.0'), 10, 'private'],
  [v4('127.0.0.0'), 8, 'loopback'],
  [v4('169.254.0.0'), 16, 'link-local'],
  [v4('172.16.0.0'), 12, 'private'],
  [v4('192.0.0.0'), 24, 'reserved'],
  [v4('192.0.2.0'), 24, 'documentation'],
  [v4('192.88.99.0'), 24, 'reserved'],
  [v4('192.168.0.0'), 16, 'private'],
  [v4('198.18.0.0'), 15, 'reserved'],
  [v4('198.51.100.0'), 24, 'documentation'],
  [v4('203.0.113.0'), 24, 'documentation'],
  [v4('224.0.0.0'), 4, 'multicast'],
  [v4('240.0.0.0'), 4, 'reserved'],
];

function v4(dotted: string): number {
  const parts = dotted.split('.').map(Number);
  return (((parts[0] ?? 0) << 24) | ((parts[1] ?? 0) << 16) | ((parts[2] ?? 0) << 8) | (parts[3] ?? 0)) >>> 0;
}

function inV4Range(address: number, base: number, prefix: number): boolean {
  const mask = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0;
  return (address & mask) >>> 0 === (base & mask) >>> 0;
}

function classifyV4(address: number): AddressClass {
  for (const [base, prefix, cls] of V4_RANGES) if (inV4Range(address, base, prefix)) return cls;
  return 'public';
}

/** The eight 16-bit groups of a valid IPv6 address (`::`, embedded dotted quads and all). */
function ipv6Groups(text: string): number[] {
  let source = text;
  const dotted = /(\d{1,3}(?:\.\d{1,3}){3})$/.exec(source);
  if (dotted?.[1]) {
    const value = v4(dotted[1]);
    source = `${source.slice(0, -dotted[1].length)}${(value >>> 16).toString(16)}:${(value & 0xffff).toString(16)}`;
  }
  const [head = '', tail] = source.split('::');
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((group) => parseInt(group, 16)));
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

function classifyV6(groups: readonly number[]): AddressClass {
  const g = (index: number): number => groups[index] ?? 0;
  const embeddedV4 = (high: number): number => ((g(high) << 16) | g(high + 1)) >>> 0;
  const zeroUpTo = (end: number): boolean => groups.slice(0, end).every((group) => group === 0);

  if (zeroUpTo(8)) return 'unspecified';
  if (zeroUpTo(7) && g(7) === 1) return 'loopback';
  // ::ffff:a.b.c.d (mapped) and ::ffff:0:a.b.c.d (translated): what they carry decides.
  if (zeroUpTo(5) && g(5) === 0xffff) return classifyV4(embeddedV4(6));
  if (zeroUpTo(4) && g(4) === 0xffff && g(5) === 0) return classifyV4(embeddedV4(6));
  // ::a.b.c.d, the deprecated IPv4-compatible form, and the rest of ::/8.
  if (g(0) === 0) return 'reserved';
  // NAT64: the well-known prefix carries a public IPv4 address; the local-use prefix is private.
  if (g(0) === 0x64 && g(1) === 0xff9b && g(2) === 0 && g(3) === 0 && g(4) === 0 && g(5) === 0) return classifyV4(embeddedV4(6));
  if (g(0) === 0x64 && g(1) === 0xff9b && g(2) === 1) return 'private';
  if (g(0) === 0x100 && g(1) === 0 && g(2) === 0 && g(3) === 0) return 'reserved'; // discard-only
  if (g(0) === 0x2001 && g(1) === 0x0db8) return 'documentation';
  if (g(0) === 0x2001 && g(1) < 0x200) return 'reserved'; // IETF assignments, Teredo (2001::/32)
  if (g(0) === 0x2002) return classifyV4(embeddedV4(1)); // 6to4 carries an IPv4 address
  if ((g(0) & 0xfff0) === 0x3ff0) return 'documentation'; // 3fff::/20
  if (g(0) === 0xfd00 && g(1) === 0x0ec2) return 'metadata'; // fd00:ec2::254 and AWS DNS/NTP
  if ((g(0) & 0xfe00) === 0xfc00) return 'private';
  if ((g(0) & 0xffc0) === 0xfe80) return 'link-local';
  if ((g(0) & 0xffc0) === 0xfec0) return 'reserved'; // site-local, deprecated
  if ((g(0) & 0xff00) === 0xff00) return 'multicast';
  if ((g(0) & 0xe000) === 0x2000) return 'public';
  return 'reserved';
}

/** Classifies an IP address as DNS returns it or a URL carries it (brackets and zone ids allowed). */
export function classifyAddress(address: string): AddressClass {
  const bare = address.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  if (isIPv4(bare)) return classifyV4(v4(bare));
  if (isIPv6(bare)) return classifyV6(ipv6Groups(bare.toLowerCase()));
  return 'invalid';
}

export function isAllowedClass(cls: AddressClass, policy: EgressPolicy): boolean {
  switch (cls) {
    case 'public':
      return true;
    case 'loopback':
      return policy.allowLoopback || policy.allowPrivate;
    case 'private':
      return policy.allowPrivate;
    default:
      // Link-local, metadata, multicast, broadcast, unspecified, reserved, documentation: never a
      // job's target, whatever the deployment allows.
      return false;
  }
}

export function isAllowedAddress(address: string, policy: EgressPolicy): boolean {
  return isAllowedClass(classifyAddress(address), policy);
}

/**
 * The protected endpoint a connection to `address` (a literal, as DNS returns it) on `port` could
 * reach, or null. Any of this machine's own addresses reaches a service that listens on it (every
 * 127/8 address, ::1, 0.0.0.0, and its private and link-local interfaces when the service listens on
 * all of them), so on a protected port every address that is not public counts, as does the
 * endpoint's own address.
 */
export function protectedEndpointReached(address: string, port: number, policy: EgressPolicy): ProtectedEndpoint | null {
  const bare = bareHost(address.replace(/%.*$/, ''));
  const cls = classifyAddress(bare);
  for (const endpoint of policy.protectedEndpoints ?? []) {
    if (endpoint.port !== port) continue;
    if ((cls !== 'public' && cls !== 'invalid') || bare === endpoint.host) return endpoint;
  }
  return null;
}

/** Names that always mean loopback (RFC 6761) or a cloud metadata service. */
const LOOPBACK_NAMES = /^(localhost|localhost\.localdomain|ip6-localhost|ip6-loopback)$|\.localhost$/;
const METADATA_NAMES = /^(metadata|metadata\.google\.internal|metadata\.goog|instance-data|instance-data\.ec2\.internal)$/;

/**
 * Why a target URL is refused before any DNS lookup (its scheme, a literal address, a well-known
 * name), or null when only the call-time check can tell.
 */
export function urlRefusal(url: string, policy: EgressPolicy): string | null {
  if (!URL.canParse(url)) return 'is not a URL';
  const parsed = new URL(url);
  if (parsed.protocol !== 'https:' && !(policy.allowPlainHttp && parsed.protocol === 'http:')) {
    return policy.allowPlainHttp ? 'must use http or https' : 'must use https';
  }
  // The URL parser has already turned 2130706433, 0x7f.1 and 0177.0.0.1 into 127.0.0.1.
  const host = bareHost(parsed.hostname);
  const port = portOfUrl(parsed);
  const reached = protectedEndpointReached(LOOPBACK_NAMES.test(host) ? '127.0.0.1' : host, port, policy);
  if (reached || (policy.protectedEndpoints ?? []).some((endpoint) => endpoint.port === port && endpoint.host === host)) {
    return `is the endpoint of this deployment's AWS emulator (port ${port}), which no job may call`;
  }
  const literal = classifyAddress(host);
  if (literal !== 'invalid') {
    return isAllowedClass(literal, policy) ? null : `is a ${literal} address, which this deployment does not call`;
  }
  if (LOOPBACK_NAMES.test(host) && !isAllowedClass('loopback', policy)) return 'names a loopback host, which this deployment does not call';
  if (METADATA_NAMES.test(host)) return 'names a cloud metadata service, which the scheduler never calls';
  return null;
}
