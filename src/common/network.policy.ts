import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { cidrProblem } from './cidr.js';

/**
 * Destinations refused unless ALLOW_PRIVATE_NETWORKS opens them: everything that is
 * not the public internet (loopback, RFC 1918, link-local incl. cloud metadata at
 * 169.254.169.254, CGNAT, multicast, reserved, and their IPv6 forms).
 */
const BLOCKED_V4 = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.88.99.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/4',
  '240.0.0.0/4',
  '255.255.255.255/32',
];
const BLOCKED_V6 = [
  // ::/96 holds the unspecified address, ::1 and the deprecated IPv4-compatible forms (::7f00:1).
  '::/96',
  '64:ff9b::/96',
  '64:ff9b:1::/48',
  '100::/64',
  '2001::/23',
  '2001:db8::/32',
  '2002::/16',
  'fc00::/7',
  'fe80::/10',
  'fec0::/10',
  'ff00::/8',
];

/** What a refusal tells to do about it, by default. */
const OPEN_HINT = 'set ALLOW_PRIVATE_NETWORKS to allow it';

export class NetworkPolicy {
  private readonly blocked = new BlockList();
  private readonly allowed = new BlockList();

  /**
   * `allowCidrs`: e.g. ['127.0.0.0/8'] for local use and tests. Throws on a bad CIDR.
   * `hint`: what a refusal says would allow the address.
   */
  constructor(
    allowCidrs: readonly string[] = [],
    private readonly hint = OPEN_HINT,
  ) {
    for (const c of BLOCKED_V4) addCidr(this.blocked, c);
    for (const c of BLOCKED_V6) addCidr(this.blocked, c);
    for (const c of allowCidrs) addCidr(this.allowed, c);
  }

  /** Why `address` (an IP literal) may not be called, or undefined when it may. */
  refusal(address: string): string | undefined {
    const family = isIP(address);
    if (family === 0) return `not an IP address: ${address}`;
    let type: 'ipv4' | 'ipv6' = family === 4 ? 'ipv4' : 'ipv6';
    // A scope (fe80::1%eth0) does not change which range the address is in.
    let ip = address.replace(/%.*$/, '');
    // ::ffff:a.b.c.d reaches a.b.c.d: judge it as the IPv4 address it is.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
    if (mapped) [ip, type] = [mapped[1], 'ipv4'];
    if (this.allowed.check(ip, type)) return undefined;
    if (this.blocked.check(ip, type)) return `destination ${address} is in a private or reserved range (${this.hint})`;
    return undefined;
  }
}

/**
 * Why the policy refuses `hostname` (an IP literal, or a name resolved now: the first of
 * its addresses it refuses), or undefined when it refuses none. A name that does not
 * resolve is not refused here: what is checked at send time is the address then
 * resolved (connector.ts), so this is a check at intake, for a clear 400, not the guard.
 */
export async function hostnameRefusal(policy: NetworkPolicy, hostname: string): Promise<string | undefined> {
  const literal = hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(literal)) return policy.refusal(literal);
  const addresses = await lookup(hostname, { all: true }).catch(() => []);
  for (const a of addresses) {
    const reason = policy.refusal(a.address);
    if (reason) return `${hostname} resolves to ${a.address}: ${reason}`;
  }
  return undefined;
}

export function addCidr(list: BlockList, cidr: string): void {
  const problem = cidrProblem(cidr);
  if (problem) throw new Error(`invalid CIDR: ${problem}`);
  const [ip, bits] = cidr.trim().split('/');
  const family = isIP(ip);
  const prefix = bits === undefined ? (family === 6 ? 128 : 32) : Number(bits);
  list.addSubnet(ip, prefix, family === 6 ? 'ipv6' : 'ipv4');
}
