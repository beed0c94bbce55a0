// What both peer workers share, so they differ only in their queue: the axios client
// and its send (keep-alive, no redirects followed: a 3xx is a failure, as in the
// service), the results table's batched insert, and the warm-up's loopback receiver.
import http from 'node:http';
import axios from 'axios';

/** The warm-up's made-up calls: 3,000, as the service sent until 2026-12-03 (it sends none since). */
export const WARM_UP_CALLS = Number(process.env.PEER_WARM_UP_CALLS ?? 3_000);

export const client = axios.create({
  httpAgent: new http.Agent({ keepAlive: true }),
  timeout: 10_000,
  maxRedirects: 0,
  validateStatus: () => true,
  headers: { 'content-type': 'application/json' },
});

/** One call of a job ({url, body}); its outcome as the results table stores it. */
export async function send(id, data) {
  const attemptedAt = new Date();
  const t0 = performance.now();
  let status = 0;
  try {
    status = (await client.post(data.url, data.body)).status;
  } catch {
    status = 0; // timeout or connection error
  }
  return { id, status, ms: performance.now() - t0, attemptedAt };
}

export const ok = (outcome) => outcome.status >= 200 && outcome.status < 300;

/**
 * Stores `outcomes` in `delivery` with one `unnest` statement, a retried job's latest
 * attempt over its earlier one (a job keeps its id across retries in both queues);
 * `idType` is the queue's job id type.
 */
export function storeOutcomes(pool, outcomes, idType) {
  return pool.query(
    `INSERT INTO delivery (job_id, status, duration_ms, attempted_at)
     SELECT * FROM unnest($1::${idType}[], $2::int[], $3::real[], $4::timestamptz[])
     ON CONFLICT (job_id) DO UPDATE SET status = EXCLUDED.status, duration_ms = EXCLUDED.duration_ms, attempted_at = EXCLUDED.attempted_at`,
    [outcomes.map((d) => d.id), outcomes.map((d) => d.status), outcomes.map((d) => d.ms), outcomes.map((d) => d.attemptedAt)],
  );
}

/** A receiver on 127.0.0.1 in this process that answers 204 at once, for the warm-up's calls. */
export async function loopbackReceiver() {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/warm-up`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** Job payloads of the warm-up: WARM_UP_CALLS calls to `url`, bodies shaped as the real ones. */
export const warmUpPayloads = (url) => Array.from({ length: WARM_UP_CALLS }, (_, n) => ({ url, body: { event: 'warm-up', n } }));
