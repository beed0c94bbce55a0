import { isIP } from 'node:net';

/** HOST values that bind every interface: a link needs a concrete address instead. */
const WILDCARDS = new Set(['0.0.0.0', '::', '[::]', '']);

/** True when HOST binds loopback only (127.0.0.0/8, ::1, localhost): no other machine reaches the port. */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost' || h === '::1') return true;
  const v4 = h.replace(/^::ffff:/, '');
  return isIP(v4) === 4 && v4.startsWith('127.');
}

/**
 * `http://host:port` of this service as it listens: HOST and the bound port, or, when
 * HOST binds every interface (0.0.0.0, ::), `localAddress`, the address of this machine
 * a connection reached (the socket's, not anything the client wrote).
 */
export function serviceUrl(host: string, port: number, localAddress?: string): string {
  let h = WILDCARDS.has(host.trim()) && localAddress ? localAddress : host;
  h = h.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, '$1');
  return `http://${h.includes(':') && !h.startsWith('[') ? `[${h}]` : h}:${port}`;
}
