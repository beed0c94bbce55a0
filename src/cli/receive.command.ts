import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { UsageError, type CliArgs } from './cli.args.js';
import type { Output } from './cli.commands.js';

/** A call's body as printed: its first characters. */
const BODY_CHARS = 200;

/**
 * A receiver answering `/…?sleep=MS&code=N` with N (200) after MS milliseconds (0), like
 * a slow endpoint; `?hang=1` never answers. The demo's receiver and `callbacks receive`.
 */
export async function startReceiver(
  port: number,
  onRequest: (line: string) => void = () => undefined,
  /** Added to every sleep: the endpoint's work, then its answer (the demo's calls end 50 ms after their sleep). */
  answerAfterMs = 0,
  /** `?sleep=` in seconds (the demo's) rather than milliseconds. */
  sleepUnitMs = 1,
): Promise<{ url: string; close: () => void }> {
  const server = http.createServer((req, res) => {
    const query = new URL(req.url ?? '/', 'http://x').searchParams;
    const sleepMs = Math.min(Math.max(Number(query.get('sleep') ?? 0) * sleepUnitMs, 0), 30_000) + answerAfterMs;
    const code = Number(query.get('code') ?? 200);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      onRequest(`${req.method} ${req.url} webhook-id=${req.headers['webhook-id'] ?? '-'} ${body.length > BODY_CHARS ? `${body.slice(0, BODY_CHARS)}…` : body}`);
    });
    if (query.get('hang')) return;
    const timer = setTimeout(() => {
      res.statusCode = Number.isInteger(code) && code >= 100 && code <= 599 ? code : 200;
      res.end('ok');
    }, sleepMs);
    res.on('close', () => clearTimeout(timer));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const close = () => {
    server.closeAllConnections();
    server.close();
  };
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close };
}

/** `callbacks receive [--port 4555]`: a receiver on this machine that prints each call it gets, until Ctrl-C. */
export async function receive(args: CliArgs, io: Output): Promise<number> {
  const port = args.port ?? 4555;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port must be a port number');
  const receiver = await startReceiver(port, (line) => io.out(line));
  io.err(`receiving on ${receiver.url}: answers 200 (?code=N: N) after ?sleep= ms; Ctrl-C stops it\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  receiver.close();
  return 0;
}
