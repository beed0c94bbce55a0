import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { buildConnector } from 'undici';
import { BLOCKED_CODE } from '../outcome.policy.js';
import type { NetworkPolicy } from '../../common/network.policy.js';

/** How long a new connection took, phase by phase; attached to the socket it made. */
export interface ConnectTimings {
  dnsMs: number;
  connectMs: number;
  tlsMs?: number;
  /** Through EGRESS_PROXY_URL: the CONNECT exchange, after `connectMs` (the proxy's TCP, and TLS for an https proxy). */
  tunnelMs?: number;
  /** True until the first request on this socket has taken these timings. */
  unclaimed: boolean;
}

export const CONNECT_TIMINGS = Symbol('connectTimings');
export type TimedSocket = Socket & { [CONNECT_TIMINGS]?: ConnectTimings };

/**
 * A receiver's mutual TLS: the client certificate and key it presents, and the CA its
 * server's certificate must chain to (instead of the system's). Verification stays on.
 */
export interface ClientTls {
  cert?: string;
  key?: string;
  ca?: string;
}

/** ClientTls as tls.connect takes it (only what is set: an absent `ca` keeps the system's CAs). */
export function tlsOptions(tls: ClientTls | undefined): ClientTls {
  if (!tls) return {};
  return { ...(tls.cert && { cert: tls.cert }), ...(tls.key && { key: tls.key }), ...(tls.ca && { ca: tls.ca }) };
}

export class BlockedDestinationError extends Error {
  readonly code = BLOCKED_CODE;
}

export type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` that answers only addresses the policy allows (a name with none is
 * BlockedDestinationError), so what is checked is what gets connected to.
 */
export function checkedLookup(policy: NetworkPolicy) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback) => {
    dnsLookup(hostname, { all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const allowed = addresses.filter((a) => policy.refusal(a.address) === undefined);
      if (allowed.length === 0) {
        const reason = policy.refusal(addresses[0]?.address ?? hostname) ?? `no address for ${hostname}`;
        return callback(new BlockedDestinationError(`${hostname}: ${reason}`), []);
      }
      if (options.all) callback(null, allowed);
      else callback(null, allowed[0].address, allowed[0].family);
    });
  };
}

/** The hostname undici passes, without the brackets URL parsing leaves on IPv6 literals. */
export const unbracket = (hostname: string) => hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * The undici connector of every outgoing call. It resolves names itself, so the
 * SSRF check runs on the very addresses the socket will connect to (no second
 * lookup that DNS rebinding could answer differently), and it records DNS, TCP and
 * TLS durations on the new socket for the first request that uses it.
 */
export function buildGuardedConnector(policy: NetworkPolicy, connectTimeoutMs: number, tls?: ClientTls): buildConnector.connector {
  const guardedLookup = checkedLookup(policy);

  const base = buildConnector({ lookup: guardedLookup, timeout: connectTimeoutMs, ...tlsOptions(tls) } as buildConnector.BuildOptions);

  return (options, callback) => {
    const literal = unbracket(options.hostname);
    if (isIP(literal)) {
      const reason = policy.refusal(literal);
      if (reason) {
        queueMicrotask(() => callback(new BlockedDestinationError(reason), null));
        return;
      }
    }
    const t0 = performance.now();
    let tLookup = t0;
    let tConnect = t0;
    const socket = base(options, (err, sock) => {
      if (err || !sock) return callback(err, null);
      // Plain TCP: undici's own 'connect' listener (registered first) runs this
      // callback before ours records tConnect, so "now" is the connect time.
      const done = performance.now();
      const tls = options.protocol === 'https:';
      const timed = sock as TimedSocket;
      timed[CONNECT_TIMINGS] = {
        dnsMs: tLookup - t0,
        connectMs: (tls ? tConnect : done) - tLookup,
        tlsMs: tls ? done - tConnect : undefined,
        unclaimed: true,
      };
      callback(null, sock);
    }) as unknown as Socket | undefined;
    socket?.once('lookup', () => (tLookup = performance.now()));
    socket?.once('connect', () => {
      tConnect = performance.now();
      if (tLookup === t0 && !isIP(literal)) tLookup = tConnect;
    });
  };
}
