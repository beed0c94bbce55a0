import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../config/app.config.js';
import { cidrProblem } from './cidr.js';
import { NetworkPolicy } from './network.policy.js';

describe(NetworkPolicy.name, () => {
  const closed = new NetworkPolicy();

  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback, top of the range'],
    ['10.0.0.1', 'RFC 1918 10/8'],
    ['172.16.0.1', 'RFC 1918 172.16/12'],
    ['172.31.255.255', 'RFC 1918 172.16/12, top'],
    ['192.168.1.1', 'RFC 1918 192.168/16'],
    ['169.254.169.254', 'link-local cloud metadata'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.255', 'CGNAT, top'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', '"this network"'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast (SSDP)'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['192.0.2.10', 'TEST-NET-1'],
    ['198.18.0.1', 'benchmarking'],
    ['::1', 'IPv6 loopback'],
    ['::', 'IPv6 unspecified'],
    ['::7f00:1', 'IPv4-compatible loopback (deprecated form)'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback, dotted'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex (how URL parsing writes it)'],
    ['::ffff:a9fe:a9fe', 'IPv4-mapped metadata address'],
    ['::ffff:10.1.2.3', 'IPv4-mapped RFC 1918'],
    ['fc00::1', 'ULA fc00::/7'],
    ['fd12:3456:789a::1', 'ULA fd00::/8'],
    ['fe80::1', 'IPv6 link-local'],
    ['fe80::1%eth0', 'IPv6 link-local with a scope'],
    ['ff02::1', 'IPv6 multicast'],
    ['::ffff:0:7f00:1', 'IPv4-translated loopback, hex'],
    ['::ffff:0:127.0.0.1', 'IPv4-translated loopback, dotted'],
    ['0:0:0:0:ffff:0:a9fe:a9fe', 'IPv4-translated metadata address, written out'],
    ['::ffff:0:a00:1', 'IPv4-translated RFC 1918'],
    ['64:ff9b::7f00:1', 'NAT64 of loopback'],
    ['64:ff9b::808:808', 'NAT64 of a public address (a gateway reaches it)'],
    ['64:ff9b:1::a00:1', 'local-use NAT64'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
    ['2002:7f00:1::1', '6to4 of loopback'],
    ['2001:db8::1', 'IPv6 documentation'],
  ])('should refuse %s (%s) by default', (address) => {
    expect(closed.refusal(address)).toMatch(/private or reserved range.*ALLOW_PRIVATE_NETWORKS/);
  });

  it.each([
    ['8.8.8.8'],
    ['1.1.1.1'],
    ['93.184.215.14'],
    ['172.32.0.1'],
    ['100.128.0.1'],
    ['11.0.0.1'],
    ['2606:4700:4700::1111'],
    ['::ffff:8.8.8.8'],
    ['::ffff:0:808:808'],
  ])('should allow the public address %s', (address) => {
    expect(closed.refusal(address)).toBeUndefined();
  });

  it('should refuse something that is not an IP literal', () => {
    expect(closed.refusal('localhost')).toMatch(/not an IP address/);
  });

  it.each([
    [['127.0.0.2/32'], '127.0.0.2', true],
    [['127.0.0.2/32'], '127.0.0.1', false],
    [['127.0.0.2/32'], '127.0.0.3', false],
    [['127.0.0.2/32'], '::ffff:7f00:2', true],
    [['127.0.0.2/32'], '::ffff:0:7f00:2', true],
    [['127.0.0.2/32'], '::ffff:0:7f00:1', false],
    [['127.0.0.0/8'], '64:ff9b::7f00:1', false],
    [['127.0.0.2'], '127.0.0.2', true],
    [['127.0.0.0/8'], '127.9.9.9', true],
    [['127.0.0.0/8'], '10.0.0.1', false],
    [['127.0.0.0/8'], '::1', false],
    [['10.0.0.0/8', '::1/128'], '::1', true],
    [['10.0.0.0/8', '::1/128'], '10.200.0.1', true],
    [['10.0.0.0/8', '::1/128'], '169.254.169.254', false],
  ])('with ALLOW_PRIVATE_NETWORKS=%j should allow %s: %s', (allow, address, allowed) => {
    expect(new NetworkPolicy(allow).refusal(address) === undefined).toBe(allowed);
  });

  it.each([
    ['127.0.0.0/8', undefined],
    ['10.0.0.1', undefined],
    ['fd00::/8', undefined],
    [' 192.168.0.0/16 ', undefined],
    ['127.0.0.0/33', /prefix length of 0 to 32/],
    ['::/129', /prefix length of 0 to 128/],
    ['10.0.0.0/-1', /prefix length/],
    ['10.0.0.0/8/8', /prefix length/],
    ['10.0.0.0/', /prefix length/],
    ['10.0.0.0/abc', /prefix length/],
    ['localhost', /not an IP address or CIDR/],
    ['10.0.0/8', /not an IP address or CIDR/],
    ['', /not an IP address or CIDR/],
  ])('should judge the CIDR %j', (cidr, problem) => {
    if (problem) expect(cidrProblem(cidr)).toMatch(problem);
    else expect(cidrProblem(cidr)).toBeUndefined();
  });

  it('should throw on a bad CIDR at construction', () => {
    expect(() => new NetworkPolicy(['127.0.0.0/40'])).toThrow(/invalid CIDR/);
  });
});

describe('ALLOW_PRIVATE_NETWORKS at boot', () => {
  it('should accept a list of CIDRs and bare addresses', () => {
    expect(loadConfig({ ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8, 10.1.2.3 ,fd00::/8' }).allowPrivateNetworks).toEqual(['127.0.0.0/8', '10.1.2.3', 'fd00::/8']);
  });

  it('should fail listing every bad entry', () => {
    let error: unknown;
    try {
      loadConfig({ ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8,intranet,10.0.0.0/40' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain('ALLOW_PRIVATE_NETWORKS="127.0.0.0/8,intranet,10.0.0.0/40"');
    expect(message).toContain('"intranet" is not an IP address or CIDR');
    expect(message).toContain('"10.0.0.0/40" needs a prefix length of 0 to 32');
    expect(message).not.toContain('"127.0.0.0/8" ');
  });
});
