import { describe, expect, it } from 'vitest';
import { BLOCKED_CODE, classifyError, classifyStatus } from './outcome.policy.js';

describe('outcome.policy', () => {
  it.each([
    [undefined, 'network_error'],
    [BLOCKED_CODE, 'blocked'],
    ['ETIMEDOUT', 'timeout'],
    ['UND_ERR_HEADERS_TIMEOUT', 'timeout'],
    ['ENOTFOUND', 'dns_error'],
    ['EAI_AGAIN', 'dns_error'],
    ['ECONNREFUSED', 'connect_error'],
    ['EHOSTUNREACH', 'connect_error'],
    ['UND_ERR_CONNECT_TIMEOUT', 'connect_error'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'tls_error'],
    ['DEPTH_ZERO_SELF_SIGNED_CERT', 'tls_error'],
    ['ECONNRESET', 'network_error'],
    ['UND_ERR_SOCKET', 'network_error'],
  ])('should classify error code %s as %s', (code, outcome) => {
    expect(classifyError(code)).toBe(outcome);
  });

  it.each([
    [200, 'success'],
    [204, 'success'],
    [299, 'success'],
    [199, 'http_error'],
    [301, 'http_error'],
    [404, 'http_error'],
    [500, 'http_error'],
  ])('should classify status %i as %s', (status, outcome) => {
    expect(classifyStatus(status)).toBe(outcome);
  });
});
