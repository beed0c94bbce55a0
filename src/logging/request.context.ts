import { AsyncLocalStorage } from 'node:async_hooks';

/** The API request a piece of work runs for: set around each request, read by the logger. */
export const requestContext = new AsyncLocalStorage<{ requestId: string }>();
