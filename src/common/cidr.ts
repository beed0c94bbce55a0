import { isIP } from 'node:net';

/** Why `cidr` is not an `address/prefix` (or a bare address), or undefined. */
export function cidrProblem(cidr: string): string | undefined {
  const [ip, bits, extra] = cidr.trim().split('/');
  const family = isIP(ip);
  if (family === 0 || ip.includes('%')) return `${JSON.stringify(cidr)} is not an IP address or CIDR`;
  if (bits === undefined) return undefined;
  const max = family === 6 ? 128 : 32;
  if (extra !== undefined || !/^\d{1,3}$/.test(bits) || Number(bits) > max) return `${JSON.stringify(cidr)} needs a prefix length of 0 to ${max}`;
  return undefined;
}
