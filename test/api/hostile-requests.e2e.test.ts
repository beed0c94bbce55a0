import http from 'node:http';
import net from 'node:net';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, createTestDatabase, type TestDatabase } from '../support/database.js';
import { spawnService, type ServiceProcess } from '../support/process.js';
import { Receiver } from '../support/receiver.js';
import { TEST_KEY, waitFor } from '../support/service.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- answers are asserted on their shape at run time */

/**
 * The attacks of the "shut the doors" review and more of their kind, against the built
 * service as its own process (its real stdout is the log read at the end): deep, wide
 * and long bodies with and without credentials, forged Host headers, header tricks,
 * credentials in query strings. Each answer comes within its bound, `/health/live`
 * answers within 100 ms while the heavy ones are served, nothing refused is stored,
 * and no credential any request carried appears in any log line.
 */
const METRICS_TOKEN = 'metrics-token-hostile-run-0123456789';
const MiB = 1024 * 1024;
/** How long a refusal may take: it reads at most the headers, or a body as fast as loopback carries it. */
const REFUSED_WITHIN_MS = 1000;
const LIVE_WITHIN_MS = 100;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any;
  ms: number;
}

/** One request on its own connection, body and all, answered even when the service closes the connection before the upload ends. */
function send(base: string, path: string, init: { method?: string; headers?: Record<string, string | number>; body?: string | Buffer } = {}): Promise<Answer> {
  const started = performance.now();
  // Keep-alive, as clients are by default: a client that asks to close (what `agent: false`
  // does) has the connection closed after the answer, and its own upload then fails.
  const agent = new http.Agent({ keepAlive: true });
  return new Promise<Answer>((resolve, reject) => {
    const req = http.request(`${base}${path}`, { method: init.method ?? 'GET', headers: init.headers, agent });
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        let json: any;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode!, headers: res.headers, text, json, ms: performance.now() - started });
      });
    });
    // The upload of a refused body may be cut off (EPIPE, ECONNRESET) once the answer is in.
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    req.end(init.body);
  }).finally(() => agent.destroy());
}

/**
 * A request whose body is sent in two parts: `first`, then, only if no answer came
 * within `waitMs`, `rest`. A service that answers from what it has (the announced length,
 * the first bytes) answers before the client sends more, so its closing the connection
 * cannot cut the client's upload short of reading the answer.
 */
function sendInParts(base: string, path: string, headers: Record<string, string | number>, first: Buffer, rest: Buffer, waitMs = 2000): Promise<Answer> {
  const started = performance.now();
  return new Promise<Answer>((resolve, reject) => {
    const req = http.request(`${base}${path}`, { method: 'POST', headers, agent: false });
    const timer = setTimeout(() => req.end(rest), waitMs);
    req.on('response', (res) => {
      clearTimeout(timer);
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        req.destroy();
        resolve({ status: res.statusCode!, headers: res.headers, text, json: JSON.parse(text), ms: performance.now() - started });
      });
    });
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.write(first);
  });
}

/**
 * `work()`, with `/health/live` asked one after another meanwhile (at least `min` times),
 * and the slowest answer's time. On a machine shared with other test runs a process is
 * sometimes not scheduled for 100 ms whatever it does, so a try whose slowest probe
 * passed the bound is made again, up to three tries in all; an event loop that the work
 * itself blocks stalls the probes of every try, by seconds.
 */
async function liveWhile<T>(base: string, work: () => Promise<T>, min = 3): Promise<{ result: T; slowestMs: number; probes: number }> {
  let measured = await liveDuring(base, work(), min);
  for (let tries = 1; tries < 3 && measured.slowestMs >= LIVE_WITHIN_MS; tries++) measured = await liveDuring(base, work(), min);
  return measured;
}

