import { isIP, connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { PROXY_TUNNEL_CODE } from '../outcome.policy.js';

/** Where EGRESS_PROXY_URL points: an HTTP forward proxy, spoken to in plain TCP or TLS. */
export interface EgressProxy {
  protocol: 'http:' | 'https:';
  hostname: string;
  port: number;
  /** `Proxy-Authorization` value from the URL's user:password, if any. */
  authorization?: string;
}

/** A proxy's answer head larger than this is not an HTTP proxy talking. */
const MAX_CONNECT_HEAD_BYTES = 16 * 1024;

export function parseEgressProxy(url: string): EgressProxy {
  const u = new URL(url);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`EGRESS_PROXY_URL: unsupported scheme ${u.protocol}`);
  const user = decodeURIComponent(u.username);
  return {
    protocol: u.protocol,
    hostname: u.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: Number(u.port) || (u.protocol === 'https:' ? 443 : 80),
    authorization: user ? `Basic ${Buffer.from(`${user}:${decodeURIComponent(u.password)}`).toString('base64')}` : undefined,
  };
}

/** Clock readings (performance.now()) of the tunnel's steps. */
export interface TunnelClock {
  /** TCP (and TLS, for an https proxy) to the proxy is up. */
  proxyConnected?: number;
  /** The proxy answered 200 to CONNECT. */
  tunnelled?: number;
}

/**
 * Opens a CONNECT tunnel through `proxy` to `address:port`. The target is always an
 * IP address the caller resolved and checked itself, so the proxy cannot resolve
 * the name to something else (DNS rebinding, split horizon): it is told where to
 * connect, not what to look up. CONNECT is used for http destinations too: in an
 * absolute-form request a proxy must replace `Host` with the request target's
 * authority (RFC 9112 §3.2.2), which would be the bare IP; through a tunnel the
 * request goes out exactly as without a proxy, `Host` included.
 *
 * Settles `callback` once: with the tunnel socket, or with an error (a refusal by
 * the proxy has code PROXY_TUNNEL_CODE and says what the proxy answered).
 */
export function openTunnel(
  proxy: EgressProxy,
  address: string,
  port: number,
  clock: TunnelClock,
  callback: (err: Error | null, socket?: Socket) => void,
): Socket {
  const target = `${isIP(address) === 6 ? `[${address}]` : address}:${port}`;
  const socket: Socket =
    proxy.protocol === 'https:'
      ? tlsConnect({ host: proxy.hostname, port: proxy.port, servername: isIP(proxy.hostname) ? undefined : proxy.hostname })
      : netConnect({ host: proxy.hostname, port: proxy.port });
  let settled = false;
  const settle = (err: Error | null) => {
    if (settled) return;
    settled = true;
    socket.removeListener('data', onData);
    socket.removeListener('error', settle);
    socket.removeListener('close', onClose);
    if (err) {
      socket.destroy();
      callback(err);
    } else callback(null, socket);
  };
  let head: Buffer = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    head = head.length ? Buffer.concat([head, chunk]) : chunk;
    const end = head.indexOf('\r\n\r\n');
    if (end < 0) {
      if (head.length > MAX_CONNECT_HEAD_BYTES) settle(tunnelError('proxy sent an oversized answer to CONNECT'));
      return;
    }
    const statusLine = head.subarray(0, head.indexOf('\r\n')).toString('latin1');
    const m = /^HTTP\/1\.[01] (\d{3})\b(.*)$/.exec(statusLine);
    if (!m) return settle(tunnelError(`proxy answered CONNECT with ${JSON.stringify(statusLine.slice(0, 80))}`));
    if (m[1] !== '200') return settle(tunnelError(`proxy answered CONNECT ${target} with ${m[1]}${m[2]}`));
    clock.tunnelled = performance.now();
    // Bytes past the head already belong to the destination (none for HTTP, where the
    // client speaks first; a TLS server waits for our hello too): hand them back.
    const rest = head.subarray(end + 4);
    settle(null);
    if (rest.length) socket.unshift(rest);
  };
  const onClose = () => settle(tunnelError('proxy closed the connection during CONNECT'));
  socket.once(proxy.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
    clock.proxyConnected = performance.now();
    const auth = proxy.authorization ? `Proxy-Authorization: ${proxy.authorization}\r\n` : '';
    socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${auth}\r\n`);
  });
  socket.on('data', onData);
  socket.on('error', settle);
  socket.on('close', onClose);
  return socket;
}

function tunnelError(message: string): Error {
  return Object.assign(new Error(message), { code: PROXY_TUNNEL_CODE });
}
