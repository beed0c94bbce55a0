import { describe, expect, it } from 'vitest';
import { DEFAULT_TOKEN_LIFETIME_MS, readTokenAnswer, refreshAt, scrub, tokenRequest } from './token.policy.js';

describe('refreshAt', () => {
  it.each([
    ['an hour: 60 s before it runs out (a tenth would be 6 min)', 3_600_000, 3_540_000],
    ['10 minutes: 60 s before (a tenth)', 600_000, 540_000],
    ['5 minutes: a tenth, 30 s before', 300_000, 270_000],
    ['10 s: a tenth, 1 s before', 10_000, 9_000],
    ['0: at once', 0, 0],
  ])('should refresh a token of %s', (_, lifetimeMs, after) => {
    expect(refreshAt(1_000, lifetimeMs)).toBe(1_000 + after);
  });
});

describe('tokenRequest', () => {
  const auth = { type: 'oauth2', tokenUrl: 'https://as/t', clientId: 'id:with space', scope: 'a b', audience: 'https://api', clientAuth: 'basic' } as const;

  it('should authenticate with HTTP Basic, each part form-encoded (RFC 6749 §2.3.1), secret out of the body', () => {
    const r = tokenRequest(auth, 's&cret=');
    expect(r.body).toBe('grant_type=client_credentials&scope=a+b&audience=https%3A%2F%2Fapi');
    expect(Buffer.from(r.headers.authorization.slice(6), 'base64').toString()).toBe('id%3Awith+space:s%26cret%3D');
  });

  it('should put the client in the form with clientAuth post', () => {
    const r = tokenRequest({ ...auth, clientAuth: 'post', scope: null, audience: null }, 'sec');
    expect(r.headers.authorization).toBeUndefined();
    expect(new URLSearchParams(r.body).get('client_secret')).toBe('sec');
    expect(new URLSearchParams(r.body).get('client_id')).toBe('id:with space');
  });
});

describe('readTokenAnswer', () => {
  it.each<[string, number, string, object]>([
    ['a token with its lifetime', 200, '{"access_token":"abc","token_type":"Bearer","expires_in":120}', { accessToken: 'abc', lifetimeMs: 120_000 }],
    ['a token without expires_in: an hour', 200, '{"access_token":"abc"}', { accessToken: 'abc', lifetimeMs: DEFAULT_TOKEN_LIFETIME_MS }],
    [
      'an error answer with its error and description',
      401,
      '{"error":"invalid_client","error_description":"no such client"}',
      { problem: 'answered 401 invalid_client: no such client' },
    ],
    ['a 503 without JSON: its status only, never the body', 503, 'upstream secret dump', { problem: 'answered 503' }],
    ['a 200 without a token', 200, '{"token_type":"bearer"}', { problem: 'answered 200 without a usable access_token' }],
    ['a token of another type', 200, '{"access_token":"abc","token_type":"mac"}', { problem: 'answered a token of type mac, not bearer' }],
    ['a 200 that is not JSON', 200, '<html>', { problem: 'answered 200 without a JSON object' }],
  ])('should read %s', (_, status, body, expected) => {
    expect(readTokenAnswer(status, body)).toEqual(expected);
  });

  it('should scrub secrets from a text', () => {
    expect(scrub('client s3cret refused', ['s3cret'])).toBe('client [redacted] refused');
  });
});