async function liveDuring<T>(base: string, work: Promise<T>, min: number): Promise<{ result: T; slowestMs: number; probes: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const probe = () =>
    new Promise<number>((resolve, reject) => {
      const started = performance.now();
      http
        .get(`${base}/health/live`, { agent }, (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - started) : reject(new Error(`/health/live answered ${res.statusCode}`))));
        })
        .on('error', reject);
    });
  await probe(); // the connection is open before the work starts
  let done = false;
  const settled = work.finally(() => (done = true));
  const times: number[] = [];
  while (!done || times.length < min) times.push(await probe());
  agent.destroy();
  return { result: await settled, slowestMs: Math.max(...times), probes: times.length };
}

describe('hostile requests', () => {
  let db: TestDatabase;
  let client: pg.Client;
  let proc: ServiceProcess;
  let base = '';
  let receiver: Receiver;
  let portalToken = '';
  /** Every credential a request below carried: none may reach the log. */
  const presented = new Set<string>([TEST_KEY, METRICS_TOKEN]);

  const key = (k = TEST_KEY) => ({ authorization: `Bearer ${k}` });
  const json = (body: unknown, headers: Record<string, string> = key()) => ({
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  /** Rows of every table a refused request could have written to. */
  const stored = async () =>
    (
      await client.query(`SELECT (SELECT count(*) FROM api_key)::int AS keys, (SELECT count(*) FROM batch)::int AS batches,
        (SELECT count(*) FROM callback)::int AS callbacks, (SELECT count(*) FROM receiver)::int AS receivers,
        (SELECT count(*) FROM portal_session)::int AS sessions, (SELECT count(*) FROM event)::int AS events,
        (SELECT count(*) FROM event_type)::int AS types, (SELECT count(*) FROM signing_secret)::int AS secrets`)
    ).rows[0];

  beforeAll(async () => {
    [db, receiver] = await Promise.all([createTestDatabase(), Receiver.start()]);
    client = await connect(db.url);
    proc = await spawnService({ DATABASE_URL: db.url, LOG_LEVEL: 'debug', METRICS_TOKEN, API_AUTH_FAILURES_PER_SEC: '1', API_AUTH_FAILURES_BURST: '20' });
    base = proc.url;
    expect((await send(base, '/v1/receivers/shop', { ...json({ url: `${receiver.url}/shop` }), method: 'PUT' })).status).toBe(201);
    const session = await send(base, '/v1/receivers/shop/portal-sessions', json({ capabilities: ['edit'] }));
    expect(session.status).toBe(201);
    portalToken = session.json.token;
    presented.add(portalToken);
  });
  afterAll(async () => {
    await proc?.stop();
    await client?.end();
    await receiver?.close();
    await db?.drop();
  });

  describe('bodies', () => {
    const deep = Buffer.from('['.repeat(8 * MiB));

    it.each([
      ['no key', '/v1/batches', {}],
      ['a wrong key', '/v1/batches', key('cbk_wrong_key_for_the_hostile_run_000')],
      ['a portal token on an API route', '/v1/events', key('(portal token)')],
      ['no portal session', '/portal/api/receiver', {}],
      ['a forged portal session', '/portal/api/receiver', { cookie: 'cbp_session=cbp_eyJmb3JnZWQiOnRydWV9.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }],
      ['an unknown /v1 route', '/v1/no-such-route', {}],
    ])(
      'should refuse an 8 MB [[[[… body with %s before reading it, with /health/live answering meanwhile',
      async (_name, path, headers: Record<string, string>) => {
        if (headers.authorization === 'Bearer (portal token)') headers = key(portalToken);
        if (headers.authorization) presented.add(headers.authorization.slice('Bearer '.length));
        const before = await stored();
        const method = path.startsWith('/portal') ? 'PATCH' : 'POST';
        const { result, slowestMs } = await liveWhile(base, () =>
          send(base, path, { method, headers: { ...headers, 'content-type': 'application/json' }, body: deep }),
        );
        expect(result.status).toBe(401);
        expect(result.json).toEqual({ code: 'unauthorized', message: expect.any(String), requestId: expect.any(String) });
        expect(result.ms).toBeLessThan(REFUSED_WITHIN_MS);
        expect(slowestMs).toBeLessThan(LIVE_WITHIN_MS);
        expect(await stored()).toEqual(before);
      },
    );

    it('should refuse an 8 MB [[[[… body with a valid key by its nesting, measured before JSON.parse builds it', async () => {
      const before = await stored();
      const { result, slowestMs } = await liveWhile(base, () =>
        send(base, '/v1/batches', { method: 'POST', headers: { ...key(), 'content-type': 'application/json' }, body: deep }),
      );
      expect([result.status, result.json?.code]).toEqual([400, 'validation_failed']);
      expect(result.json.message).toMatch(/nested deeper than 36 levels/);
      expect(result.ms).toBeLessThan(REFUSED_WITHIN_MS);
      expect(slowestMs).toBeLessThan(LIVE_WITHIN_MS);
      expect(await stored()).toEqual(before);
    });

    it('should refuse nesting hidden behind strings and escapes, and take brackets inside strings as text', async () => {
      const nested = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
      const tooDeep = `{"label":"\\"]]]]\\\\","callbacks":[{"url":"http://127.0.0.1:9/","body":${nested(40)}}]}`;
      expect((await send(base, '/v1/batches', json(JSON.parse(tooDeep)))).json.message).toMatch(/nested deeper than 36 levels/);
      const raw = await send(base, '/v1/batches', { method: 'POST', headers: { ...key(), 'content-type': 'application/json' }, body: tooDeep });
      expect([raw.status, raw.json.message]).toEqual([400, expect.stringMatching(/nested deeper than 36 levels/)]);
      const brackets = await send(
        base,
        '/v1/batches',
        json({ label: '[[[[', callbacks: [{ url: 'http://127.0.0.1:9/', runAt: '2999-01-01T00:00:00Z', body: '{["\\'.repeat(5000) }] }),
      );
      expect(brackets.status).toBe(202);
    });

    it('should answer wide and long bodies within bounds: 413 past MAX_REQUEST_BYTES by its length, 401 without a key, 413 for a batch past its size', async () => {
      const before = await stored();
      const wide = `{"callbacks":[${Array(400_000).fill('{"url":"http://127.0.0.1:9/"}').join(',')}]}`;
      const overBatch = `{"callbacks":[${Array(10_001).fill('{"url":"http://127.0.0.1:9/"}').join(',')}]}`;
      const long = Buffer.alloc(40 * MiB, 0x20);
      const announced = { 'content-type': 'application/json', 'content-length': long.length };
      const { result, slowestMs } = await liveWhile(base, () =>
        Promise.all([
          sendInParts(base, '/v1/batches', { ...key(), ...announced }, long.subarray(0, 1024), long.subarray(1024)),
          send(base, '/v1/batches', { method: 'POST', headers: { 'content-type': 'application/json' }, body: long }),
          send(base, '/v1/batches', { method: 'POST', headers: { 'content-type': 'application/json' }, body: wide }),
        ]),
      );
      expect(result.map((r) => r.status)).toEqual([413, 401, 401]);
      for (const r of result) expect(r.ms).toBeLessThan(REFUSED_WITHIN_MS);
      expect(slowestMs).toBeLessThan(LIVE_WITHIN_MS);
      const keyed = await send(base, '/v1/batches', { method: 'POST', headers: { ...key(), 'content-type': 'application/json' }, body: overBatch });
      expect([keyed.status, keyed.json.code]).toEqual([413, 'payload_too_large']);
      expect(await stored()).toEqual(before);
    });

    it('should read at most 16 KiB of body for a route that takes no credential, announced or chunked', async () => {
      const body = Buffer.from(JSON.stringify({ pad: 'x'.repeat(MiB) }));
      const [head, tail] = [body.subarray(0, 20 * 1024), body.subarray(20 * 1024)];
      const announced = await sendInParts(
        base,
        '/health/live',
        { 'content-type': 'application/json', 'content-length': body.length },
        head.subarray(0, 100),
        body.subarray(100),
      );
      expect([announced.status, announced.json.code]).toEqual([413, 'payload_too_large']);
      const chunked = await sendInParts(base, '/dashboard', { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, head, tail);
      expect([chunked.status, chunked.json.code]).toEqual([413, 'payload_too_large']);
      expect(chunked.json.message).toMatch(/without a valid credential may send at most 16384 bytes/);
      expect((await send(base, '/health/live', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(404);
    });
  });

  describe('hosts, headers and tokens', () => {
    it("should build a portal link from the service's own address whatever Host the request names", async () => {
      for (const host of ['evil.example', 'evil.example:443', '127.0.0.1.evil.example']) {
        const minted = await send(base, '/v1/receivers/shop/portal-sessions', { ...json({}), headers: { ...json({}).headers, host } });
        expect(minted.status).toBe(201);
        presented.add(minted.json.token);
        expect(minted.json.url).toBe(`${base}/portal/session?token=${minted.json.token}`);
      }
      const followed = await send(base, `/portal/session?token=${portalToken}`, { headers: { host: 'evil.example' } });
      expect([followed.status, followed.headers.location]).toEqual([303, '/portal']);
    });

    it('should refuse header names that differ only by case, naming them, wherever headers are taken', async () => {
      const before = await stored();
      const dup = { 'X-Dup': 'a', 'x-dup': 'b' };
      const answers = [
        await send(base, '/v1/batches', json({ callbacks: [{ url: 'http://127.0.0.1:9/', headers: dup }] })),
        await send(
          base,
          '/v1/batches',
          json({ defaults: { headers: { 'Content-Type': 'text/plain', 'content-type': 'application/json' } }, callbacks: [{ url: 'http://127.0.0.1:9/' }] }),
        ),
        await send(base, '/v1/receivers/dup', { ...json({ url: 'http://127.0.0.1:9/', headers: dup }), method: 'PUT' }),
        await send(base, '/portal/api/receiver', { ...json({ headers: dup }, key(portalToken)), method: 'PATCH' }),
      ];
      for (const a of answers) {
        expect([a.status, a.json.code]).toEqual([400, 'validation_failed']);
        expect(a.json.message).toMatch(/(X-Dup|Content-Type) is given twice/);
      }
      expect(await stored()).toEqual(before);
    });

    it('should send one header per name whatever the case: a default laid under a callback, an event over its receiver', async () => {
      expect((await send(base, '/v1/event-types/order.paid', { ...json({}), method: 'PUT' })).status).toBe(201);
      const put = await send(base, '/v1/receivers/typed', {
        ...json({ url: `${receiver.url}/typed`, headers: { 'Content-Type': 'text/plain', 'X-From': 'receiver' }, eventTypes: ['order.*'] }),
        method: 'PUT',
      });
      expect(put.status).toBe(201);
      const batch = await send(
        base,
        '/v1/batches',
        json({
          defaults: { headers: { 'User-Agent': 'default-agent', 'X-Token': 'default' } },
          callbacks: [{ url: `${receiver.url}/batch`, headers: { 'x-token': 'own' } }],
        }),
      );
      expect(batch.status).toBe(202);
      expect((await send(base, '/v1/events', json({ type: 'order.paid', payload: { n: 1 } }))).status).toBe(202);
      const got = await waitFor(() => {
        const a = receiver.requests.find((r) => r.url === '/batch');
        const b = receiver.requests.find((r) => r.url === '/typed');
        return a && b && { a, b };
      });
      const named = (raw: string[], name: string) => raw.filter((_, i) => i % 2 === 0 && raw[i].toLowerCase() === name).length;
      for (const name of ['user-agent', 'x-token', 'content-type'])
        expect([name, named(got.a.rawHeaders, name)]).toEqual([name, name === 'content-type' ? 0 : 1]);
      expect(got.a.headers).toMatchObject({ 'user-agent': 'default-agent', 'x-token': 'own' });
      expect(named(got.b.rawHeaders, 'content-type')).toBe(1);
      expect(got.b.headers).toMatchObject({ 'content-type': 'application/json', 'x-from': 'receiver' });
    });

    it('should take no credential from a query string', async () => {
      const wrongPortal = 'cbp_eyJzaWQiOiJ4In0.BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';
      presented.add(wrongPortal);
      const answers = await Promise.all([
        send(base, `/v1/batches?token=${TEST_KEY}`),
        send(base, `/v1/batches?access_token=${TEST_KEY}&api_key=${TEST_KEY}`),
        send(base, `/metrics?token=${METRICS_TOKEN}`),
        send(base, `/portal/api/session?token=${portalToken}`),
        send(base, `/portal/session?token=${wrongPortal}`),
        send(base, `/portal/session?token=${TEST_KEY}`),
      ]);
      expect(answers.map((a) => a.status)).toEqual([401, 401, 401, 401, 401, 401]);
    });

    it('should refuse a request that frames its body two ways (Content-Length and Transfer-Encoding) before it reaches a route', async () => {
      const { port } = new URL(base);
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(port), '127.0.0.1', () =>
          socket.write(
            `POST /v1/batches HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_KEY}\r\nContent-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /v1/keys HTTP/1.1\r\nHost: x\r\n\r\n`,
          ),
        );
        let text = '';
        socket.on('data', (c) => (text += c));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 400/);
      expect(answer.match(/HTTP\/1\.1/g)).toHaveLength(1);
    });

    it('should not lock out a working key when wrong keys, with forged X-Forwarded-For, flood from its address', async () => {
      const wrong = (i: number) => {
        const k = `cbk_flood_${String(i).padStart(4, '0')}_wrong_key_hostile`;
        presented.add(k);
        return send(base, '/v1/batches', { headers: { ...key(k), 'x-forwarded-for': `203.0.113.${i % 250}` } }).then((a) => a.status);
      };
      // No TRUSTED_PROXIES: the forged header names nobody, every guess counts against this address.
      const statuses: number[] = [];
      // The last guess that got past left the bucket under one token, and it refills
      // continuously at 1 a second (a slow loop leaves a fraction refilled), so from when
      // that guess was sent no more than one guess plus one a whole second gets past.
      let lastPassSentAt = 0;
      for (let i = 0; statuses.at(-1) !== 429 && i < 40; i++) {
        const sentAt = performance.now();
        statuses.push(await wrong(i));
        if (statuses.at(-1) !== 429) lastPassSentAt = sentAt;
      }
      expect(statuses.at(-1)).toBe(429);
      const next: number[] = [];
      for (let i = 100; i < 106; i++) next.push(await wrong(i));
      const seconds = Math.floor((performance.now() - lastPassSentAt) / 1000);
      expect(next.every((status) => status === 401 || status === 429)).toBe(true);
      expect(next.filter((status) => status === 401).length, `${next} within ${seconds} s of the last guess let past`).toBeLessThanOrEqual(seconds + 1);
      // The admin key verified in this process before: it is not a guess, and is served.
      expect((await send(base, '/v1/batches', { headers: key() })).status).toBe(200);
    });
  });

  it('should have written no credential any request carried into any log line, at debug level', async () => {
    await waitFor(() => proc.output().includes('"statusCode":429'), 5000);
    const out = proc.output();
    expect(out.split('\n').filter((l) => l.startsWith('{')).length).toBeGreaterThan(30);
    for (const secret of presented) expect([secret.slice(0, 24), out.includes(secret)]).toEqual([secret.slice(0, 24), false]);
    expect(out).not.toMatch(/cbp_[A-Za-z0-9_-]{8}/);
    expect(out).not.toMatch(/cbk_[A-Za-z0-9_-]{4}/);
  });
});
