import { describe, expect, it } from 'vitest';
import { redactText, redactValue } from './redact.policy.js';

describe('redactText', () => {
  it.each([
    ['a signing secret', 'secret whsec_abc+/123= rotated', 'secret [redacted] rotated'],
    ['an API key', 'created cbk_live_AbC123_x-y for ops', 'created [redacted] for ops'],
    ['a bearer token', 'Authorization: Bearer something.secret', 'Authorization: Bearer [redacted]'],
    ['a basic credential', 'Authorization: Basic bWVyY2hhbnQ6cGFzcw==', 'Authorization: Basic [redacted]'],
    ['a word after Basic that is no credential', 'Basic auth failed', 'Basic auth failed'],
    ['a portal token', 'GET /portal/session?token=cbp_eyJzaWQiOiIxIn0.AbC-_dEf 303', 'GET /portal/session?token=[redacted] 303'],
    ['a portal token alone', 'link cbp_eyJzaWQiOiIxIn0.AbC-_dEf made', 'link [redacted] made'],
    ['the portal cookie', 'cookie: cbp_session=cbp_eyJ4IjoxfQ.sig', 'cookie: [redacted]=[redacted]'],
    ['a token in a query string', '/metrics?token=s3cr3t-value&x=1', '/metrics?token=[redacted]&x=1'],
    [
      'credentials in a receiver URL',
      'https://hooks.example/a?access_token=abc&api_key=def&sig=ghi&keep=1',
      'https://hooks.example/a?access_token=[redacted]&api_key=[redacted]&sig=[redacted]&keep=1',
    ],
    ['a key in a query string', '/v1/batches?key=whatever#x', '/v1/batches?key=[redacted]#x'],
    ['plain text', 'batch 0192 accepted: 3 callbacks', 'batch 0192 accepted: 3 callbacks'],
    [
      'a query string without credentials',
      '/v1/callbacks?status=failed&host=https%3A%2F%2Fa.example',
      '/v1/callbacks?status=failed&host=https%3A%2F%2Fa.example',
    ],
  ])('should redact %s', (_, input, output) => {
    expect(redactText(input)).toBe(output);
  });

  it('should redact the extra secrets it is given, whatever they look like, as written and as a URL writes them', () => {
    expect(redactText('key is my-own-bootstrap-key-123 ok', ['my-own-bootstrap-key-123'])).toBe('key is [redacted] ok');
    expect(redactText('/metrics?x=a%2Bb%2Fc%3D', ['a+b/c='])).toBe('/metrics?x=[redacted]');
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
