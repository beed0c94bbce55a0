// The dashboard's only data source: the /v1 API, with the key the user typed.
// The key lives in sessionStorage (gone with the tab) and leaves only in the
// Authorization header of same-origin requests.

// Answers are typed by the client generated from the OpenAPI document
// (src/client/api.schema.ts, JSDoc types only: this file is served as it is).
/** @typedef {import('../../client/api.schema.js').components['schemas']} Schemas */
/** @typedef {Schemas['ErrorDto']} ErrorBody */

const STORAGE = 'callbacks.apiKey';

export const session = {
  get key() {
    return sessionStorage.getItem(STORAGE);
  },
  login(key) {
    sessionStorage.setItem(STORAGE, key);
  },
  logout() {
    sessionStorage.removeItem(STORAGE);
  },
};

export class ApiError extends Error {
  /** @param {number} status @param {ErrorBody | undefined} body */
  constructor(status, body) {
    super(body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.code;
  }
}

/**
 * GET a /v1 path and parse the JSON; throws ApiError on a non-2xx answer. Callers
 * name the answer's type from Schemas (`@type {Schemas['BatchDto']}`).
 * @param {string} path
 * @param {Record<string, string | number | undefined | null>} [params]
 * @returns {Promise<any>}
 */
export async function get(path, params = {}) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ''));
  const url = query.size ? `${path}?${query}` : path;
  const res = await fetch(url, { headers: { authorization: `Bearer ${session.key}`, accept: 'application/json' } });
  const body = await res.json().catch(() => undefined);
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

/** POST/PUT/DELETE a /v1 path (JSON body optional) and parse the answer; throws ApiError on a non-2xx answer. */
export async function send(method, path, body) {
  const headers = { authorization: `Bearer ${session.key}`, accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const answer = await res.json().catch(() => undefined);
  if (!res.ok) throw new ApiError(res.status, answer);
  return answer;
}

/** Checks a key by listing one batch. */
export async function checkKey(key) {
  const res = await fetch('/v1/batches?limit=1', { headers: { authorization: `Bearer ${key}` } });
  if (res.ok) return null;
  const body = await res.json().catch(() => undefined);
  return body?.message ?? `HTTP ${res.status}`;
}
