// The portal's only data source: /portal/api, with the session cookie the browser
// holds (HttpOnly: this script never sees it). Every change carries the session's
// CSRF token, which only a page of this origin can read (GET /portal/api/session).
import { ApiError } from './api.js';

let csrfToken = '';

/** The session (receiver, capabilities, expiry, CSRF token, theme); remembers the CSRF token. */
export async function loadSession() {
  const session = await portalGet('/portal/api/session');
  csrfToken = session.csrfToken;
  return session;
}

/**
 * GET a /portal/api path and parse the JSON; throws ApiError on a non-2xx answer.
 * @param {string} path
 * @param {Record<string, string | number | undefined | null>} [params]
 * @returns {Promise<any>}
 */
export async function portalGet(path, params = {}) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ''));
  const res = await fetch(query.size ? `${path}?${query}` : path, { headers: { accept: 'application/json' } });
  const body = await res.json().catch(() => undefined);
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

/** POST/PATCH a /portal/api path with the CSRF token (JSON body optional); throws ApiError on a non-2xx answer. */
export async function portalSend(method, path, body) {
  const headers = { accept: 'application/json', 'x-csrf-token': csrfToken };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const answer = await res.json().catch(() => undefined);
  if (!res.ok) throw new ApiError(res.status, answer);
  return answer;
}
