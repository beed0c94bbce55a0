import { isIP, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { connect as tlsConnect } from 'node:tls';
import type { buildConnector } from 'undici';
import { BlockedDestinationError, checkedLookup, CONNECT_TIMINGS, tlsOptions, unbracket, type ClientTls, type TimedSocket } from './connector.js';
import type { NetworkPolicy } from '../../common/network.policy.js';
import { openTunnel, type EgressProxy, type TunnelClock } from './proxy.tunnel.js';

/**
 * The connector when EGRESS_PROXY_URL is set: every connection is a CONNECT tunnel
 * through the proxy. The SSRF decision is ours and comes first: the destination's name
 * is resolved here and checked by the network policy, a blocked destination fails
 * before any byte goes to the proxy, and the proxy is asked for the checked address
 * (never the name; undici's ProxyAgent asks for the name, and times no phase). TLS runs
 * end to end inside the tunnel and verifies the destination's own name, so the proxy
 * sees only ciphertext for https. Phases recorded on the socket: dnsMs (our lookup),
 * connectMs (TCP, and TLS for an https proxy, to the proxy), tunnelMs (the CONNECT
 * exchange, with the proxy's own connect), tlsMs (the destination's handshake).
 */
export function buildProxiedConnector(policy: NetworkPolicy, proxy: EgressProxy, connectTimeoutMs: number, tls?: ClientTls): buildConnector.connector {
  const lookup = checkedLookup(policy);
  return (options, callback) => {
    const hostname = unbracket(options.hostname);
    const https = options.protocol === 'https:';
    const port = Number(options.port) || (https ? 443 : 80);
    const t0 = performance.now();
    let done = false;
    let socket: Socket | undefined;
    const finish = (err: Error | null, sock?: Socket) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (err) {
        socket?.destroy();
        callback(err, null);
      } else callback(null, sock!);
    };
    const timer = setTimeout(() => {
      finish(Object.assign(new Error(`connect through the egress proxy took over ${connectTimeoutMs} ms`), { code: 'UND_ERR_CONNECT_TIMEOUT' }));
    }, connectTimeoutMs);

    const withAddress = (address: string) => {
      if (done) return;
      const tLookup = performance.now();
      const clock: TunnelClock = {};
      socket = openTunnel(proxy, address, port, clock, (err, tunnel) => {
        if (err || !tunnel) return finish(err ?? new Error('no tunnel'));
        tunnel.setNoDelay(true);
        const timings = (tEnd: number, tlsMs?: number) => ({
          dnsMs: tLookup - t0,
          connectMs: clock.proxyConnected! - tLookup,
          tunnelMs: clock.tunnelled! - clock.proxyConnected!,
          tlsMs,
          unclaimed: true,
        });
        if (!https) {
          (tunnel as TimedSocket)[CONNECT_TIMINGS] = timings(performance.now());
          return finish(null, tunnel);
        }
        const servername = options.servername || (isIP(hostname) ? undefined : hostname);
        // `host` is what the certificate is checked against: without it Node checks an
        // IP destination (no SNI) against "localhost".
        const secure = tlsConnect({ socket: tunnel, host: hostname, servername, ALPNProtocols: ['http/1.1'], ...tlsOptions(tls) });
        socket = secure;
        secure.once('secureConnect', () => {
          const now = performance.now();
          (secure as TimedSocket)[CONNECT_TIMINGS] = timings(now, now - clock.tunnelled!);
          secure.removeListener('error', onTlsError);
          finish(null, secure);
        });
        const onTlsError = (e: Error) => finish(e);
        secure.once('error', onTlsError);
      });
    };

    if (isIP(hostname)) {
      const reason = policy.refusal(hostname);
      if (reason) return void queueMicrotask(() => finish(new BlockedDestinationError(reason)));
      return void queueMicrotask(() => withAddress(hostname));
    }
    lookup(hostname, {}, (err, address) => (err ? finish(err) : withAddress(address as string)));
  };
}
