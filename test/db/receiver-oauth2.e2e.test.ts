import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenCache } from '../../src/dispatch/auth/token.cache.js';
import { connect, createTestDatabase } from '../support/database.js';
import { dumpText } from '../support/dump.js';
import { AuthorizationServer, ResourceServer, type OAuth2Client } from '../support/oauth2.js';
import { call, spawnService, type ServiceProcess } from '../support/process.js';
import { waitFor } from '../support/service.js';

/** Long enough that a token is not out of date by the time a loaded machine's resource server checks it. */
const TOKEN_TTL_S = 10;
/**
 * The lifetime of a token a test wants out of date soon (its own receiver's, fetched
 * by a warm-up whose calls count nothing), so that test waits for its expiry, not for
 * TOKEN_TTL_S.
 */
const SHORT_TTL_S = 2;
const BASIC_CLIENT: OAuth2Client = { clientId: 'callbacks-basic', clientSecret: 'client-secret-basic-0123456789' };
const POST_CLIENT: OAuth2Client = { clientId: 'callbacks-post', clientSecret: 'client-secret-post-9876543210', method: 'client_secret_post' };

type Callback = {
  id: string;
  status: string;
  lastError: string | null;
  attempts: Array<{ outcome: string; auth: string | null; phases: { tokenMs?: number } }>;
};

/**
 * OAuth2 receivers (issue 55) against a real authorization server (oidc-provider: client
 * credentials, introspection, revocation) and a resource server that checks each call's
 * token with it, through three processes that dispatch (one of them also serving the
 * API) sharing one database. Their heartbeat is the default one: new work and retries
 * wake them (NOTIFY, due timers), not the heartbeat.
 */
