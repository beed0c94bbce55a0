import { createPrivateKey, X509Certificate } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { httpUrlProblem } from '../common/validators.js';

/**
 * A receiver's credentials as given, checked, stored and shown. Pure: the service
 * (credential.service.ts) reads the stored row and writes the result.
 *
 * What may be shown (the type, a username, a token URL, a client id, the
 * certificates) is kept apart from what may not (a password, a token, a client
 * secret, a private key): the second is only ever stored sealed, and every answer
 * shows `"set"` in its place.
 */

export const AUTH_TYPES = ['basic', 'bearer', 'oauth2'] as const;
export type AuthType = (typeof AUTH_TYPES)[number];
export const CLIENT_AUTH_METHODS = ['basic', 'post'] as const;
export type ClientAuthMethod = (typeof CLIENT_AUTH_METHODS)[number];

/** The shown part of `auth`, as stored in receiver_credential.auth. */
export type AuthShown =
  | { type: 'basic'; username: string }
  | { type: 'bearer' }
  | { type: 'oauth2'; tokenUrl: string; clientId: string; scope: string | null; audience: string | null; clientAuth: ClientAuthMethod };

/** The secret part of `auth`. */
export type AuthSecret = { password: string } | { token: string } | { clientSecret: string };

/** The shown part of `tls`: certificates in PEM (receiver_credential.tls). */
export interface TlsShown {
  clientCertificate: string | null;
  ca: string | null;
}

/** Everything that is sealed, as one JSON object (receiver_credential.sealed). */
export interface SealedParts {
  auth?: AuthSecret;
  tls?: { clientKey: string | null };
}

/** A receiver's credentials whole: what the worker sends with. */
export interface Credentials {
  auth: { shown: AuthShown; secret: AuthSecret } | null;
  tls: (TlsShown & { clientKey: string | null }) | null;
}

export const NO_CREDENTIALS: Credentials = { auth: null, tls: null };

/** Longest value of a text field of `auth`, and of one PEM field of `tls`. */
const MAX_FIELD = 4096;
const MAX_PEM = 65_536;
/** Visible ASCII and space: what a header value made of these fields may hold. */
const HEADER_SAFE = /^[\x20-\x7e]*$/;

export class CredentialProblem extends Error {}

const fail = (message: string): never => {
  throw new CredentialProblem(message);
};

function text(where: string, value: unknown, { required, max = MAX_FIELD }: { required: boolean; max?: number }): string | null {
  if (value === undefined || value === null) {
    if (required) fail(`${where} is required`);
    return null;
  }
  if (typeof value !== 'string') return fail(`${where} must be a string`);
  if (value.length === 0) return fail(`${where} must not be empty`);
  if (value.length > max) return fail(`${where} must be at most ${max} characters`);
  // the messages name the field, never its value: a secret must not reach an answer or a log
  if (!HEADER_SAFE.test(value)) return fail(`${where} must be printable ASCII (no control characters)`);
  return value;
}

