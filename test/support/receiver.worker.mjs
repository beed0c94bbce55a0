// A real HTTP receiver running in its own thread (own event loop), so the time it
// measures is not distorted by the service under test running in the main thread,
// as a receiver on another machine would not be. Behaviour comes from the query:
//   ?sleep=MS          answer after MS
//   ?code=N            answer with status N (default 200)
//   ?hang=1            never answer
//   ?failTimes=N&failCode=C   answer C (default 503) to the first N requests of a webhook-id
//   ?retryAfter=S      add Retry-After: S
//   ?location=URL      add Location: URL (with ?code=302, a redirect)
//   ?bodyBytes=N       answer with a body of N bytes ('x' repeated)
// maxConcurrent (workerData) queues requests beyond it, as php-fpm does.
import http from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';

const { host = '127.0.0.1', port = 0, maxConcurrent = Infinity } = workerData ?? {};
const now = () => performance.timeOrigin + performance.now();
let active = 0;
const queue = [];
const seen = new Map();
let server;

function admit(run) {
  if (active < maxConcurrent) return run();
  queue.push(run);
  parentPort.postMessage({ type: 'queued', depth: queue.length });
}

function handle(req, res) {
  const q = new URL(req.url, 'http://x').searchParams;
  if (q.get('hang')) return;
  const id = String(req.headers['webhook-id'] ?? '');
  const n = (seen.get(id) ?? 0) + 1;
  seen.set(id, n);
  let code = Number(q.get('code') ?? 200);
  if (n <= Number(q.get('failTimes') ?? 0)) code = Number(q.get('failCode') ?? 503);
  const headers = { 'content-type': 'text/plain' };
  if (q.get('retryAfter')) headers['retry-after'] = q.get('retryAfter');
  if (q.get('location')) headers.location = q.get('location');
  setTimeout(
    () => {
      res.writeHead(code, headers);
      res.end(q.get('bodyBytes') ? Buffer.alloc(Number(q.get('bodyBytes')), 'x') : (q.get('body') ?? `ok ${n}`));
    },
    Number(q.get('sleep') ?? 0),
  );
}

function start(listenPort) {
  server = http.createServer((req, res) => {
    const arrivedAt = now();
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      const record = { method: req.method, url: req.url, headers: req.headers, rawHeaders: req.rawHeaders, body, arrivedAt, startedAt: arrivedAt };
      admit(() => {
        record.startedAt = now();
        active++;
        parentPort.postMessage({ type: 'active', active });
        res.on('close', () => {
          active--;
          record.handledMs = now() - record.startedAt;
          parentPort.postMessage({ type: 'request', record, active });
          queue.shift()?.();
        });
        handle(req, res, body, record);
      });
    });
  });
  server.keepAliveTimeout = 30_000;
  server.listen(listenPort, host, () => parentPort.postMessage({ type: 'listening', port: server.address().port }));
}

parentPort.on('message', (m) => {
  if (m.type === 'down') {
    server.closeAllConnections();
    server.close(() => parentPort.postMessage({ type: 'down' }));
  } else if (m.type === 'up') start(m.port);
});
start(port);
