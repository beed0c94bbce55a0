import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { components, paths } from './api.schema.js';

export type { components, paths } from './api.schema.js';
export type Schemas = components['schemas'];
export type ErrorBody = Schemas['ErrorDto'];
export type ApiClient = Client<paths>;

export interface ApiClientOptions {
  /** e.g. http://127.0.0.1:3000 */
  baseUrl: string;
  /** API key, sent as `Authorization: Bearer <key>`; none for the public routes. */
  key?: string;
  fetch?: typeof fetch;
}

/**
 * The typed client of the API: openapi-fetch over the types openapi-typescript
 * generated from the OpenAPI document (api.schema.ts). Each call answers
 * `{data, error, response}`, both typed by the route's documented responses.
 */
export function createApiClient({ baseUrl, key, fetch: fetchImpl }: ApiClientOptions): ApiClient {
  const client = createClient<paths>({ baseUrl, ...(fetchImpl && { fetch: fetchImpl }) });
  if (key) client.use(bearer(key));
  return client;
}

function bearer(key: string): Middleware {
  return {
    onRequest({ request }) {
      request.headers.set('authorization', `Bearer ${key}`);
      return request;
    },
  };
}

/** An API answer that was not 2xx, with the service's stable error code. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body?: ErrorBody,
  ) {
    super(message);
  }
}

/** The data of a 2xx answer, or an ApiError carrying the error body. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) {
    const body = typeof error === 'object' && error !== null && 'code' in error ? (error as ErrorBody) : undefined;
    throw new ApiError(response.status, body?.code ?? 'http_error', body?.message ?? `HTTP ${response.status}`, body);
  }
  return data as T;
}
