import { ApiError, createApiClient, unwrap, type ApiClient } from '../client/api.client.js';

export { ApiError } from '../client/api.client.js';

/** The CLI's view of the API: the generated client, with errors worded for a terminal. */
export interface CliApi {
  client: ApiClient;
  /** The data of a 2xx answer; otherwise an ApiError (with a hint when a key is missing). */
  call<T>(request: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T>;
}

export function connect(baseUrl: string, key: string | undefined): CliApi {
  const reach: typeof fetch = async (input, init) => {
    try {
      return await fetch(input, init);
    } catch (error) {
      const { cause } = error as { cause?: { code?: string; message?: string } };
      const reason = cause?.code ?? cause?.message ?? (error as Error).message;
      throw new ApiError(0, 'unreachable', `cannot reach ${baseUrl} (${reason}); is the service running? (--url / CALLBACKS_URL)`);
    }
  };
  const client = createApiClient({ baseUrl, key, fetch: reach });
  return {
    client,
    async call(request) {
      try {
        return await unwrap(request);
      } catch (error) {
        if (error instanceof ApiError && error.status === 401 && !key) {
          throw new ApiError(error.status, error.code, `${error.message} (pass --key or set CALLBACKS_API_KEY)`, error.body);
        }
        throw error;
      }
    },
  };
}