describe(`${TokenCache.name} across workers`, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: pg.Client;
  let as: AuthorizationServer;
  let rs: ResourceServer;
  let api: ServiceProcess;
  const workers: ServiceProcess[] = [];
  /** An API-only process started late: it has held no token in memory. */
  let late: ServiceProcess | undefined;
  let env: Record<string, string>;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = await connect(database.url);
    as = await AuthorizationServer.start({ host: '127.0.0.91', clients: [BASIC_CLIENT, POST_CLIENT], tokenTtlSeconds: TOKEN_TTL_S });
    rs = await ResourceServer.start('127.0.0.92', as);
    env = { DATABASE_URL: database.url, RETRY_JITTER_PERMILLE: '0', LOG_LEVEL: 'debug', DISPATCH_CONCURRENCY: '4' };
    // the first serves the API and dispatches too (ROLE all): three dispatching processes, one spawned fewer
    api = await spawnService({ ...env, ROLE: 'all' });
    for (let i = 0; i < 2; i++) workers.push(await spawnService({ ...env, ROLE: 'worker' }));
    const receiver = (client: OAuth2Client, path: string = client.clientId) => ({
      url: `${rs.url}/hooks/${path}`,
      auth: {
        type: 'oauth2',
        tokenUrl: as.tokenUrl,
        clientId: client.clientId,
        clientSecret: client.clientSecret,
        scope: 'callbacks',
        clientAuth: client.method === 'client_secret_post' ? 'post' : 'basic',
      },
    });
    expect((await call(api.url, '/v1/receivers/oauth-basic', { method: 'PUT', json: receiver(BASIC_CLIENT) })).status).toBe(201);
    expect((await call(api.url, '/v1/receivers/oauth-post', { method: 'PUT', json: receiver(POST_CLIENT) })).status).toBe(201);
    // the receivers of the expiry (then revocation) and outage tests: tokens of their own, made to expire soon by a warm-up
    expect((await call(api.url, '/v1/receivers/oauth-expiry', { method: 'PUT', json: receiver(BASIC_CLIENT, 'expiry') })).status).toBe(201);
    expect((await call(api.url, '/v1/receivers/oauth-down', { method: 'PUT', json: receiver(BASIC_CLIENT, 'down') })).status).toBe(201);
    // the receiver of the late process's test: a token of its own, fetched by the dispatching processes
    expect((await call(api.url, '/v1/receivers/oauth-late', { method: 'PUT', json: receiver(BASIC_CLIENT, 'late') })).status).toBe(201);
  });
  afterAll(async () => {
    for (const p of [api, ...workers, late]) {
      if (!p) continue;
      p.kill('SIGKILL');
      await p.exited;
    }
    await db?.end();
    await rs?.close();
    await as?.close();
    await database?.drop();
  });

  /** Sends `n` callbacks to the receiver (each a retry every 100 ms, up to 30 attempts) and answers them once all finished. */
  async function send(receiver: string, n: number): Promise<Callback[]> {
    const callbacks = Array.from({ length: n }, (_, i) => ({ receiver, body: { i }, maxAttempts: 30, retryDelaysMs: [100], timeoutMs: 10_000 }));
    const { status, body } = await call(api.url, '/v1/batches', { method: 'POST', json: { callbacks } });
    expect(status).toBe(202);
    await waitFor(async () => (await call(api.url, `/v1/batches/${body.id}`)).body.status === 'completed', 60_000, 100);
    return Promise.all(body.callbacks.map(async (c: { id: string }) => (await call(api.url, `/v1/callbacks/${c.id}`)).body as Callback));
  }

  const tokensSeen = (path?: string) => [
    ...new Set(
      rs.requests
        .filter((r) => path === undefined || r.url === path)
        .map((r) => r.token)
        .filter((t): t is string => t !== null),
    ),
  ];
  const storedToken = async (receiver: string) =>
    (
      await db.query<{ refresh_at: Date; expires_at: Date; fetching_by: string | null }>(
        `SELECT t.refresh_at, t.expires_at, t.fetching_by FROM receiver_token t JOIN receiver r ON r.id = t.receiver_id WHERE r.name = $1`,
        [receiver],
      )
    ).rows[0];
  /**
   * Gives `receiver` a shared token that lives SHORT_TTL_S (fetched for `n` callbacks, in
   * the memory of the workers that sent them) and waits until it is out of date, no
   * worker fetching another; tokens issued after that live TOKEN_TTL_S again.
   */
  async function expireSoon(receiver: string, n: number, before?: () => Promise<void>): Promise<void> {
    as.tokenTtlSeconds = SHORT_TTL_S;
    try {
      const warm = await send(receiver, n);
      expect(warm.map((c) => c.status)).toEqual(Array(n).fill('succeeded'));
      await before?.();
      // read each time: a refresh a late warm-up call started stores a later expiry
      await waitFor(
        async () => {
          const t = await storedToken(receiver);
          return t.fetching_by === null && Date.now() > t.expires_at.getTime() + 100;
        },
        (SHORT_TTL_S + 10) * 1000,
        50,
      );
    } finally {
      as.tokenTtlSeconds = TOKEN_TTL_S;
    }
  }

  it('should fetch one token for 20 callbacks through 3 workers, and send every call with it', async () => {
    const delivered = await send('oauth-basic', 20);
    expect(delivered.map((c) => c.status)).toEqual(Array(20).fill('succeeded'));
    expect(as.issued).toBe(1);
    expect(tokensSeen()).toHaveLength(1);
    expect(rs.requests.filter((r) => r.status === 200)).toHaveLength(20);
    // every worker took part, and every attempt says oauth2; the ones that fetched or waited for the token carry its time
    const owners = await db.query(`SELECT count(DISTINCT worker)::int AS n FROM attempt`);
    expect(owners.rows[0].n).toBeGreaterThanOrEqual(2);
    const attempts = delivered.flatMap((c) => c.attempts);
    expect(attempts.every((a) => a.auth === 'oauth2' && a.outcome === 'success')).toBe(true);
    expect(attempts.some((a) => typeof a.phases.tokenMs === 'number')).toBe(true);
    // the client authenticating in the form body (clientAuth post) gets its own token
    const post = await send('oauth-post', 2);
    expect(post.map((c) => c.status)).toEqual(['succeeded', 'succeeded']);
    expect(as.issued).toBe(2);
  });

  it('should fetch one new token once the shared one expired, with no callback failed', async () => {
    await expireSoon('oauth-expiry', 8);
    const before = as.issued;
    const delivered = await send('oauth-expiry', 20);
    expect(delivered.map((c) => c.status)).toEqual(Array(20).fill('succeeded'));
    expect(delivered.every((c) => c.attempts.length === 1)).toBe(true);
    expect(as.issued - before).toBe(1);
  });

  // Right after the expiry test, on its receiver: the token revoked is the one just fetched, fresh as the 401 path needs.
  it('should drop a revoked token on the 401 and send again at once with a new one, once, with no callback failed', async () => {
    const current = tokensSeen('/hooks/expiry').at(-1)!;
    const before = { issued: as.issued, requests: rs.requests.length };
    await as.revoke(current, BASIC_CLIENT);
    const delivered = await send('oauth-expiry', 20);
    expect(delivered.map((c) => c.status)).toEqual(Array(20).fill('succeeded'));
    // each callback one attempt: its 401 and the call again with the new token are that attempt
    expect(delivered.every((c) => c.attempts.length === 1 && c.attempts[0].outcome === 'success')).toBe(true);
    expect(as.issued - before.issued).toBe(1);
    const after = rs.requests.slice(before.requests).filter((r) => r.url === '/hooks/expiry');
    const refused = after.filter((r) => r.status === 401);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(refused.every((r) => r.token === current)).toBe(true);
    // every refused call went again, with the new token
    for (const r of refused) expect(after.some((o) => o.webhookId === r.webhookId && o.status === 200 && o.token !== current)).toBe(true);
  });

  it('should drop a revoked token another process stored on the 401, and send again with a new one', async () => {
    // a process that never holds the token in memory: it serves the API only, and sends only the receiver's test call below
    late = await spawnService({ ...env, ROLE: 'api' });
    as.tokenTtlSeconds = 60; // not due for a refresh before the test call, however slow the machine
    try {
      const warm = await send('oauth-late', 2);
      expect(warm.map((c) => c.status)).toEqual(['succeeded', 'succeeded']);
    } finally {
      as.tokenTtlSeconds = TOKEN_TTL_S;
    }
    const stored = tokensSeen('/hooks/late').at(-1)!;
    await as.revoke(stored, BASIC_CLIENT);
    const before = { issued: as.issued, requests: rs.requests.length };
    const { status, body } = await call(late.url, '/v1/receivers/oauth-late/test', { method: 'POST' });
    expect(status).toBe(200);
    expect(body).toMatchObject({ ok: true, statusCode: 200, outcome: 'success' });
    expect(as.issued - before.issued).toBe(1);
    // the late process found the revoked token in the shared row: refused, then a new one
    const sent = rs.requests.slice(before.requests).filter((r) => r.url === '/hooks/late');
    expect(sent.map((r) => [r.status, r.token === stored])).toEqual([
      [401, true],
      [200, false],
    ]);
  });

  it('should retry, not lose, callbacks while the token endpoint is down, naming it in lastError, and deliver them once it is back', async () => {
    await expireSoon('oauth-down', 4, () => as.down());
    const callbacks = Array.from({ length: 6 }, (_, i) => ({
      receiver: 'oauth-down',
      body: { down: i },
      maxAttempts: 50,
      retryDelaysMs: [150],
      timeoutMs: 10_000,
    }));
    const { body } = await call(api.url, '/v1/batches', { method: 'POST', json: { callbacks } });
    const ids: string[] = body.callbacks.map((c: { id: string }) => c.id);
    const failing = await waitFor(async () => {
      const views = await Promise.all(ids.map(async (id) => (await call(api.url, `/v1/callbacks/${id}`)).body as Callback));
      return views.every((c) => c.attempts.length >= 2) ? views : undefined;
    }, 20_000);
    for (const c of failing) {
      expect(['pending', 'in_flight']).toContain(c.status);
      expect(c.attempts.every((a) => a.outcome === 'auth_error' && a.auth === 'oauth2')).toBe(true);
      expect(c.lastError).toContain(`token endpoint ${as.tokenUrl}`);
      expect(c.lastError).toMatch(/ECONNREFUSED/);
    }
    await as.up();
    await waitFor(async () => (await call(api.url, `/v1/batches/${body.id}`)).body.status === 'completed', 20_000);
    const done = await Promise.all(ids.map(async (id) => (await call(api.url, `/v1/callbacks/${id}`)).body as Callback));
    expect(done.map((c) => c.status)).toEqual(Array(6).fill('succeeded'));
  });

  it('should keep every client secret and token out of answers, logs (debug) and a pg_dump', async () => {
    const secrets = [BASIC_CLIENT.clientSecret, POST_CLIENT.clientSecret, ...tokensSeen()];
    expect(tokensSeen().length).toBeGreaterThanOrEqual(4);
    const answers = JSON.stringify([
      (await call(api.url, '/v1/receivers/oauth-basic')).body,
      (await call(api.url, '/v1/receivers/oauth-post')).body,
      (await call(api.url, '/v1/receivers')).body,
      (await call(api.url, `/v1/callbacks?receiver=oauth-basic&limit=1000`)).body,
    ]);
    expect((await call(api.url, '/v1/receivers/oauth-basic')).body.auth).toMatchObject({
      type: 'oauth2',
      clientId: BASIC_CLIENT.clientId,
      clientSecret: 'set',
    });
    const logs = [api, ...workers, ...(late ? [late] : [])].map((p) => p.output()).join('\n');
    expect(logs.length).toBeGreaterThan(1000); // debug lines were written
    // every row of every table as text (what a dump holds), and pg_dump's own output where the machine has one for this server
    const dump = await dumpText(db, database.directUrl);
    expect(dump).toContain('callbacks-basic'); // the shown fields are there in plain text
    for (const s of secrets) {
      expect({ secret: s, inAnswers: answers.includes(s), inLogs: logs.includes(s), inDump: dump.includes(s) }).toEqual({
        secret: s,
        inAnswers: false,
        inLogs: false,
        inDump: false,
      });
    }
  });
});
