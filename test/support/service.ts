import type pg from 'pg';
import { startService, type RunningService } from '../../src/app.factory.js';
import { createApiClient, type ApiClient } from '../../src/client/api.client.js';
import { loadConfig, type AppConfig } from '../../src/config/app.config.js';
import { createTestDatabase, directUrlOf } from './database.js';
import { checkedFetch } from './openapi-validator.js';
import { waitFor } from './wait.js';

export { waitFor };

export interface TestService extends RunningService {
  /** The admin key created at start. */
  key: string;
  /** The generated, typed API client (src/client/), with the admin key. Its answers are checked against the served OpenAPI document, as `api`'s are. */
  client: ApiClient;
  /** The same client with another key, or none (`null`). */
  clientWith: (key: string | null) => ApiClient;
  /**
   * fetch against the API with the admin key (or `key` in init). Every answer is checked
   * against the served OpenAPI document (test/support/openapi-validator.ts): one that
   * contradicts it throws, failing the test.
   */
  api: (path: string, init?: RequestInit & { json?: unknown; key?: string | null }) => Promise<Response>;
  /** `api` then the parsed JSON body, typed loosely: for the tests of hostile and malformed requests, which the typed client would not send. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the tests assert on the shape at run time
  apiJson: (path: string, init?: RequestInit & { json?: unknown; key?: string | null }) => Promise<any>;
  stop: () => Promise<void>;
  /** Drops the database the service was started on, if this made it (not one passed in). */
  dropDatabase: () => Promise<void>;
  /** `stop`, then `dropDatabase`: the whole teardown of a test's service. */
  dispose: () => Promise<void>;
}

export const TEST_KEY = 'cbk_test_admin_key_0123456789abcdef';
/** The SECRETS_KEY of every test service (a DATABASE_URL needs one): 32 bytes, base64. */
export const TEST_SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');

/**
 * The whole service in-process on a fresh database clone (or `databaseUrl`), with
 * loopback allowed as a destination (test receivers live on 127.0.0.x) and quiet logs.
 * In a TEST_PGBOUNCER=1 run its DATABASE_URL is the pooled one and DATABASE_DIRECT_URL
 * the server's; otherwise DATABASE_DIRECT_URL stays unset, the default users run.
 */
export async function startTestService(overrides: Partial<AppConfig> = {}, databaseUrl?: string): Promise<TestService> {
  const db = databaseUrl ? { url: databaseUrl, drop: async () => undefined } : await createTestDatabase();
  const directUrl = directUrlOf(db.url);
  const config = loadConfig(
    {},
    {
      port: 0,
      databaseUrl: db.url,
      ...(directUrl !== db.url && { databaseDirectUrl: directUrl }),
      allowPrivateNetworks: ['127.0.0.0/8'],
      bootstrapApiKey: TEST_KEY,
      secretsKey: TEST_SECRETS_KEY,
      logLevel: 'error',
      ...overrides,
    },
  );
  const service = await startService(config);
  const checked = (input: Request | string | URL, init?: RequestInit) => checkedFetch(service.url, input, init);
  const api: TestService['api'] = (path, init = {}) => {
    const { json, key, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (key !== null) headers.set('authorization', `Bearer ${key ?? TEST_KEY}`);
    if (json !== undefined) headers.set('content-type', 'application/json');
    return checked(`${service.url}${path}`, { ...rest, headers, body: json !== undefined ? JSON.stringify(json) : rest.body });
  };
  const apiJson: TestService['apiJson'] = async (path, init) => (await api(path, init)).json();
  const dispose = async () => {
    await service.close();
    await db.drop();
  };
  const clientWith = (key: string | null) => createApiClient({ baseUrl: service.url, fetch: checked, ...(key !== null && { key }) });
  return { ...service, key: TEST_KEY, client: clientWith(TEST_KEY), clientWith, api, apiJson, stop: service.close, dropDatabase: db.drop, dispose };
}

/**
 * One service for the tests of a file that share its settings: started by the first test
 * that asks for it (`get`), the same one for the later ones; `dispose` (for afterAll)
 * ends it if it started. A boot costs seconds of CPU (the service and its database).
 * `databaseUrl` is read when it starts: a file's database made in its beforeAll.
 */
export function sharedService(
  overrides: Partial<AppConfig> = {},
  databaseUrl?: () => string,
): { get: () => Promise<TestService>; dispose: () => Promise<void> } {
  let started: Promise<TestService> | undefined;
  return {
    get: () => (started ??= startTestService(overrides, databaseUrl?.())),
    dispose: async () => {
      await (await started?.catch(() => undefined))?.dispose();
    },
  };
}

/**
 * Services in this process on one database (`databaseUrl`, made by the caller), one per
 * entry of `settings`, started one after another (the first makes the bootstrap key, the
 * others find it): each has its own pools, lease owner and leader session, so they share
 * leases, host caps and the maintenance lead as worker processes would. Stop them with
 * `stopAll`.
 */
export async function startServices(databaseUrl: string, settings: Array<Partial<AppConfig>>): Promise<TestService[]> {
  const services: TestService[] = [];
  for (const overrides of settings) services.push(await startTestService(overrides, databaseUrl));
  return services;
}

/** Stops each of `services`, the last started first. */
export async function stopAll(services: TestService[]): Promise<void> {
  for (const s of [...services].reverse()) await s.stop();
}

/**
 * Waits until a session of `db`'s database waits on a lock with a statement whose
 * text contains `fragment` (the statement a test has just queued behind a lock it holds).
 * `db` must not be in a transaction: Postgres reads pg_stat_activity once per
 * transaction, so a session holding the lock itself would never see the waiter come.
 */
export async function waitForLockWaiter(db: pg.Client, fragment: string, timeoutMs = 10_000, everyMs = 50): Promise<void> {
  await waitFor(
    async () =>
      (await db.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND strpos(query, $1) > 0`, [fragment]))
        .rowCount,
    timeoutMs,
    everyMs,
  );
}

/**
 * Sends the service one batch of 8 callbacks to `url` and waits until they are
 * done. A process's first calls run its send path cold, and that one-off stall lands
 * in their recorded connect phase and duration (7-38 ms over the receiver's time in
 * the first batch, once 70 ms in CI); a service in production is warm, so tests that
 * hold durations to a tolerance warm it first.
 */
export async function warmSendPath(service: TestService, url: string): Promise<void> {
  const { data, error, response } = await service.client.POST('/v1/batches', { body: { callbacks: Array.from({ length: 8 }, () => ({ url })) } });
  if (!data) throw new Error(`warm-up batch refused: ${response.status} ${JSON.stringify(error)}`);
  const { id } = data;
  await waitFor(async () => (await service.client.GET('/v1/batches/{id}', { params: { path: { id } } })).data?.status === 'completed');
}

/** A response's JSON, typed loosely: tests assert on its shape. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the tests assert on the shape at run time
export const jsonOf = async (res: Response): Promise<any> => res.json();
