import { describe, expect, it } from 'vitest';
import { AppError } from '../common/app.error.js';
import { destinationPathParam, errorRate } from './host.policy.js';

describe('host.policy', () => {
  it.each([
    ['http://127.0.0.2:8080', 'http://127.0.0.2:8080'],
    ['http://Example.com', 'http://example.com:80'],
    ['https://example.com', 'https://example.com:443'],
    ['https://example.com:8443/', 'https://example.com:8443'],
    ['http://[::1]:81', 'http://[::1]:81'],
  ])('should read %s as destination %s', (raw, expected) => {
    expect(destinationPathParam(raw)).toBe(expected);
  });

  it.each(['example.com', 'ftp://example.com', 'http://example.com/hooks', 'http://example.com?a=1', 'http://u:p@example.com', 'http://example.com#x', ''])(
    'should refuse %j with validation_failed',
    (raw) => {
      expect(() => destinationPathParam(raw)).toThrow(AppError);
      try {
        destinationPathParam(raw);
      } catch (e) {
        expect((e as AppError).code).toBe('validation_failed');
      }
    },
  );

  it.each([
    [0, 0, null],
    [10, 0, 0],
    [10, 1, 0.1],
    [3, 1, 0.3333],
    [4, 4, 1],
  ])('should give %i attempts with %i failed an error rate of %s', (count, failed, expected) => {
    expect(errorRate(count, failed)).toBe(expected);
  });
});
