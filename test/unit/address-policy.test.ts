// The egress guard's address classifier and the create-time URL check.
import { describe, expect, it } from 'vitest';
import type { AddressClass, EgressPolicy } from '../../lambdas/targets/address-policy';
import { PUBLIC_HTTPS_ONLY, classifyAddress, isAllowedAddress, urlRefusal } from '../../lambdas/targets/address-policy';
import { egressPolicyOf, resolveTarget, serviceEndpointsOf } from '../../lambdas/targets/egress';

const LOCAL: EgressPolicy = egressPolicyOf({ localMode: true, allowPrivateTargets: false });
const PRIVATE_ALLOWED: EgressPolicy = egressPolicyOf({ localMode: false, allowPrivateTargets: true });

describe('classifyAddress: IPv4', () => {
  const cases: [string, AddressClass][] = [
    ['8.8.8.8', 'public'],
    ['1.1.1.1', 'public'],
    ['52.94.236.248', 'public'],
    ['100.63.255.255', 'public'],
    ['100.128.0.0', 'public'],
    ['172.15.255.255', 'public'],
    ['172.32.0.0', 'public'],
    ['192.169.0.1', 'public'],
    ['223.255.255.255', 'public'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['100.64.0.1', 'private'],
    ['100.127.255.254', 'private'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.169.254', 'metadata'],
    ['169.254.170.2', 'metadata'],
    ['169.254.0.1', 'link-local'],
    ['169.254.169.253', 'link-local'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.0.0.1', 'reserved'],
    ['192.0.2.10', 'documentation'],
    ['192.88.99.1', 'reserved'],
    ['192.168.1.1', 'private'],
    ['198.18.0.1', 'reserved'],
    ['198.19.255.255', 'reserved'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.254', 'reserved'],
    ['255.255.255.255', 'broadcast'],
  ];
  it.each(cases)('%s is %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });
});

describe('classifyAddress: IPv6', () => {
  const cases: [string, AddressClass][] = [
    ['2606:4700:4700::1111', 'public'],
    ['2a00:1450:4001:80b::200e', 'public'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['[::1]', 'loopback'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf:ffff::1', 'link-local'],
    ['fec0::1', 'reserved'],
    ['fc00::1', 'private'],
    ['fd12:3456:789a::1', 'private'],
    ['fd00:ec2::254', 'metadata'],
    ['fd00:ec2::253', 'metadata'],
    ['ff02::1', 'multicast'],
    ['ff05::1:3', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['3fff::1', 'documentation'],
    ['2001::1', 'reserved'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'],
    ['100::1', 'reserved'],
    ['::0.0.0.1', 'loopback'], // the same address as ::1
    ['::1.2.3.4', 'reserved'],
    ['64:ff9b:1::1', 'private'],
    ['4000::1', 'reserved'],
  ];
  it.each(cases)('%s is %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });
});

describe('classifyAddress: IPv4 carried in IPv6 is classified as the IPv4 address', () => {
  const cases: [string, AddressClass][] = [
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['[::ffff:7f00:1]', 'loopback'],
    ['0:0:0:0:0:ffff:a9fe:a9fe', 'metadata'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:192.168.0.1', 'private'],
    ['::ffff:100.64.0.1', 'private'],
    ['::ffff:0.0.0.0', 'unspecified'],
    ['::ffff:224.0.0.1', 'multicast'],
    ['::ffff:8.8.8.8', 'public'],
    ['::ffff:0:127.0.0.1', 'loopback'],
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['64:ff9b::808:808', 'public'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:a9fe:a9fe::1', 'metadata'],
    ['2002:0808:0808::1', 'public'],
  ];
  it.each(cases)('%s is %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });

  it('calls anything that is not an address invalid', () => {
    for (const text of ['', 'localhost', '127.1', '2130706433', '0x7f.1', '1.2.3.4.5', '::g', '256.0.0.1']) {
      expect(classifyAddress(text)).toBe('invalid');
    }
  });
});

describe('policies', () => {
  it('lets public addresses through every policy and nothing else through the strict one', () => {
    for (const policy of [PUBLIC_HTTPS_ONLY, LOCAL, PRIVATE_ALLOWED]) expect(isAllowedAddress('8.8.8.8', policy)).toBe(true);
    for (const address of ['127.0.0.1', '::1', '10.0.0.1', '100.64.0.1', 'fd00::1', '169.254.169.254', 'fe80::1', '0.0.0.0', '224.0.0.1', '::ffff:127.0.0.1']) {
      expect(isAllowedAddress(address, PUBLIC_HTTPS_ONLY)).toBe(false);
    }
  });

  it('lets local mode call loopback but not private networks', () => {
    expect(isAllowedAddress('127.0.0.1', LOCAL)).toBe(true);
    expect(isAllowedAddress('::1', LOCAL)).toBe(true);
    expect(isAllowedAddress('10.0.0.1', LOCAL)).toBe(false);
    expect(isAllowedAddress('169.254.169.254', LOCAL)).toBe(false);
  });

  it('lets ALLOW_PRIVATE_TARGETS open private networks and loopback, never metadata, link-local or multicast', () => {
    for (const address of ['10.0.0.1', '172.16.5.4', '192.168.1.1', '100.64.0.1', 'fd12::1', '127.0.0.1', '::ffff:10.0.0.1']) {
      expect(isAllowedAddress(address, PRIVATE_ALLOWED)).toBe(true);
    }
    for (const address of [
      '169.254.169.254',
      'fd00:ec2::254',
      '169.254.1.1',
      'fe80::1',
      '0.0.0.0',
      '::',
      '255.255.255.255',
      '224.0.0.1',
      'ff02::1',
      '192.0.2.1',
    ]) {
      expect(isAllowedAddress(address, PRIVATE_ALLOWED)).toBe(false);
    }
  });
});

describe('urlRefusal (create-time check)', () => {
  it('refuses loopback in every spelling the URL parser accepts', () => {
    for (const url of [
      'https://127.0.0.1/',
      'https://2130706433/',
      'https://0x7f.1/',
      'https://0177.0.0.1/',
      'https://127.1/',
      'https://[::1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://[::ffff:7f00:1]:8443/x',
      'https://localhost/',
      'https://LOCALHOST./',
      'https://api.localhost/',
    ]) {
      expect(urlRefusal(url, PUBLIC_HTTPS_ONLY), url).toMatch(/loopback/);
    }
  });

  it('refuses metadata services by address and by name, even where private targets are allowed', () => {
    for (const url of [
      'https://169.254.169.254/latest/meta-data/',
      'https://[fd00:ec2::254]/',
      'https://0xa9fea9fe/',
      'https://metadata.google.internal/',
      'https://instance-data/',
    ]) {
      expect(urlRefusal(url, PRIVATE_ALLOWED), url).toMatch(/metadata/);
    }
  });

  it('refuses private, unspecified and multicast literals, and plain http outside local mode', () => {
    expect(urlRefusal('https://10.1.2.3/', PUBLIC_HTTPS_ONLY)).toMatch(/private/);
    expect(urlRefusal('https://[fd00::1]/', PUBLIC_HTTPS_ONLY)).toMatch(/private/);
    expect(urlRefusal('https://0.0.0.0/', PUBLIC_HTTPS_ONLY)).toMatch(/unspecified/);
    expect(urlRefusal('https://224.0.0.1/', PRIVATE_ALLOWED)).toMatch(/multicast/);
    expect(urlRefusal('http://example.com/', PUBLIC_HTTPS_ONLY)).toBe('must use https');
    expect(urlRefusal('ftp://example.com/', LOCAL)).toBe('must use http or https');
  });

  it('accepts public names and addresses, loopback in local mode, and private literals when allowed', () => {
    expect(urlRefusal('https://example.com/hook', PUBLIC_HTTPS_ONLY)).toBeNull();
    expect(urlRefusal('https://8.8.8.8/', PUBLIC_HTTPS_ONLY)).toBeNull();
    expect(urlRefusal('http://127.0.0.1:8080/hook', LOCAL)).toBeNull();
    expect(urlRefusal('http://localhost:8080/hook', LOCAL)).toBeNull();
    expect(urlRefusal('https://10.0.0.5/hook', PRIVATE_ALLOWED)).toBeNull();
    // A name that resolves somewhere private can only be caught at call time.
    expect(urlRefusal('https://internal.example.com/', PUBLIC_HTTPS_ONLY)).toBeNull();
  });
});

describe("the emulator's own endpoint (local mode)", () => {
  // As the local runtime runs: AWS_ENDPOINT_URL names moto on 127.0.0.1:4566.
  const EMULATOR_LOCAL = egressPolicyOf({ localMode: true, allowPrivateTargets: false }, serviceEndpointsOf({ AWS_ENDPOINT_URL: 'http://127.0.0.1:4566' }));
  const EMULATOR_PRIVATE = egressPolicyOf(
    { localMode: true, allowPrivateTargets: true },
    serviceEndpointsOf({ LAMBDA_ENDPOINT_URL: 'http://localhost:4567/' }),
  );

  it('is refused in every spelling of this machine, while other loopback ports stay callable', () => {
    for (const url of [
      'http://127.0.0.1:4566/moto-api/reset',
      'http://localhost:4566/moto-api/reset',
      'http://LOCALHOST.:4566/moto-api/reset',
      'http://api.localhost:4566/',
      'http://[::1]:4566/moto-api/reset',
      'http://[::ffff:127.0.0.1]:4566/',
      'http://127.1:4566/',
      'http://127.9.8.7:4566/',
      'http://2130706433:4566/',
      'http://0x7f.1:4566/',
      'http://0.0.0.0:4566/moto-api/reset',
      'http://[::]:4566/',
    ]) {
      expect(urlRefusal(url, EMULATOR_LOCAL), url).toMatch(/AWS emulator \(port 4566\)/);
    }
    expect(urlRefusal('http://127.0.0.1:4567/hook', EMULATOR_LOCAL)).toBeNull();
    expect(urlRefusal('http://localhost:8080/hook', EMULATOR_LOCAL)).toBeNull();
  });

  it('is refused on the default port when the endpoint names none, and on private addresses where those are allowed', () => {
    const onDefaultPort = egressPolicyOf({ localMode: true, allowPrivateTargets: true }, serviceEndpointsOf({ AWS_ENDPOINT_URL: 'http://localstack' }));
    expect(urlRefusal('http://localstack/_localstack/health', onDefaultPort)).toMatch(/AWS emulator \(port 80\)/);
    expect(urlRefusal('http://127.0.0.1/', onDefaultPort)).toMatch(/AWS emulator/);
    expect(urlRefusal('http://10.0.0.7:4567/', EMULATOR_PRIVATE)).toMatch(/AWS emulator \(port 4567\)/);
    expect(urlRefusal('http://10.0.0.7:4568/', EMULATOR_PRIVATE)).toBeNull();
  });

  it('is refused at call time whatever name resolves to it', async () => {
    const egress = { policy: EMULATOR_LOCAL, resolve: () => Promise.resolve([{ address: '127.0.0.1', family: 4 }]) };
    expect(await resolveTarget('innocent.example', egress, 4566)).toMatchObject({ kind: 'protected', address: '127.0.0.1', endpoint: { port: 4566 } });
    expect(await resolveTarget('innocent.example', egress, 4600)).toMatchObject({ kind: 'allowed' });
  });
});
