import { describe, expect, it } from 'vitest';
import {
  cookieValue,
  csrfTokenOf,
  csrfValid,
  normalizeCapabilities,
  portalCookie,
  portalTokenValid,
  readPortalToken,
  signPortalToken,
} from './portal-token.policy.js';

const key = Buffer.alloc(32, 1);
const claims = { sid: '0193c0de-0000-7000-8000-000000000001', rid: '0193c0de-0000-7000-8000-000000000002', exp: 2_000_000_000, kid: 'k1' };

describe('portal-token.policy', () => {
  it('should round-trip a signed token and refuse one altered, signed by another key, or expired', () => {
    const token = signPortalToken(claims, key);
    expect(readPortalToken(token)).toEqual(claims);
    expect(portalTokenValid(token, claims, key, Date.now())).toBe(true);
    expect(portalTokenValid(token, claims, Buffer.alloc(32, 2), Date.now())).toBe(false);
    expect(portalTokenValid(token, claims, key, claims.exp * 1000)).toBe(false);
    const other = { ...claims, rid: claims.sid };
    const altered = `cbp_${Buffer.from(JSON.stringify(other)).toString('base64url')}.${token.split('.')[1]}`;
    expect(portalTokenValid(altered, readPortalToken(altered)!, key, Date.now())).toBe(false);
  });

  it.each([
    undefined,
    '',
    'cbk_abc',
    'cbp_',
    'cbp_e30.x',
    `cbp_${Buffer.from('{"sid":1}').toString('base64url')}.${'A'.repeat(43)}`,
    `cbp_!!.${'A'.repeat(43)}`,
    'cbp_' + 'A'.repeat(2000),
  ])('should read no claims from the malformed token %j', (token) => expect(readPortalToken(token)).toBeUndefined());

  it("should accept a session's own CSRF token only", () => {
    const csrf = csrfTokenOf(claims.sid, key);
    expect(csrfValid(csrf, claims.sid, key)).toBe(true);
    expect(csrfValid(csrf, claims.rid, key)).toBe(false);
    expect(csrfValid(csrfTokenOf(claims.sid, Buffer.alloc(32, 2)), claims.sid, key)).toBe(false);
    for (const bad of [undefined, '', 'x', ['a'], csrf.slice(1)]) expect(csrfValid(bad, claims.sid, key)).toBe(false);
  });

  it.each([
    [{ secure: false, embeddable: false }, ['HttpOnly', 'SameSite=Strict'], ['Secure', 'SameSite=None', 'Partitioned']],
    [{ secure: false, embeddable: true }, ['HttpOnly', 'SameSite=Strict'], ['Secure', 'SameSite=None', 'Partitioned']],
    [{ secure: true, embeddable: false }, ['HttpOnly', 'Secure', 'SameSite=Strict'], ['SameSite=None', 'Partitioned']],
    [{ secure: true, embeddable: true }, ['HttpOnly', 'Secure', 'SameSite=None', 'Partitioned'], ['SameSite=Strict']],
  ])('should flag the cookie for %j', (opts, present, absent) => {
    const attrs = portalCookie('cbp_t', 60.7, opts).split('; ');
    expect(attrs.slice(0, 3)).toEqual(['cbp_session=cbp_t', 'Path=/', 'Max-Age=60']);
    for (const a of present) expect(attrs).toContain(a);
    for (const a of absent) expect(attrs).not.toContain(a);
  });

  it('should read the session cookie among others, and normalize capabilities', () => {
    expect(cookieValue('a=1; cbp_session=cbp_x.y ; b=2', 'cbp_session')).toBe('cbp_x.y');
    expect(cookieValue('xcbp_session=1', 'cbp_session')).toBeUndefined();
    expect(cookieValue(undefined, 'cbp_session')).toBeUndefined();
    expect(normalizeCapabilities(undefined)).toEqual(['read']);
    expect(normalizeCapabilities(['edit', 'replay', 'edit'])).toEqual(['read', 'replay', 'edit']);
  });
});
