// A real HTTP forward proxy for tests, run as its own process:
//   node forward-proxy.mjs <host> [certFile keyFile]
// Plain HTTP proxy, or an HTTPS proxy (TLS to the proxy itself) when given a cert.
// Handles CONNECT (tunnels raw TCP to the requested authority) and absolute-form
// requests (forwards them with http.request). Prints `listening <port>` once, then
// one JSON line per request it received: {method, target, host, auth}. It connects
// only where it is told, within 127.0.0.0/8 (tests send nothing anywhere else).
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { readFileSync } from 'node:fs';

const [host = '127.0.0.1', certFile, keyFile] = process.argv.slice(2);
const log = (entry) => process.stdout.write(`${JSON.stringify(entry)}\n`);
const loopback = (h) => /^127\.\d+\.\d+\.\d+$/.test(h) || h === 'localhost';

const onRequest = (req, res) => {
  log({ method: req.method, target: req.url, host: req.headers.host ?? null, auth: req.headers['proxy-authorization'] ?? null });
  let target;
  try {
    target = new URL(req.url);
  } catch {
    res.writeHead(400).end('absolute-form only');
    return;
  }
  if (!loopback(target.hostname)) return void res.writeHead(403).end('loopback only');
  const headers = { ...req.headers };
  delete headers['proxy-authorization'];
  const upstream = http.request(
    { host: target.hostname, port: target.port || 80, method: req.method, path: target.pathname + target.search, headers },
    (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    },
  );
  upstream.on('error', () => res.writeHead(502).end());
  req.pipe(upstream);
};

const server = certFile ? https.createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, onRequest) : http.createServer(onRequest);
server.on('connect', (req, client, head) => {
  log({ method: 'CONNECT', target: req.url, host: req.headers.host ?? null, auth: req.headers['proxy-authorization'] ?? null });
  const m = /^\[?([^\]]+)\]?:(\d+)$/.exec(req.url ?? '');
  if (!m || !loopback(m[1])) {
    client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
    return;
  }
  const upstream = net.connect({ host: m[1], port: Number(m[2]) }, () => {
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  upstream.on('error', () => client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n'));
  client.on('error', () => upstream.destroy());
});
server.listen(0, host, () => log({ listening: server.address().port }));
process.on('SIGTERM', () => process.exit(0));
