import type { Outcome } from '../model/states.js';

/** Error codes raised by our connector for destinations the network policy refuses. */
export const BLOCKED_CODE = 'ERR_DESTINATION_BLOCKED';
export const TIMEOUT_CODE = 'ETIMEDOUT';
/** The egress proxy refused or broke the CONNECT tunnel to a destination. */
export const PROXY_TUNNEL_CODE = 'ERR_PROXY_TUNNEL';

const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA', 'ENODATA']);
const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  PROXY_TUNNEL_CODE,
]);
const TIMEOUT_CODES = new Set([TIMEOUT_CODE, 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ECONNABORTED']);

/** Sorts a transport error into an attempt outcome by its code. */
export function classifyError(code: string | undefined): Outcome {
  if (!code) return 'network_error';
  if (code === BLOCKED_CODE) return 'blocked';
  if (TIMEOUT_CODES.has(code)) return 'timeout';
  if (DNS_CODES.has(code)) return 'dns_error';
  if (CONNECT_CODES.has(code)) return 'connect_error';
  if (code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || code.includes('CERT') || code === 'EPROTO') {
    return 'tls_error';
  }
  return 'network_error';
}

/** Outcome of an answered request: only 2xx is success (3xx is not followed). */
export const classifyStatus = (statusCode: number): Outcome => (statusCode >= 200 && statusCode < 300 ? 'success' : 'http_error');
