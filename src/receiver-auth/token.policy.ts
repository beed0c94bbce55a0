import type { AuthShown } from './credential.policy.js';

/**
 * The OAuth2 client credentials grant (RFC 6749 §4.4) as pure functions: the token
 * request, what its answer says, and when a token is fetched again.
 */

type OAuth2 = Extract<AuthShown, { type: 'oauth2' }>;

/** A token is fetched again when less than this share of its lifetime is left… */
const REFRESH_SHARE = 0.1;
/** …but never earlier than this before it runs out. */
const REFRESH_MAX_MS = 60_000;
/** The lifetime taken for a token whose answer names none (RFC 6749 leaves it to the server); a 401 replaces it sooner. */
export const DEFAULT_TOKEN_LIFETIME_MS = 3_600_000;
/** Longest token kept: a larger answer is not a token endpoint talking. */
export const MAX_TOKEN_LENGTH = 16_384;
/** Bytes of a token endpoint's answer read. */
export const TOKEN_RESPONSE_BYTES = 65_536;

/**
 * When a token fetched at `fetchedAt` and valid for `lifetimeMs` is fetched again:
 * once less than a tenth of its lifetime is left, and at the latest 60 s before it
 * runs out. Every worker uses it until then, and it still goes out until it expires
 * while the next one is being fetched.
 */
export function refreshAt(fetchedAt: number, lifetimeMs: number): number {
  return fetchedAt + lifetimeMs - Math.min(lifetimeMs * REFRESH_SHARE, REFRESH_MAX_MS);
}

/** The token request: a form POST, the client authenticated by HTTP Basic (RFC 6749 §2.3.1) or in the body. */
export function tokenRequest(auth: OAuth2, clientSecret: string): { headers: Record<string, string>; body: string } {
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  if (auth.scope) form.set('scope', auth.scope);
  if (auth.audience) form.set('audience', auth.audience);
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  if (auth.clientAuth === 'post') {
    form.set('client_id', auth.clientId);
    form.set('client_secret', clientSecret);
  } else {
    // each part form-encoded before base64, as §2.3.1 asks
    const pair = `${formEncode(auth.clientId)}:${formEncode(clientSecret)}`;
    headers.authorization = `Basic ${Buffer.from(pair, 'utf8').toString('base64')}`;
  }
  return { headers, body: form.toString() };
}

const formEncode = (s: string) => new URLSearchParams({ s }).toString().slice(2);

export interface IssuedToken {
  accessToken: string;
  lifetimeMs: number;
}

/**
 * What a token endpoint's answer says: a token and its lifetime, or why not. The
 * reason quotes the answer's `error` and `error_description` (RFC 6749 §5.2) or its
 * status, never the body as it came: the caller scrubs even those of the client's
 * secret before they reach a callback's lastError.
 */
export function readTokenAnswer(statusCode: number, body: string): IssuedToken | { problem: string } {
  let json: Record<string, unknown> | undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) json = parsed as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  if (statusCode < 200 || statusCode >= 300) {
    const error = typeof json?.error === 'string' ? json.error : undefined;
    const description = typeof json?.error_description === 'string' ? json.error_description : undefined;
    return { problem: `answered ${statusCode}${error ? ` ${error}` : ''}${description ? `: ${description}` : ''}`.slice(0, 300) };
  }
  if (!json) return { problem: `answered ${statusCode} without a JSON object` };
  const token = json.access_token;
  if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_LENGTH || !/^[\x21-\x7e]+$/.test(token)) {
    return { problem: `answered ${statusCode} without a usable access_token` };
  }
  const tokenType = typeof json.token_type === 'string' ? json.token_type : 'bearer';
  if (tokenType.toLowerCase() !== 'bearer') return { problem: `answered a token of type ${tokenType.slice(0, 40)}, not bearer` };
  const expiresIn = Number(json.expires_in);
  const lifetimeMs = json.expires_in !== undefined && Number.isFinite(expiresIn) && expiresIn >= 0 ? expiresIn * 1000 : DEFAULT_TOKEN_LIFETIME_MS;
  return { accessToken: token, lifetimeMs };
}

/** `text` with each of `secrets` replaced (a token endpoint may echo what it was sent). */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s) out = out.split(s).join('[redacted]');
  return out;
}