function onlyKeys(where: string, value: Record<string, unknown>, allowed: readonly string[]): void {
  const extra = Object.keys(value).filter((k) => !allowed.includes(k));
  if (extra.length > 0) fail(`${where} takes ${allowed.join(', ')}; not ${extra.join(', ')}`);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const SECRET_FIELD: Record<AuthType, string> = { basic: 'password', bearer: 'token', oauth2: 'clientSecret' };
const FIELDS: Record<AuthType, readonly string[]> = {
  basic: ['type', 'username', 'password'],
  bearer: ['type', 'token'],
  oauth2: ['type', 'tokenUrl', 'clientId', 'clientSecret', 'scope', 'audience', 'clientAuth'],
};

/**
 * `auth` of a PUT laid over the stored one: `null` removes it; an object of the same
 * type as the stored one keeps what it leaves out (so a secret need not be sent again
 * to change a scope) and clears what it sets to null; another type starts afresh.
 */
export function nextAuth(given: unknown, stored: Credentials['auth']): Credentials['auth'] {
  if (given === null) return null;
  if (!isObject(given)) return fail('auth must be an object with a type (basic, bearer or oauth2), or null');
  const type = given.type as AuthType;
  if (!AUTH_TYPES.includes(type)) return fail(`auth.type must be one of ${AUTH_TYPES.join(', ')}`);
  onlyKeys(`auth of type ${type}`, given, FIELDS[type]);
  const kept: Record<string, unknown> = stored && stored.shown.type === type ? { ...stored.shown, ...stored.secret } : {};
  const v = (k: string) => (k in given ? given[k] : kept[k]);
  const secretField = SECRET_FIELD[type];
  const secret = text(`auth.${secretField}`, v(secretField), { required: true });
  switch (type) {
    case 'basic': {
      const username = text('auth.username', v('username'), { required: true, max: 256 })!;
      // RFC 7617: the user-id cannot hold a colon (the first one ends it)
      if (username.includes(':')) fail('auth.username must not contain ":"');
      return { shown: { type, username }, secret: { password: secret! } };
    }
    case 'bearer':
      return { shown: { type }, secret: { token: secret! } };
    case 'oauth2': {
      const tokenUrl = text('auth.tokenUrl', v('tokenUrl'), { required: true, max: 2048 })!;
      const urlProblem = httpUrlProblem(tokenUrl);
      if (urlProblem) fail(`auth.tokenUrl ${urlProblem}`);
      const clientAuth = v('clientAuth') ?? 'basic';
      if (!CLIENT_AUTH_METHODS.includes(clientAuth as ClientAuthMethod)) fail(`auth.clientAuth must be one of ${CLIENT_AUTH_METHODS.join(', ')}`);
      return {
        shown: {
          type,
          tokenUrl,
          clientId: text('auth.clientId', v('clientId'), { required: true, max: 256 })!,
          scope: text('auth.scope', v('scope'), { required: false }),
          audience: text('auth.audience', v('audience'), { required: false }),
          clientAuth: clientAuth as ClientAuthMethod,
        },
        secret: { clientSecret: secret! },
      };
    }
  }
}

/**
 * `tls` of a PUT laid over the stored one: `null` removes it; otherwise each field
 * left out keeps its stored value and `null` clears it. The result holds a client
 * certificate with its key (both or neither), a CA, or both; each PEM parses, the key
 * belongs to the certificate, and Node builds a TLS context of them, so a receiver is
 * never stored with credentials no call could use.
 */
export function nextTls(given: unknown, stored: Credentials['tls']): Credentials['tls'] {
  if (given === null) return null;
  if (!isObject(given)) return fail('tls must be an object {clientCertificate, clientKey, ca}, or null');
  onlyKeys('tls', given, ['clientCertificate', 'clientKey', 'ca']);
  const v = (k: 'clientCertificate' | 'clientKey' | 'ca') => (k in given ? given[k] : (stored?.[k] ?? null));
  const pem = (k: 'clientCertificate' | 'clientKey' | 'ca') => {
    const value = v(k);
    if (value === null || value === undefined) return null;
    if (typeof value !== 'string' || value.length > MAX_PEM || !value.includes('-----BEGIN '))
      return fail(`tls.${k} must be PEM text of at most ${MAX_PEM} characters`);
    return value;
  };
  const tls = { clientCertificate: pem('clientCertificate'), clientKey: pem('clientKey'), ca: pem('ca') };
  if ((tls.clientCertificate === null) !== (tls.clientKey === null)) fail('tls.clientCertificate and tls.clientKey go together: give both, or neither');
  if (tls.clientCertificate === null && tls.ca === null) fail('tls needs clientCertificate and clientKey, or ca, or all three (null removes tls)');
  checkTls(tls);
  return tls;
}

function checkTls(tls: NonNullable<Credentials['tls']>): void {
  if (tls.clientCertificate !== null) {
    const cert = parseCertificates('tls.clientCertificate', tls.clientCertificate)[0];
    let key;
    try {
      key = createPrivateKey(tls.clientKey!);
    } catch {
      return fail('tls.clientKey is not a private key in PEM (an encrypted key is not taken: give it unencrypted)');
    }
    if (!cert.checkPrivateKey(key)) fail('tls.clientKey is not the key of tls.clientCertificate');
  }
  if (tls.ca !== null) parseCertificates('tls.ca', tls.ca);
  try {
    createSecureContext({ cert: tls.clientCertificate ?? undefined, key: tls.clientKey ?? undefined, ca: tls.ca ?? undefined });
  } catch (error) {
    fail(`tls cannot be used: ${(error as Error).message}`);
  }
}

/** Each certificate of a PEM bundle; a 400 naming the field when one does not parse. */
export function parseCertificates(where: string, pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) return fail(`${where} holds no certificate (-----BEGIN CERTIFICATE-----)`);
  try {
    return blocks.map((b) => new X509Certificate(b));
  } catch {
    return fail(`${where} holds a certificate that does not parse`);
  }
}

/** What an answer shows of `auth`: the type and its shown fields, `"set"` for the secret. */
export function authView(auth: Credentials['auth']): Record<string, unknown> | null {
  if (!auth) return null;
  return { ...auth.shown, [SECRET_FIELD[auth.shown.type]]: 'set' };
}

export interface CertificateView {
  subject: string;
  issuer: string;
  notAfter: string;
  fingerprint256: string;
}

function certificateView(c: X509Certificate): CertificateView {
  return {
    subject: c.subject.replaceAll('\n', ', '),
    issuer: c.issuer.replaceAll('\n', ', '),
    notAfter: new Date(c.validTo).toISOString(),
    fingerprint256: c.fingerprint256,
  };
}

/** What an answer shows of `tls`: the certificates by subject, issuer, expiry and fingerprint, `"set"` for the key. */
export function tlsView(tls: TlsShown | null, hasKey: boolean) {
  if (!tls) return null;
  return {
    clientCertificate: tls.clientCertificate === null ? null : certificateView(parseCertificates('tls.clientCertificate', tls.clientCertificate)[0]),
    clientKey: hasKey ? ('set' as const) : null,
    ca: tls.ca === null ? null : parseCertificates('tls.ca', tls.ca).map(certificateView),
  };
}

/** The Authorization value of basic or bearer auth (built once per credentials, not per call); undefined for oauth2. */
export function staticAuthorization(auth: Credentials['auth']): string | undefined {
  if (!auth) return undefined;
  if (auth.shown.type === 'basic') {
    const { password } = auth.secret as { password: string };
    return `Basic ${Buffer.from(`${auth.shown.username}:${password}`, 'utf8').toString('base64')}`;
  }
  if (auth.shown.type === 'bearer') return `Bearer ${(auth.secret as { token: string }).token}`;
  return undefined;
}

/** The secrets a line of text must never carry for these credentials (and their forms in a header or a form body). */
export function secretsOf(c: Credentials): string[] {
  const out: string[] = [];
  if (c.auth) {
    const s = Object.values(c.auth.secret)[0] as string;
    out.push(s, encodeURIComponent(s));
    const header = staticAuthorization(c.auth);
    if (header) out.push(header.slice(header.indexOf(' ') + 1));
  }
  if (c.tls?.clientKey) out.push(c.tls.clientKey);
  return out.filter((s) => s.length >= 4);
}
