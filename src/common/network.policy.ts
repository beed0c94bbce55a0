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
  // IPv4-translated (SIIT) addresses are judged as the IPv4 address they carry
  // (embeddedIpv4), as IPv4-mapped ones are; this entry only backs that up. (The mapped
  // range ::ffff:0:0/96 cannot be listed: BlockList matches IPv4 addresses against it.)
  '::ffff:0:0:0/96',
  // Forms that reach an IPv4 host through a gateway: NAT64 (well-known and local-use
  // prefixes), 6to4 (2002::/16) and Teredo (2001::/32, inside 2001::/23) are refused
  // whatever IPv4 address they embed.
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
    // ::ffff:a.b.c.d and ::ffff:0:a.b.c.d reach a.b.c.d: judge them as the IPv4 address they are.
    const embedded = type === 'ipv6' ? embeddedIpv4(ip) : undefined;
    if (embedded) [ip, type] = [embedded, 'ipv4'];
    if (this.allowed.check(ip, type)) return undefined;
    if (this.blocked.check(ip, type)) return `destination ${address} is in a private or reserved range (${this.hint})`;
    return undefined;
  }
}

/**
 * The IPv4 address an IPv4-mapped (`::ffff:0:0/96`) or IPv4-translated
 * (`::ffff:0:0:0/96`, RFC 2765) IPv6 address stands for, in any of its spellings
 * (`::ffff:7f00:1`, `::ffff:0:127.0.0.1`, `0:0:0:0:0:ffff:7f00:1`); else undefined.
 */
export function embeddedIpv4(ipv6: string): string | undefined {
  const groups = ipv6Groups(ipv6);
  if (!groups) return undefined;
  const zeroUpTo = (n: number) => groups.slice(0, n).every((g) => g === 0);
  const mapped = zeroUpTo(5) && groups[5] === 0xffff;
  const translated = zeroUpTo(4) && groups[4] === 0xffff && groups[5] === 0;
  if (!mapped && !translated) return undefined;
  return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join('.');
}

/** The eight 16-bit groups of an IPv6 literal (`::` expanded, a trailing dotted quad as two groups), or undefined. */
function ipv6Groups(ip: string): number[] | undefined {
  let text = ip;
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number);
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const part = (s: string) => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const head = part(halves[0]);
  const tail = halves.length === 2 ? part(halves[1]) : [];
  const missing = 8 - head.length - tail.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return undefined;
  const groups = [...head, ...Array<number>(missing).fill(0), ...tail];
  return groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
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
