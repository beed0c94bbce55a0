import { describe, expect, it } from 'vitest';
import { isLoopbackHost, serviceUrl } from './service-url.js';

describe(serviceUrl.name, () => {
  it.each([
    ['127.0.0.1', 3000, undefined, 'http://127.0.0.1:3000'],
    ['::1', 3000, undefined, 'http://[::1]:3000'],
    ['localhost', 8080, '127.0.0.1', 'http://localhost:8080'],
    ['0.0.0.0', 3000, '10.1.2.3', 'http://10.1.2.3:3000'],
    ['0.0.0.0', 3000, '::ffff:10.1.2.3', 'http://10.1.2.3:3000'],
    ['::', 3000, 'fd00::5', 'http://[fd00::5]:3000'],
    ['0.0.0.0', 3000, undefined, 'http://0.0.0.0:3000'],
  ])('should make HOST=%s, port %d, reached at %s into %s', (host, port, local, expected) => {
    expect(serviceUrl(host, port, local)).toBe(expected);
  });
});

describe(isLoopbackHost.name, () => {
  it.each([
    ['127.0.0.1', true],
    ['127.0.0.2', true],
    ['::1', true],
    ['[::1]', true],
    ['localhost', true],
    ['::ffff:127.0.0.1', true],
    ['0.0.0.0', false],
    ['::', false],
    ['10.0.0.1', false],
    ['example.com', false],
    ['127.example.com', false],
  ])('should say HOST=%s binds loopback only: %s', (host, expected) => {
    expect(isLoopbackHost(host)).toBe(expected);
  });
});
