// What receiver authentication costs on the hot path: the same N callbacks drained to
// one receiver with OAuth2 (a token already cached, as it is between expiries) and to
// the same receiver without auth, alternated, medians compared. Target: ≥ 0.9× (issue 55).
//   npm run bench:auth            (BENCH_N, BENCH_WINDOW, BENCH_ROUNDS to change the size)
import http from 'node:http';
import { dispatchEnv } from './dispatch.bench.mjs';
import { BenchReceiver } from './lib/receiver.mjs';
import { BENCH_KEY, connect, freshDatabase, main, median, row, startService, waitUntil } from './lib/harness.mjs';
import { benchKeyId, openCount, seedDue } from './lib/seed.mjs';

const N = Number(process.env.BENCH_N ?? 20_000);
const WINDOW = Number(process.env.BENCH_WINDOW ?? 200);
/** Turns of each; BENCH_ROUNDS (3). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

/** A token endpoint on 127.0.0.1 that answers every client credentials request with a token valid for an hour, and counts them. */
async function tokenEndpoint() {
  let issued = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      issued++;
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ access_token: `bench-token-${issued}`, token_type: 'Bearer', expires_in: 3600 }));
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}/token`, issued: () => issued, close: () => new Promise((r) => server.close(r)) };
}

async function putReceiver(serviceUrl, name, body) {
  const res = await fetch(`${serviceUrl}/v1/receivers/${name}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`PUT receiver ${name}: ${res.status} ${await res.text()}`);
}

/** Seeds `n` due callbacks of the receiver and times them until all are written back; calls/s. */
async function drain(db, receiver, receiverId, n) {
  const keyId = await benchKeyId(db);
  const before = (await receiver.stats()).count;
  const { batchId, committedAt } = await seedDue(db, keyId, [`${receiver.url()}/hook`], n, { receiverId });
  await receiver.waitForCount(before + n, 120_000);
  await waitUntil(async () => (await openCount(db, batchId)) === 0, 120_000, 5);
  const seconds = (performance.now() - committedAt) / 1000;
  const { rows } = await db.query(`SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS ok FROM callback WHERE batch_id = $1`, [batchId]);
  if (rows[0].ok !== n) throw new Error(`expected ${n} succeeded, got ${rows[0].ok}`);
  return n / seconds;
}

export async function run(server) {
  const url = await freshDatabase(server, 'bench_auth');
  const receiver = await BenchReceiver.start();
  const tokens = await tokenEndpoint();
  const service = await startService(url, dispatchEnv(WINDOW));
  const db = await connect(url);
  try {
    const target = `${receiver.url()}/hook`;
    await putReceiver(service.url, 'bench-plain', { url: target });
    await putReceiver(service.url, 'bench-oauth', {
      url: target,
      auth: { type: 'oauth2', tokenUrl: tokens.url, clientId: 'bench', clientSecret: 'bench-secret' },
    });
    const ids = Object.fromEntries((await db.query(`SELECT name, id FROM receiver`)).rows.map((r) => [r.name, r.id]));
    // warm both: the send path, the plans, and the token (fetched once here, then cached in memory)
    await drain(db, receiver, ids['bench-plain'], Math.min(2_000, N));
    await drain(db, receiver, ids['bench-oauth'], Math.min(2_000, N));
    const plain = [];
    const oauth = [];
    for (let round = 0; round < ROUNDS; round++) {
      await receiver.reset();
      plain.push(await drain(db, receiver, ids['bench-plain'], N));
      await receiver.reset();
      oauth.push(await drain(db, receiver, ids['bench-oauth'], N));
    }
    if (tokens.issued() !== 1) throw new Error(`the token endpoint issued ${tokens.issued()} tokens; one was expected (cached for the whole run)`);
    const [p, o] = [median(plain), median(oauth)];
    console.error(`plain ${plain.map(Math.round).join(', ')} calls/s; oauth2 ${oauth.map(Math.round).join(', ')} calls/s; tokens fetched: ${tokens.issued()}`);
    return [row(`drain of ${N} to an OAuth2 receiver, token cached, window ${WINDOW} (median of ${ROUNDS})`, o, 'calls/s', { baseline: p, target: 0.9 * p })];
  } finally {
    await db.end();
    await service.stop();
    await tokens.close();
    await receiver.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main(run);
