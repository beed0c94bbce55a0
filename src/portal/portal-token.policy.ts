import { createHmac, timingSafeEqual } from 'node:crypto';

/** What a portal session may do besides reading: `read` is always held. */
export const PORTAL_CAPABILITIES = ['read', 'replay', 'rotate', 'edit'] as const;
export type PortalCapability = (typeof PORTAL_CAPABILITIES)[number];

export const PORTAL_TOKEN_PREFIX = 'cbp_';
/** The cookie a portal token is exchanged for. */
export const PORTAL_COOKIE = 'cbp_session';
/** The header a state-changing portal request made with the cookie must carry. */
export const CSRF_HEADER = 'x-csrf-token';

/** The claims a portal token carries; the session row (by `sid`) is what makes them valid. */
export interface PortalClaims {
  /** session id (portal_session.id) */
  sid: string;
  /** receiver id */
  rid: string;
  /** expiry, unix seconds */
  exp: number;
  /** id of the SECRETS_KEY the signing key is derived from */
  kid: string;
}

const b64 = (b: Buffer | string) => Buffer.from(b).toString('base64url');
const mac = (key: Buffer, data: string) => createHmac('sha256', key).update(data).digest();

/**
 * `cbp_<base64url JSON claims>.<base64url HMAC-SHA256>`: signed with a key derived from
 * SECRETS_KEY, so it cannot be made or altered without it. It is not an API key: the
 * API key guard finds no key row for it, so no /v1 route takes it. Written here rather
 * than as a JWT (jose): one fixed algorithm and claim set, no header to choose either by.
 */
export function signPortalToken(claims: PortalClaims, key: Buffer): string {
  const body = `${PORTAL_TOKEN_PREFIX}${b64(JSON.stringify(claims))}`;
  return `${body}.${b64(mac(key, body))}`;
}

/** The claims of a token with a valid shape, before its signature is checked (the `kid` picks the key); else undefined. */
export function readPortalToken(token: unknown): PortalClaims | undefined {
  if (typeof token !== 'string' || token.length > 1024 || !token.startsWith(PORTAL_TOKEN_PREFIX)) return undefined;
  const m = /^cbp_([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m) return undefined;
  try {
    const c = JSON.parse(Buffer.from(m[1], 'base64url').toString('utf8')) as Partial<PortalClaims>;
    const ok = typeof c.sid === 'string' && typeof c.rid === 'string' && typeof c.kid === 'string' && Number.isInteger(c.exp);
    return ok ? { sid: c.sid!, rid: c.rid!, exp: c.exp!, kid: c.kid! } : undefined;
  } catch {
    return undefined;
  }
}

/** True when `token` carries a signature made with `key` (compared in constant time) and has not expired at `nowMs`. */
export function portalTokenValid(token: string, claims: PortalClaims, key: Buffer, nowMs: number): boolean {
  const dot = token.lastIndexOf('.');
  const given = Buffer.from(token.slice(dot + 1), 'base64url');
  const expected = mac(key, token.slice(0, dot));
  return given.length === expected.length && timingSafeEqual(given, expected) && claims.exp * 1000 > nowMs;
}

/** The CSRF token of a session: an HMAC of its id, so it needs no storage and no other session's works. */
export function csrfTokenOf(sessionId: string, key: Buffer): string {
  return b64(mac(key, `csrf.${sessionId}`));
}

export function csrfValid(given: unknown, sessionId: string, key: Buffer): boolean {
  if (typeof given !== 'string' || given.length > 128) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(csrfTokenOf(sessionId, key));
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The Set-Cookie value for a session. Always HttpOnly (page scripts never see it) and
 * Path=/ (the pages under /portal, their API under /portal/api). Over https it is
 * Secure; when the portal may be framed by other sites (PORTAL_FRAME_ANCESTORS) it is
 * also SameSite=None and Partitioned (CHIPS), the only way a cookie works in a
 * cross-site iframe, kept to that one embedding site; otherwise SameSite=Strict. Over
 * plain http a browser refuses SameSite=None, so there it is Strict: embedding then
 * works from the same site only (another port of the same host, as in the tests).
 */
export function portalCookie(token: string, maxAgeSeconds: number, opts: { secure: boolean; embeddable: boolean }): string {
  const parts = [`${PORTAL_COOKIE}=${token}`, 'Path=/', `Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`, 'HttpOnly'];
  if (opts.secure) parts.push('Secure');
  parts.push(opts.secure && opts.embeddable ? 'SameSite=None' : 'SameSite=Strict');
  if (opts.secure && opts.embeddable) parts.push('Partitioned');
  return parts.join('; ');
}

/** The value of cookie `name` in a Cookie header, or undefined. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Capabilities as asked: `read` added, repeats dropped, in the canonical order. */
export function normalizeCapabilities(asked: readonly string[] | undefined): PortalCapability[] {
  const wanted = new Set(['read', ...(asked ?? [])]);
  return PORTAL_CAPABILITIES.filter((c) => wanted.has(c));
}
