// A lean benchmark receiver in its own thread, so its work never shares the event
// loop of the service or of the load generator. It listens on every host in
// `workerData.hosts` (127.0.0.x) and answers each request once its body is read:
//   ?sleep=MS   answer after MS
//   ?failFirst=1   answer 503 to the first request of each webhook-id
// It counts requests and keeps, per webhook-id, how long it held the request by its
// own clock (headers in → response flushed) and when it arrived (epoch ms), and since
// the last reset when the first and the last request arrived and the last left. Records
// are kept here and handed over only on request, so reporting costs nothing while
// load is running.
import http from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';

const { hosts = ['127.0.0.1'], record = false } = workerData ?? {};
const now = () => performance.timeOrigin + performance.now();
let count = 0;
let active = 0;
let maxActive = 0;
/** Epoch ms since the last reset: first and last arrival, last answer flushed. */
let firstArrivedAt = 0;
let lastArrivedAt = 0;
let lastAnsweredAt = 0;
let ids = [];
let arrived = [];
let handled = [];
let watchers = [];
/** Webhook-ids that got their one 503 (failFirst). */
const failed = new Set();

function onRequest(req, res) {
  const at = now();
  firstArrivedAt ||= at;
  lastArrivedAt = at;
  active++;
  if (active > maxActive) maxActive = active;
  const q = req.url.indexOf('sleep=');
  const sleep = q === -1 ? 0 : Number.parseInt(req.url.slice(q + 6), 10) || 0;
  req.on('data', () => undefined);
  req.on('end', () => {
    const id = String(req.headers['webhook-id'] ?? '');
    const fail = req.url.includes('failFirst=1') && !failed.has(id) && failed.add(id);
    const answer = () => {
      res.writeHead(fail ? 503 : 200, { 'content-type': 'text/plain', 'content-length': '2' });
      res.end(fail ? 'no' : 'ok');
    };
    if (sleep > 0) setTimeout(answer, sleep);
    else answer();
  });
  res.on('finish', () => {
    lastAnsweredAt = now();
    active--;
    count++;
    if (record) {
      ids.push(String(req.headers['webhook-id'] ?? ''));
      arrived.push(at);
      handled.push(now() - at);
    }
    if (watchers.length > 0) {
      for (const w of watchers.filter((w) => count >= w.target)) parentPort.postMessage({ type: 'reached', token: w.token, count, at: now() });
      watchers = watchers.filter((w) => count < w.target);
    }
  });
}

let listening = 0;
const ports = {};
for (const host of hosts) {
  const server = http.createServer({ keepAliveTimeout: 30_000 }, onRequest);
  server.maxHeadersCount = 100;
  server.listen(0, host, () => {
    ports[host] = server.address().port;
    if (++listening === hosts.length) parentPort.postMessage({ type: 'listening', ports });
  });
}

parentPort.on('message', (m) => {
  if (m.type === 'stats') parentPort.postMessage({ type: 'stats', token: m.token, count, maxActive, firstArrivedAt, lastArrivedAt, lastAnsweredAt });
  else if (m.type === 'records') {
    parentPort.postMessage({ type: 'records', token: m.token, ids, arrived, handled });
    ids = [];
    arrived = [];
    handled = [];
  } else if (m.type === 'reset') {
    count = 0;
    maxActive = 0;
    firstArrivedAt = lastArrivedAt = lastAnsweredAt = 0;
    ids = [];
    arrived = [];
    handled = [];
    parentPort.postMessage({ type: 'reset', token: m.token });
  } else if (m.type === 'watch') {
    if (count >= m.target) parentPort.postMessage({ type: 'reached', token: m.token, count, at: now() });
    else watchers.push({ token: m.token, target: m.target });
  }
});
