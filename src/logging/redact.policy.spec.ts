import { describe, expect, it } from 'vitest';
import { redactText, redactValue } from './redact.policy.js';

describe('redactText', () => {
  it.each([
    ['a signing secret', 'secret whsec_abc+/123= rotated', 'secret [redacted] rotated'],
    ['an API key', 'created cbk_live_AbC123_x-y for ops', 'created [redacted] for ops'],
    ['a bearer token', 'Authorization: Bearer something.secret', 'Authorization: Bearer [redacted]'],
    ['plain text', 'batch 0192 accepted: 3 callbacks', 'batch 0192 accepted: 3 callbacks'],
  ])('should redact %s', (_, input, output) => {
    expect(redactText(input)).toBe(output);
  });

  it('should redact the extra secrets it is given, whatever they look like', () => {
    expect(redactText('key is my-own-bootstrap-key-123 ok', ['my-own-bootstrap-key-123'])).toBe('key is [redacted] ok');
  });
});

describe('redactValue', () => {
  it('should redact secret fields at any depth and secret-looking strings everywhere', () => {
    const input = { req: { headers: { Authorization: 'Bearer x', 'x-id': '1' } }, list: ['whsec_a', 'fine'], secret: 'whatever', n: 3 };
    expect(redactValue(input)).toEqual({
      req: { headers: { Authorization: '[redacted]', 'x-id': '1' } },
      list: ['[redacted]', 'fine'],
      secret: '[redacted]',
      n: 3,
    });
  });

  it('should keep an error readable without its secrets', () => {
    const out = redactValue(new Error('bad key cbk_abc')) as { type: string; message: string };
    expect(out).toMatchObject({ type: 'Error', message: 'bad key [redacted]' });
  });
});
