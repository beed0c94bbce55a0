import { describe, expect, it } from 'vitest';
import { authView, CredentialProblem, nextAuth, nextTls, secretsOf, staticAuthorization } from './credential.policy.js';

describe('nextAuth', () => {
  const stored = nextAuth({ type: 'oauth2', tokenUrl: 'https://as/t', clientId: 'c', clientSecret: 'sec-1', scope: 'a' }, null);

  it('should keep a secret left out on an update of the same type, and clear a field set to null', () => {
    expect(nextAuth({ type: 'oauth2', scope: null }, stored)).toEqual({
      shown: { type: 'oauth2', tokenUrl: 'https://as/t', clientId: 'c', scope: null, audience: null, clientAuth: 'basic' },
      secret: { clientSecret: 'sec-1' },
    });
  });

  it.each<[string, unknown, RegExp]>([
    ['another type without its secret', { type: 'basic', username: 'u' }, /auth.password is required/],
    ['an unknown type', { type: 'hmac' }, /auth.type must be one of/],
    ['an unknown field', { type: 'bearer', token: 't', extra: 1 }, /not extra/],
    ['a username with a colon', { type: 'basic', username: 'a:b', password: 'p' }, /must not contain ":"/],
    ['a control character', { type: 'bearer', token: 'a\rb' }, /printable ASCII/],
    ['a token URL with credentials', { type: 'oauth2', tokenUrl: 'https://u:p@as/t', clientId: 'c', clientSecret: 's' }, /must not contain credentials/],
    [
      'an unknown clientAuth',
      { type: 'oauth2', tokenUrl: 'https://as/t', clientId: 'c', clientSecret: 's', clientAuth: 'jwt' },
      /clientAuth must be one of basic, post/,
    ],
  ])('should refuse %s, naming the field', (_, given, message) => {
    expect(() => nextAuth(given, stored)).toThrow(CredentialProblem);
    expect(() => nextAuth(given, stored)).toThrow(message);
  });

  it('should show the type and the shown fields, "set" for the secret, and build basic and bearer headers once', () => {
    const basic = nextAuth({ type: 'basic', username: 'u', password: 'p:w' }, null);
    expect(authView(basic)).toEqual({ type: 'basic', username: 'u', password: 'set' });
    expect(staticAuthorization(basic)).toBe(`Basic ${Buffer.from('u:p:w').toString('base64')}`);
    expect(staticAuthorization(nextAuth({ type: 'bearer', token: 'tok' }, null))).toBe('Bearer tok');
    expect(staticAuthorization(stored)).toBeUndefined();
    expect(secretsOf({ auth: basic, tls: null })).toContain(Buffer.from('u:p:w').toString('base64'));
  });
});

describe('nextTls', () => {
  it.each<[string, unknown, RegExp]>([
    ['a certificate without its key', { clientCertificate: '-----BEGIN CERTIFICATE-----x' }, /go together/],
    ['nothing at all', {}, /needs clientCertificate and clientKey, or ca/],
    ['text that is not PEM', { ca: 'hello' }, /tls.ca must be PEM/],
    ['a CA that does not parse', { ca: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----' }, /does not parse/],
    ['an unknown field', { ca: 'x', pfx: 'y' }, /not pfx/],
  ])('should refuse %s', (_, given, message) => {
    expect(() => nextTls(given, null)).toThrow(message);
  });

  it('should remove tls with null', () => {
    expect(nextTls(null, null)).toBeNull();
  });
});
